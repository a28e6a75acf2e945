/* What the Check unit tests share: running a suite, and scratch files and
 * directories under $TMPDIR (/tmp where it is unset), removed after. */
#ifndef CADRE_TESTS_UNIT_H
#define CADRE_TESTS_UNIT_H

#include <check.h>
#include <stdlib.h>

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

#endif
