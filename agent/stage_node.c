/* Staging, the node's side: `cadre-agent stage`, run on each node through
 * its agent, copies what the manifests list from SRC to DST, verified by
 * SHA-256 (or removes it again, --clean). The manifests and the fan-out
 * are in stage.c; the format in stage.h. */
#include "config.h"

#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "buf.h"
#include "error.h"
#include "filerec.h"
#include "log.h"
#include "sha256.h"
#include "stage.h"
#include "strutil.h"
#include "xmalloc.h"

struct node_stats {
	int64_t	files, bytes, copied, skipped, redone, hashed;
};

/* One file's outcome, filled by the worker that took it. */
struct file_job {
	struct stat	 sb;	/* the target as it stands after staging */
	int		 done;
};

/* The work of one manifest on this node, shared by its threads. */
struct stage_work {
	const struct stage_manifest	*m;
	const char			*node;
	const char			*dst;
	const struct filerec_set	*rec;	/* the last start's record */
	pid_t				 pid;
	mode_t				 cmask;	/* the umask */
	struct file_job			*jobs;
	pthread_mutex_t			 mu;
	size_t				 next;
	int				 error;	/* the first failure */
	char				 msg[1024];
	struct node_stats		 ns;
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

static int
write_all(int fd, const char *p, size_t n)
{
	ssize_t	w;

	while (n > 0) {
		if ((w = write(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int64_t
ctime_ns(const struct stat *sb)
{
	return (int64_t)sb->st_ctim.tv_sec * 1000000000 + sb->st_ctim.tv_nsec;
}

/* Where a thread hashing a mapped source goes when the source shrinks
 * under it (SIGBUS on a page past its new end). */
static __thread sigjmp_buf *bus_env;

static void
on_sigbus(int sig)
{
	if (bus_env != NULL)
		siglongjmp(*bus_env, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* sha256_update() of mapped bytes: CADRE_ERR_IO when the file behind
 * them was truncated meanwhile. */
static int
hash_mapped(struct sha256_ctx *c, const char *p, size_t n)
{
	sigjmp_buf	env;

	if (sigsetjmp(env, 1) != 0) {
		bus_env = NULL;
		return CADRE_ERR_IO;
	}
	bus_env = &env;
	sha256_update(c, p, n);
	bus_env = NULL;
	return 0;
}

/*
 * Copies size bytes of in to out, hashing them as they pass. A file of a
 * chunk or more is mapped: the kernel copies each chunk (copy_file_range:
 * a reflink, a server-side or an in-kernel copy, as the file systems
 * allow) and the hash reads the same pages from the page cache, so the
 * bytes are copied once and read by the hash once, as cp copies them
 * once. Smaller files, and a source that cannot be mapped, go through
 * buf (STAGE_CHUNK bytes): read once, hashed, written. CADRE_ERR_IO when
 * in ends early (the source shrank), CADRE_ERR_SYSTEM on an error.
 */
static int
copy_range_hashed(int in, int out, int64_t size, char *buf,
    struct sha256_ctx *c)
{
	char	*map = MAP_FAILED;
	int64_t	 off = 0, n;
	loff_t	 ioff, ooff;
	ssize_t	 k;
	size_t	 got;
	int	 kernel, error = 0;

	/* No MADV_SEQUENTIAL: it drops the pages behind the hash, which the
	 * other nodes staging on this machine (or the next start) read. */
	if (size >= (int64_t)STAGE_CHUNK)
		map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, in, 0);
	kernel = map != MAP_FAILED;
	while (off < size && error == 0) {
		n = size - off < (int64_t)STAGE_CHUNK ? size - off :
		    (int64_t)STAGE_CHUNK;
		ioff = ooff = off;
		while (kernel && ioff < off + n) {
			k = copy_file_range(in, &ioff, out, &ooff,
			    (size_t)(off + n - ioff), 0);
			if (k > 0 || (k == -1 && errno == EINTR))
				continue;
			if (k == 0) {
				error = CADRE_ERR_IO;
				break;
			}
			if (errno != EXDEV && errno != EINVAL &&
			    errno != ENOSYS && errno != EOPNOTSUPP) {
				error = CADRE_ERR_SYSTEM;
				break;
			}
			/* The file systems will not: write from here on. */
			kernel = 0;
		}
		if (error != 0)
			break;
		if (map != MAP_FAILED) {
			if ((error = hash_mapped(c, map + off, (size_t)n)) != 0)
				break;
			if (ooff < off + n && (lseek(out, ooff, SEEK_SET) ==
			    -1 || write_all(out, map + ooff,
			    (size_t)(off + n - ooff)) != 0))
				error = errno == EFAULT ? CADRE_ERR_IO :
				    CADRE_ERR_SYSTEM;
			off += n;
			continue;
		}
		for (got = 0; got < (size_t)n; got += (size_t)k) {
			k = pread(in, buf + got, (size_t)n - got,
			    off + (int64_t)got);
			if (k == -1 && errno == EINTR)
				k = 0;
			else if (k == -1)
				return CADRE_ERR_SYSTEM;
			else if (k == 0)
				return CADRE_ERR_IO;
		}
		sha256_update(c, buf, (size_t)n);
		if (write_all(out, buf, (size_t)n) != 0)
			error = CADRE_ERR_SYSTEM;
		off += n;
	}
	if (map != MAP_FAILED) {
		k = errno;
		munmap(map, (size_t)size);
		errno = (int)k;
	}
	return error;
}

/* Copies src to tmp, hashing the source's bytes as they pass: 0 when the
 * size and hash are the manifest's, CADRE_ERR_IO when not (the source
 * changed, detail in msg), CADRE_ERR_SYSTEM on an error. */
static int
copy_hashed(const char *src, const char *tmp, const struct stage_file *f,
    mode_t cmask, char *buf, int64_t *copied, char *msg, size_t msglen)
{
	struct sha256_ctx	 c;
	struct stat		 sb, after;
	uint8_t			 d[SHA256_DIGEST_LEN];
	char			 hex[65];
	/* Made with its mode when the umask keeps it: no fchmod. */
	mode_t			 mode = f->mode & 0777;
	int			 in = -1, out = -1, error = CADRE_ERR_SYSTEM,
				 chmod = (f->mode & 07777) != mode ||
				 (mode & cmask) != 0, big = f->size >=
				 (int64_t)STAGE_CHUNK;

	c.md = NULL;
	if ((in = open(src, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(in, &sb) == -1) {
		snprintf(msg, msglen, "%s: %s", src, strerror(errno));
		goto out;
	}
	if (sb.st_size != f->size) {
		snprintf(msg, msglen, "%s changed since the manifest was made "
		    "(%lld bytes, listed %lld)", src, (long long)sb.st_size,
		    (long long)f->size);
		error = CADRE_ERR_IO;
		goto out;
	}
	/* The directory is made, and a temporary left by a killed run of
	 * the same PID removed, only when the open says so: a mkdir per file
	 * would take every parent directory's lock. */
	if (chmod)
		mode = 0600;
	if ((out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    mode)) == -1 && (errno == EEXIST ? unlink(tmp) : errno == ENOENT ?
	    mkdir_parents((char *)tmp) : -1) == 0)
		out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (out == -1) {
		snprintf(msg, msglen, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	if (big)
		(void)posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
	sha256_init(&c);
	error = copy_range_hashed(in, out, f->size, buf, &c);
	if (error == CADRE_ERR_SYSTEM) {
		snprintf(msg, msglen, "copying %s to %s: %s", src, tmp,
		    strerror(errno));
		goto out;
	}
	*copied += f->size;
	/* The kernel's copy (a big file's) is of the bytes hashed only if
	 * the source did not change meanwhile; a small one was written from
	 * the bytes hashed. */
	if (error == CADRE_ERR_IO || (big && (fstat(in, &after) == -1 ||
	    after.st_size != f->size || ctime_ns(&after) != ctime_ns(&sb)))) {
		snprintf(msg, msglen, "%s changed while it was copied", src);
		error = CADRE_ERR_IO;
		goto out;
	}
	error = CADRE_ERR_SYSTEM;
	sha256_final(&c, d);
	sha256_hex(d, sizeof d, hex);
	if (strcmp(hex, f->sha256) != 0) {
		snprintf(msg, msglen, "%s changed since the manifest was made "
		    "(sha256 %.12s..., listed %.12s...)", src, hex, f->sha256);
		error = CADRE_ERR_IO;
		goto out;
	}
	if ((chmod && fchmod(out, f->mode & 07777) == -1) || close(out) == -1) {
		out = -1;
		snprintf(msg, msglen, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	out = -1;
	error = 0;
 out:
	sha256_discard(&c);
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (error != 0)
		unlink(tmp);
	return error;
}

/*
 * Whether path holds f already. The metadata alone decides when the last
 * start's record has path with the same size, mtime, ctime, inode and
 * device and the manifest's hash (unless full); otherwise a file of the
 * right size is hashed. *sb: path's metadata when present.
 */
static int
already_there(const char *path, const char *rel, const struct stage_file *f,
    const struct filerec_set *rec, int full, char *buf, struct stat *sb,
    int *present, int64_t *hashed)
{
	const struct filerec	*r;
	char			 hex[65];
	int64_t			 size;
	int			 fd, same = 0;

	*present = 0;
	if (lstat(path, sb) == -1 || !S_ISREG(sb->st_mode))
		return 0;
	*present = 1;
	if (sb->st_size != f->size)
		return 0;
	if (!full && (r = filerec_find(rec, rel)) != NULL &&
	    filerec_same(r, sb) && strcmp(r->sha256, f->sha256) == 0)
		return 1;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	(*hashed)++;
	if (stage_hash_fd(fd, hex, &size, buf) == 0 && size == f->size &&
	    strcmp(hex, f->sha256) == 0)
		same = 1;
	close(fd);
	return same;
}

/* Stages file i of w's manifest: skip, copy or copy again. */
static int
stage_file(struct stage_work *w, size_t i, char *buf, struct node_stats *ns,
    char *msg, size_t msglen)
{
	const struct stage_file	*f = &w->m->files[i];
	char			*src = NULL, *to = NULL, *tmp = NULL;
	int			 present, tries, error = 0;

	ns->files++;
	xasprintf(&src, "%s/%s", w->m->src, f->path);
	xasprintf(&to, "%s/%s", w->dst, f->path);
	/* The node and the process in the name: "nodes" sharing one disk,
	 * and two runs staging on one node, copy side by side; the last
	 * rename wins with the same bytes. */
	xasprintf(&tmp, "%s.cadre-stage.%s.%ld", to, w->node, (long)w->pid);
	if (already_there(to, f->path, f, w->rec, w->m->verify_full, buf,
	    &w->jobs[i].sb, &present, &ns->hashed)) {
		ns->skipped++;
		w->jobs[i].done = 1;
		goto out;
	}
	if (present) {
		log_notice("%s: %s differs from %s: copying it again", w->node,
		    to, src);
		ns->redone++;
	} else
		ns->copied++;
	error = CADRE_ERR_IO;
	for (tries = 0; tries < STAGE_COPY_TRIES && error == CADRE_ERR_IO;
	    tries++) {
		if (tries > 0)
			log_warn("%s: %s; copying again", w->node, msg);
		error = copy_hashed(src, tmp, f, w->cmask, buf, &ns->bytes,
		    msg, msglen);
	}
	if (error == CADRE_ERR_IO)
		error = CADRE_ERR_INVALID;
	if (error == 0 && rename(tmp, to) == -1) {
		snprintf(msg, msglen, "%s: %s", to, strerror(errno));
		unlink(tmp);
		error = CADRE_ERR_SYSTEM;
	}
	if (error == 0 && lstat(to, &w->jobs[i].sb) == 0)
		w->jobs[i].done = 1;
 out:
	free(src);
	free(to);
	free(tmp);
	return error;
}

/* A thread: files off the shared counter until none is left or one
 * failed. */
static void *
stage_worker(void *arg)
{
	struct stage_work	*w = arg;
	struct node_stats	 ns;
	char			*buf = xmalloc(STAGE_CHUNK), msg[1024];
	size_t			 i;
	int			 error = 0;

	memset(&ns, 0, sizeof ns);
	for (;;) {
		pthread_mutex_lock(&w->mu);
		i = w->error == 0 ? w->next++ : w->m->n;
		pthread_mutex_unlock(&w->mu);
		if (i >= w->m->n)
			break;
		if ((error = stage_file(w, i, buf, &ns, msg, sizeof msg)) != 0)
			break;
	}
	pthread_mutex_lock(&w->mu);
	if (error != 0 && w->error == 0) {
		w->error = error;
		snprintf(w->msg, sizeof w->msg, "%s", msg);
	}
	w->ns.files += ns.files;
	w->ns.bytes += ns.bytes;
	w->ns.copied += ns.copied;
	w->ns.skipped += ns.skipped;
	w->ns.redone += ns.redone;
	w->ns.hashed += ns.hashed;
	pthread_mutex_unlock(&w->mu);
	free(buf);
	return NULL;
}

/* DST/.cadre-stage.NODE.SUFFIX: the node's record and lock in DST. */
static char *
node_file(const char *dst, const char *node, const char *suffix)
{
	char	*p;

	xasprintf(&p, "%s/" STAGE_NODE_PREFIX "%s.%s", dst, node, suffix);
	return p;
}

static int
stage_one(const struct stage_manifest *m, const char *node,
    struct node_stats *ns, char *msg, size_t msglen)
{
	struct stage_work	 w;
	struct filerec_set	 rec, out;
	pthread_t		 tid[STAGE_THREADS];
	char			*dst = NULL, *recpath = NULL, *lockpath = NULL,
				 why[1024];
	size_t			 i, nt;
	int			 lock = -1, error = 0;

	memset(&rec, 0, sizeof rec);
	memset(&out, 0, sizeof out);
	if (stage_expand_dst(m->dst, node, &dst) != 0) {
		snprintf(msg, msglen, "%s: a bad destination", m->dst);
		return CADRE_ERR_INVALID;
	}
	recpath = node_file(dst, node, "rec");
	lockpath = node_file(dst, node, "lock");
	/* Two runs staging to one DST on one node take turns: the second
	 * finds the first's copies in its record and skips them. */
	if (mkdir_parents(recpath) != 0 || (lock = open(lockpath, O_RDWR |
	    O_CREAT | O_CLOEXEC, 0600)) == -1 || flock(lock, LOCK_EX) == -1) {
		error = cadre_errf(msg, msglen, CADRE_ERR_SYSTEM, "%s: %s",
		    lockpath, strerror(errno));
		goto out;
	}
	if (!m->verify_full && (error = filerec_load(recpath, &rec, why,
	    sizeof why)) != 0) {
		if (error != CADRE_ERR_NOT_FOUND)
			log_warn("%s: %s: checking every file by its hash",
			    node, why);
		error = 0;
	}
	memset(&w, 0, sizeof w);
	w.m = m;
	w.node = node;
	w.dst = dst;
	w.rec = &rec;
	w.pid = getpid();
	w.cmask = umask(022);
	umask(w.cmask);
	w.jobs = xcalloc(m->n + 1, sizeof *w.jobs);
	pthread_mutex_init(&w.mu, NULL);
	nt = m->n < STAGE_THREADS ? m->n : STAGE_THREADS;
	for (i = 0; i < nt; i++)
		if (pthread_create(&tid[i], NULL, stage_worker, &w) != 0)
			fatalx("pthread_create");
	for (i = 0; i < nt; i++)
		pthread_join(tid[i], NULL);
	pthread_mutex_destroy(&w.mu);
	ns->files += w.ns.files;
	ns->bytes += w.ns.bytes;
	ns->copied += w.ns.copied;
	ns->skipped += w.ns.skipped;
	ns->redone += w.ns.redone;
	ns->hashed += w.ns.hashed;
	/* What is in place now, for the next start (unless the record
	 * vouched for all of it: then it says that already); also after a
	 * failure, so that what was copied is not hashed again. */
	for (i = 0; i < m->n; i++)
		if (w.jobs[i].done)
			filerec_add(&out, m->files[i].path, &w.jobs[i].sb,
			    m->files[i].sha256);
	if ((w.ns.copied + w.ns.redone + w.ns.hashed > 0 || out.n != rec.n ||
	    m->verify_full) && filerec_save(recpath, &out) != 0)
		log_warn("%s: %s: %s (the next start hashes the copies)", node,
		    recpath, strerror(errno));
	free(w.jobs);
	if ((error = w.error) != 0)
		snprintf(msg, msglen, "%s", w.msg);
 out:
	if (lock >= 0)
		close(lock);
	filerec_free(&rec);
	filerec_free(&out);
	free(recpath);
	free(lockpath);
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
	for (i = 0; i < 2; i++) {
		to = node_file(dst, node, i == 0 ? "rec" : "lock");
		(void)unlink(to);
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
	    "  copy is hashed as it passes and checked before it is renamed into place\n"
	    "  (%d tries), %d files at a time. DST/.cadre-stage.NAME.rec records what\n"
	    "  was verified (size, mtime, ctime, inode, device): a file it vouches for\n"
	    "  is skipped unhashed, unless the manifest says \"verify\": \"full\".\n"
	    "  --clean removes what the manifest lists from DST instead.\n"
	    "  NAME defaults to $CADRE_NODE, then the short host name. Prints one JSON\n"
	    "  line: {\"node\", \"files\", \"bytes\", \"copied\", \"skipped\", \"redone\",\n"
	    "  \"hashed\", \"seconds\"}. Exit status: 0, 1 error, 2 usage.\n",
	    STAGE_COPY_TRIES, STAGE_THREADS);
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
	struct sigaction	 sa;
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
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigbus;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) == -1)
		fatal("sigaction");
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
	    "\"hashed\": %lld, \"seconds\": %.3f}\n", node,
	    (long long)ns.files, (long long)ns.bytes, (long long)ns.copied,
	    (long long)ns.skipped, (long long)ns.redone, (long long)ns.hashed,
	    now_mono() - t0);
	return 0;
}
