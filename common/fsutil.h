/* File system steps that the trainer, the agent and the daemon share for
 * writing durably and cleaning up. */
#ifndef CADRE_FSUTIL_H
#define CADRE_FSUTIL_H

#include <stddef.h>

/* fsync()s directory dir, so that a rename or unlink in it survives a
 * crash. 0, or CADRE_ERR_SYSTEM with errno set. */
int fs_fsync_dir(const char *dir);

/*
 * Removes the entries of dir (plain files: a checkpoint or a staging dir
 * has no subdirectories), then dir itself. It goes on past an entry it
 * cannot remove, so that as much as possible is gone. 0 when dir is gone
 * (or never was), else CADRE_ERR_SYSTEM with errno of the first failure.
 */
int fs_remove_flat_dir(const char *dir);

/* Removes path and everything under it, not following symbolic links (a
 * link is removed, not what it points to), going on past what it cannot
 * remove. 0 when path is gone, else CADRE_ERR_SYSTEM (errno of the first
 * failure). For trees cadre did not write itself, such as a program's
 * checkpoints. */
int fs_remove_tree(const char *path);

/* Writes len bytes of data to path atomically and durably: a temporary
 * file NAME.tmp.XXXXXX in the same directory, fsync, rename, fsync of the
 * directory; mode as given. The one way cadre replaces a file
 * (cjson_write_atomic too). 0, or CADRE_ERR_SYSTEM (errno). */
int fs_write_atomic(const char *path, const void *data, size_t len, int mode);

/* Whether path is a regular file this process may execute. */
int fs_is_executable(const char *path);
/* Whether name is found as a program on $PATH (/usr/bin:/bin unset), as
 * execvp would look for it. */
int fs_on_path(const char *name);
/* Whether path is a file starting with SquashFS's magic. */
int fs_is_squashfs(const char *path);

#endif
