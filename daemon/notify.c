/* Webhook notifications over libcurl's multi interface (see notify.h). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "error.h"
#include "log.h"
#include "notify.h"
#include "strutil.h"
#include "xmalloc.h"

struct note {
	struct note		*next, *prev;
	char			*url;		/* for curl (unix: http://localhost/) */
	char			*socket;	/* unix socket path, or NULL */
	char			*body;
	char			 logurl[256];	/* without userinfo, for logs */
	int			 tries;		/* started so far */
	int64_t			 due_ms;	/* start no earlier (monotonic) */
	CURL			*easy;		/* while in flight */
	struct curl_slist	*hdrs;
	char			 err[CURL_ERROR_SIZE];
};

struct notifier {
	CURLM		*multi;
	struct note	*head, *tail;	/* oldest first */
	size_t		 n;
	int		 active;
};

static const int backoff_ms[NOTIFY_TRIES - 1] = { 1000, 2000, 4000 };

static int64_t
now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
notify_url_for_log(const char *url, char *dst, size_t len)
{
	const char	*p = strstr(url, "://"), *end, *at = NULL, *q;

	if (len == 0)
		return;
	if (p == NULL) {
		snprintf(dst, len, "%s", url);
		return;
	}
	p += 3;
	end = p + strcspn(p, "/?#");
	for (q = p; q < end; q++) {
		if (*q == '@')
			at = q;
	}
	if (at == NULL)
		snprintf(dst, len, "%s", url);
	else
		snprintf(dst, len, "%.*s%s", (int)(p - url), url, at + 1);
}

struct notifier *
notify_new(void)
{
	struct notifier	*n = xcalloc(1, sizeof *n);

	if ((n->multi = curl_multi_init()) == NULL) {
		log_error("notify: libcurl did not start");
		free(n);
		return NULL;
	}
	return n;
}

static size_t
discard(char *p, size_t size, size_t nmemb, void *arg)
{
	(void)p;
	(void)arg;
	return size * nmemb;
}

static void
note_stop(struct notifier *n, struct note *e)
{
	if (e->easy == NULL)
		return;
	curl_multi_remove_handle(n->multi, e->easy);
	curl_easy_cleanup(e->easy);
	e->easy = NULL;
	curl_slist_free_all(e->hdrs);
	e->hdrs = NULL;
	n->active--;
}

static void
note_free(struct notifier *n, struct note *e)
{
	note_stop(n, e);
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		n->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	else
		n->tail = e->prev;
	n->n--;
	free(e->url);
	free(e->socket);
	free(e->body);
	free(e);
}

void
notify_free(struct notifier *n)
{
	if (n == NULL)
		return;
	if (n->n > 0)
		log_notice("notify: %zu notification(s) abandoned", n->n);
	while (n->head != NULL)
		note_free(n, n->head);
	curl_multi_cleanup(n->multi);
	free(n);
}

size_t
notify_pending(const struct notifier *n)
{
	return n != NULL ? n->n : 0;
}

int
notify_post(struct notifier *n, const char *url, const char *json_body)
{
	struct note	*e;
	char		 logurl[256];

	if (url == NULL || json_body == NULL || *url == '\0' ||
	    !str_no_control(url, NOTIFY_URL_MAX) ||
	    strlen(json_body) > NOTIFY_BODY_MAX)
		return CADRE_ERR_INVALID;
	notify_url_for_log(url, logurl, sizeof logurl);
	if (strncmp(url, "unix://", 7) == 0) {
		if (url[7] != '/' || url[8] == '\0') {
			log_error("notify: %s: expected unix:///PATH", logurl);
			return CADRE_ERR_INVALID;
		}
	} else if (strncmp(url, "http://", 7) != 0 &&
	    strncmp(url, "https://", 8) != 0) {
		log_error("notify: %s: expected http://, https:// or "
		    "unix:///PATH", logurl);
		return CADRE_ERR_INVALID;
	}
	if (n->n >= NOTIFY_QUEUE_MAX) {
		log_warn("notify: %d notifications queued: dropping the oldest "
		    "(to %s)", NOTIFY_QUEUE_MAX, n->head->logurl);
		note_free(n, n->head);
	}
	e = xcalloc(1, sizeof *e);
	if (strncmp(url, "unix://", 7) == 0) {
		e->socket = xstrdup(url + 7);
		e->url = xstrdup("http://localhost/");
	} else
		e->url = xstrdup(url);
	e->body = xstrdup(json_body);
	memcpy(e->logurl, logurl, sizeof logurl);
	e->due_ms = now_ms();
	e->prev = n->tail;
	if (n->tail != NULL)
		n->tail->next = e;
	else
		n->head = e;
	n->tail = e;
	n->n++;
	return 0;
}

/* 0, or CADRE_ERR_NOMEM: libcurl's other refusals would be our bugs. */
static int
note_start(struct notifier *n, struct note *e)
{
	CURL	*c;

	if ((c = curl_easy_init()) == NULL)
		return CADRE_ERR_NOMEM;
	e->err[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, e->url);
	if (e->socket != NULL)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, e->socket);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(c, CURLOPT_PROTOCOLS,
	    (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)NOTIFY_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)NOTIFY_TIMEOUT_MS / 2);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, e->body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(e->body));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, e->err);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "cadred/" PACKAGE_VERSION);
	curl_easy_setopt(c, CURLOPT_PRIVATE, e);
	e->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	/* no "100 Continue" round trip before a larger body */
	e->hdrs = curl_slist_append(e->hdrs, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, e->hdrs);
	if (curl_multi_add_handle(n->multi, c) != CURLM_OK) {
		curl_slist_free_all(e->hdrs);
		e->hdrs = NULL;
		curl_easy_cleanup(c);
		return CADRE_ERR_NOMEM;
	}
	e->easy = c;
	e->tries++;
	n->active++;
	return 0;
}

/* Whether a failed transfer is worth another try. */
static int
retryable(CURLcode cc, long code)
{
	if (cc == CURLE_OK)
		return code >= 500 || code == 429 || code == 408;
	switch (cc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
		return 1;
	default:
		return 0;
	}
}

static void
note_done(struct notifier *n, struct note *e, CURLcode cc)
{
	long	code = 0;
	char	what[CURL_ERROR_SIZE + 64];

	curl_easy_getinfo(e->easy, CURLINFO_RESPONSE_CODE, &code);
	note_stop(n, e);
	if (cc == CURLE_OK && code >= 200 && code < 300) {
		log_debug("notify: %s: %ld", e->logurl, code);
		note_free(n, e);
		return;
	}
	if (cc == CURLE_OK)
		snprintf(what, sizeof what, "HTTP %ld", code);
	else
		snprintf(what, sizeof what, "%s", e->err[0] != '\0' ? e->err :
		    curl_easy_strerror(cc));
	if (retryable(cc, code) && e->tries < NOTIFY_TRIES) {
		log_info("notify: %s: %s; trying again in %d s", e->logurl,
		    what, backoff_ms[e->tries - 1] / 1000);
		e->due_ms = now_ms() + backoff_ms[e->tries - 1];
		return;
	}
	log_warn("notify: %s: %s; giving up after %d tr%s", e->logurl, what,
	    e->tries, e->tries == 1 ? "y" : "ies");
	note_free(n, e);
}

/* Starts what is due; returns ms until the next one is, or -1. */
static int64_t
start_due(struct notifier *n)
{
	struct note	*e, *next;
	int64_t		 now = now_ms(), wait = -1;

	for (e = n->head; e != NULL; e = next) {
		next = e->next;
		if (e->easy != NULL)
			continue;
		if (e->due_ms > now) {
			if (wait < 0 || e->due_ms - now < wait)
				wait = e->due_ms - now;
			continue;
		}
		if (n->active >= NOTIFY_ACTIVE_MAX) {
			wait = 0;
			continue;
		}
		if (note_start(n, e) != 0) {
			log_error("notify: %s: libcurl refused the transfer; "
			    "dropped", e->logurl);
			note_free(n, e);
		}
	}
	return wait;
}

void
notify_poll(struct notifier *n, int timeout_ms)
{
	CURLMsg		*m;
	struct note	*e;
	int64_t		 end = now_ms() + (timeout_ms > 0 ? timeout_ms : 0),
			 due, left;
	int		 running, q;

	if (n == NULL)
		return;
	for (;;) {
		due = start_due(n);
		curl_multi_perform(n->multi, &running);
		while ((m = curl_multi_info_read(n->multi, &q)) != NULL) {
			if (m->msg != CURLMSG_DONE)
				continue;
			e = NULL;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
			    (char **)&e);
			if (e != NULL)
				note_done(n, e, m->data.result);
		}
		left = end - now_ms();
		if (left <= 0 || n->n == 0)
			return;
		/* a retry that became due while transfers ran */
		due = start_due(n);
		if (due > 0 && due < left)
			left = due;
		if (n->active > 0)
			curl_multi_poll(n->multi, NULL, 0, (int)left, NULL);
		else {
			struct timespec	ts = { (time_t)(left / 1000),
					       (long)(left % 1000) * 1000000 };

			nanosleep(&ts, NULL);
		}
	}
}
