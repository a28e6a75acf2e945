#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "size.h"
#include "unit.h"

#define KiB	((int64_t)1024)
#define MiB	(KiB * 1024)
#define GiB	(MiB * 1024)
#define TiB	(GiB * 1024)
#define PiB	(TiB * 1024)

static const struct unit_parse_case good[] = {
	{ "0", 0 },
	{ "4096", 4096 },
	{ "4096B", 4096 },
	{ "0B", 0 },
	{ "007", 7 },
	{ "1K", KiB },
	{ "1k", KiB },
	{ "1KiB", KiB },
	{ "1kiB", KiB },
	{ "1kB", 1000 },
	{ "1KB", 1000 },
	{ "100kB", 100000 },
	{ "512M", 512 * MiB },
	{ "512m", 512 * MiB },
	{ "512MiB", 512 * MiB },
	{ "3MB", 3000000 },
	{ "2G", 2 * GiB },
	{ "2g", 2 * GiB },
	{ "2GiB", 2 * GiB },
	{ "2GB", 2000000000 },
	{ "1T", TiB },
	{ "1TiB", TiB },
	{ "1TB", 1000000000000 },
	{ "1P", PiB },
	{ "1p", PiB },
	{ "1PiB", PiB },
	{ "1PB", 1000000000000000 },
	/* Fractions, rounded half up to whole bytes. */
	{ "1.5G", 1610612736 },
	{ "1.5GiB", 1610612736 },
	{ "0.5K", 512 },
	{ "1.5kB", 1500 },
	{ "1.1M", 1153434 },
	{ "0.1K", 102 },
	{ "1.0001K", 1024 },
	{ "0.0005K", 1 },
	{ "0.0004K", 0 },
	{ "0.00048828125K", 1 },	/* exactly half a byte */
	{ "1.23456789PB", 1234567890000000 },
	{ "0.999999999999P", 1125899906841498 },
	{ "3.14159265358979323846264338327950288419716939937510G",
	    3373259426 },
	{ "2.000G", 2 * GiB },
	/* Limits. */
	{ "9223372036854775807", INT64_MAX },
	{ "9223372036854775807B", INT64_MAX },
	{ "8191P", 8191 * PiB },
	{ "8191.999P", 9223370910954868965 },
	{ "9007199254740991K", 9007199254740991 * KiB },
};

static const char *const invalid[] = {
	"", " ", "-1", "+1", "-1K", " 1", "1 ", "1 G", "1\tG", "1.", ".5",
	".5G", "1.5", "1.5B", "0.5B", "1..5G", "1.5.G", "1.G", "G", "K",
	"KiB", "B", "1Gb", "1gb", "1GIB", "1Gib", "1GIb", "1Gi", "1gi",
	"1GiBx", "1GBB", "1KiBB", "1X", "1E", "8EiB", "1e3", "1e3K", "0x10",
	"1,5G", "1b", "1iB", "1BiB", "1 KiB", "1K ", "1KiB\n", "1_000",
	"١", "1Ｋ",
	/* Huge but malformed: syntax first. */
	"99999999999999999999999X", "99999999999999999999999.5",
};

static const char *const too_large[] = {
	"9223372036854775808", "9223372036854775808B",
	"99999999999999999999999", "99999999999999999999999K",
	"8192P", "8192PiB", "9223372036854775807K", "9223373PB",
	"9007199254740992T",
	"8191.9999999999999999P", "18446744073709551616",
};

UNIT_PARSE_TESTS(size_parse)

START_TEST(test_format)
{
	static const struct {
		int64_t		 bytes;
		const char	*s;
	} cases[] = {
		{ 0, "0B" },
		{ 1, "1B" },
		{ 1000, "1000B" },
		{ 1023, "1023B" },
		{ 1024, "1KiB" },
		{ 1536, "1536B" },
		{ 2048, "2KiB" },
		{ 512 * MiB, "512MiB" },
		{ 1610612736, "1536MiB" },
		{ 2 * GiB, "2GiB" },
		{ 3 * TiB, "3TiB" },
		{ PiB, "1PiB" },
		{ 1024 * PiB, "1024PiB" },
		{ 8191 * PiB, "8191PiB" },
		{ INT64_MAX, "9223372036854775807B" },
		{ 1000000000000, "976562500KiB" },
	};
	char	buf[64];
	size_t	i;
	int	n;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		n = size_format(cases[i].bytes, buf, sizeof buf);
		ck_assert_str_eq(buf, cases[i].s);
		ck_assert_int_eq(n, (int)strlen(cases[i].s));
	}
}
END_TEST

START_TEST(test_round_trip)
{
	static const int64_t values[] = {
		0, 1, 999, 1024, 4096, 1000000, 512 * MiB, 1610612736,
		2 * GiB, 7 * TiB + 1, PiB, 1024 * PiB, 8191 * PiB, INT64_MAX,
		INT64_MAX - 1023,
	};
	char	buf[64];
	int64_t	v;
	size_t	i;
	int	k;

	for (i = 0; i < sizeof values / sizeof values[0]; i++) {
		size_format(values[i], buf, sizeof buf);
		ck_assert_int_eq(size_parse(buf, &v), 0);
		ck_assert_msg(v == values[i], "%s", buf);
	}
	for (k = 0; k < 62; k++) {
		size_format((int64_t)1 << k, buf, sizeof buf);
		ck_assert_int_eq(size_parse(buf, &v), 0);
		ck_assert(v == (int64_t)1 << k);
	}
}
END_TEST

static Suite *
size_suite(void)
{
	Suite	*s = suite_create("size");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_parse_good);
	tcase_add_test(tc, test_parse_invalid);
	tcase_add_test(tc, test_parse_range);
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_round_trip);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(size_suite());
}
