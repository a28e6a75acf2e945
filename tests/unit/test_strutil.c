#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "strutil.h"
#include "unit.h"

START_TEST(test_edit_distance)
{
	static const struct {
		const char	*a, *b;
		size_t		 d;
	} cases[] = {
		{ "", "", 0 },
		{ "abc", "abc", 0 },
		{ "", "abc", 3 },
		{ "abc", "", 3 },
		{ "kitten", "sitting", 3 },
		{ "flaw", "lawn", 2 },
		{ "learning_rate", "learning_rte", 1 },
		{ "batch_size", "batchsize", 1 },
		{ "epochs", "epcohs", 2 },
		{ "gpus", "gpu", 1 },
		{ "abc", "xyz", 3 },
	};
	size_t	i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		ck_assert_uint_eq(str_edit_distance(cases[i].a, cases[i].b, 100),
		    cases[i].d);
		ck_assert_uint_eq(str_edit_distance(cases[i].b, cases[i].a, 100),
		    cases[i].d);
		/* A limit at the distance still gives the distance. */
		ck_assert_uint_eq(str_edit_distance(cases[i].a, cases[i].b,
		    cases[i].d), cases[i].d);
		if (cases[i].d > 0) {
			ck_assert_uint_eq(str_edit_distance(cases[i].a,
			    cases[i].b, cases[i].d - 1), cases[i].d);
		}
	}
	/* Over the limit: limit + 1. */
	ck_assert_uint_eq(str_edit_distance("kitten", "sitting", 2), 3);
	ck_assert_uint_eq(str_edit_distance("kitten", "sitting", 0), 1);
	ck_assert_uint_eq(str_edit_distance("a", "abcdefghij", 3), 4);
	ck_assert_uint_eq(str_edit_distance("abcdefghij", "klmnopqrst", 2), 3);
	ck_assert_uint_eq(str_edit_distance("abc", "abd", SIZE_MAX), 1);
}
END_TEST

START_TEST(test_edit_distance_long)
{
	char	*a, *b;

	a = malloc(5001);
	b = malloc(5001);
	memset(a, 'a', 5000);
	memset(b, 'b', 5000);
	a[5000] = b[5000] = '\0';
	/* Early exit: hopeless pairs stop at once. */
	ck_assert_uint_eq(str_edit_distance(a, b, 2), 3);
	b[0] = 'a';
	memset(b, 'a', 4998);
	ck_assert_uint_eq(str_edit_distance(a, b, 5), 2);
	free(a);
	free(b);
}
END_TEST

static void
check_utf8(const char *s, size_t len, int valid, size_t wantpos)
{
	size_t	pos = 9999;

	ck_assert_int_eq(str_valid_utf8(s, len, &pos), valid);
	if (!valid)
		ck_assert_uint_eq(pos, wantpos);
	else
		ck_assert_uint_eq(pos, 9999);
}

START_TEST(test_utf8)
{
	check_utf8("", 0, 1, 0);
	check_utf8("plain ascii", 11, 1, 0);
	check_utf8("caf\xc3\xa9", 5, 1, 0);
	check_utf8("\xe2\x82\xac", 3, 1, 0);			/* U+20AC */
	check_utf8("\xf0\x9f\x98\x80", 4, 1, 0);		/* U+1F600 */
	check_utf8("\xef\xbf\xbf", 3, 1, 0);			/* U+FFFF */
	check_utf8("\xf4\x8f\xbf\xbf", 4, 1, 0);		/* U+10FFFF */
	check_utf8("\xed\x9f\xbf", 3, 1, 0);			/* U+D7FF */
	check_utf8("\xee\x80\x80", 3, 1, 0);			/* U+E000 */
	check_utf8("a\0b", 3, 1, 0);				/* NUL is valid */

	check_utf8("ab\x80", 3, 0, 2);				/* lone continuation */
	check_utf8("ab\xbf", 3, 0, 2);
	check_utf8("\xc0\x80", 2, 0, 0);			/* overlong NUL */
	check_utf8("\xc1\xbf", 2, 0, 0);			/* overlong */
	check_utf8("x\xe0\x80\x80", 4, 0, 1);			/* overlong 3-byte */
	check_utf8("\xe0\x9f\xbf", 3, 0, 0);
	check_utf8("\xf0\x80\x80\x80", 4, 0, 0);		/* overlong 4-byte */
	check_utf8("\xf0\x8f\xbf\xbf", 4, 0, 0);
	check_utf8("\xed\xa0\x80", 3, 0, 0);			/* U+D800 */
	check_utf8("\xed\xbf\xbf", 3, 0, 0);			/* U+DFFF */
	check_utf8("\xf4\x90\x80\x80", 4, 0, 0);		/* U+110000 */
	check_utf8("\xf5\x80\x80\x80", 4, 0, 0);
	check_utf8("\xff", 1, 0, 0);
	check_utf8("\xfe", 1, 0, 0);
	check_utf8("ok\xc3", 3, 0, 2);				/* truncated */
	check_utf8("ok\xe2\x82", 4, 0, 2);
	check_utf8("ok\xf0\x9f\x98", 5, 0, 2);
	check_utf8("\xc3\x28", 2, 0, 0);			/* bad continuation */
	check_utf8("\xe2\x28\xa1", 3, 0, 0);
	check_utf8("\xe2\x82\x28", 3, 0, 0);
	check_utf8("\xf0\x9f\x98\x28", 4, 0, 0);
	/* len is respected: the bytes past it are not looked at. */
	check_utf8("ab\xff", 2, 1, 0);
	check_utf8("\xc3\xa9", 1, 0, 0);
	/* badpos may be NULL. */
	ck_assert_int_eq(str_valid_utf8("\xff", 1, NULL), 0);
}
END_TEST

START_TEST(test_line_col)
{
	const char	*t = "ab\ncd\n\xc3\xa9t\xc3\xa9x\n";
	size_t		 len = strlen(t), line, col;

	str_line_col(t, len, 0, &line, &col);
	ck_assert_uint_eq(line, 1);
	ck_assert_uint_eq(col, 1);
	str_line_col(t, len, 1, &line, &col);
	ck_assert_uint_eq(line, 1);
	ck_assert_uint_eq(col, 2);
	str_line_col(t, len, 2, &line, &col);	/* the newline itself */
	ck_assert_uint_eq(line, 1);
	ck_assert_uint_eq(col, 3);
	str_line_col(t, len, 3, &line, &col);
	ck_assert_uint_eq(line, 2);
	ck_assert_uint_eq(col, 1);
	str_line_col(t, len, 6, &line, &col);	/* start of line 3 */
	ck_assert_uint_eq(line, 3);
	ck_assert_uint_eq(col, 1);
	/* Columns count characters: "é" is two bytes, one column. */
	str_line_col(t, len, 8, &line, &col);	/* 't' */
	ck_assert_uint_eq(line, 3);
	ck_assert_uint_eq(col, 2);
	str_line_col(t, len, 11, &line, &col);	/* 'x' */
	ck_assert_uint_eq(col, 4);
	/* Past the end: the end. */
	str_line_col(t, len, 1000, &line, &col);
	ck_assert_uint_eq(line, 4);
	ck_assert_uint_eq(col, 1);
	str_line_col("", 0, 0, &line, &col);
	ck_assert_uint_eq(line, 1);
	ck_assert_uint_eq(col, 1);
}
END_TEST

START_TEST(test_int64)
{
	static const struct unit_parse_case good[] = {
		{ "0", 0 }, { "-0", 0 }, { "+0", 0 }, { "42", 42 },
		{ "-42", -42 }, { "+7", 7 }, { "007", 7 },
		{ "9223372036854775807", INT64_MAX },
		{ "-9223372036854775808", INT64_MIN },
		{ "-9223372036854775807", -INT64_MAX },
	};
	static const char *const invalid[] = {
		"", "-", "+", " 1", "1 ", "1a", "a1", "0x10", "1.0", "1e3",
		"--1", "+-1", "1,000", "1_000", "\t1", "1\n",
		"99999999999999999999x",
	};
	static const char *const range[] = {
		"9223372036854775808", "-9223372036854775809",
		"99999999999999999999", "-99999999999999999999",
		"18446744073709551616",
	};

	unit_parse_good(str_to_int64, good, UNIT_NITEMS(good));
	UNIT_PARSE_REFUSED(str_to_int64, invalid, CADRE_ERR_INVALID);
	UNIT_PARSE_REFUSED(str_to_int64, range, CADRE_ERR_RANGE);
}
END_TEST

/* Each of the n strings is refused by str_to_double with err, and the
 * output is left as it was. */
static void
double_refused(const char *const *s, size_t n, int err)
{
	double	v;
	size_t	i;

	for (i = 0; i < n; i++) {
		v = 5;
		ck_assert_msg(str_to_double(s[i], &v) == err, "\"%s\"", s[i]);
		ck_assert(v == 5);
	}
}

START_TEST(test_double)
{
	static const struct {
		const char	*s;
		double		 v;
	} good[] = {
		{ "0", 0.0 }, { "1", 1.0 }, { "-1", -1.0 }, { "+2", 2.0 },
		{ "0.5", 0.5 }, { "1e-4", 1e-4 }, { "6e-3", 6e-3 },
		{ "3E2", 300.0 }, { "1.5e+3", 1500.0 }, { ".5", 0.5 },
		{ "5.", 5.0 }, { "-0.25", -0.25 }, { "1e308", 1e308 },
		{ "0.1", 0.1 },
	};
	static const char *const invalid[] = {
		"", ".", "-", "+", "e5", "1e", "1e+", "1.5e-", " 1", "1 ",
		"nan", "NaN", "inf", "-inf", "infinity", "0x1p3", "0x10",
		"1,5", "1..5", "1.5.", "1e5.5", "--1", "abc", "1f", "1.0\n",
	};
	static const char *const range[] = {
		"1e309", "-1e309", "1e99999", "1e-400",
	};
	double	v;
	size_t	i;

	for (i = 0; i < sizeof good / sizeof good[0]; i++) {
		ck_assert_msg(str_to_double(good[i].s, &v) == 0, "%s", good[i].s);
		ck_assert_msg(v == good[i].v, "%s", good[i].s);
	}
	double_refused(invalid, UNIT_NITEMS(invalid), CADRE_ERR_INVALID);
	double_refused(range, UNIT_NITEMS(range), CADRE_ERR_RANGE);
}
END_TEST

START_TEST(test_is_name)
{
	ck_assert_int_eq(str_is_name("abc", 64), 1);
	ck_assert_int_eq(str_is_name("A-b_c.9", 64), 1);
	ck_assert_int_eq(str_is_name("x", 1), 1);
	ck_assert_int_eq(str_is_name("abcd", 4), 1);
	ck_assert_int_eq(str_is_name("abcde", 4), 0);
	ck_assert_int_eq(str_is_name("", 64), 0);
	ck_assert_int_eq(str_is_name("a b", 64), 0);
	ck_assert_int_eq(str_is_name("a/b", 64), 0);
	ck_assert_int_eq(str_is_name("a:b", 64), 0);
	ck_assert_int_eq(str_is_name("caf\xc3\xa9", 64), 0);
	ck_assert_int_eq(str_is_name("a\n", 64), 0);
	ck_assert_int_eq(str_is_name("a", 0), 0);
}
END_TEST

/* Equal bytes hash equal; the hash spreads nearby keys over the low bits. */
START_TEST(test_no_control)
{
	ck_assert_int_eq(str_no_control("/a b/caf\xc3\xa9 'x'", 64), 1);
	ck_assert_int_eq(str_no_control("", 64), 1);
	ck_assert_int_eq(str_no_control("abcd", 4), 1);
	ck_assert_int_eq(str_no_control("abcde", 4), 0);
	ck_assert_int_eq(str_no_control("a\nb", 64), 0);
	ck_assert_int_eq(str_no_control("a\tb", 64), 0);
	ck_assert_int_eq(str_no_control("a\x7f", 64), 0);
	ck_assert_int_eq(str_no_control("\x1b[0m", 64), 0);
}
END_TEST

START_TEST(test_hash)
{
	unsigned	seen[64] = { 0 };
	char		key[32];
	int		i, used = 0;

	ck_assert_uint_eq(str_hash("node01", 6), str_hash("node01xyz", 6));
	ck_assert_uint_ne(str_hash("node01", 6), str_hash("node02", 6));
	ck_assert_uint_eq(str_hash("", 0), str_hash("abc", 0));
	for (i = 0; i < 64; i++) {
		snprintf(key, sizeof key, "node%02d", i);
		seen[str_hash(key, strlen(key)) & 63]++;
	}
	for (i = 0; i < 64; i++)
		used += seen[i] > 0;
	/* 64 keys into 64 buckets: a fair hash fills about 40 of them. */
	ck_assert_int_ge(used, 32);
}
END_TEST

/* $NAME and ${NAME} at the start of a path, from the environment. */
START_TEST(test_path_expand_env)
{
	char	*o, *v;

	setenv("CADRE_T_DIR", "/local/x", 1);
	setenv("CADRE_T_REL", "rel", 1);
	unsetenv("CADRE_T_NONE");
	ck_assert_int_eq(path_expand_env("/a/b", &o, NULL), 0);
	ck_assert_str_eq(o, "/a/b");
	free(o);
	ck_assert_int_eq(path_expand_env("$CADRE_T_DIR/shards", &o, NULL), 0);
	ck_assert_str_eq(o, "/local/x/shards");
	free(o);
	ck_assert_int_eq(path_expand_env("${CADRE_T_DIR}/s", &o, NULL), 0);
	ck_assert_str_eq(o, "/local/x/s");
	free(o);
	ck_assert_int_eq(path_expand_env("$CADRE_T_DIR", &o, NULL), 0);
	ck_assert_str_eq(o, "/local/x");
	free(o);
	ck_assert_int_eq(path_expand_env("$CADRE_T_NONE/s", &o, &v),
	    CADRE_ERR_NOT_FOUND);
	ck_assert_ptr_null(o);
	ck_assert_str_eq(v, "CADRE_T_NONE");
	free(v);
	ck_assert_int_eq(path_expand_env("$CADRE_T_REL/s", &o, NULL),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(path_expand_env("$CADRE_T_DIRx/s", &o, NULL),
	    CADRE_ERR_NOT_FOUND);
	ck_assert_int_eq(path_expand_env("${CADRE_T_DIR/s", &o, NULL),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(path_expand_env("$/s", &o, NULL), CADRE_ERR_INVALID);
	ck_assert_int_eq(path_expand_env("${}/s", &o, NULL), CADRE_ERR_INVALID);
	ck_assert_int_eq(path_expand_env("$CADRE_T_DIR.x", &o, NULL),
	    CADRE_ERR_INVALID);
	ck_assert_ptr_null(o);
}
END_TEST

static Suite *
strutil_suite(void)
{
	Suite	*s = suite_create("strutil");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_edit_distance);
	tcase_add_test(tc, test_edit_distance_long);
	tcase_add_test(tc, test_utf8);
	tcase_add_test(tc, test_line_col);
	tcase_add_test(tc, test_int64);
	tcase_add_test(tc, test_double);
	tcase_add_test(tc, test_is_name);
	tcase_add_test(tc, test_no_control);
	tcase_add_test(tc, test_hash);
	tcase_add_test(tc, test_path_expand_env);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(strutil_suite());
}
