#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "error.h"
#include "unit.h"

static const struct unit_parse_case good[] = {
	{ "0", 0 },
	/* Units. */
	{ "90s", 90 },
	{ "0s", 0 },
	{ "0m", 0 },
	{ "20m", 1200 },
	{ "1h", 3600 },
	{ "2d", 172800 },
	{ "1h30m", 5400 },
	{ "2d12h", 216000 },
	{ "1d2h3m4s", 93784 },
	{ "1d4s", 86404 },
	{ "1h0m0s", 3600 },
	{ "90m", 5400 },
	{ "100000s", 100000 },
	{ "007s", 7 },
	/* MM:SS */
	{ "30:00", 1800 },
	{ "00:59", 59 },
	{ "0:01", 1 },
	{ "90:00", 5400 },
	{ "1000:30", 60030 },
	/* HH:MM:SS */
	{ "01:30:00", 5400 },
	{ "00:00:00", 0 },
	{ "1:00:01", 3601 },
	{ "48:00:00", 172800 },
	{ "23:59:59", 86399 },
	/* Slurm days. */
	{ "2-12", 216000 },
	{ "2-12:30", 217800 },
	{ "2-12:00:00", 216000 },
	{ "0-00:00:01", 1 },
	{ "1-0", 86400 },
	{ "10-23:59:59", 950399 },
	/* The bound itself. */
	{ "36500d", DURATION_MAX },
	{ "3153600000s", DURATION_MAX },
	{ "876000:00:00", DURATION_MAX },
	{ "36500-00", DURATION_MAX },
	{ "52560000:00", DURATION_MAX },
};

static const char *const invalid[] = {
	"", " ", "1", "00", "60", "3600", "-1", "+1s", "-1s",
	"1h 30m", " 1h", "1h ", "1h\n", "1 h", "1H", "1S", "1D", "1.5h",
	"1,5h", "1w", "1y", "1ms", "h", "s", "1hh", "1h1h", "1s1s", "30m1h",
	"1s1m", "1m1d", "1h1d", "1dh", "1x", "0x10s", "1s0",
	/* Colon forms. */
	"1:60", "1:5", "1:005", "1:60:00", "1:00:60", "1:00:00:00",
	":30", "1:", "1::00", "1:00:", "1:-1", "1:0a", "a:00", "12:34:5",
	"1:00 ", "1 :00",
	/* Slurm forms. */
	"1-", "-1:00", "1-24", "1-123", "1-2:3", "1-02:60", "1-02:00:60",
	"1-02:00:00:00", "1-2-3", "1d-2", "1-2h", "1-:00", "-", "--1",
	"1-02:00:", "1--2",
	/* Huge but malformed: still a syntax error, not a range one. */
	"99999999999999999999999", "99999999999999999999999x",
	"99999999999999999999999h1d",
};

static const char *const too_large[] = {
	"36500d1s", "3153600001s", "876000:00:01", "36500-00:00:01",
	"36501d", "99999999999999999999999s", "99999999999999999999999d",
	"9223372036854775807s", "9223372036854775808s",
	"106751991167300d", "99999999999:00:00", "99999999999999-00",
	"52560001:00", "36499d23h59m61s",
};

UNIT_PARSE_TESTS(duration_parse)

START_TEST(test_format)
{
	static const struct {
		int64_t		 secs;
		const char	*compact, *slurm;
	} cases[] = {
		{ 0, "0s", "00:00:00" },
		{ 1, "1s", "00:00:01" },
		{ 59, "59s", "00:00:59" },
		{ 60, "1m", "00:01:00" },
		{ 90, "1m30s", "00:01:30" },
		{ 3600, "1h", "01:00:00" },
		{ 5400, "1h30m", "01:30:00" },
		{ 3601, "1h1s", "01:00:01" },
		{ 86399, "23h59m59s", "23:59:59" },
		{ 86400, "1d", "1-00:00:00" },
		{ 216000, "2d12h", "2-12:00:00" },
		{ 93784, "1d2h3m4s", "1-02:03:04" },
		{ DURATION_MAX, "36500d", "36500-00:00:00" },
	};
	char	buf[64];
	size_t	i;
	int	n;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		n = duration_format(cases[i].secs, buf, sizeof buf);
		ck_assert_str_eq(buf, cases[i].compact);
		ck_assert_int_eq(n, (int)strlen(cases[i].compact));
		n = duration_format_slurm(cases[i].secs, buf, sizeof buf);
		ck_assert_str_eq(buf, cases[i].slurm);
		ck_assert_int_eq(n, (int)strlen(cases[i].slurm));
	}
}
END_TEST

START_TEST(test_format_truncates)
{
	char	buf[4];
	int	n;

	/* Like snprintf: the full length comes back, the text is cut. */
	n = duration_format(93784, buf, sizeof buf);
	ck_assert_int_eq(n, 8);
	ck_assert_str_eq(buf, "1d2");
	n = duration_format_slurm(93784, buf, sizeof buf);
	ck_assert_int_eq(n, 10);
	ck_assert_str_eq(buf, "1-0");
	n = duration_format(5, NULL, 0);
	ck_assert_int_eq(n, 2);
}
END_TEST

static void
check_round_trip(int64_t secs)
{
	char	buf[64];
	int64_t	v;

	duration_format(secs, buf, sizeof buf);
	v = -1;
	ck_assert_msg(duration_parse(buf, &v) == 0, "\"%s\" refused", buf);
	ck_assert_msg(v == secs, "%" PRId64 " -> \"%s\" -> %" PRId64, secs,
	    buf, v);
	duration_format_slurm(secs, buf, sizeof buf);
	v = -1;
	ck_assert_msg(duration_parse(buf, &v) == 0, "\"%s\" refused", buf);
	ck_assert_msg(v == secs, "%" PRId64 " -> \"%s\" -> %" PRId64, secs,
	    buf, v);
}

START_TEST(test_round_trip)
{
	int64_t	s;

	for (s = 0; s < 200000; s += 7)
		check_round_trip(s);
	for (s = 0; s < 400; s++)
		check_round_trip(s * 86400 + 3599);
	check_round_trip(DURATION_MAX);
	check_round_trip(DURATION_MAX - 1);
	check_round_trip(DURATION_MAX / 3);
}
END_TEST

static Suite *
duration_suite(void)
{
	Suite	*s = suite_create("duration");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_parse_good);
	tcase_add_test(tc, test_parse_invalid);
	tcase_add_test(tc, test_parse_range);
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_format_truncates);
	tcase_add_test(tc, test_round_trip);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(duration_suite());
}
