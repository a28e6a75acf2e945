/*
 * A program section's own checks: the metrics pattern compiled by PCRE2
 * with its named groups; the {name}s of command and setup against the
 * names a run gives values to (the built-in ones of common/rundir.h and
 * every var, the matrix's included); and whether the command's program can
 * be found from here, a warning only (the job's nodes may differ).
 */
#include "config.h"

#include <sys/stat.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "fsutil.h"
#include "rundir.h"
#include "xmalloc.h"
#include "spec_check.h"

/* ------------------------------------------------------------ metrics */

/* The groups a metrics pattern may name: fields of metrics.jsonl. */
static const char *const metric_groups[] = { MX_STEP, MX_LOSS,
    MX_SAMPLES_PER_S, MX_SAMPLES, MX_ELAPSED_S, MX_ACCURACY, NULL };

static int
is_metric_group(const char *name)
{
	size_t	i;

	for (i = 0; metric_groups[i] != NULL; i++) {
		if (strcmp(metric_groups[i], name) == 0)
			return 1;
	}
	return 0;
}

/* Characters (not bytes) in the first len bytes of UTF-8 text s. */
static size_t
utf8_chars(const char *s, size_t len)
{
	size_t	i, n = 0;

	for (i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xc0) != 0x80;
	return n;
}

int
spec_regex_check(struct spec_cx *cx, const struct spec_key_info *ki,
    const struct ynode *n)
{
	pcre2_code	*re;
	PCRE2_UCHAR	 msg[256];
	PCRE2_SIZE	 off;
	PCRE2_SPTR	 table;
	uint32_t	 count = 0, size = 0, i;
	struct cbuf	 unknown;
	const char	*name;
	int		 err, step = 0, rc = 0;

	if (n->len == 0 || n->len > SPEC_MAX_TEXT) {
		spec_node_error(cx, n, "%s: expected a pattern of 1 to %d bytes, "
		    "got %zu", ki->path, SPEC_MAX_TEXT, n->len);
		return CADRE_ERR_INVALID;
	}
	re = pcre2_compile((PCRE2_SPTR)n->str, n->len, PCRE2_UTF, &err, &off,
	    NULL);
	if (re == NULL) {
		if (pcre2_get_error_message(err, msg, sizeof msg) < 0)
			snprintf((char *)msg, sizeof msg, "error %d", err);
		spec_node_error(cx, n, "%s: %s, at column %zu of the pattern",
		    ki->path, (const char *)msg, utf8_chars(n->str, off) + 1);
		return CADRE_ERR_INVALID;
	}
	(void)pcre2_pattern_info(re, PCRE2_INFO_NAMECOUNT, &count);
	(void)pcre2_pattern_info(re, PCRE2_INFO_NAMEENTRYSIZE, &size);
	(void)pcre2_pattern_info(re, PCRE2_INFO_NAMETABLE, &table);
	cbuf_init(&unknown, SIZE_MAX);
	for (i = 0; i < count; i++) {
		/* an entry: the group's number in 2 bytes, then its name */
		name = (const char *)(table + (size_t)i * size + 2);
		if (strcmp(name, MX_STEP) == 0)
			step = 1;
		else if (!is_metric_group(name))
			cbuf_addf(&unknown, "%s%s", unknown.len > 0 ? ", " : "",
			    name);
	}
	pcre2_code_free(re);
	if (!step) {
		spec_node_error(cx, n, "%s: no group is named step; name the "
		    "step's digits, e.g. 'step (?<step>\\d+) loss "
		    "(?<loss>\\S+)'", ki->path);
		rc = CADRE_ERR_INVALID;
	} else if (unknown.len > 0)
		diag_warning(cx->d, cx->file, n->line, n->col, "%s: groups not "
		    "among step, loss, samples_per_s, samples, elapsed_s and "
		    "accuracy are ignored: %s", ki->path, unknown.data);
	cbuf_free(&unknown);
	return rc;
}

/* ------------------------------------------------------------ {name} */

/* The vars' names: program.vars and those of the matrix and include. */
struct names {
	const char	**v;
	size_t		  n;
};

static void
names_add(struct names *nm, const char *name)
{
	size_t	i;

	for (i = 0; i < nm->n; i++) {
		if (strcmp(nm->v[i], name) == 0)
			return;
	}
	nm->v = xreallocarray(nm->v, nm->n + 1, sizeof *nm->v);
	nm->v[nm->n++] = name;
}

static void
names_of_vars(const struct spec *s, struct names *nm)
{
	const struct spec_value	*v = &s->v[SPEC_K_PROG_VARS];
	size_t			 i, j;

	memset(nm, 0, sizeof *nm);
	for (i = 0; v->list != NULL && i + 1 < v->n; i += 2)
		names_add(nm, v->list[i]);
	for (i = 0; i < s->ndims; i++) {
		if (s->dims[i].var != NULL)
			names_add(nm, s->dims[i].var);
	}
	for (i = 0; i < s->nincludes; i++) {
		for (j = 0; j < s->includes[i].n; j++) {
			if (s->includes[i].a[j].var != NULL)
				names_add(nm, s->includes[i].a[j].var);
		}
	}
}

static int
name_known(const struct names *vars, const char *name, size_t len)
{
	size_t	i;

	for (i = 0; rundir_placeholders[i].name != NULL; i++) {
		if (strlen(rundir_placeholders[i].name) == len &&
		    memcmp(rundir_placeholders[i].name, name, len) == 0)
			return 1;
	}
	for (i = 0; i < vars->n; i++) {
		if (strlen(vars->v[i]) == len &&
		    memcmp(vars->v[i], name, len) == 0)
			return 1;
	}
	return 0;
}

static void
unknown_name(struct spec_cx *cx, const char *what, const struct ynode *at,
    const char *name, size_t len, const struct names *vars)
{
	struct cbuf	 built, var;
	char		*shown;
	size_t		 i;

	cbuf_init(&built, SIZE_MAX);
	for (i = 0; rundir_placeholders[i].name != NULL; i++)
		cbuf_addf(&built, "%s%s", i > 0 ? ", " : "",
		    rundir_placeholders[i].name);
	cbuf_init(&var, SIZE_MAX);
	for (i = 0; i < vars->n; i++)
		cbuf_addf(&var, "%s%s", i > 0 ? ", " : "", vars->v[i]);
	shown = spec_show(name, len);
	spec_node_error(cx, at, "%s: unknown placeholder {%s}: not a built-in "
	    "name (%s) nor a var (%s); write {{%s}} for the text itself",
	    what, shown, built.data, vars->n > 0 ? var.data :
	    "program.vars has none", shown);
	free(shown);
	cbuf_free(&built);
	cbuf_free(&var);
}

/* rundir_expand's lookup for the check: a known name expands to "", an
 * unknown one is kept for the message. */
struct brace_check {
	const struct names	*vars;
	char			 unknown[RUNDIR_NAME_MAX + 1];
};

static const char *
brace_lookup(const char *name, void *ctx)
{
	struct brace_check	*b = ctx;

	if (name_known(b->vars, name, strlen(name)))
		return "";
	snprintf(b->unknown, sizeof b->unknown, "%s", name);
	return NULL;
}

/* The {name}s of one word or string w, written at node at, read by the
 * agent's reader (rundir_expand), so that what validates expands. */
static void
check_braces(struct spec_cx *cx, const char *what, const struct ynode *at,
    const char *w, const struct names *vars)
{
	struct brace_check	 b = { .vars = vars };
	struct cbuf		 out;
	char			 why[256], *shown;
	size_t			 pos;

	cbuf_init(&out, SIZE_MAX);
	if (rundir_expand(w, brace_lookup, &b, 0, &out, &pos, why,
	    sizeof why) != 0) {
		if (b.unknown[0] != '\0') {
			unknown_name(cx, what, at, b.unknown,
			    strlen(b.unknown), vars);
		} else {
			shown = spec_show(w + pos, strlen(w + pos));
			spec_node_error(cx, at, "%s: %s at '%s'", what, why,
			    shown);
			free(shown);
		}
	}
	cbuf_free(&out);
}

/* The words of a command (a list) or the string itself. */
static void
check_node_braces(struct spec_cx *cx, const char *what,
    const struct ynode *n, const struct names *vars)
{
	size_t	i;

	if (n->kind == YNODE_SCALAR) {
		check_braces(cx, what, n, n->str, vars);
		return;
	}
	for (i = 0; n->kind == YNODE_SEQ && i < n->n; i++) {
		if (n->items[i]->kind == YNODE_SCALAR)
			check_braces(cx, what, n->items[i], n->items[i]->str,
			    vars);
	}
}

/* ------------------------------------------------------------ the program */

/* Words a shell runs itself: no file to look for. */
static const char *const shell_words[] = { ".", ":", "[", "!", "{", "(",
    "break", "case", "cd", "command", "continue", "eval", "exec", "exit",
    "export", "for", "if", "read", "set", "source", "test", "time", "trap",
    "ulimit", "umask", "unset", "until", "wait", "while", NULL };

/* The program a sh -c string starts, or NULL when that takes a shell to
 * know (a builtin, a variable, quoting, an assignment). Caller frees. */
static char *
shell_program(const char *cmd)
{
	size_t	n, i;
	char	*w;

	cmd += strspn(cmd, " \t\n");
	n = strcspn(cmd, " \t\n;&|<>()");
	w = xstrndup(cmd, n);
	for (i = 0; shell_words[i] != NULL; i++) {
		if (strcmp(w, shell_words[i]) == 0)
			break;
	}
	if (n == 0 || shell_words[i] != NULL || strpbrk(w, "\"'$`\\=*?") !=
	    NULL) {
		free(w);
		return NULL;
	}
	return w;
}

/* The workdir as this machine sees it, or NULL (a variable: reported). */
static char *
workdir_here(struct spec_cx *cx)
{
	const struct spec_value	*w = &cx->s->v[SPEC_K_PROG_WORKDIR];

	if (!w->set || w->bad || w->s[0] == '$')
		return NULL;
	if (w->s[0] == '/')
		return xstrdup(w->s);
	return spec_resolve_path(cx->s, w->s);
}

static void
check_workdir(struct spec_cx *cx)
{
	const struct spec_value	*w = &cx->s->v[SPEC_K_PROG_WORKDIR];
	struct stat		 st;
	char			*dir;

	if (!w->set || w->bad || w->line == 0)
		return;
	if (w->s[0] == '$') {
		diag_error(cx->d, cx->file, w->line, w->col, "program.workdir: "
		    "variables are not expanded here; write the directory, "
		    "absolute or relative to the spec");
		return;
	}
	dir = workdir_here(cx);
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		diag_warning(cx->d, cx->file, w->line, w->col,
		    "program.workdir: %s is not a directory here; the program "
		    "starts there", w->s);
	free(dir);
}

/* The command's program, looked for as the job would: a warning when it
 * is not found here (the job's nodes may have it). */
static void
check_found(struct spec_cx *cx)
{
	const struct spec	*s = cx->s;
	const struct spec_value	*cmd = &s->v[SPEC_K_PROG_COMMAND];
	const struct spec_value	*rt = &s->v[SPEC_K_CONTAINER_RUNTIME];
	const struct ynode	*at = cx->command;
	char			*word, *dir, *path;

	if (!cmd->set || at == NULL || (rt->set &&
	    strcmp(rt->s, "none") != 0))
		return;	/* in a container, the image has it or not */
	if (cmd->list != NULL) {
		word = xstrdup(cmd->list[0]);
		at = at->items[0];
	} else if ((word = shell_program(cmd->s)) == NULL)
		return;
	if (strchr(word, '{') != NULL) {
		free(word);
		return;
	}
	if (strchr(word, '/') == NULL) {
		if (!fs_on_path(word))
			diag_warning(cx->d, cx->file, at->line, at->col,
			    "program.command: %s is not on PATH here; the job "
			    "finds it only if its nodes have it (a program in "
			    "program.workdir is ./%s)", word, word);
		free(word);
		return;
	}
	if ((dir = workdir_here(cx)) == NULL) {
		free(word);
		return;
	}
	if (word[0] == '/')
		path = xstrdup(word);
	else
		xasprintf(&path, "%s/%s", dir, word);
	if (access(path, F_OK) != 0)
		diag_warning(cx->d, cx->file, at->line, at->col,
		    "program.command: %s is not found (program.workdir is "
		    "%s); the job cannot start it unless it is made first",
		    word, s->v[SPEC_K_PROG_WORKDIR].s);
	else if (!fs_is_executable(path))
		diag_warning(cx->d, cx->file, at->line, at->col,
		    "program.command: %s is not an executable file; chmod +x "
		    "it, or start it with its interpreter, e.g. [python3, %s]",
		    word, word);
	free(path);
	free(dir);
	free(word);
}

void
spec_check_program(struct spec_cx *cx)
{
	const struct spec	*s = cx->s;
	struct names		 vars;

	if (!s->program)
		return;
	names_of_vars(s, &vars);
	if (cx->command != NULL && s->v[SPEC_K_PROG_COMMAND].set)
		check_node_braces(cx, "program.command", cx->command, &vars);
	if (cx->setup != NULL && s->v[SPEC_K_PROG_SETUP].set)
		check_node_braces(cx, "program.setup", cx->setup, &vars);
	free(vars.v);
	check_workdir(cx);
	check_found(cx);
}
