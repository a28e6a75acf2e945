/* File system steps that the trainer, the agent and the daemon share for
 * writing durably and cleaning up. */
#ifndef CADRE_FSUTIL_H
#define CADRE_FSUTIL_H

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

#endif
