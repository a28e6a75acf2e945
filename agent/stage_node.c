/* Staging, the node's side: `cadre-agent stage`, run on each node through
 * its agent, copies what the manifests list from SRC to DST, verified by
 * SHA-256 (or removes it again, --clean). The manifests and the fan-out
 * are in stage.c; the format in stage.h. */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "buf.h"
#include "error.h"
#include "log.h"
#include "sha256.h"
#include "stage.h"
#include "strutil.h"
#include "xmalloc.h"

struct node_stats {
	int64_t	files, bytes, copied, skipped, redone;
};

/* mkdir -p of the directories above path (not path itself): 0, or
 * CADRE_ERR_SYSTEM with errno set. */
static int
mkdir_parents(char *path)
{
	char	*s;

	for (s = path + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		if (mkdir(path, 0755) == -1 && errno != EEXIST) {
			*s = '/';
			return CADRE_ERR_SYSTEM;
		}
		*s = '/';
	}
	return 0;
}

/* Copies src to tmp hashing the bytes read; then reads tmp back and
 * hashes it. 0 when both hashes are want's, CADRE_ERR_IO when one is not
 * (detail in msg), CADRE_ERR_SYSTEM on an error. */
static int
copy_verified(const char *src, const char *tmp, const struct stage_file *f,
    char *buf, int64_t *copied, char *msg, size_t msglen)
{
	struct sha256_ctx	 c;
	uint8_t			 d[SHA256_DIGEST_LEN];
	char			 hex[65];
	int64_t			 size = 0;
	ssize_t			 n, w, off;
	int			 in = -1, out = -1, error = CADRE_ERR_SYSTEM;

	if ((in = open(src, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(msg, msglen, "%s: %s", src, strerror(errno));
		goto out;
	}
	unlink(tmp);
	if ((out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600)) == -1) {
		snprintf(msg, msglen, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	sha256_init(&c);
	for (;;) {
		n = read(in, buf, STAGE_CHUNK);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			snprintf(msg, msglen, "%s: %s", src, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		sha256_update(&c, buf, (size_t)n);
		for (off = 0; off < n; off += w) {
			if ((w = write(out, buf + off, (size_t)(n - off))) ==
			    -1) {
				if (errno == EINTR) {
					w = 0;
					continue;
				}
				snprintf(msg, msglen, "%s: %s", tmp,
				    strerror(errno));
				goto out;
			}
		}
		size += n;
	}
	sha256_final(&c, d);
	sha256_hex(d, sizeof d, hex);
	*copied += size;
	if (size != f->size || strcmp(hex, f->sha256) != 0) {
		snprintf(msg, msglen, "%s changed since the manifest was made "
		    "(%lld bytes, sha256 %.12s..., listed %lld bytes, %.12s...)",
		    src, (long long)size, hex, (long long)f->size, f->sha256);
		error = CADRE_ERR_INVALID;
		goto out;
	}
	if (fchmod(out, f->mode & 07777) == -1 || close(out) == -1) {
		out = -1;
		snprintf(msg, msglen, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	/* Read the copy back: what landed on the disk, not what we sent. */
	if ((out = open(tmp, O_RDONLY | O_CLOEXEC)) == -1 ||
	    stage_hash_fd(out, hex, &size, buf) != 0) {
		snprintf(msg, msglen, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	if (size != f->size || strcmp(hex, f->sha256) != 0) {
		snprintf(msg, msglen, "%s: the copy reads back as %lld bytes, "
		    "sha256 %.12s..., not %lld, %.12s...", tmp,
		    (long long)size, hex, (long long)f->size, f->sha256);
		error = CADRE_ERR_IO;
		goto out;
	}
	error = 0;
 out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (error != 0)
		unlink(tmp);
	return error;
}

/* Whether path holds f already: same size and checksum. */
static int
already_there(const char *path, const struct stage_file *f, char *buf,
    int *present)
{
	struct stat	sb;
	char		hex[65];
	int64_t		size;
	int		fd, same = 0;

	*present = 0;
	if (lstat(path, &sb) == -1 || !S_ISREG(sb.st_mode))
		return 0;
	*present = 1;
	if (sb.st_size != f->size)
		return 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	if (stage_hash_fd(fd, hex, &size, buf) == 0 && size == f->size &&
	    strcmp(hex, f->sha256) == 0)
		same = 1;
	close(fd);
	return same;
}

static int
stage_one(const struct stage_manifest *m, const char *node,
    struct node_stats *ns, char *msg, size_t msglen)
{
	char	*dst = NULL, *src = NULL, *to = NULL, *tmp = NULL, *buf;
	size_t	 i;
	int	 present, tries, error = 0;

	if (stage_expand_dst(m->dst, node, &dst) != 0) {
		snprintf(msg, msglen, "%s: a bad destination", m->dst);
		return CADRE_ERR_INVALID;
	}
	buf = xmalloc(STAGE_CHUNK);
	for (i = 0; i < m->n && error == 0; i++) {
		const struct stage_file *f = &m->files[i];

		ns->files++;
		xasprintf(&src, "%s/%s", m->src, f->path);
		xasprintf(&to, "%s/%s", dst, f->path);
		/* The node in the name: "nodes" sharing one disk (one
		 * machine, or a DST on a shared file system) copy side by
		 * side, and the last rename wins with the same bytes. */
		xasprintf(&tmp, "%s.cadre-stage.%s", to, node);
		if (already_there(to, f, buf, &present)) {
			ns->skipped++;
		} else if ((error = mkdir_parents(to)) != 0) {
			cadre_errf(msg, msglen, error, "%s: cannot make its "
			    "directory: %s", to, strerror(errno));
		} else {
			if (present) {
				log_notice("%s: %s differs from %s: copying "
				    "it again", node, to, src);
				ns->redone++;
			} else
				ns->copied++;
			error = CADRE_ERR_IO;
			for (tries = 0; tries < STAGE_COPY_TRIES &&
			    error == CADRE_ERR_IO; tries++) {
				if (tries > 0)
					log_warn("%s: %s; copying again", node,
					    msg);
				error = copy_verified(src, tmp, f, buf,
				    &ns->bytes, msg, msglen);
			}
			if (error == 0 && rename(tmp, to) == -1) {
				snprintf(msg, msglen, "%s: %s", to,
				    strerror(errno));
				unlink(tmp);
				error = CADRE_ERR_SYSTEM;
			}
		}
		free(src);
		free(to);
		free(tmp);
		src = to = tmp = NULL;
	}
	free(buf);
	free(dst);
	return error;
}

/* Removes the manifest's files from DST, then the directories left empty
 * (deepest first), DST itself last: nothing that staging did not put
 * there. */
static int
clean_one(const struct stage_manifest *m, const char *node,
    struct node_stats *ns)
{
	char	*dst = NULL, *to = NULL, *s;
	size_t	 i;

	if (stage_expand_dst(m->dst, node, &dst) != 0)
		return CADRE_ERR_INVALID;
	for (i = 0; i < m->n; i++) {
		xasprintf(&to, "%s/%s", dst, m->files[i].path);
		if (unlink(to) == 0)
			ns->files++;
		else if (errno != ENOENT)
			log_warn("%s: %s", to, strerror(errno));
		/* Parents, as far as they are empty. */
		while ((s = strrchr(to, '/')) != NULL &&
		    (size_t)(s - to) > strlen(dst)) {
			*s = '\0';
			if (rmdir(to) == -1)
				break;
		}
		free(to);
	}
	(void)rmdir(dst);
	free(dst);
	return 0;
}

static void
stage_usage(FILE *f)
{
	fprintf(f,
	    "usage: cadre-agent stage [--node NAME] [--clean] --manifest FILE...\n"
	    "  Run on each node by launch --stage, through its agent. Copies the files\n"
	    "  FILE lists (RUN_DIR/stage/K.json, written by launch) from its SRC to\n"
	    "  its DST (%%n: the node's name): a file already there with the same\n"
	    "  size and SHA-256 is skipped, one that differs is copied again; each\n"
	    "  copy is read back and checked before it is renamed into place\n"
	    "  (%d tries). --clean removes what the manifest lists from DST instead.\n"
	    "  NAME defaults to $CADRE_NODE, then the short host name. Prints one JSON\n"
	    "  line: {\"node\", \"files\", \"bytes\", \"copied\", \"skipped\", \"redone\",\n"
	    "  \"seconds\"}. Exit status: 0, 1 error, 2 usage.\n",
	    STAGE_COPY_TRIES);
}

int
cmd_stage(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "manifest", required_argument, NULL, 'm' },
		{ "node", required_argument, NULL, 'n' },
		{ "clean", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct stage_manifest	 m;
	struct node_stats	 ns;
	struct cbuf		 text;
	const char		*manifests[STAGE_PAIRS_MAX], *node = NULL;
	char			 host[256], msg[1024];
	size_t			 nman = 0, k;
	double			 t0;
	int			 c, clean = 0, error = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (nman >= STAGE_PAIRS_MAX) {
				log_error("more than %d --manifest",
				    STAGE_PAIRS_MAX);
				return 2;
			}
			manifests[nman++] = optarg;
			break;
		case 'n':
			node = optarg;
			break;
		case 'c':
			clean = 1;
			break;
		case 'h':
			stage_usage(stdout);
			return 0;
		default:
			stage_usage(stderr);
			return 2;
		}
	}
	if (nman == 0 || optind != argc) {
		stage_usage(stderr);
		return 2;
	}
	if (node == NULL)
		node = getenv("CADRE_NODE");
	if (node == NULL || *node == '\0') {
		if (gethostname(host, sizeof host) == -1)
			fatal("gethostname");
		host[sizeof host - 1] = '\0';
		host[strcspn(host, ".")] = '\0';
		node = host;
	}
	if (!str_is_name(node, AGENT_NODE_MAX)) {
		log_error("--node %s: expected [A-Za-z0-9._-]", node);
		return 2;
	}
	memset(&ns, 0, sizeof ns);
	t0 = now_mono();
	for (k = 0; k < nman && error == 0; k++) {
		cbuf_init(&text, STAGE_MANIFEST_MAX);
		if ((error = cbuf_read_file(&text, manifests[k])) != 0) {
			log_error("%s: %s", manifests[k],
			    error == CADRE_ERR_SYSTEM ? strerror(errno) :
			    cadre_strerror(error));
		} else if ((error = stage_manifest_parse(text.data, text.len,
		    &m, msg, sizeof msg)) != 0) {
			log_error("%s: %s", manifests[k], msg);
		} else {
			error = clean ? clean_one(&m, node, &ns) :
			    stage_one(&m, node, &ns, msg, sizeof msg);
			if (error != 0)
				log_error("%s: staging %s: %s", node, m.src,
				    msg);
			stage_manifest_free(&m);
		}
		cbuf_free(&text);
	}
	if (error != 0)
		return 1;
	printf("{\"node\": \"%s\", \"files\": %lld, \"bytes\": %lld, "
	    "\"copied\": %lld, \"skipped\": %lld, \"redone\": %lld, "
	    "\"seconds\": %.3f}\n", node, (long long)ns.files,
	    (long long)ns.bytes, (long long)ns.copied, (long long)ns.skipped,
	    (long long)ns.redone, now_mono() - t0);
	return 0;
}
