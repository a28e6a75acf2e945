/*
 * The entry points: a spec read under its size bound, parsed into the
 * YAML tree, its keys checked one by one and then together, the matrix
 * expanded and every configuration checked; and a parsed spec freed.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "xmalloc.h"
#include "spec_matrix.h"

static char *
dir_of(const char *file)
{
	char	*copy, *dir;

	if (file == NULL || strcmp(file, "-") == 0 ||
	    strchr(file, '/') == NULL)
		return xstrdup(".");
	copy = xstrdup(file);
	dir = xstrdup(dirname(copy));
	free(copy);
	return dir;
}

int
spec_parse(const char *filename, const char *text, size_t len,
    struct diags *d, struct spec **out)
{
	struct spec_cx		 cx;
	struct spec		*s = NULL;
	struct ydoc		*doc = NULL;
	const struct ynode	*root, *version;
	size_t			 errors = diags_errors(d);
	char			*got;
	int			 rc, k;

	*out = NULL;
	if (filename == NULL)
		filename = "-";
	if ((rc = ydoc_parse(filename, text, len, SPEC_MAX_BYTES, d,
	    &doc)) != 0)
		return rc;
	root = doc->root;
	if (root == NULL || ynode_is_null(root)) {
		diag_error(d, filename, 0, 0, "the spec is empty; it needs at "
		    "least 'version: 1', a name, and trainer.data or "
		    "program.command");
		rc = CADRE_ERR_INVALID;
		goto out;
	}
	if (root->kind != YNODE_MAP) {
		got = spec_describe(root);
		diag_error(d, filename, root->line, root->col, "the top level "
		    "must be a mapping of keys (version: 1, name: ...), not %s",
		    got);
		free(got);
		rc = CADRE_ERR_INVALID;
		goto out;
	}

	s = xcalloc(1, sizeof *s);
	s->file = xstrdup(filename);
	s->dir = dir_of(filename);
	spec_defaults(s->def);
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		spec_value_copy(&s->v[k], &s->def[k]);
		s->varied_index[k] = -1;
	}
	memset(&cx, 0, sizeof cx);
	cx.file = filename;
	cx.d = d;
	cx.s = s;

	/* Another version may mean other keys: say only that. */
	if ((version = ymap_get(root, "version")) != NULL &&
	    spec_value_parse(&cx, SPEC_K_VERSION, version,
	    &s->v[SPEC_K_VERSION]) != 0) {
		rc = CADRE_ERR_INVALID;
		goto out;
	}
	spec_check_tree(&cx, root);
	spec_check_base(&cx);
	spec_matrix_parse(&cx);
	spec_check_program(&cx);
	if (!s->matrix_bad)
		spec_matrix_expand(&cx);

	rc = diags_errors(d) > errors ? CADRE_ERR_INVALID : 0;
	if (rc == 0) {
		*out = s;
		s = NULL;
	}

 out:
	spec_free(s);
	ydoc_free(doc);
	return rc;
}

int
spec_load(const char *path, struct diags *d, struct spec **out)
{
	struct cbuf	 b;
	struct stat	 st;
	const char	*name = strcmp(path, "-") == 0 ? "<stdin>" : path;
	char		*dir, real[PATH_MAX];
	int		 rc;

	*out = NULL;
	if (strcmp(path, "-") != 0) {
		if (stat(path, &st) != 0) {
			diag_error(d, name, 0, 0, "cannot read the spec: %s",
			    strerror(errno));
			return CADRE_ERR_SYSTEM;
		}
		if (S_ISDIR(st.st_mode)) {
			diag_error(d, name, 0, 0, "is a directory, not a spec "
			    "file");
			return CADRE_ERR_INVALID;
		}
		if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size >
		    SPEC_MAX_BYTES) {
			diag_error(d, name, 0, 0, "file is %jd bytes; specs are "
			    "limited to 1 MiB", (intmax_t)st.st_size);
			return CADRE_ERR_TOO_LARGE;
		}
	}
	cbuf_init(&b, SPEC_MAX_BYTES);
	rc = cbuf_read_file(&b, path);
	if (rc == CADRE_ERR_TOO_LARGE)
		diag_error(d, name, 0, 0, "file is more than %zu bytes; specs "
		    "are limited to 1 MiB", SPEC_MAX_BYTES);
	else if (rc != 0)
		diag_error(d, name, 0, 0, "cannot read the spec: %s",
		    strerror(errno));
	else
		rc = spec_parse(name, b.data != NULL ? b.data : "", b.len, d,
		    out);
	cbuf_free(&b);
	if (rc == 0 && strcmp(path, "-") != 0) {
		/* Relative paths in the spec mean: next to the spec. */
		dir = dir_of(path);
		if (realpath(dir, real) != NULL) {
			free((*out)->dir);
			(*out)->dir = xstrdup(real);
		}
		free(dir);
	}
	return rc;
}

void
spec_free(struct spec *s)
{
	int	k;

	if (s == NULL)
		return;
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		spec_value_free(&s->v[k]);
		spec_value_free(&s->def[k]);
	}
	spec_matrix_free(s);
	free(s->file);
	free(s->dir);
	free(s);
}
