#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "unit.h"

static void
check_digest(const uint8_t digest[SHA256_DIGEST_LEN], const char *want)
{
	char	hex[2 * SHA256_DIGEST_LEN + 1];

	sha256_hex(digest, SHA256_DIGEST_LEN, hex);
	ck_assert_str_eq(hex, want);
}

static void
check_oneshot(const char *msg, const char *want)
{
	uint8_t	d[SHA256_DIGEST_LEN];

	sha256(msg, strlen(msg), d);
	check_digest(d, want);
}

/* FIPS 180-2 appendix B and the NIST example values. */
START_TEST(test_fips_abc)
{
	check_oneshot("abc",
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
END_TEST

START_TEST(test_fips_empty)
{
	uint8_t	d[SHA256_DIGEST_LEN];

	check_oneshot("",
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha256(NULL, 0, d);
	check_digest(d,
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
END_TEST

START_TEST(test_fips_448_bits)
{
	check_oneshot("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

START_TEST(test_fips_896_bits)
{
	check_oneshot("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
	    "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
	    "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}
END_TEST

START_TEST(test_fips_million_a)
{
	static const char	*want =
	    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
	struct sha256_ctx	 c;
	uint8_t			 d[SHA256_DIGEST_LEN];
	char			*a;
	size_t			 i;

	a = malloc(1000000);
	memset(a, 'a', 1000000);
	sha256(a, 1000000, d);
	check_digest(d, want);

	/* The same in uneven pieces. */
	sha256_init(&c);
	for (i = 0; i < 1000000;) {
		size_t n = (i * 31 + 17) % 200 + 1;

		if (n > 1000000 - i)
			n = 1000000 - i;
		sha256_update(&c, a + i, n);
		i += n;
	}
	sha256_final(&c, d);
	check_digest(d, want);
	free(a);
}
END_TEST

/* Lengths around the padding boundaries (55, 56, 64 bytes...). */
START_TEST(test_padding_boundaries)
{
	static const struct {
		size_t		 n;
		const char	*want;
	} cases[] = {
		{ 55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072" },
		{ 56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e" },
		{ 63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2" },
		{ 64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c" },
		{ 65, "9537c5fdf120482f7d58d25e9ed583f52c02b4e304ea814db1633ad565aed7e9" },
		{ 119, "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c" },
		{ 120, "13f05a0b594787f5ecd315edc96141bd3243203d1b7d4f0836f37308b276ba98" },
	};
	struct sha256_ctx	c;
	uint8_t			d[SHA256_DIGEST_LEN];
	char			x[128];
	size_t			i, j;

	memset(x, 'x', sizeof x);
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sha256(x, cases[i].n, d);
		check_digest(d, cases[i].want);
		/* Byte at a time, with empty updates in between. */
		sha256_init(&c);
		for (j = 0; j < cases[i].n; j++) {
			sha256_update(&c, x + j, 1);
			sha256_update(&c, x, 0);
		}
		sha256_final(&c, d);
		check_digest(d, cases[i].want);
	}
}
END_TEST

START_TEST(test_hex_prefix)
{
	uint8_t	d[SHA256_DIGEST_LEN];
	char	hex[2 * SHA256_DIGEST_LEN + 1];

	sha256("abc", 3, d);
	memset(hex, '#', sizeof hex);
	sha256_hex(d, 6, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01");
	sha256_hex(d, 0, hex);
	ck_assert_str_eq(hex, "");
}
END_TEST

static Suite *
sha256_suite(void)
{
	Suite	*s = suite_create("sha256");
	TCase	*tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fips_abc);
	tcase_add_test(tc, test_fips_empty);
	tcase_add_test(tc, test_fips_448_bits);
	tcase_add_test(tc, test_fips_896_bits);
	tcase_add_test(tc, test_fips_million_a);
	tcase_add_test(tc, test_padding_boundaries);
	tcase_add_test(tc, test_hex_prefix);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(sha256_suite());
}
