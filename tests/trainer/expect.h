/* What the trainer's plain-C test programs share (the trainer builds
 * without Check): EXPECT, which counts a failure and goes on, the summary
 * line main returns with, and scratch directories under $TMPDIR (/tmp
 * where it is unset). */
#ifndef CADRE_TESTS_EXPECT_H
#define CADRE_TESTS_EXPECT_H

#include <stdio.h>

#include "../scratch.h"

static int expect_failures;

#define EXPECT(cond, ...) do { \
	if (!(cond)) { \
		printf("FAIL %s:%d: ", __FILE__, __LINE__); \
		printf(__VA_ARGS__); \
		printf("\n"); \
		expect_failures++; \
	} \
} while (0)

/* Prints what ran and how many checks failed; main's exit status. */
static inline int
expect_summary(const char *what)
{
	if (expect_failures > 0) {
		printf("FAIL: %s: %d failure(s)\n", what, expect_failures);
		return 1;
	}
	printf("PASS: %s\n", what);
	return 0;
}

/* Creates the scratch directory $TMPDIR/NAME.XXXXXX into buf; 0, or -1
 * after counting a failure. */
static inline int
expect_mkdtemp(char *buf, size_t size, const char *name)
{
	if (scratch_template(buf, size, name) != 0 || mkdtemp(buf) == NULL) {
		printf("FAIL: cannot make a scratch directory %s\n", buf);
		expect_failures++;
		return -1;
	}
	return 0;
}

/* Removes dir and everything under it (links removed, not followed). */
static inline void
expect_rmtree(const char *dir)
{
	if (scratch_rmtree(dir) != 0) {
		printf("FAIL: could not remove %s\n", dir);
		expect_failures++;
	}
}

#endif
