/* What the Check unit tests share: running a suite, scratch files and
 * directories under $TMPDIR (/tmp where it is unset), removed after, and
 * the helpers and checks that more than one test needs. */
#ifndef CADRE_TESTS_UNIT_H
#define CADRE_TESTS_UNIT_H

#include <check.h>
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

#endif
