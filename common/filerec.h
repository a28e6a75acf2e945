/*
 * Verification records: what a file was (size, mtime, ctime, inode,
 * device) when its SHA-256 was last computed, so that a later start that
 * finds the same metadata trusts the hash without reading the file again.
 * Staging keeps one for the source tree (RUN_DIR/stage/K.src) and one per
 * node for each copy (DST/.cadre-stage.NODE.rec); the loader one per shard
 * set (DIR/verified.rec). The text format, one line per file after a
 * "cadre-filerec 1" line:
 *   SHA256HEX SIZE MTIME_NS CTIME_NS INODE DEVICE PATH
 * PATH is relative to the record's directory and runs to the end of the
 * line. ctime is in it because nothing short of the kernel sets it: a
 * file rewritten with its old size and mtime restored still differs.
 */
#ifndef CADRE_FILEREC_H
#define CADRE_FILEREC_H

#include <sys/stat.h>

#include <stddef.h>
#include <stdint.h>

#define FILEREC_MAGIC	"cadre-filerec 1"
#define FILEREC_MAX	((size_t)1 << 30)	/* bytes of a record file */
#define FILEREC_PATH_MAX 4096

struct filerec {
	char		*path;
	char		 sha256[65];
	int64_t		 size;
	int64_t		 mtime_ns;
	int64_t		 ctime_ns;
	uint64_t	 ino;
	uint64_t	 dev;
};

/* Sorted by path once filerec_sort() ran (the loaders sort). */
struct filerec_set {
	struct filerec	*v;
	size_t		 n;
	size_t		 cap;
};

/* Parses a record's text; a line that is not one is an error naming it
 * (line N: what), CADRE_ERR_PARSE. */
int filerec_parse(const char *text, size_t len, struct filerec_set *s,
    char *msg, size_t msglen);
/* Loads path into s (sorted): 0; CADRE_ERR_NOT_FOUND when there is none;
 * another error with msg naming the file and line. */
int filerec_load(const char *path, struct filerec_set *s, char *msg,
    size_t msglen);
/* Writes s to path atomically (fs_write_atomic), mode 0644. */
int filerec_save(const char *path, const struct filerec_set *s);
void filerec_sort(struct filerec_set *s);
void filerec_free(struct filerec_set *s);

/* Appends path with sb's metadata and the hash. */
void filerec_add(struct filerec_set *s, const char *path,
    const struct stat *sb, const char *sha256);
/* The entry for path in a sorted set, or NULL. */
const struct filerec *filerec_find(const struct filerec_set *s,
    const char *path);
/* Whether sb is the file r recorded: size, mtime, ctime, inode, device. */
int filerec_same(const struct filerec *r, const struct stat *sb);

#endif
