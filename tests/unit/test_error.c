#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "unit.h"

START_TEST(test_every_code_has_message)
{
	int		 e, f;
	const char	*m;

	for (e = CADRE_OK; e > CADRE_ERR_LAST; e--) {
		m = cadre_strerror(e);
		ck_assert_ptr_nonnull(m);
		ck_assert_msg(strlen(m) > 0, "empty message for %d", e);
		ck_assert_msg(strcmp(m, "unknown error") != 0,
		    "code %d has no message", e);
	}
	/* Each message tells its error apart from the others. */
	for (e = CADRE_OK; e > CADRE_ERR_LAST; e--) {
		for (f = e - 1; f > CADRE_ERR_LAST; f--)
			ck_assert_str_ne(cadre_strerror(e), cadre_strerror(f));
	}
}
END_TEST

START_TEST(test_known_messages)
{
	ck_assert_str_eq(cadre_strerror(CADRE_OK), "success");
	ck_assert_str_eq(cadre_strerror(CADRE_ERR_NOMEM), "out of memory");
	ck_assert_str_eq(cadre_strerror(CADRE_ERR_INVALID), "invalid input");
	ck_assert_str_eq(cadre_strerror(CADRE_ERR_TOO_LARGE),
	    "size limit exceeded");
	ck_assert_str_eq(cadre_strerror(CADRE_ERR_NOT_FOUND), "not found");
	ck_assert_str_eq(cadre_strerror(CADRE_ERR_HOSTKEY), "host key mismatch");
	ck_assert_str_eq(cadre_strerror(CADRE_ERR_IO), "input/output error");
}
END_TEST

START_TEST(test_unknown_codes)
{
	static const int codes[] = {
		CADRE_ERR_LAST, CADRE_ERR_LAST - 1, -100, 1, 2, 42, INT_MAX,
		INT_MIN
	};
	size_t	i;

	for (i = 0; i < sizeof codes / sizeof codes[0]; i++)
		ck_assert_str_eq(cadre_strerror(codes[i]), "unknown error");
}
END_TEST

static Suite *
error_suite(void)
{
	Suite	*s = suite_create("error");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_every_code_has_message);
	tcase_add_test(tc, test_known_messages);
	tcase_add_test(tc, test_unknown_codes);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(error_suite());
}
