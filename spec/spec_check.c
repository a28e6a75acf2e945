/*
 * The spec's YAML tree walked against the key table: every key looked up
 * in its section, unknown ones reported with the nearest known name or the
 * section they belong in, dotted paths refused where a nested key is
 * meant, and the required keys that are missing.
 */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strutil.h"
#include "xmalloc.h"
#include "spec_check.h"

void
spec_node_error(struct spec_cx *cx, const struct ynode *n, const char *fmt,
    ...)
{
	va_list	ap;

	va_start(ap, fmt);
	diag_vadd(cx->d, DIAG_ERROR, cx->file, n != NULL ? n->line : 0,
	    n != NULL ? n->col : 0, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------ keys */

static size_t
suggest_limit(const char *s)
{
	size_t	n = strlen(s);

	return n <= 3 ? 1 : n <= 6 ? 2 : 3;
}

/* Whether some key lies under path. */
static int
is_section(const char *path)
{
	size_t	n = strlen(path);
	int	k;

	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		if (strncmp(spec_key_info(k)->path, path, n) == 0 &&
		    spec_key_info(k)->path[n] == '.')
			return 1;
	}
	return 0;
}

/* The next component after prefix of a key path under it, in buf. */
static int
child_name(const char *path, const char *prefix, char *buf, size_t len)
{
	size_t		 n = prefix != NULL ? strlen(prefix) : 0;
	const char	*rest, *dot;

	if (prefix != NULL) {
		if (strncmp(path, prefix, n) != 0 || path[n] != '.')
			return 0;
		rest = path + n + 1;
	} else
		rest = path;
	dot = strchr(rest, '.');
	n = dot != NULL ? (size_t)(dot - rest) : strlen(rest);
	if (n >= len)
		return 0;
	memcpy(buf, rest, n);
	buf[n] = '\0';
	return 1;
}

const char *
spec_suggest_path(const char *path, unsigned flags)
{
	const struct spec_key_info	*ki;
	const char			*best = NULL, *leaf, *dot;
	size_t				 d, bestd, lim = suggest_limit(path);
	int				 k;

	bestd = lim + 1;
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		ki = spec_key_info(k);
		if ((ki->flags & flags) != flags)
			continue;
		d = str_edit_distance(path, ki->path, lim);
		if (d < bestd) {
			bestd = d;
			best = ki->path;
		}
	}
	if (best != NULL)
		return best;
	/* "batch_size" for "trainer.batch_size". */
	leaf = (dot = strrchr(path, '.')) != NULL ? dot + 1 : path;
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		ki = spec_key_info(k);
		if ((ki->flags & flags) != flags)
			continue;
		dot = strrchr(ki->path, '.');
		if (strcmp(dot != NULL ? dot + 1 : ki->path, leaf) == 0)
			return ki->path;
	}
	return NULL;
}

void
spec_unknown_key(struct spec_cx *cx, const char *section, const char *key,
    uint32_t line, uint32_t col)
{
	const struct spec_key_info	*ki;
	char				 name[128], *best = NULL, *shown, *in;
	const char			*leaf;
	size_t				 d, bestd, lim;
	int				 k;

	shown = spec_show(key, strlen(key));
	if (section != NULL)
		xasprintf(&in, " in %s", section);
	else
		in = xstrdup("");
	if (diags_full(cx->d)) {
		/* Counted, not shown: spare the search. */
		diag_error(cx->d, cx->file, line, col, "unknown key '%s'%s",
		    shown, in);
		goto out;
	}
	if (strcmp(key, "<<") == 0) {
		diag_error(cx->d, cx->file, line, col, "merge keys ('<<') are "
		    "not supported; write the keys out, or alias a whole value");
		goto out;
	}

	/* A near miss among the names of this section. */
	lim = suggest_limit(key);
	bestd = lim + 1;
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		ki = spec_key_info(k);
		if (!child_name(ki->path, section, name, sizeof name))
			continue;
		d = str_edit_distance(key, name, lim);
		if (d < bestd) {
			bestd = d;
			free(best);
			best = xstrdup(name);
		}
	}
	if (best != NULL && bestd <= 1) {
		diag_error(cx->d, cx->file, line, col, "unknown key '%s'%s (did "
		    "you mean '%s'?)", shown, in, best);
		goto out;
	}

	/* The same name in another section: a misplaced key. That beats a
	 * looser near miss: 'nodes' in trainer is not 'model'. */
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		ki = spec_key_info(k);
		leaf = strrchr(ki->path, '.');
		leaf = leaf != NULL ? leaf + 1 : ki->path;
		if (strcmp(leaf, key) == 0 && strchr(ki->path, '.') != NULL) {
			diag_error(cx->d, cx->file, line, col, "unknown key "
			    "'%s'%s (did you mean '%s'?)", shown, in, ki->path);
			goto out;
		}
	}
	if (best != NULL) {
		diag_error(cx->d, cx->file, line, col, "unknown key '%s'%s (did "
		    "you mean '%s'?)", shown, in, best);
		goto out;
	}
	diag_error(cx->d, cx->file, line, col, "unknown key '%s'%s; 'cadre "
	    "keys' lists the keys", shown, in);

 out:
	free(best);
	free(in);
	free(shown);
}

static void check_map(struct spec_cx *cx, const char *prefix,
    const struct ynode *key, const struct ynode *map);

/* Marks where each key's section is, for "missing required key" errors. */
static void
note_section(struct spec_cx *cx, const char *prefix, const struct ynode *key)
{
	size_t	n = strlen(prefix);
	int	k;

	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		/* Nested sections come later and win: the nearest one. */
		if (strncmp(spec_key_info(k)->path, prefix, n) == 0 &&
		    spec_key_info(k)->path[n] == '.') {
			cx->s->sect_line[k] = key->line;
			cx->s->sect_col[k] = key->col;
		}
	}
}

static void
check_pair(struct spec_cx *cx, const char *prefix, const struct ynode *key,
    const struct ynode *val)
{
	struct spec		*s = cx->s;
	const struct spec_key_info *ki;
	char			*path, *shown, *got;
	int			 k;

	if (prefix == NULL && strncmp(key->str, "x-", 2) == 0)
		return;	/* extension keys: a place for anchors */
	if (prefix == NULL && strcmp(key->str, "trainer") == 0)
		cx->trainer_key = key;
	if (prefix == NULL && strcmp(key->str, "program") == 0)
		cx->program_key = key;
	if (prefix != NULL)
		xasprintf(&path, "%s.%s", prefix, key->str);
	else
		path = xstrdup(key->str);

	if (strchr(key->str, '.') != NULL &&
	    (spec_key_lookup(path) >= 0 || is_section(path) ||
	    spec_key_lookup(key->str) >= 0)) {
		shown = spec_show(key->str, key->len);
		spec_node_error(cx, key, "dotted key '%s': dotted paths are only for "
		    "matrix, exclude, include and report.baseline; write it "
		    "nested, one level per line", shown);
		free(shown);
		goto out;
	}
	if ((k = spec_key_lookup(path)) >= 0) {
		ki = spec_key_info(k);
		switch (ki->type) {
		case SPEC_T_MATRIX:
			cx->matrix = val;
			cx->matrix_key = key;
			break;
		case SPEC_T_EXCLUDE:
			cx->exclude = val;
			cx->exclude_key = key;
			break;
		case SPEC_T_INCLUDE:
			cx->include = val;
			cx->include_key = key;
			break;
		case SPEC_T_ASSIGN:
			cx->baseline = val;
			cx->baseline_key = key;
			break;
		case SPEC_T_PATH:
			/* trainer.init: a path, or where in another
			 * experiment (trainer.init.from, ...) */
			if (k == SPEC_K_INIT && val->kind == YNODE_MAP) {
				check_map(cx, path, key, val);
				break;
			}
			spec_value_free(&s->v[k]);
			spec_value_parse(cx, k, val, &s->v[k]);
			break;
		case SPEC_T_MODEL:
			if (val->kind == YNODE_MAP) {
				spec_value_free(&s->v[k]);
				s->v[k].set = 1;
				s->v[k].s = xstrdup("custom");
				s->v[k].i = -1;
				s->v[k].line = val->line;
				s->v[k].col = val->col;
				s->custom_model = 1;
				check_map(cx, path, key, val);
				break;
			}
			/* FALLTHROUGH */
		default:
			if (k == SPEC_K_VERSION)
				break;	/* checked first */
			if (k == SPEC_K_PROG_COMMAND)
				cx->command = val;
			if (k == SPEC_K_PROG_SETUP)
				cx->setup = val;
			spec_value_free(&s->v[k]);
			spec_value_parse(cx, k, val, &s->v[k]);
			break;
		}
	} else if (is_section(path)) {
		if (val->kind != YNODE_MAP) {
			got = spec_describe(val);
			spec_node_error(cx, val, "%s: expected a mapping of keys, got "
			    "%s", path, got);
			free(got);
		} else
			check_map(cx, path, key, val);
	} else
		spec_unknown_key(cx, prefix, key->str, key->line, key->col);

 out:
	free(path);
}

static void
check_map(struct spec_cx *cx, const char *prefix, const struct ynode *key,
    const struct ynode *map)
{
	size_t	i;

	if (prefix != NULL)
		note_section(cx, prefix, key);
	for (i = 0; i < map->n; i++)
		check_pair(cx, prefix, YMAP_KEY(map, i), YMAP_VAL(map, i));
}

/* ------------------------------------------------------------ trainer or program */

static int
under(const char *path, const char *section)
{
	size_t	n = strlen(section);

	return strncmp(path, section, n) == 0 && path[n] == '.';
}

static int
foreign_at(struct spec_cx *cx, const char *where, enum spec_key k,
    uint32_t line, uint32_t col)
{
	const char	*path = spec_key_info(k)->path, *hint;

	if ((cx->trainer_key == NULL) == (cx->program_key == NULL))
		return 0;	/* neither or both: reported as such */
	if (cx->program_key != NULL && (under(path, "trainer") ||
	    under(path, "eval"))) {
		hint = under(path, "eval") ? "; a program "
		    "evaluates its checkpoints itself" : "; vary "
		    "program.vars.NAME instead";
		diag_error(cx->d, cx->file, line, col, "%s%s%s is for cadre's "
		    "trainer, and this spec runs a program (it has a program "
		    "section)%s", where != NULL ? where : "",
		    where != NULL ? ": " : "", path, hint);
		return 1;
	}
	if (cx->trainer_key != NULL && k == SPEC_K_STAGE_FROM) {
		diag_error(cx->d, cx->file, line, col, "%s%sstage.from is for "
		    "a program: the trainer stages trainer.data; remove "
		    "stage.from", where != NULL ? where : "",
		    where != NULL ? ": " : "");
		return 1;
	}
	if (cx->trainer_key != NULL && under(path, "program")) {
		diag_error(cx->d, cx->file, line, col, "%s%s%s is for a program, "
		    "and this spec runs cadre's trainer (it has a trainer "
		    "section)", where != NULL ? where : "",
		    where != NULL ? ": " : "", path);
		return 1;
	}
	return 0;
}

int
spec_key_foreign(struct spec_cx *cx, const char *where, enum spec_key k,
    const struct ynode *n)
{
	return foreign_at(cx, where, k, n->line, n->col);
}

/* A spec runs the trainer or a program: one of the two sections. */
static void
check_kind(struct spec_cx *cx, const struct ynode *root)
{
	struct spec	*s = cx->s;
	int		 k;

	if (cx->trainer_key == NULL && cx->program_key == NULL)
		diag_error(cx->d, cx->file, root->line, root->col, "the spec "
		    "runs nothing: add a trainer section (cadre's trainer, "
		    "with trainer.data) or a program section (your own "
		    "program, with program.command)");
	else if (cx->trainer_key != NULL && cx->program_key != NULL)
		diag_error(cx->d, cx->file, cx->program_key->line,
		    cx->program_key->col, "program: a spec has a trainer "
		    "section (line %u) or a program section, not both; remove "
		    "one", (unsigned)cx->trainer_key->line);
	s->program = cx->program_key != NULL;
	/* The trainer's keys outside its section, given to a program. */
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		if (s->v[k].line != 0 && (k == SPEC_K_STAGE_FROM ||
		    under(spec_key_info(k)->path, "eval")))
			foreign_at(cx, NULL, k, s->v[k].line, s->v[k].col);
	}
	/* A program stages what stage.from names: both or neither. */
	if (s->program && cx->trainer_key == NULL &&
	    (s->v[SPEC_K_STAGE_TO].line != 0) !=
	    (s->v[SPEC_K_STAGE_FROM].line != 0)) {
		k = s->v[SPEC_K_STAGE_TO].line != 0 ? SPEC_K_STAGE_TO :
		    SPEC_K_STAGE_FROM;
		diag_error(cx->d, cx->file, s->v[k].line, s->v[k].col,
		    "%s: a program is staged with stage.from (its data) and "
		    "stage.to (where it goes on each node); add %s",
		    spec_key_info(k)->path, k == SPEC_K_STAGE_TO ?
		    "stage.from" : "stage.to");
	}
}

static void
check_required(struct spec_cx *cx)
{
	struct spec			*s = cx->s;
	const struct spec_key_info	*ki;
	const char			*hint;
	int				 k;

	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		ki = spec_key_info(k);
		if (!(ki->flags & SPEC_F_REQUIRED) || s->v[k].set ||
		    s->v[k].bad)
			continue;
		/* A section's keys are required when it is the only one. */
		if (under(ki->path, "trainer") && (cx->trainer_key == NULL ||
		    cx->program_key != NULL))
			continue;
		if (under(ki->path, "program") && (cx->program_key == NULL ||
		    cx->trainer_key != NULL))
			continue;
		hint = "";
		if (k == SPEC_K_VERSION)
			hint = " (add 'version: 1' at the top)";
		else if (k == SPEC_K_NAME)
			hint = " (the experiment's name, e.g. 'name: "
			    "bert-scaling')";
		else if (k == SPEC_K_DATA)
			hint = " (the directory of training shards)";
		else if (k == SPEC_K_PROG_COMMAND)
			hint = " (the program and its arguments, e.g. "
			    "[python3, train.py])";
		else if (k >= SPEC_K_MODEL_LAYERS &&
		    k <= SPEC_K_MODEL_MAX_POSITION) {
			if (!s->custom_model)
				continue;
			hint = " (an explicit model needs layers, hidden and "
			    "heads)";
		}
		diag_error(cx->d, cx->file, s->sect_line[k], s->sect_col[k],
		    "missing required key '%s'%s", ki->path, hint);
	}
}

void
spec_check_tree(struct spec_cx *cx, const struct ynode *root)
{
	check_map(cx, NULL, NULL, root);
	check_kind(cx, root);
	check_required(cx);
}
