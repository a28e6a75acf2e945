#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "notify.h"
#include "xmalloc.h"
#include "unit.h"

/* Logs never carry a URL's user:password. */
START_TEST(test_url_for_log)
{
	static const struct {
		const char	*in, *out;
	} cases[] = {
		{ "http://h:8/x", "http://h:8/x" },
		{ "https://u:p@h/x?y=1", "https://h/x?y=1" },
		{ "http://u@h", "http://h" },
		{ "http://a@b:c@h:1/p@q", "http://h:1/p@q" },
		{ "http://h/p@q", "http://h/p@q" },
		{ "unix:///run/x.sock", "unix:///run/x.sock" },
		{ "garbage", "garbage" },
		{ "", "" },
	};
	char	out[64];
	size_t	i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		notify_url_for_log(cases[i].in, out, sizeof out);
		ck_assert_str_eq(out, cases[i].out);
	}
	notify_url_for_log("http://u:p@h/", out, 5);
	ck_assert_str_eq(out, "http");
}
END_TEST

START_TEST(test_post_refused)
{
	struct notifier	*n = notify_new();
	char		*big, *url;

	ck_assert_ptr_nonnull(n);
	ck_assert_int_eq(notify_post(n, "ftp://h/x", "{}"), CADRE_ERR_INVALID);
	ck_assert_int_eq(notify_post(n, "file:///etc/passwd", "{}"),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(notify_post(n, "unix://x", "{}"), CADRE_ERR_INVALID);
	ck_assert_int_eq(notify_post(n, "unix:///", "{}"), CADRE_ERR_INVALID);
	ck_assert_int_eq(notify_post(n, "http://h/\n", "{}"),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(notify_post(n, "", "{}"), CADRE_ERR_INVALID);
	ck_assert_int_eq(notify_post(n, NULL, "{}"), CADRE_ERR_INVALID);
	ck_assert_int_eq(notify_post(n, "http://h/", NULL), CADRE_ERR_INVALID);
	big = xmalloc(NOTIFY_BODY_MAX + 2);
	memset(big, 'x', NOTIFY_BODY_MAX + 1);
	big[NOTIFY_BODY_MAX + 1] = '\0';
	ck_assert_int_eq(notify_post(n, "http://h/", big), CADRE_ERR_INVALID);
	url = xmalloc(NOTIFY_URL_MAX + 16);
	strcpy(url, "http://h/");
	memset(url + 9, 'a', NOTIFY_URL_MAX);
	url[NOTIFY_URL_MAX + 9] = '\0';
	ck_assert_int_eq(notify_post(n, url, "{}"), CADRE_ERR_INVALID);
	ck_assert_uint_eq(notify_pending(n), 0);
	big[NOTIFY_BODY_MAX] = '\0';
	ck_assert_int_eq(notify_post(n, "http://u:p@127.0.0.1:9/", big), 0);
	ck_assert_int_eq(notify_post(n, "unix:///nonexistent/s", "{}"), 0);
	ck_assert_uint_eq(notify_pending(n), 2);
	free(big);
	free(url);
	notify_free(n);
	notify_free(NULL);
	ck_assert_uint_eq(notify_pending(NULL), 0);
}
END_TEST

/* The queue keeps the newest NOTIFY_QUEUE_MAX; poll with 0 never waits. */
START_TEST(test_queue_bound)
{
	struct notifier	*n = notify_new();
	int		 i;

	for (i = 0; i < NOTIFY_QUEUE_MAX + 10; i++)
		ck_assert_int_eq(notify_post(n, "unix:///nonexistent/s", "{}"),
		    0);
	ck_assert_uint_eq(notify_pending(n), NOTIFY_QUEUE_MAX);
	notify_poll(n, 0);
	notify_free(n);
}
END_TEST

static Suite *
notify_suite(void)
{
	Suite	*s = suite_create("notify");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_url_for_log);
	tcase_add_test(tc, test_post_refused);
	tcase_add_test(tc, test_queue_bound);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(notify_suite());
}
