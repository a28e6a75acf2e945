/* Container wrapping: argv words, never shell strings. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "container.h"
#include "error.h"
#include "xmalloc.h"

static const char *const runtime_names[] = {
	[CONTAINER_NONE] = "none",
	[CONTAINER_APPTAINER] = "apptainer",
	[CONTAINER_SINGULARITY] = "singularity",
	[CONTAINER_ENROOT] = "enroot",
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

static char **
words_new(size_t max)
{
	return xcalloc(max + 1, sizeof(char *));
}

char **
container_exec_prefix(const struct container *c, const char *rundir,
    size_t *n)
{
	char	**w = words_new(6 + 2 * c->nbinds);
	size_t	  k = 0, i;

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
