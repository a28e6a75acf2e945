#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"
#include "unit.h"

START_TEST(test_xmalloc_basic)
{
	char	*p;

	p = xmalloc(16);
	ck_assert_ptr_nonnull(p);
	memset(p, 'x', 16);
	free(p);

	/* Zero bytes is still a pointer that can be freed. */
	p = xmalloc(0);
	ck_assert_ptr_nonnull(p);
	free(p);
}
END_TEST

START_TEST(test_xcalloc_zeroed)
{
	unsigned char	*p;
	size_t		 i;

	p = xcalloc(100, 3);
	for (i = 0; i < 300; i++)
		ck_assert_uint_eq(p[i], 0);
	free(p);
	p = xcalloc(0, 8);
	ck_assert_ptr_nonnull(p);
	free(p);
	p = xcalloc(8, 0);
	ck_assert_ptr_nonnull(p);
	free(p);
}
END_TEST

START_TEST(test_xreallocarray_keeps_contents)
{
	int	*a = NULL;
	size_t	 i;

	a = xreallocarray(a, 4, sizeof *a);
	for (i = 0; i < 4; i++)
		a[i] = (int)i * 7;
	a = xreallocarray(a, 10000, sizeof *a);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(a[i], (int)i * 7);
	a = xreallocarray(a, 2, sizeof *a);
	ck_assert_int_eq(a[1], 7);
	/* Zero elements gives a valid pointer, not a free. */
	a = xreallocarray(a, 0, sizeof *a);
	ck_assert_ptr_nonnull(a);
	free(a);
}
END_TEST

START_TEST(test_xreallocarray_overflow)
{
	/* Would wrap to a small size without the check. */
	xreallocarray(NULL, SIZE_MAX / 2 + 2, 2);
}
END_TEST

START_TEST(test_xreallocarray_overflow_large)
{
	xreallocarray(NULL, SIZE_MAX, SIZE_MAX);
}
END_TEST

START_TEST(test_xcalloc_overflow)
{
	xcalloc(SIZE_MAX / 4, 8);
}
END_TEST

START_TEST(test_xstrdup)
{
	char	*s;

	s = xstrdup("hello");
	ck_assert_str_eq(s, "hello");
	free(s);
	s = xstrdup("");
	ck_assert_str_eq(s, "");
	free(s);
}
END_TEST

START_TEST(test_xstrndup)
{
	char	*s;

	s = xstrndup("hello", 3);
	ck_assert_str_eq(s, "hel");
	free(s);
	/* n past the end stops at the NUL. */
	s = xstrndup("hi", 100);
	ck_assert_str_eq(s, "hi");
	free(s);
	s = xstrndup("hello", 0);
	ck_assert_str_eq(s, "");
	free(s);
}
END_TEST

static int
call_xvasprintf(char **ret, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = xvasprintf(ret, fmt, ap);
	va_end(ap);
	return n;
}

START_TEST(test_xasprintf)
{
	char	*s = NULL, *big;
	int	 n;

	n = xasprintf(&s, "%s-%d-%05.1f", "abc", 42, 3.14159);
	ck_assert_str_eq(s, "abc-42-003.1");
	ck_assert_int_eq(n, (int)strlen(s));
	free(s);

	n = xasprintf(&s, "%s", "");
	ck_assert_int_eq(n, 0);
	ck_assert_str_eq(s, "");
	free(s);

	n = call_xvasprintf(&s, "%c%c%u", 'o', 'k', 7u);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(s, "ok7");
	free(s);

	big = xmalloc(100001);
	memset(big, 'z', 100000);
	big[100000] = '\0';
	n = xasprintf(&s, "<%s>", big);
	ck_assert_int_eq(n, 100002);
	ck_assert_int_eq(s[0], '<');
	ck_assert_int_eq(s[100001], '>');
	free(s);
	free(big);
}
END_TEST

static Suite *
xmalloc_suite(void)
{
	Suite	*s = suite_create("xmalloc");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_xmalloc_basic);
	tcase_add_test(tc, test_xcalloc_zeroed);
	tcase_add_test(tc, test_xreallocarray_keeps_contents);
	tcase_add_exit_test(tc, test_xreallocarray_overflow, 1);
	tcase_add_exit_test(tc, test_xreallocarray_overflow_large, 1);
	tcase_add_exit_test(tc, test_xcalloc_overflow, 1);
	tcase_add_test(tc, test_xstrdup);
	tcase_add_test(tc, test_xstrndup);
	tcase_add_test(tc, test_xasprintf);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(xmalloc_suite());
}
