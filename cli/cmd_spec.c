/* cadre validate, plan and keys: the spec commands, which need no daemon. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "cli.h"
#include "diag.h"
#include "error.h"
#include "preflight.h"
#include "spec.h"
#include "xmalloc.h"

/* Loads one spec, printing its diagnostics on stderr; preflight: the
 * checks against what this host sees too (validate's). */
static int
load_spec(const char *path, int preflight, struct spec **out)
{
	struct diags	d;
	int		rc;

	diags_init(&d);
	rc = spec_load(path, &d, out);
	if (rc == 0 && preflight && (rc = cli_preflight(*out, &d)) != 0) {
		spec_free(*out);
		*out = NULL;
	}
	diags_sort(&d);
	diags_print(&d, stderr);
	diags_free(&d);
	return rc;
}

/* ------------------------------------------------------------ validate */

struct validate_opts {
	int	verbose;
};

static int
validate_opt(void *ctx, const char *name, const char *arg)
{
	struct validate_opts	*o = ctx;

	if (strcmp(name, "verbose") == 0)
		o->verbose = 1;
	return 0;
}

static int
run_validate(const struct cli_command *cmd, int argc, char **argv)
{
	struct validate_opts	 o = { 0 };
	struct spec		*s;
	struct spec_plan	*p;
	struct diags		 d;
	int			 i, first, bad = 0;

	if ((first = cli_parse(cmd, argc, argv, validate_opt, &o)) < 0)
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	if (first >= argc) {
		cli_usage_error(cmd, "no spec file given");
		return CLI_EXIT_USAGE;
	}
	for (i = first; i < argc; i++) {
		if (load_spec(argv[i], 1, &s) != 0) {
			bad = 1;
			continue;
		}
		if (o.verbose) {
			diags_init(&d);
			if (spec_expand(s, &d, &p) == 0) {
				printf("%s: ok (%zu run%s)\n", spec_file(s),
				    spec_plan_nruns(p),
				    spec_plan_nruns(p) == 1 ? "" : "s");
				spec_plan_free(p);
			}
			diags_print(&d, stderr);
			diags_free(&d);
		}
		spec_free(s);
	}
	return bad ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}

static const struct cli_option validate_options[] = {
	{ "verbose", 'v', NULL, "Print 'FILE: ok (N runs)' for each valid spec" },
	{ NULL, 0, NULL, NULL }
};

const struct cli_command cli_cmd_validate = {
	.name = "validate",
	.operands = "FILE...",
	.summary = "Check experiment specs and report every problem",
	.description =
	    "Reads each spec (\"-\" is standard input) and prints its errors and\n"
	    "warnings on standard error as FILE:LINE:COL: error: MESSAGE.\n"
	    "Exit status: 0 when every spec is valid (warnings allowed), 2 when\n"
	    "one is not.\n",
	.options = validate_options,
	.run = run_validate,
};

/* ------------------------------------------------------------ plan */

struct plan_opts {
	int	json;
};

static int
plan_opt(void *ctx, const char *name, const char *arg)
{
	struct plan_opts	*o = ctx;

	if (strcmp(name, "json") == 0)
		o->json = 1;
	return 0;
}

/* Columns every plan shows; the other varied keys get one each. */
static int
fixed_column(enum spec_key k)
{
	return k == SPEC_K_RES_NODES || k == SPEC_K_RES_GPUS_PER_NODE ||
	    k == SPEC_K_BATCH_SIZE || k == SPEC_K_PRECISION;
}

/* A varied value a plan shows: a key, or one var of program.vars (which
 * varies as one key, shown var by var). */
struct varied {
	enum spec_key	 key;
	const char	*var;
	char		*path;		/* "trainer.batch_size", "program.vars.lr" */
};

static size_t
varied_list(const struct spec *s, struct varied **out)
{
	struct varied	*v;
	size_t		 n = 0, j, i;
	enum spec_key	 k;

	v = xcalloc(spec_nvaried(s) + spec_nvaried_vars(s) + 1, sizeof *v);
	for (j = 0; j < spec_nvaried(s); j++) {
		k = spec_varied(s, j);
		if (k != SPEC_K_PROG_VARS) {
			v[n].key = k;
			v[n++].path = xstrdup(spec_key_info(k)->path);
			continue;
		}
		for (i = 0; i < spec_nvaried_vars(s); i++) {
			v[n].key = k;
			v[n].var = spec_varied_var(s, i);
			xasprintf(&v[n].path, "%s.%s", spec_key_info(k)->path,
			    v[n].var);
			n++;
		}
	}
	*out = v;
	return n;
}

static void
varied_free(struct varied *v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}

/* A varied value of run r as text. */
static char *
varied_text(const struct spec_run *r, const struct varied *v)
{
	const char	*t;

	if (v->var == NULL)
		return spec_run_format(r, v->key);
	t = spec_run_var(r, v->var);
	return xstrdup(t != NULL ? t : "");
}

static json_t *
param_json(const struct spec_run *r, const struct varied *v)
{
	const struct spec_key_info	*ki = spec_key_info(v->key);
	char				*text;
	json_t				*j;

	if (v->var != NULL)
		return spec_run_var(r, v->var) != NULL ?
		    json_string(spec_run_var(r, v->var)) : json_null();
	if (!spec_run_is_set(r, v->key))
		return json_null();
	switch (ki->type) {
	case SPEC_T_INT:
		return json_integer(spec_run_int(r, v->key));
	case SPEC_T_FLOAT:
		return json_real(spec_run_double(r, v->key));
	case SPEC_T_BOOL:
		return json_boolean(spec_run_bool(r, v->key));
	default:
		text = spec_run_format(r, v->key);
		j = json_string(text);
		free(text);
		return j;
	}
}

static char *
hours_text(int64_t seconds)
{
	char	*r;

	if (seconds % 3600 == 0)
		xasprintf(&r, "%" PRId64, seconds / 3600);
	else
		xasprintf(&r, "%.2f", (double)seconds / 3600.0);
	return r;
}

/* A program's plan leaves out the trainer's batch and precision. */
static int
plan_json(const struct spec *s, const struct spec_plan *p)
{
	const struct spec_run	*r;
	json_t			*root, *runs, *run, *params, *varied, *total;
	struct varied		*vs;
	size_t			 i, j, nv;
	int64_t			 gpus = spec_plan_gpu_seconds(p);
	int			 trainer = !spec_is_program(s);

	root = json_object();
	runs = json_array();
	varied = json_array();
	nv = varied_list(s, &vs);
	for (j = 0; j < nv; j++)
		json_array_append_new(varied, json_string(vs[j].path));
	for (i = 0; i < spec_plan_nruns(p); i++) {
		r = spec_plan_run(p, i);
		run = json_object();
		params = json_object();
		json_object_set_new(run, "id", json_string(spec_run_id(r)));
		json_object_set_new(run, "config_id",
		    json_string(spec_run_config_id(r)));
		json_object_set_new(run, "repeat",
		    json_integer(spec_run_repeat(r)));
		json_object_set_new(run, "nodes",
		    json_integer(spec_run_int(r, SPEC_K_RES_NODES)));
		json_object_set_new(run, "gpus_per_node",
		    json_integer(spec_run_int(r, SPEC_K_RES_GPUS_PER_NODE)));
		json_object_set_new(run, "total_gpus",
		    json_integer(spec_run_total_gpus(r)));
		json_object_set_new(run, "ranks",
		    json_integer(spec_run_ranks(r)));
		if (trainer) {
			json_object_set_new(run, "batch_per_rank",
			    json_integer(spec_run_int(r, SPEC_K_BATCH_SIZE)));
			json_object_set_new(run, "global_batch",
			    json_integer(spec_run_global_batch(r)));
			json_object_set_new(run, "precision",
			    json_string(spec_run_string(r, SPEC_K_PRECISION)));
		} else
			json_object_set_new(run, "launch", json_string(
			    spec_run_string(r, SPEC_K_PROG_LAUNCH)));
		for (j = 0; j < nv; j++)
			json_object_set_new(params, vs[j].path,
			    param_json(r, &vs[j]));
		json_object_set_new(run, "params", params);
		json_array_append_new(runs, run);
	}
	varied_free(vs, nv);
	total = json_object();
	json_object_set_new(total, "runs", json_integer(spec_plan_nruns(p)));
	json_object_set_new(total, "configurations",
	    json_integer(spec_plan_nconfigs(p)));
	json_object_set_new(total, "gpu_seconds", json_integer(gpus));
	json_object_set_new(total, "gpu_hours", json_real(gpus / 3600.0));
	json_object_set_new(root, "name",
	    json_string(spec_get_string(s, SPEC_K_NAME)));
	json_object_set_new(root, "repeats", json_integer(spec_repeats(s)));
	json_object_set_new(root, "varied", varied);
	json_object_set_new(root, "runs", runs);
	json_object_set_new(root, "total", total);
	if (json_dumpf(root, stdout, JSON_INDENT(2) | JSON_SORT_KEYS |
	    JSON_REAL_PRECISION(15)) != 0) {
		json_decref(root);
		return CLI_EXIT_FAIL;
	}
	putchar('\n');
	json_decref(root);
	return CLI_EXIT_OK;
}

struct column {
	char		*title;
	int		 right;		/* numbers align right */
	size_t		 width;
	char		**cells;
};

static void
column_set(struct column *c, size_t row, char *text)
{
	if (strlen(text) > c->width)
		c->width = strlen(text);
	c->cells[row] = text;
}

static char *
int_text(int64_t v)
{
	char	*r;

	xasprintf(&r, "%" PRId64, v);
	return r;
}

static char *
upper(const char *s)
{
	char	*r = xstrdup(s), *p;

	for (p = r; *p != '\0'; p++) {
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	}
	return r;
}

/* The columns every plan table has, the trainer's only for its specs. */
enum plan_col {
	COL_ID, COL_NODES, COL_GPUS_PER_NODE, COL_GPUS, COL_RANKS, COL_BATCH,
	COL_GLOBAL_BATCH, COL_PRECISION, COL_REPEAT, COL_COUNT
};

static const char *const col_titles[COL_COUNT] = { "ID", "NODES",
    "GPUS/NODE", "GPUS", "RANKS", "BATCH/RANK", "GLOBAL BATCH", "PRECISION",
    "REPEAT" };

static int
col_trainer_only(enum plan_col c)
{
	return c == COL_BATCH || c == COL_GLOBAL_BATCH || c == COL_PRECISION;
}

static char *
col_cell(const struct spec_run *r, enum plan_col c)
{
	switch (c) {
	case COL_ID:
		return xstrdup(spec_run_id(r));
	case COL_NODES:
		return int_text(spec_run_int(r, SPEC_K_RES_NODES));
	case COL_GPUS_PER_NODE:
		return int_text(spec_run_int(r, SPEC_K_RES_GPUS_PER_NODE));
	case COL_GPUS:
		return int_text(spec_run_total_gpus(r));
	case COL_RANKS:
		return int_text(spec_run_ranks(r));
	case COL_BATCH:
		return int_text(spec_run_int(r, SPEC_K_BATCH_SIZE));
	case COL_GLOBAL_BATCH:
		return int_text(spec_run_global_batch(r));
	case COL_PRECISION:
		return xstrdup(spec_run_string(r, SPEC_K_PRECISION));
	default:
		return int_text(spec_run_repeat(r));
	}
}

static int
plan_table(const struct spec *s, const struct spec_plan *p)
{
	const struct spec_run	*r;
	struct column		*cols;
	struct varied		*vs, *extra;
	enum plan_col		 fixed[COL_COUNT];
	size_t			 ncols, nfixed = 0, nextra = 0, nv;
	size_t			 nruns = spec_plan_nruns(p), i, j, c;
	int64_t			 gpus = spec_plan_gpu_seconds(p), nodes = 0;
	char			*h, *nh;

	for (c = 0; c < COL_COUNT; c++) {
		if (!spec_is_program(s) || !col_trainer_only(c))
			fixed[nfixed++] = c;
	}
	nv = varied_list(s, &vs);
	extra = xcalloc(nv + 1, sizeof *extra);
	for (j = 0; j < nv; j++) {
		if (vs[j].var != NULL || !fixed_column(vs[j].key))
			extra[nextra++] = vs[j];
	}
	ncols = nfixed + nextra;
	cols = xcalloc(ncols, sizeof *cols);
	for (c = 0; c < ncols; c++) {
		if (c < nfixed) {
			cols[c].title = xstrdup(col_titles[fixed[c]]);
			cols[c].right = fixed[c] != COL_ID &&
			    fixed[c] != COL_PRECISION;
		} else
			cols[c].title = upper(extra[c - nfixed].var != NULL ?
			    extra[c - nfixed].var :
			    spec_key_leaf(extra[c - nfixed].key));
		cols[c].width = strlen(cols[c].title);
		cols[c].cells = xcalloc(nruns + 1, sizeof *cols[c].cells);
	}
	for (i = 0; i < nruns; i++) {
		r = spec_plan_run(p, i);
		for (c = 0; c < nfixed; c++)
			column_set(&cols[c], i, col_cell(r, fixed[c]));
		for (j = 0; j < nextra; j++)
			column_set(&cols[nfixed + j], i, varied_text(r,
			    &extra[j]));
	}

	for (c = 0; c < ncols; c++)
		printf("%s%-*s", c > 0 ? "  " : "", c + 1 < ncols ?
		    (int)cols[c].width : 0, cols[c].title);
	putchar('\n');
	for (i = 0; i < nruns; i++) {
		for (c = 0; c < ncols; c++) {
			if (cols[c].right)
				printf("%s%*s", c > 0 ? "  " : "",
				    (int)cols[c].width, cols[c].cells[i]);
			else
				printf("%s%-*s", c > 0 ? "  " : "",
				    c + 1 < ncols ? (int)cols[c].width : 0,
				    cols[c].cells[i]);
		}
		putchar('\n');
	}
	for (i = 0; i < nruns; i++) {
		r = spec_plan_run(p, i);
		nodes += spec_run_int(r, SPEC_K_RES_NODES) *
		    spec_run_int(r, SPEC_K_SCHED_TIME_LIMIT);
	}
	h = hours_text(gpus);
	nh = hours_text(nodes);
	printf("%zu run%s (%zu configuration%s x %" PRId64 " repeat%s); at "
	    "most %s GPU-hours and %s node-hours (time limit x GPUs or nodes, "
	    "summed over the runs)\n", nruns, nruns == 1 ? "" : "s",
	    spec_plan_nconfigs(p), spec_plan_nconfigs(p) == 1 ? "" : "s",
	    spec_repeats(s), spec_repeats(s) == 1 ? "" : "s", h, nh);
	free(h);
	free(nh);

	for (c = 0; c < ncols; c++) {
		for (i = 0; i < nruns; i++)
			free(cols[c].cells[i]);
		free(cols[c].cells);
		free(cols[c].title);
	}
	free(cols);
	free(extra);
	varied_free(vs, nv);
	return CLI_EXIT_OK;
}

static int
run_plan(const struct cli_command *cmd, int argc, char **argv)
{
	struct plan_opts	 o = { 0 };
	struct spec		*s;
	struct spec_plan	*p;
	struct diags		 d;
	int			 first, rc;

	if ((first = cli_parse(cmd, argc, argv, plan_opt, &o)) < 0)
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	if (argc - first != 1) {
		cli_usage_error(cmd, first >= argc ? "no spec file given" :
		    "give one spec file, not %d", argc - first);
		return CLI_EXIT_USAGE;
	}
	if (load_spec(argv[first], 0, &s) != 0)
		return CLI_EXIT_USAGE;
	diags_init(&d);
	rc = spec_expand(s, &d, &p);
	diags_print(&d, stderr);
	diags_free(&d);
	if (rc != 0) {
		spec_free(s);
		return CLI_EXIT_USAGE;
	}
	rc = o.json ? plan_json(s, p) : plan_table(s, p);
	spec_plan_free(p);
	spec_free(s);
	if (fflush(stdout) != 0)
		rc = CLI_EXIT_FAIL;
	return rc;
}

static const struct cli_option plan_options[] = {
	{ "json", 0, NULL, "Print the plan as one JSON object" },
	{ NULL, 0, NULL, NULL }
};

const struct cli_command cli_cmd_plan = {
	.name = "plan",
	.operands = "FILE",
	.summary = "Show the runs a spec expands to",
	.description =
	    "Prints one line per run: its id, nodes, GPUs, ranks, batch per rank\n"
	    "and global batch (batch_size x grad_accum x ranks), precision, repeat\n"
	    "and the other keys that vary, then the totals. An invalid spec gets\n"
	    "the messages of 'cadre validate' and exit status 2.\n",
	.options = plan_options,
	.run = run_plan,
};

/* ------------------------------------------------------------ keys */

struct keys_opts {
	int	markdown;
};

static int
keys_opt(void *ctx, const char *name, const char *arg)
{
	struct keys_opts	*o = ctx;

	if (strcmp(name, "markdown") == 0)
		o->markdown = 1;
	return 0;
}

static int
run_keys(const struct cli_command *cmd, int argc, char **argv)
{
	struct keys_opts	o = { 0 };
	int			first;

	if ((first = cli_parse(cmd, argc, argv, keys_opt, &o)) < 0)
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	if (first < argc) {
		cli_usage_error(cmd, "unexpected argument '%s'", argv[first]);
		return CLI_EXIT_USAGE;
	}
	spec_keys_write(stdout, o.markdown ? SPEC_KEYS_MARKDOWN :
	    SPEC_KEYS_TEXT);
	return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

static const struct cli_option keys_options[] = {
	{ "markdown", 0, NULL, "Print a Markdown table (as in docs/spec.md)" },
	{ NULL, 0, NULL, NULL }
};

const struct cli_command cli_cmd_keys = {
	.name = "keys",
	.operands = "",
	.summary = "List the keys of the spec language",
	.description =
	    "Prints every key a spec may hold: its dotted path, type, default,\n"
	    "allowed values, whether it may vary in a matrix, and what it does.\n",
	.options = keys_options,
	.run = run_keys,
};
