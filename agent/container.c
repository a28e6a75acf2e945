/* Container wrapping: argv words, never shell strings. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "container.h"
#include "error.h"
#include "fsutil.h"
#include "xmalloc.h"

static const char *const runtime_names[] = {
	[CONTAINER_NONE] = "none",
	[CONTAINER_APPTAINER] = "apptainer",
	[CONTAINER_SINGULARITY] = "singularity",
	[CONTAINER_ENROOT] = "enroot",
	[CONTAINER_CHARLIECLOUD] = "charliecloud",
	[CONTAINER_OCI] = "oci",
};

int
container_parse_runtime(const char *s, enum container_runtime *out)
{
	size_t	i;

	for (i = 0; i < sizeof runtime_names / sizeof runtime_names[0]; i++) {
		if (strcmp(s, runtime_names[i]) == 0) {
			*out = (enum container_runtime)i;
			return 0;
		}
	}
	return CADRE_ERR_INVALID;
}

const char *
container_runtime_name(enum container_runtime r)
{
	if ((size_t)r >= sizeof runtime_names / sizeof runtime_names[0])
		return "unknown";
	return runtime_names[r];
}

/* An absolute path that can go into "a:a,b:b" lists. */
static int
path_ok(const char *p)
{
	size_t	i, len = strlen(p);

	if (len == 0 || len > CONTAINER_PATH_MAX || p[0] != '/')
		return 0;
	for (i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f ||
		    p[i] == ',' || p[i] == ':')
			return 0;
	return 1;
}

int
container_check(const struct container *c, const char *rundir, char *msg,
    size_t msglen)
{
	size_t	i;

	if (c->runtime == CONTAINER_NONE)
		return 0;
	if (c->image == NULL || *c->image == '\0' ||
	    strlen(c->image) > CONTAINER_PATH_MAX ||
	    strpbrk(c->image, ",\n\r\t ") != NULL) {
		snprintf(msg, msglen, "container %s needs an image (a path or "
		    "a registry reference without spaces or commas)",
		    container_runtime_name(c->runtime));
		return CADRE_ERR_INVALID;
	}
	if (!path_ok(rundir)) {
		snprintf(msg, msglen, "run dir '%s': the container needs an "
		    "absolute path without ',' or ':'", rundir);
		return CADRE_ERR_INVALID;
	}
	if (c->nbinds > CONTAINER_BINDS_MAX) {
		snprintf(msg, msglen, "more than %d binds",
		    CONTAINER_BINDS_MAX);
		return CADRE_ERR_TOO_LARGE;
	}
	for (i = 0; i < c->nbinds; i++) {
		if (!path_ok(c->binds[i])) {
			snprintf(msg, msglen, "bind '%s': expected an absolute "
			    "path without ',', ':' or control characters",
			    c->binds[i]);
			return CADRE_ERR_INVALID;
		}
	}
	return 0;
}

/* Whether user namespaces, which ch-run needs, are allowed: msg says
 * which setting forbids them. */
static int
userns_ok(char *msg, size_t msglen)
{
	static const struct {
		const char	*file;
		int		 root_too;
	} knobs[] = {
		{ "/proc/sys/user/max_user_namespaces", 1 },
		{ "/proc/sys/kernel/unprivileged_userns_clone", 0 },
	};
	FILE	*f;
	size_t	 i;
	long	 v;
	int	 n;

	for (i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
		if (!knobs[i].root_too && geteuid() == 0)
			continue;
		if ((f = fopen(knobs[i].file, "r")) == NULL)
			continue;	/* a kernel without the knob */
		n = fscanf(f, "%ld", &v);
		fclose(f);
		if (n == 1 && v == 0) {
			snprintf(msg, msglen, "charliecloud: user namespaces "
			    "are disabled on this node (%s is 0): ch-run "
			    "cannot start; ask the admins to allow them or use "
			    "another container.runtime", knobs[i].file);
			return 0;
		}
	}
	return 1;
}

/* Whether ch-run finds dst to bind onto: in the image, under the host's
 * /tmp (ch-run binds it) or under a bind mounted before it. */
static int
ch_dest_ok(const struct container *c, size_t before, const char *dst)
{
	struct stat	 st;
	char		*in;
	size_t		 i, len;
	int		 ok;

	if (strncmp(dst, "/tmp/", 5) == 0)
		return 1;
	for (i = 0; i < before; i++) {
		len = strlen(c->binds[i]);
		if (strncmp(dst, c->binds[i], len) == 0 && dst[len] == '/')
			return 1;
	}
	xasprintf(&in, "%s%s", c->image, dst);
	ok = stat(in, &st) == 0 && S_ISDIR(st.st_mode);
	free(in);
	return ok;
}

char *
container_oci_rootfs(const char *image)
{
	struct stat	 st;
	char		*p;

	xasprintf(&p, "%s/config.json", image);
	if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
		free(p);
		xasprintf(&p, "%s/rootfs", image);
		return p;
	}
	free(p);
	return xstrdup(image);
}

/* The OCI runtime to run: $CADRE_OCI_RUNTIME, else crun, else runc. */
const char *
container_oci_engine(void)
{
	const char	*e = getenv("CADRE_OCI_RUNTIME");

	if (e != NULL && *e != '\0')
		return e;
	return fs_on_path("crun") || !fs_on_path("runc") ? "crun" : "runc";
}

const char *
container_program(const struct container *c)
{
	switch (c->runtime) {
	case CONTAINER_APPTAINER:
	case CONTAINER_SINGULARITY:
		return container_runtime_name(c->runtime);
	case CONTAINER_CHARLIECLOUD:
		return "ch-run";
	case CONTAINER_OCI:
		return container_oci_engine();
	default:
		return NULL;	/* none; enroot: srun's */
	}
}

int
container_preflight(const struct container *c, const char *rundir,
    char *msg, size_t msglen)
{
	struct stat	 st;
	const char	*rt = container_runtime_name(c->runtime), *bin;
	char		*root;
	size_t		 i;
	int		 r;

	if ((r = container_check(c, rundir, msg, msglen)) != 0)
		return r;
	if ((bin = container_program(c)) == NULL)
		return 0;
	if (strchr(bin, '/') != NULL ? !fs_is_executable(bin) :
	    !fs_on_path(bin)) {
		snprintf(msg, msglen, "container %s: %s is not found on this "
		    "node (PATH=%s): install it or load its module in the "
		    "job's environment", rt, bin, getenv("PATH") != NULL ?
		    getenv("PATH") : "");
		return CADRE_ERR_NOT_FOUND;
	}
	if (strstr(c->image, "://") != NULL)
		st.st_mode = S_IFREG;	/* docker://...: the runtime fetches it */
	else if (stat(c->image, &st) != 0) {
		snprintf(msg, msglen, "container.image %s: %s on this node",
		    c->image, strerror(errno));
		return errno == ENOENT ? CADRE_ERR_NOT_FOUND : CADRE_ERR_SYSTEM;
	}
	if (strstr(c->image, "://") == NULL && access(c->image,
	    S_ISDIR(st.st_mode) ? R_OK | X_OK : R_OK) != 0) {
		snprintf(msg, msglen, "container.image %s: %s for uid %ld",
		    c->image, strerror(errno), (long)getuid());
		return CADRE_ERR_SYSTEM;
	}
	switch (c->runtime) {
	case CONTAINER_CHARLIECLOUD:
		if (!S_ISDIR(st.st_mode) && !fs_is_squashfs(c->image)) {
			snprintf(msg, msglen, "container.image %s: charliecloud "
			    "takes a directory image or a SquashFS file; this "
			    "is neither (ch-convert makes one)", c->image);
			return CADRE_ERR_INVALID;
		}
		if (!userns_ok(msg, msglen))
			return CADRE_ERR_INVALID;
		break;
	case CONTAINER_OCI:
		root = container_oci_rootfs(c->image);
		r = stat(root, &st) == 0 && S_ISDIR(st.st_mode);
		if (!r)
			snprintf(msg, msglen, "container.image %s: oci takes a "
			    "bundle (config.json and rootfs/) or a root file "
			    "system directory; %s is not a directory",
			    c->image, root);
		free(root);
		if (!r)
			return CADRE_ERR_INVALID;
		break;
	default:
		if (S_ISDIR(st.st_mode)) {
			snprintf(msg, msglen, "container.image %s: %s takes an "
			    "image file (.sif), not a directory", c->image, rt);
			return CADRE_ERR_INVALID;
		}
		break;
	}
	for (i = 0; i < c->nbinds; i++) {
		if (stat(c->binds[i], &st) != 0) {
			snprintf(msg, msglen, "container.binds: %s: %s on this "
			    "node", c->binds[i], strerror(errno));
			return CADRE_ERR_NOT_FOUND;
		}
	}
	if (c->runtime == CONTAINER_CHARLIECLOUD && stat(c->image, &st) == 0 &&
	    S_ISDIR(st.st_mode)) {
		for (i = 0; i <= c->nbinds; i++) {
			const char	*d = i < c->nbinds ? c->binds[i] : rundir;

			if (ch_dest_ok(c, i, d))
				continue;
			snprintf(msg, msglen, "container.image %s has no "
			    "directory %s to bind onto and ch-run does not "
			    "make one in a read-only image: mkdir -p %s%s "
			    "(or bind a directory above it in container.binds; "
			    "docs/containers.md)", c->image, d, c->image, d);
			return CADRE_ERR_NOT_FOUND;
		}
	}
	return 0;
}

/* This program's path, for a command that runs it again on the node. */
static char *
self_path(void)
{
	char	buf[CONTAINER_PATH_MAX + 1];
	ssize_t	n = readlink("/proc/self/exe", buf, sizeof buf - 1);

	if (n <= 0)
		return xstrdup("cadre-agent");
	buf[n] = '\0';
	return xstrdup(buf);
}

static char **
words_new(size_t max)
{
	return xcalloc(max + 1, sizeof(char *));
}

char **
container_exec_prefix(const struct container *c, const char *rundir,
    size_t *n)
{
	char		**w = words_new(14 + 2 * c->nbinds);
	const char	 *tmp = NULL;
	size_t		  k = 0, i;

	if (c->runtime == CONTAINER_APPTAINER ||
	    c->runtime == CONTAINER_SINGULARITY) {
		w[k++] = xstrdup(container_runtime_name(c->runtime));
		w[k++] = xstrdup("exec");
		if (c->nv)
			w[k++] = xstrdup("--nv");
		w[k++] = xstrdup("--bind");
		w[k++] = xstrdup(rundir);
		for (i = 0; i < c->nbinds; i++) {
			w[k++] = xstrdup("--bind");
			w[k++] = xstrdup(c->binds[i]);
		}
		w[k++] = xstrdup(c->image);
	} else if (c->runtime == CONTAINER_CHARLIECLOUD) {
		/* ch-run mounts the host's $TMPDIR at /tmp, hiding the
		 * host's /tmp (where the run dir or the job's TMPDIR may
		 * be): without it, /tmp is the host's, and TMPDIR is set
		 * again inside. ch-run binds in order: a bind above the run
		 * dir first; it refuses a bind under /tmp. */
		if ((tmp = getenv("TMPDIR")) != NULL && *tmp != '\0') {
			w[k++] = xstrdup("env");
			w[k++] = xstrdup("-u");
			w[k++] = xstrdup("TMPDIR");
		}
		w[k++] = xstrdup("ch-run");
		if (tmp != NULL && *tmp != '\0')
			xasprintf(&w[k++], "--set-env=TMPDIR=%s", tmp);
		for (i = 0; i < c->nbinds; i++) {
			if (strncmp(c->binds[i], "/tmp/", 5) == 0)
				continue;
			w[k++] = xstrdup("-b");
			w[k++] = xstrdup(c->binds[i]);
		}
		if (strncmp(rundir, "/tmp/", 5) != 0) {
			w[k++] = xstrdup("-b");
			w[k++] = xstrdup(rundir);
		}
		w[k++] = xstrdup(c->image);
		w[k++] = xstrdup("--");
	} else if (c->runtime == CONTAINER_OCI) {
		/* the bundle's config.json is made per command: by wrap */
		w[k++] = self_path();
		w[k++] = xstrdup("wrap");
		w[k++] = xstrdup("--container");
		w[k++] = xstrdup("oci");
		w[k++] = xstrdup("--image");
		w[k++] = xstrdup(c->image);
		for (i = 0; i < c->nbinds; i++) {
			w[k++] = xstrdup("--bind");
			w[k++] = xstrdup(c->binds[i]);
		}
		w[k++] = xstrdup("--run-dir");
		w[k++] = xstrdup(rundir);
		w[k++] = xstrdup("--");
	}
	w[k] = NULL;
	*n = k;
	return w;
}

char **
container_srun_options(const struct container *c, const char *rundir,
    size_t *n)
{
	char		**w = words_new(2);
	struct cbuf	  b;
	size_t		  k = 0, i;

	if (c->runtime == CONTAINER_ENROOT) {
		xasprintf(&w[k++], "--container-image=%s", c->image);
		cbuf_init(&b, (CONTAINER_BINDS_MAX + 1) *
		    (2 * CONTAINER_PATH_MAX + 2) + 64);
		cbuf_addf(&b, "--container-mounts=%s:%s", rundir, rundir);
		for (i = 0; i < c->nbinds; i++)
			cbuf_addf(&b, ",%s:%s", c->binds[i], c->binds[i]);
		w[k++] = cbuf_detach(&b, NULL);
		cbuf_free(&b);
	}
	w[k] = NULL;
	*n = k;
	return w;
}

void
container_free_words(char **w)
{
	size_t	i;

	if (w == NULL)
		return;
	for (i = 0; w[i] != NULL; i++)
		free(w[i]);
	free(w);
}
