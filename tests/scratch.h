/* Scratch paths for the C test programs: $TMPDIR/NAME.XXXXXX (/tmp where
 * TMPDIR is unset or not absolute), and removing a tree after. */
#ifndef CADRE_TESTS_SCRATCH_H
#define CADRE_TESTS_SCRATCH_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

/* Puts the template for NAME into buf (size bytes); 0, or -1 when it does
 * not fit. */
static inline int
scratch_template(char *buf, size_t size, const char *name)
{
	const char	*tmp = getenv("TMPDIR");
	int		 n;

	n = snprintf(buf, size, "%s/%s.XXXXXX",
	    tmp != NULL && *tmp == '/' ? tmp : "/tmp", name);
	return n > 0 && (size_t)n < size ? 0 : -1;
}

static inline int
scratch_remove_entry(const char *path, const struct stat *sb, int type,
    struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(path);
}

/* Removes path and everything under it; symbolic links are removed, not
 * followed. 0 or -1. */
static inline int
scratch_rmtree(const char *path)
{
	return nftw(path, scratch_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
