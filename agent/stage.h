/*
 * Staging: copies a tree to each node's local disk before the ranks
 * start (`launch --stage SRC:DST`, spec stage.to), through the agents.
 *
 * The head node lists SRC once into a manifest, RUN_DIR/stage/K.json:
 *   {"version": 1, "src": "/abs/src", "dst": "/local/%n/data",
 *    "verify": "meta" or "full" (optional: "meta"),
 *    "files": [{"path": "a/b.bin", "size": 123, "mode": 420,
 *               "sha256": "64 hex"}, ...]}
 * and each node runs `cadre-agent stage --manifest FILE...` through its
 * agent (rsh), all nodes at once: a file already at DST with the size and
 * checksum of the manifest is skipped, one that differs (a corrupted or
 * partial copy) is copied again; every copy is hashed as it passes and
 * checked before it is renamed into place. Verification records
 * (common/filerec.h) of the source (RUN_DIR/stage/K.src) and of each
 * node's copies (DST/.cadre-stage.NODE.rec) let a later start trust the
 * metadata of what did not change instead of hashing it again; with
 * "verify": "full" in the manifest (launch --stage-verify full) every
 * file is hashed. `%n` in DST is the node's name (for several "nodes" on
 * one machine), `%%` a percent sign.
 */
#ifndef CADRE_AGENT_STAGE_H
#define CADRE_AGENT_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define STAGE_PAIRS_MAX		16		/* --stage per launch */
#define STAGE_MANIFEST_MAX	((size_t)256 << 20)	/* bytes of K.json */
#define STAGE_FILES_MAX		4000000		/* files per manifest */
#define STAGE_PATH_MAX		4096		/* bytes of a path */
#define STAGE_NODE_OUT_MAX	(64u << 10)	/* one node's report */
#define STAGE_PARALLEL		64		/* nodes staged at once */
#define STAGE_COPY_TRIES	3		/* a copy that fails its check */
#define STAGE_CHUNK		((size_t)4 << 20)	/* bytes read at a time */
#define STAGE_THREADS		4		/* files in flight per node */
/* DST/.cadre-stage.NODE.rec: the node's verification record of its
 * copies (common/filerec.h); .lock: held while the node stages. */
#define STAGE_NODE_PREFIX	".cadre-stage."

struct stage_pair {
	char	*src;	/* as given */
	char	*dst;
};

/* What staging did, summed over nodes and pairs. */
struct stage_totals {
	int64_t	files;		/* manifest entries times nodes */
	int64_t	bytes;		/* bytes copied */
	int64_t	copied;		/* files copied (fresh) */
	int64_t	skipped;	/* already there with the right checksum */
	int64_t	redone;		/* there, but wrong: copied again */
	int64_t	hashed;		/* copies there checked by reading them
				 * (the rest of skipped: by their record) */
};

/* One parsed manifest. */
struct stage_file {
	char		*path;	/* relative, checked: no "..", no "//" */
	int64_t		 size;
	unsigned	 mode;	/* permission bits */
	char		 sha256[65];
};
struct stage_manifest {
	char			*src;
	char			*dst;
	int			 verify_full;	/* "verify": "full" */
	struct stage_file	*files;
	size_t			 n;
};

/* "SRC:DST" (both absolute; the first ':' followed by '/' splits) into
 * p: 0, or CADRE_ERR_INVALID with the fix in msg. */
int stage_pair_parse(const char *arg, struct stage_pair *p, char *msg,
    size_t msglen);
void stage_pair_free(struct stage_pair *p);

/* Lists each pair's SRC into RUN_DIR/stage/K.json, hashing the files
 * that RUN_DIR/stage/K.src does not vouch for (all of them when
 * verify_full), and writes K.src for the next start. */
int stage_prepare(const char *rundir, const struct stage_pair *pairs,
    size_t npairs, int verify_full, char *msg, size_t msglen);
/*
 * Runs `cadre-agent stage` (clean: `stage --clean`) for the npairs
 * manifests on every node through its agent, STAGE_PARALLEL nodes at a
 * time. 0 with *totals filled, or an error naming the first node that
 * failed in msg. sigfd (-1: none) is launch's signal pipe: SIGTERM,
 * SIGINT or SIGHUP there stops the copies, CADRE_ERR_CANCELLED.
 */
int stage_nodes(const char *rundir, char *const *nodes, size_t nnodes,
    size_t npairs, int clean, int sigfd, struct stage_totals *totals,
    char *msg, size_t msglen);
/* totals as a JSON object (status.json "stage"). */
json_t *stage_totals_json(const struct stage_totals *t);

/* Parses a manifest text (at most STAGE_MANIFEST_MAX bytes): every field
 * checked. On error msg says what and where. */
int stage_manifest_parse(const char *text, size_t len,
    struct stage_manifest *m, char *msg, size_t msglen);
void stage_manifest_free(struct stage_manifest *m);
/* dst with %n replaced by node and %% by %: CADRE_ERR_INVALID for any
 * other %. Caller frees *out. */
int stage_expand_dst(const char *dst, const char *node, char **out);

/* SHA-256 of fd from its current offset to the end into hex; *size:
 * bytes read; buf: STAGE_CHUNK bytes. Both the manifest and the node's
 * copy hash with it. */
int stage_hash_fd(int fd, char hex[65], int64_t *size, char *buf);

/* `cadre-agent stage`, run on a node (stage_node.c). */
int cmd_stage(int argc, char **argv);

#endif
