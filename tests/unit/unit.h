/* What the Check unit tests share: running a suite, scratch files and
 * directories under $TMPDIR (/tmp where it is unset), removed after, and
 * the helpers and checks that more than one test needs. */
#ifndef CADRE_TESTS_UNIT_H
#define CADRE_TESTS_UNIT_H

#include <check.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../scratch.h"

/* Runs every case of s; main's exit status. */
static inline int
unit_run(Suite *s)
{
	SRunner	*sr = srunner_create(s);
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* Creates a scratch directory $TMPDIR/NAME.XXXXXX; its path in buf. */
static inline void
unit_mkdtemp(char *buf, size_t size, const char *name)
{
	ck_assert_msg(scratch_template(buf, size, name) == 0,
	    "TMPDIR too long for %s", name);
	ck_assert_msg(mkdtemp(buf) != NULL, "mkdtemp %s", buf);
}

/* Creates an empty scratch file $TMPDIR/NAME.XXXXXX; its path in buf,
 * its descriptor returned (open for reading and writing). */
static inline int
unit_mkstemp(char *buf, size_t size, const char *name)
{
	int	fd;

	ck_assert_msg(scratch_template(buf, size, name) == 0,
	    "TMPDIR too long for %s", name);
	fd = mkstemp(buf);
	ck_assert_msg(fd != -1, "mkstemp %s", buf);
	return fd;
}

/* Removes path and everything under it; symbolic links are removed, not
 * followed. */
static inline void
unit_rmtree(const char *path)
{
	ck_assert_msg(scratch_rmtree(path) == 0, "could not remove %s", path);
}

/* The whole of the file at path, NUL-terminated; the caller frees it. */
static inline char *
unit_read_file(const char *path)
{
	FILE	*f;
	char	*s;
	long	 n;

	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	s = calloc(1, (size_t)n + 1);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return s;
}

/* Writes text to the file at path, replacing what it held. */
static inline void
unit_write_file(const char *path, const char *text)
{
	FILE	*f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
}

/* Seconds on the monotonic clock, for bounds on how long a call takes. */
static inline double
unit_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Parsers into an int64_t (size_parse, duration_parse, str_to_int64): 0
 * and the value, or an error and the output left as it was. */
typedef int (*unit_parse_fn)(const char *, int64_t *);

struct unit_parse_case {
	const char	*s;
	int64_t		 want;
};

/* Each of the n cases parses to its value. */
static inline void
unit_parse_good(unit_parse_fn parse, const struct unit_parse_case *c,
    size_t n)
{
	int64_t	v;
	size_t	i;

	for (i = 0; i < n; i++) {
		v = -1;
		ck_assert_msg(parse(c[i].s, &v) == 0, "\"%s\" refused", c[i].s);
		ck_assert_msg(v == c[i].want, "\"%s\" gave %" PRId64
		    ", not %" PRId64, c[i].s, v, c[i].want);
	}
}

/* Each of the n strings is refused with err (its name in errname), and
 * the output is left as it was. */
static inline void
unit_parse_refused(unit_parse_fn parse, const char *const *s, size_t n,
    int err, const char *errname)
{
	int64_t	v;
	size_t	i;
	int	r;

	for (i = 0; i < n; i++) {
		v = 12345;
		r = parse(s[i], &v);
		ck_assert_msg(r == err, "\"%s\" gave %d, not %s", s[i], r,
		    errname);
		ck_assert_msg(v == 12345, "\"%s\" changed the output", s[i]);
	}
}

#define UNIT_NITEMS(a)	(sizeof (a) / sizeof (a)[0])
/* unit_parse_refused on the array table, err named in the messages. */
#define UNIT_PARSE_REFUSED(parse, table, err) \
	unit_parse_refused((parse), (table), UNIT_NITEMS(table), (err), #err)

/* Defines test_parse_good, test_parse_invalid and test_parse_range: parse
 * against the tables good (struct unit_parse_case), invalid and too_large
 * (strings) of the file that expands it. */
#define UNIT_PARSE_TESTS(parse)						\
	START_TEST(test_parse_good)					\
	{								\
		unit_parse_good((parse), good, UNIT_NITEMS(good));	\
	}								\
	END_TEST							\
	START_TEST(test_parse_invalid)					\
	{								\
		UNIT_PARSE_REFUSED((parse), invalid, CADRE_ERR_INVALID);	\
	}								\
	END_TEST							\
	START_TEST(test_parse_range)					\
	{								\
		UNIT_PARSE_REFUSED((parse), too_large, CADRE_ERR_RANGE);	\
	}								\
	END_TEST

#endif
