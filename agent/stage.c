/* Staging: the manifest of a tree (head node) and the fan-out over the
 * agents; the verified copy on each node (`cadre-agent stage`) is
 * stage_node.c. See stage.h for the format. */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "agent.h"
#include "buf.h"
#include "error.h"
#include "filerec.h"
#include "json.h"
#include "log.h"
#include "sha256.h"
#include "stage.h"
#include "strutil.h"
#include "xmalloc.h"

#define STAGE_VERSION	1
#define STAGE_DEPTH_MAX	64

static int stage_pair_parse_abs(const char *src, const char *dst,
    const char *arg, struct stage_pair *p, char *msg, size_t msglen);

int
stage_pair_parse(const char *arg, struct stage_pair *p, char *msg,
    size_t msglen)
{
	const char	*colon;
	char		*src = NULL, *dst = NULL, *var = NULL, *half;
	int		 rc;

	p->src = p->dst = NULL;
	/* SRC and DST are absolute, or start with $NAME (docs/spec.md
	 * "path"), expanded here in launch's environment. */
	colon = NULL;
	if (arg[0] == '/' || arg[0] == '$')
		for (colon = strchr(arg, ':'); colon != NULL &&
		    colon[1] != '/' && colon[1] != '$';
		    colon = strchr(colon + 1, ':'))
			;
	if (colon == NULL || colon == arg) {
		snprintf(msg, msglen, "--stage %s: expected SRC:DST, two "
		    "absolute paths (e.g. /project/data:/tmp/data)", arg);
		return CADRE_ERR_INVALID;
	}
	half = xstrndup(arg, (size_t)(colon - arg));
	rc = path_expand_env(half, &src, &var);
	free(half);
	if (rc == 0) {
		free(var);
		rc = path_expand_env(colon + 1, &dst, &var);
	}
	if (rc != 0) {
		snprintf(msg, msglen, "--stage %s: %s%s%s", arg,
		    var != NULL ? "$" : "", var != NULL ? var : "",
		    rc == CADRE_ERR_NOT_FOUND ? " is not set" :
		    ": expected an absolute path");
		free(var);
		free(src);
		return CADRE_ERR_INVALID;
	}
	free(var);
	rc = stage_pair_parse_abs(src, dst, arg, p, msg, msglen);
	free(src);
	free(dst);
	return rc;
}

/* SRC and DST expanded: bounds and DST's %n. */
static int
stage_pair_parse_abs(const char *src, const char *dst, const char *arg,
    struct stage_pair *p, char *msg, size_t msglen)
{
	char	*probe = NULL;

	if (strlen(src) >= STAGE_PATH_MAX || strlen(dst) >= STAGE_PATH_MAX) {
		snprintf(msg, msglen, "--stage: a path longer than %d bytes",
		    STAGE_PATH_MAX - 1);
		return CADRE_ERR_TOO_LARGE;
	}
	if (stage_expand_dst(dst, "node", &probe) != 0) {
		snprintf(msg, msglen, "--stage %s: in DST, %%n is the node's "
		    "name and %%%% a percent sign; no other %% may appear",
		    arg);
		return CADRE_ERR_INVALID;
	}
	free(probe);
	p->src = xstrdup(src);
	p->dst = xstrdup(dst);
	return 0;
}

void
stage_pair_free(struct stage_pair *p)
{
	free(p->src);
	free(p->dst);
	p->src = p->dst = NULL;
}

int
stage_expand_dst(const char *dst, const char *node, char **out)
{
	struct cbuf	b;
	const char	*s;

	*out = NULL;
	cbuf_init(&b, 2 * STAGE_PATH_MAX);
	for (s = dst; *s != '\0'; s++) {
		if (*s != '%') {
			if (cbuf_addc(&b, *s) != 0)
				goto bad;
			continue;
		}
		s++;
		if (*s == 'n') {
			if (cbuf_adds(&b, node) != 0)
				goto bad;
		} else if (*s == '%') {
			if (cbuf_addc(&b, '%') != 0)
				goto bad;
		} else
			goto bad;
	}
	if (b.len == 0 || b.data[0] != '/')
		goto bad;
	*out = cbuf_detach(&b, NULL);
	return 0;
 bad:
	cbuf_free(&b);
	return CADRE_ERR_INVALID;
}

/* ------------------------------------------------------------ manifest */

/* A relative path we are willing to join to DST: no "..", ".", empty
 * components, leading '/', or control characters. */
static int
rel_path_ok(const char *p)
{
	const char	*c = p, *s;
	size_t		 len;

	if (*p == '\0' || *p == '/' || strlen(p) >= STAGE_PATH_MAX)
		return 0;
	for (s = p; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	for (;;) {
		s = strchr(c, '/');
		len = s != NULL ? (size_t)(s - c) : strlen(c);
		if (len == 0 || (len == 1 && c[0] == '.') ||
		    (len == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
		if (s == NULL)
			return 1;
		c = s + 1;
	}
}

void
stage_manifest_free(struct stage_manifest *m)
{
	size_t	i;

	for (i = 0; i < m->n; i++)
		free(m->files[i].path);
	free(m->files);
	free(m->src);
	free(m->dst);
	memset(m, 0, sizeof *m);
}

int
stage_manifest_parse(const char *text, size_t len, struct stage_manifest *m,
    char *msg, size_t msglen)
{
	json_t		*root = NULL, *files, *f, *vj;
	json_error_t	 jerr;
	const char	*src, *dst, *path, *hash;
	char		*probe = NULL;
	int64_t		 v, size, mode;
	size_t		 i;
	int		 error;

	memset(m, 0, sizeof *m);
	if ((error = cjson_loadb(text, len, STAGE_MANIFEST_MAX, &root,
	    &jerr)) != 0) {
		if (error == CADRE_ERR_PARSE)
			snprintf(msg, msglen, "line %d column %d: %s",
			    jerr.line, jerr.column, jerr.text);
		else
			snprintf(msg, msglen, "%s", cadre_strerror(error));
		goto out;
	}
	error = CADRE_ERR_INVALID;
	if (!json_is_object(root)) {
		snprintf(msg, msglen, "not a JSON object");
		goto out;
	}
	if (cjson_get_int(root, "version", &v) != 0 || v != STAGE_VERSION) {
		snprintf(msg, msglen, "\"version\": expected %d",
		    STAGE_VERSION);
		if (v > STAGE_VERSION)
			error = CADRE_ERR_VERSION;
		goto out;
	}
	if (cjson_get_string(root, "src", &src) != 0 || src[0] != '/' ||
	    strlen(src) >= STAGE_PATH_MAX) {
		snprintf(msg, msglen, "\"src\": expected an absolute path");
		goto out;
	}
	if (cjson_get_string(root, "dst", &dst) != 0 ||
	    strlen(dst) >= STAGE_PATH_MAX ||
	    stage_expand_dst(dst, "node", &probe) != 0) {
		snprintf(msg, msglen, "\"dst\": expected an absolute path "
		    "(%%n: the node's name)");
		goto out;
	}
	if ((vj = json_object_get(root, "verify")) != NULL) {
		if (json_is_string(vj) &&
		    strcmp(json_string_value(vj), "full") == 0)
			m->verify_full = 1;
		else if (!json_is_string(vj) ||
		    strcmp(json_string_value(vj), "meta") != 0) {
			snprintf(msg, msglen, "\"verify\": expected \"meta\" "
			    "or \"full\"");
			goto out;
		}
	}
	files = json_object_get(root, "files");
	if (!json_is_array(files) || json_array_size(files) >
	    STAGE_FILES_MAX) {
		snprintf(msg, msglen, "\"files\": expected an array of at "
		    "most %d entries", STAGE_FILES_MAX);
		goto out;
	}
	m->files = xcalloc(json_array_size(files) + 1, sizeof *m->files);
	json_array_foreach(files, i, f) {
		if (!json_is_object(f) ||
		    cjson_get_string(f, "path", &path) != 0 ||
		    !rel_path_ok(path) ||
		    cjson_get_int(f, "size", &size) != 0 || size < 0 ||
		    cjson_get_int(f, "mode", &mode) != 0 || mode < 0 ||
		    mode > 07777 ||
		    cjson_get_string(f, "sha256", &hash) != 0 ||
		    !sha256_hex_ok(hash, strlen(hash))) {
			snprintf(msg, msglen, "files[%zu]: expected {\"path\": "
			    "a relative path without '..', \"size\": >= 0, "
			    "\"mode\": 0..07777, \"sha256\": 64 lower-case hex "
			    "digits}", i);
			goto out;
		}
		m->files[m->n].path = xstrdup(path);
		m->files[m->n].size = size;
		m->files[m->n].mode = (unsigned)mode;
		memcpy(m->files[m->n].sha256, hash, 65);
		m->n++;
	}
	m->src = xstrdup(src);
	m->dst = xstrdup(dst);
	error = 0;
 out:
	free(probe);
	json_decref(root);
	if (error != 0)
		stage_manifest_free(m);
	return error;
}

/* SHA-256 of fd from its current offset to the end; *size: bytes read. */
int
stage_hash_fd(int fd, char hex[65], int64_t *size, char *buf)
{
	struct sha256_ctx	c;
	uint8_t			d[SHA256_DIGEST_LEN];
	ssize_t			n;

	sha256_init(&c);
	*size = 0;
	for (;;) {
		n = read(fd, buf, STAGE_CHUNK);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			n = errno;
			sha256_discard(&c);
			errno = (int)n;
			return CADRE_ERR_SYSTEM;
		}
		if (n == 0)
			break;
		sha256_update(&c, buf, (size_t)n);
		*size += n;
	}
	sha256_final(&c, d);
	sha256_hex(d, sizeof d, hex);
	return 0;
}

struct walk {
	json_t			*files;
	char			*buf;
	char			*msg;
	size_t			 msglen;
	struct filerec_set	 old;	/* the last start's K.src */
	struct filerec_set	 now;	/* this start's */
	size_t			 hashed;	/* files old did not vouch for */
};

/* SHA-256 of the source file path (relp in the tree), from the last
 * start's record when its metadata is unchanged, into the manifest. */
static int
walk_file(struct walk *w, const char *path, const char *relp,
    const struct stat *sb)
{
	const struct filerec	*r;
	char			 hex[65];
	int64_t			 size = sb->st_size;
	int			 fd;

	if ((r = filerec_find(&w->old, relp)) != NULL && filerec_same(r, sb))
		memcpy(hex, r->sha256, sizeof hex);
	else {
		w->hashed++;
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
		    stage_hash_fd(fd, hex, &size, w->buf) != 0) {
			snprintf(w->msg, w->msglen, "%s: %s", path,
			    strerror(errno));
			if (fd >= 0)
				close(fd);
			return CADRE_ERR_SYSTEM;
		}
		close(fd);
	}
	if (size == sb->st_size)
		filerec_add(&w->now, relp, sb, hex);
	json_array_append_new(w->files, json_pack("{s:s, s:I, s:i, s:s}",
	    "path", relp, "size", (json_int_t)size, "mode",
	    (int)(sb->st_mode & 07777), "sha256", hex));
	return 0;
}

static int
walk_tree(struct walk *w, const char *root, const char *rel, int depth)
{
	struct dirent	**ents = NULL;
	struct stat	  sb;
	char		 *dir, *path = NULL, *relp = NULL;
	int		  n = 0, i, error = 0;

	if (depth > STAGE_DEPTH_MAX) {
		snprintf(w->msg, w->msglen, "%s/%s: more than %d levels of "
		    "directories", root, rel, STAGE_DEPTH_MAX);
		return CADRE_ERR_TOO_LARGE;
	}
	if (*rel != '\0')
		xasprintf(&dir, "%s/%s", root, rel);
	else
		dir = xstrdup(root);
	if ((n = scandir(dir, &ents, NULL, alphasort)) == -1) {
		snprintf(w->msg, w->msglen, "%s: %s", dir, strerror(errno));
		free(dir);
		return CADRE_ERR_SYSTEM;
	}
	for (i = 0; i < n && error == 0; i++) {
		const char *name = ents[i]->d_name;

		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		xasprintf(&path, "%s/%s", dir, name);
		if (*rel != '\0')
			xasprintf(&relp, "%s/%s", rel, name);
		else
			relp = xstrdup(name);
		/* A symbolic link counts as what it points to, but a linked
		 * directory is refused: it could loop. */
		if (lstat(path, &sb) == -1 || (S_ISLNK(sb.st_mode) &&
		    stat(path, &sb) == -1)) {
			snprintf(w->msg, w->msglen, "%s: %s", path,
			    strerror(errno));
			error = CADRE_ERR_SYSTEM;
		} else if (!rel_path_ok(relp)) {
			snprintf(w->msg, w->msglen, "%s: a name staging cannot "
			    "copy (control characters, or too long)", path);
			error = CADRE_ERR_INVALID;
		} else if (S_ISDIR(sb.st_mode)) {
			struct stat	lsb;

			if (lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode)) {
				snprintf(w->msg, w->msglen, "%s: a symbolic "
				    "link to a directory; stage its target "
				    "instead", path);
				error = CADRE_ERR_INVALID;
			} else
				error = walk_tree(w, root, relp, depth + 1);
		} else if (S_ISREG(sb.st_mode)) {
			if (json_array_size(w->files) >= STAGE_FILES_MAX) {
				snprintf(w->msg, w->msglen, "%s: more than %d "
				    "files", root, STAGE_FILES_MAX);
				error = CADRE_ERR_TOO_LARGE;
			} else
				error = walk_file(w, path, relp, &sb);
		} else
			log_warn("%s: not a regular file or directory: not "
			    "staged", path);
		free(path);
		free(relp);
		path = relp = NULL;
	}
	for (i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	free(dir);
	return error;
}

int
stage_prepare(const char *rundir, const struct stage_pair *pairs,
    size_t npairs, int verify_full, char *msg, size_t msglen)
{
	struct walk	 w;
	struct stat	 sb;
	json_t		*man = NULL;
	char		*sdir, *path = NULL, *recpath = NULL, rp[PATH_MAX],
			*slash, why[512];
	size_t		 k;
	int		 error;

	memset(&w, 0, sizeof w);
	sdir = rundir_path(rundir, RUNDIR_STAGE);
	if ((error = rundir_mkdir_private(sdir, msg, msglen)) != 0)
		goto out;
	w.buf = xmalloc(STAGE_CHUNK);
	w.msg = msg;
	w.msglen = msglen;
	for (k = 0; k < npairs && error == 0; k++) {
		if (realpath(pairs[k].src, rp) == NULL ||
		    stat(rp, &sb) == -1) {
			snprintf(msg, msglen, "--stage %s: %s", pairs[k].src,
			    strerror(errno));
			error = CADRE_ERR_SYSTEM;
			break;
		}
		xasprintf(&recpath, "%s/%zu.src", sdir, k);
		if (!verify_full && (error = filerec_load(recpath, &w.old,
		    why, sizeof why)) != 0) {
			if (error != CADRE_ERR_NOT_FOUND)
				log_warn("%s: hashing every file of %s", why,
				    rp);
			error = 0;
		}
		w.files = json_array();
		man = json_pack("{s:i, s:s, s:s, s:s, s:o}", "version",
		    STAGE_VERSION, "src", rp, "dst", pairs[k].dst, "verify",
		    verify_full ? "full" : "meta", "files", w.files);
		if (S_ISDIR(sb.st_mode)) {
			error = walk_tree(&w, rp, "", 0);
		} else if (S_ISREG(sb.st_mode)) {
			/* A file: it goes to DST/NAME. */
			slash = strrchr(rp, '/');
			*slash = '\0';
			json_object_set_new(man, "src", json_string(
			    rp[0] != '\0' ? rp : "/"));
			*slash = '/';
			error = walk_file(&w, rp, slash + 1, &sb);
		} else {
			snprintf(msg, msglen, "--stage %s: not a directory or "
			    "regular file", pairs[k].src);
			error = CADRE_ERR_INVALID;
		}
		if (error == 0) {
			xasprintf(&path, "%s/%zu.json", sdir, k);
			if ((error = cjson_write_atomic(path, man, 0600)) != 0)
				snprintf(msg, msglen, "%s: %s", path,
				    cadre_strerror(error));
			else if ((w.hashed > 0 || w.now.n != w.old.n) &&
			    filerec_save(recpath, &w.now) != 0)
				log_warn("%s: %s (the next start hashes the "
				    "source again)", recpath, strerror(errno));
			free(path);
			path = NULL;
		}
		free(recpath);
		recpath = NULL;
		filerec_free(&w.old);
		filerec_free(&w.now);
		w.hashed = 0;
		json_decref(man);
		man = NULL;
	}
	free(w.buf);
 out:
	free(sdir);
	return error;
}

/* ------------------------------------------------------------ fan-out */

struct stage_child {
	pid_t	 pid;
	char	*outpath;
	size_t	 node;
};

/* Reads one node's report line into t. */
static int
add_report(const char *path, struct stage_totals *t)
{
	struct cbuf	 b;
	json_t		*o = NULL;
	int64_t		 v[6];
	int		 error;

	cbuf_init(&b, STAGE_NODE_OUT_MAX);
	if ((error = cbuf_read_file(&b, path)) == 0 &&
	    (error = cjson_loadb(b.data, b.len, STAGE_NODE_OUT_MAX, &o,
	    NULL)) == 0) {
		if (cjson_get_int(o, "files", &v[0]) != 0 ||
		    cjson_get_int(o, "bytes", &v[1]) != 0 ||
		    cjson_get_int(o, "copied", &v[2]) != 0 ||
		    cjson_get_int(o, "skipped", &v[3]) != 0 ||
		    cjson_get_int(o, "redone", &v[4]) != 0 ||
		    cjson_get_int(o, "hashed", &v[5]) != 0)
			error = CADRE_ERR_INVALID;
		else {
			t->files += v[0];
			t->bytes += v[1];
			t->copied += v[2];
			t->skipped += v[3];
			t->redone += v[4];
			t->hashed += v[5];
		}
	}
	json_decref(o);
	cbuf_free(&b);
	return error;
}

/* Starts the copy on node: its pid, or CADRE_ERR_SYSTEM with errno set. */
static pid_t
spawn_node(const char *rundir, const char *node, size_t npairs, int clean,
    const char *outpath)
{
	const char	*av[16 + 2 * STAGE_PAIRS_MAX];
	char		*paths[STAGE_PAIRS_MAX];
	size_t		 n = 0, k;
	pid_t		 pid;
	int		 fd;

	if ((pid = fork()) == -1)
		return CADRE_ERR_SYSTEM;
	if (pid != 0)
		return pid;
	if ((fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0600)) == -1 ||
	    dup2(fd, 1) == -1)
		_exit(127);
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0)
		dup2(fd, 0);
	av[n++] = agent_self_path();
	av[n++] = "rsh";
	av[n++] = "--run-dir";
	av[n++] = rundir;
	av[n++] = "-n";
	av[n++] = node;
	av[n++] = agent_self_path();
	av[n++] = "stage";
	av[n++] = "--node";
	av[n++] = node;
	if (clean)
		av[n++] = "--clean";
	for (k = 0; k < npairs; k++) {
		xasprintf(&paths[k], "%s/%s/%zu.json", rundir, RUNDIR_STAGE,
		    k);
		av[n++] = "--manifest";
		av[n++] = paths[k];
	}
	av[n] = NULL;
	execv(av[0], (char *const *)av);
	_exit(127);
}

int
stage_nodes(const char *rundir, char *const *nodes, size_t nnodes,
    size_t npairs, int clean, int sigfd, struct stage_totals *totals,
    char *msg, size_t msglen)
{
	struct stage_child	*kids;
	size_t			 next = 0, running = 0, i;
	pid_t			 pid;
	unsigned char		 sig;
	int			 status, error = 0, stopping = 0;

	memset(totals, 0, sizeof *totals);
	kids = xcalloc(nnodes, sizeof *kids);
	for (i = 0; i < nnodes; i++) {
		xasprintf(&kids[i].outpath, "%s/%s/%s.out", rundir,
		    RUNDIR_STAGE, nodes[i]);
		kids[i].pid = -1;
	}
	while (next < nnodes || running > 0) {
		while (next < nnodes && running < STAGE_PARALLEL) {
			kids[next].pid = spawn_node(rundir, nodes[next],
			    npairs, clean, kids[next].outpath);
			if (kids[next].pid < 0) {
				error = cadre_errf(msg, msglen,
				    CADRE_ERR_SYSTEM, "fork: %s",
				    strerror(errno));
				next = nnodes;	/* start no more */
				break;
			}
			running++;
			next++;
		}
		if (running == 0)
			break;
		/* Only our children: launch has others (the agents' srun). */
		for (i = 0, pid = 0; i < nnodes && pid == 0; i++) {
			if (kids[i].pid <= 0)
				continue;
			pid = waitpid(kids[i].pid, &status, WNOHANG);
			if (pid == -1 && errno == ECHILD) {
				pid = kids[i].pid;
				status = 0x7f00;	/* exit 127: lost */
			}
		}
		if (pid <= 0) {
			/* SIGTERM/SIGINT/SIGHUP to launch: stop the copies
			 * (rsh passes the signal on) and start no more. */
			while (sigfd >= 0 && !stopping &&
			    read(sigfd, &sig, 1) == 1) {
				if (sig != SIGTERM && sig != SIGINT &&
				    sig != SIGHUP)
					continue;
				stopping = 1;
				next = nnodes;
				snprintf(msg, msglen, "stopped by signal %d "
				    "while staging", sig);
				error = CADRE_ERR_CANCELLED;
				for (i = 0; i < nnodes; i++)
					if (kids[i].pid > 0)
						kill(kids[i].pid, SIGTERM);
			}
			usleep(20000);
			continue;
		}
		i--;
		kids[i].pid = -1;
		running--;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			if (error == 0 && !stopping) {
				snprintf(msg, msglen, "staging on %s failed "
				    "(%s %d; its messages are above)",
				    nodes[i], WIFEXITED(status) ?
				    "exit status" : "signal",
				    WIFEXITED(status) ? WEXITSTATUS(status) :
				    WTERMSIG(status));
				error = CADRE_ERR_IO;
			}
		} else if (!clean && add_report(kids[i].outpath, totals) !=
		    0 && error == 0) {
			snprintf(msg, msglen, "staging on %s: no report in %s",
			    nodes[i], kids[i].outpath);
			error = CADRE_ERR_PROTOCOL;
		}
	}
	for (i = 0; i < nnodes; i++)
		free(kids[i].outpath);
	free(kids);
	return error;
}

json_t *
stage_totals_json(const struct stage_totals *t)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "files",
	    (json_int_t)t->files, "bytes", (json_int_t)t->bytes, "copied",
	    (json_int_t)t->copied, "skipped", (json_int_t)t->skipped,
	    "redone", (json_int_t)t->redone, "hashed", (json_int_t)t->hashed);
}
