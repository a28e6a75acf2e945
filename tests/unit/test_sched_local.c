#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "scheduler.h"
#include "unit.h"

START_TEST(test_parse_id)
{
	static const char *const bad[] = {
		"", "local-", "local-0-1", "local-1-", "local--1-2", "local-1-x",
		"local-1-2x", "local-1-2-3", "local-99999999-1", "Local-1-2",
		"local-dry-abc", "local-1-99999999999999999999999",
		"local- 1-2", "1-2",
	};
	unsigned long long	t;
	long			p;
	size_t			i;

	ck_assert_int_eq(local_parse_id("local-4242-1032712", &p, &t), 0);
	ck_assert_int_eq(p, 4242);
	ck_assert_uint_eq(t, 1032712);
	ck_assert_int_eq(local_parse_id("local-1-0", &p, &t), 0);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(local_parse_id(bad[i], &p, &t) ==
		    CADRE_ERR_INVALID, "%s", bad[i]);
}
END_TEST

START_TEST(test_parse_stat)
{
	static const char *const bad[] = {
		"", "123 (sh", "123 (sh)", "123 (sh) S", "123 (sh) S 1 2 3",
		"123 (sh) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 x 1",
		"123 (sh) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 "
		"99999999999999999999999 1",
		"123 (sh) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12x 1",
	};
	unsigned long long	t;
	long			pp;
	int			z;
	size_t			i;
	FILE			*fp;
	char			buf[1024];

	ck_assert_int_eq(local_parse_stat("123 (a b) c) Z 77 1 1 0 -1 0 0 0 "
	    "0 0 0 0 0 0 20 0 1 0 5555 1 2\n", &pp, &t, &z), 0);
	ck_assert_int_eq(pp, 77);
	ck_assert_uint_eq(t, 5555);
	ck_assert_int_eq(z, 1);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(local_parse_stat(bad[i], &pp, &t, &z) < 0, "%s",
		    bad[i]);
	/* our own line: our parent, not a zombie */
	fp = fopen("/proc/self/stat", "r");
	ck_assert_ptr_nonnull(fp);
	ck_assert_ptr_nonnull(fgets(buf, sizeof buf, fp));
	fclose(fp);
	ck_assert_int_eq(local_parse_stat(buf, &pp, &t, &z), 0);
	ck_assert_int_eq(pp, (long)getppid());
	ck_assert_int_eq(z, 0);
	ck_assert_uint_gt(t, 0);
}
END_TEST

static Suite *
local_suite(void)
{
	Suite	*s = suite_create("sched_local");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_parse_id);
	tcase_add_test(tc, test_parse_stat);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(local_suite());
}
