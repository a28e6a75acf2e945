/*
 * Webhook notifications (spec keys notify.webhook and notify.on): JSON
 * bodies POSTed through libcurl's multi interface, so that a slow or dead
 * receiver never holds up cadred's loop.
 *
 * notify_post() queues one POST; notify_poll() drives the transfers for at
 * most timeout_ms (0: only what can be done without waiting) and must be
 * called while notify_pending() is not 0, at least every second or so,
 * for the retries to start on time. A transfer that fails to connect, times
 * out (10 s) or gets a 5xx or 429 answer is tried again 1 s, 2 s and 4 s
 * later (four tries in all), then dropped with a log line; any other
 * answer ends it. At most NOTIFY_QUEUE_MAX are queued: more drop the
 * oldest, with a log line. Logs name the URL without its user:password;
 * bodies are never logged. The body cadred sends is documented in
 * docs/daemon-backends.md.
 */
#ifndef CADRE_NOTIFY_H
#define CADRE_NOTIFY_H

#include <stddef.h>

#define NOTIFY_QUEUE_MAX	1000	/* queued notifications */
#define NOTIFY_BODY_MAX		((size_t)64 << 10)	/* bytes of a body */
#define NOTIFY_URL_MAX		4096	/* bytes of a URL */
#define NOTIFY_TRIES		4	/* the first and three retries */
#define NOTIFY_ACTIVE_MAX	8	/* transfers at once */
#define NOTIFY_TIMEOUT_MS	10000	/* one transfer */

struct notifier;

/* NULL only when libcurl cannot start (logged). */
struct notifier *notify_new(void);
/* Abandons what is pending. */
void notify_free(struct notifier *n);

/*
 * Queues a POST of json_body (Content-Type: application/json) to url:
 * http://, https://, or unix:///PATH (HTTP over that unix socket, to
 * http://localhost/). 0, or CADRE_ERR_INVALID for a URL or body out of
 * bounds (too long, control characters, another scheme).
 */
int notify_post(struct notifier *n, const char *url, const char *json_body);

/* Drives transfers and retries; returns within timeout_ms. */
void notify_poll(struct notifier *n, int timeout_ms);

/* Notifications queued or in flight. */
size_t notify_pending(const struct notifier *n);

/* url with any user:password@ taken out, into dst (for logs). */
void notify_url_for_log(const char *url, char *dst, size_t len);

#endif
