/* cadre report: an experiment's scaling tables (Markdown, CSV or JSON),
 * its plots as SVG, and a comparison with another experiment. It reads
 * the database and the run directories; it needs no daemon. The output
 * is written by report_table.c, report_compare.c, report_at.c and
 * report_plot.c (report_render.h). */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "diag.h"
#include "duration.h"
#include "error.h"
#include "paths.h"
#include "report.h"
#include "report_render.h"
#include "state.h"
#include "xmalloc.h"

enum report_format { FMT_MD = 0, FMT_CSV, FMT_JSON };

#define REPORT_AT_MAX	32	/* times one --at may list */

struct report_opts {
	enum report_format	 format;
	const char		*plot;
	const char		*compare;
	const char		*state_dir;
	double			 at[REPORT_AT_MAX];	/* seconds */
	size_t			 nat;
};

/* --at 20m,40m: training times in seconds. */
static int
parse_at(struct report_opts *o, const char *arg)
{
	char	*copy = xstrdup(arg), *tok, *save = NULL;
	int64_t	 v;
	int	 rc = 0;

	for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
	    tok = strtok_r(NULL, ",", &save)) {
		if (duration_parse(tok, &v) != 0 || v <= 0) {
			cli_usage_error(&cli_cmd_report, "--at '%s': expected "
			    "training times such as 20m or 20m,40m (each > 0)",
			    tok);
			rc = CADRE_ERR_INVALID;
		} else if (o->nat == REPORT_AT_MAX) {
			cli_usage_error(&cli_cmd_report, "--at: at most %d "
			    "times", REPORT_AT_MAX);
			rc = CADRE_ERR_INVALID;
		} else
			o->at[o->nat++] = (double)v;
	}
	if (rc == 0 && o->nat == 0) {
		cli_usage_error(&cli_cmd_report, "--at '%s': no time given", arg);
		rc = CADRE_ERR_INVALID;
	}
	free(copy);
	return rc;
}

static int
report_opt(void *ctx, const char *name, const char *arg)
{
	struct report_opts	*o = ctx;

	if (strcmp(name, "format") == 0) {
		if (strcmp(arg, "md") == 0)
			o->format = FMT_MD;
		else if (strcmp(arg, "csv") == 0)
			o->format = FMT_CSV;
		else if (strcmp(arg, "json") == 0)
			o->format = FMT_JSON;
		else {
			cli_usage_error(&cli_cmd_report, "--format '%s': "
			    "expected md, csv or json", arg);
			return CADRE_ERR_INVALID;
		}
	} else if (strcmp(name, "plot") == 0)
		o->plot = arg;
	else if (strcmp(name, "compare") == 0)
		o->compare = arg;
	else if (strcmp(name, "at") == 0)
		return parse_at(o, arg);
	else if (strcmp(name, "state-dir") == 0)
		o->state_dir = arg;
	return 0;
}

int
cli_open_state(const char *prog, const char *state_dir, struct state **st)
{
	char	*db = NULL;
	int	 rc;

	*st = NULL;
	if (state_dir != NULL)
		xasprintf(&db, "%s/cadre.db", state_dir);
	else if ((rc = paths_db(&db)) != 0) {
		fprintf(stderr, "%s: no state directory: set CADRE_STATE_DIR or "
		    "HOME, or give --state-dir\n", prog);
		return rc;
	}
	if (access(db, F_OK) != 0) {
		fprintf(stderr, "%s: %s: %s (nothing submitted yet? --state-dir "
		    "names another state directory)\n", prog, db, strerror(errno));
		rc = CADRE_ERR_NOT_FOUND;
		goto out;
	}
	if ((rc = state_open(db, st)) != 0)
		fprintf(stderr, "%s: %s: %s\n", prog, db, cadre_strerror(rc));

 out:
	free(db);
	return rc;
}

static int
load(struct state *st, const char *arg, struct report **out)
{
	struct diags	 d;
	char		 msg[512], *id = NULL;
	int		 rc;

	*out = NULL;
	rc = state_find_experiment(st, arg, &id, msg, sizeof msg);
	if (*msg != '\0' || rc != 0)
		fprintf(stderr, "cadre report: %s\n", *msg != '\0' ? msg :
		    cadre_strerror(rc));
	if (rc != 0)
		return rc;
	diags_init(&d);
	rc = load_report(st, id, &d, out);
	diags_print(&d, stderr);
	diags_free(&d);
	if (rc != 0)
		fprintf(stderr, "cadre report: experiment %s: %s\n", id,
		    rc == CADRE_ERR_INVALID ? "its stored spec does not parse "
		    "with this version of cadre" : cadre_strerror(rc));
	else
		diags_print(&(*out)->warnings, stderr);
	free(id);
	return rc;
}

static int
run_report(const struct cli_command *cmd, int argc, char **argv)
{
	struct report_opts	 o;
	struct state		*st = NULL;
	struct report		*r = NULL, *b = NULL;
	struct report_match	*m = NULL;
	size_t			 nm = 0;
	json_t			*root;
	int			 first, ret = CLI_EXIT_FAIL;

	memset(&o, 0, sizeof o);
	o.format = FMT_MD;
	if ((first = cli_parse(cmd, argc, argv, report_opt, &o)) < 0)
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	if (first >= argc) {
		cli_usage_error(cmd, "no experiment given");
		return CLI_EXIT_USAGE;
	}
	if (argc - first > 1) {
		cli_usage_error(cmd, "one experiment at a time ('%s' is one "
		    "too many); --compare EXP2 compares two", argv[first + 1]);
		return CLI_EXIT_USAGE;
	}
	if (cli_open_state("cadre report", o.state_dir, &st) != 0)
		goto out;
	if (load(st, argv[first], &r) != 0)
		goto out;
	if (o.compare != NULL) {
		if (load(st, o.compare, &b) != 0)
			goto out;
		report_compare(r, b, &m, &nm);
	}
	switch (o.format) {
	case FMT_MD:
		if (o.nat > 0) {
			fprintf(stdout, "# Report: %s (%s) at equal training "
			    "time\n", r->name, r->exp_id);
			render_md_at(r, o.at, o.nat, stdout);
		} else
			render_md(r, b, m, nm, stdout);
		break;
	case FMT_CSV:
		if (o.nat > 0)
			render_csv_at(r, o.at, o.nat, stdout);
		else
			render_csv(r, stdout);
		break;
	case FMT_JSON:
		root = report_json(r);
		if (o.nat > 0)
			json_object_set_new(root, "at", render_at_json(r, o.at, o.nat));
		if (b != NULL)
			json_object_set_new(root, "compare",
			    render_compare_json(r, b, m, nm));
		json_dumpf(root, stdout, JSON_INDENT(2) | JSON_SORT_KEYS |
		    JSON_REAL_PRECISION(17));
		putchar('\n');
		json_decref(root);
		break;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "cadre report: standard output: %s\n",
		    strerror(errno));
		goto out;
	}
	/* The plot paths go to stderr: stdout is the report alone, in
	 * every format. */
	if (o.plot != NULL && render_plots(r, o.plot, stderr) != 0)
		goto out;
	if (o.plot != NULL && o.nat > 0 && render_plots_at(r, o.plot,
	    stderr) != 0)
		goto out;
	ret = CLI_EXIT_OK;

 out:
	free(m);
	report_free(b);
	report_free(r);
	state_close(st);
	return ret;
}

int
cli_report_print(const char *db, const char *exp_id, FILE *fp)
{
	struct state	*st = NULL;
	struct report	*r = NULL;
	int		 rc;

	if ((rc = state_open(db, &st)) != 0) {
		fprintf(stderr, "cadre: %s: %s\n", db, cadre_strerror(rc));
		return rc;
	}
	if ((rc = load(st, exp_id, &r)) == 0)
		render_md(r, NULL, NULL, 0, fp);
	report_free(r);
	state_close(st);
	return rc;
}

static const struct cli_option report_options[] = {
	{ "format", 'f', "FMT", "md (aligned Markdown, the default), csv or "
	    "json" },
	{ "plot", 'p', "DIR", "Also write SVG plots into DIR" },
	{ "compare", 'c', "EXP2", "Compare each configuration with EXP2's" },
	{ "at", 'a', "TIMES", "The table at these training times (20m,40m): "
	    "steps, samples, samples/s, eval accuracy of the timed checkpoints" },
	{ "state-dir", 0, "DIR", "State directory (default: $CADRE_STATE_DIR, "
	    "...)" },
	{ NULL, 0, NULL, NULL }
};

const struct cli_command cli_cmd_report = {
	.name = "report",
	.operands = "EXP",
	.summary = "Print an experiment's scaling report, plots and comparison",
	.description =
	    "EXP is an experiment id, a unique id prefix or a name (the newest\n"
	    "experiment of that name). Per configuration: runs done/total, failed,\n"
	    "out-of-memory and cancelled runs, median, mean, min and max samples/s\n"
	    "over the repeats (each run's own figure is the median of its step lines\n"
	    "after measure.skip_steps), speedup and scaling efficiency against the\n"
	    "baseline, time to train, final loss or accuracy, peak memory; then a\n"
	    "DLPerf-style table per batch size and precision, every run, and the\n"
	    "environment the runs recorded. Lines of metrics.jsonl that cannot be\n"
	    "used are warnings on standard error (FILE:LINE).\n"
	    "\n"
	    "--at TIMES (20m or 20m,40m) prints instead the table at equal training time: per\n"
	    "configuration, over its runs with a timed checkpoint at TIME (the trainer\n"
	    "takes one every trainer.checkpoint_every of training), the checkpoint's\n"
	    "step and samples, the run's samples/s and the checkpoint's eval accuracy\n"
	    "and loss (eval.jsonl), median [min..max], and against the baseline; with\n"
	    "--plot also accuracy_vs_time.svg and accuracy_vs_samples.svg. In json it\n"
	    "is the report's \"at\" member.\n"
	    "\n"
	    "--plot DIR writes throughput-*.svg (against ranks, with the ideal line),\n"
	    "efficiency.svg and loss.svg (per configuration, the repeats' spread as\n"
	    "a band) and prints their paths on stderr.\n"
	    "--compare EXP2 gives the change in median samples/s of each\n"
	    "configuration in both (matched by values) and whether it is outside the\n"
	    "noise (the min..max ranges of the repeats do not overlap). The state\n"
	    "directory defaults to $CADRE_STATE_DIR, else $XDG_STATE_HOME/cadre, else\n"
	    "~/.local/state/cadre. See docs/report.md.\n"
	    "\n"
	    "Exit status: 0 done, 1 no such experiment, no or an unreadable database,\n"
	    "2 bad command line.\n",
	.options = report_options,
	.run = run_report,
};
