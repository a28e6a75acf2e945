/*
 * cadre import RUN_DIR: records a run that did not go through cadred (a
 * hand-submitted `cadre script`, or a user's own sbatch/qsub script with
 * `cadre-agent launch --from-env`) in the state database, so that cadre
 * report covers it. The run's spec: RUN_DIR/spec.yaml and run.json (left
 * by `cadre script --write`), else one made from train.json or, failing
 * that, from metrics.jsonl's start event. Its state: status.json's
 * reason, else the metrics summary. Importing again updates the state and
 * adds nothing.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cli.h"
#include "diag.h"
#include "error.h"
#include "json.h"
#include "paths.h"
#include "rundir.h"
#include "rundir_read.h"
#include "sha256.h"
#include "spec.h"
#include "state.h"
#include "strutil.h"
#include "xmalloc.h"

#define IMPORT_JSON_MAX		((size_t)1 << 20)	/* train.json, run.json */
#define IMPORT_METRICS_MAX	((size_t)1 << 30)	/* metrics.jsonl read */
#define IMPORT_LINE_MAX		((size_t)64 << 10)	/* one metrics line */

struct import_opts {
	const char	*experiment;
	const char	*state_dir;
};

static int
import_opt(void *ctx, const char *name, const char *arg)
{
	struct import_opts	*o = ctx;

	if (strcmp(name, "experiment") == 0)
		o->experiment = arg;
	else if (strcmp(name, "state-dir") == 0)
		o->state_dir = arg;
	return 0;
}

/* dir/name (at most max bytes) as JSON, or NULL when missing; a bad file
 * is a warning. */
static json_t *
load_json(const char *dir, const char *name, size_t max)
{
	json_error_t	 jerr;
	json_t		*j = NULL;
	char		*path;
	int		 e;

	xasprintf(&path, "%s/%s", dir, name);
	if ((e = cjson_load_file(path, max, &j, &jerr)) != 0 &&
	    !(e == CADRE_ERR_SYSTEM && errno == ENOENT)) {
		if (e == CADRE_ERR_PARSE)
			fprintf(stderr, "cadre import: %s:%d:%d: warning: %s: "
			    "ignored\n", path, jerr.line, jerr.column,
			    jerr.text);
		else
			fprintf(stderr, "cadre import: %s: warning: %s: "
			    "ignored\n", path, e == CADRE_ERR_SYSTEM ?
			    strerror(errno) : cadre_strerror(e));
	}
	if (j != NULL && !json_is_object(j)) {
		fprintf(stderr, "cadre import: %s: warning: not a JSON object: "
		    "ignored\n", path);
		json_decref(j);
		j = NULL;
	}
	free(path);
	return j;
}

struct import_metrics {
	json_t	*start, *summary;
	int64_t	 last_step;
	size_t	 total;		/* bytes read */
};

static int
import_line(void *ctx, enum rundir_line kind, const char *line, size_t len,
    size_t lineno)
{
	struct import_metrics	*im = ctx;
	json_t			*j;
	const char		*ev;
	int64_t			 step;

	(void)lineno;
	im->total += len + 1;
	if (rundir_metrics_event(kind, line, len, IMPORT_LINE_MAX, &j,
	    &ev) != 0)
		return im->total >= IMPORT_METRICS_MAX;
	if (strcmp(ev, MX_EV_START) == 0 && im->start == NULL) {
		im->start = j;
		j = NULL;
	} else if (strcmp(ev, MX_EV_SUMMARY) == 0) {
		json_decref(im->summary);
		im->summary = j;
		j = NULL;
	} else if (strcmp(ev, MX_EV_STEP) == 0 &&
	    cjson_get_int(j, MX_STEP, &step) == 0 && step > im->last_step)
		im->last_step = step;
	json_decref(j);
	/* enough for a spec: the rest of a huge file is not read */
	return im->total >= IMPORT_METRICS_MAX;
}

/* The first "start" and the last "summary" event of metrics.jsonl; bad
 * lines are skipped (cadre report warns about them). */
static void
load_metrics(const char *dir, json_t **start, json_t **summary,
    int64_t *last_step)
{
	struct import_metrics	im = { NULL, NULL, 0, 0 };
	struct rundir_lines	o = { 0, IMPORT_LINE_MAX, 0, 0, 0 };
	char			*path;

	xasprintf(&path, "%s/" RUNDIR_METRICS, dir);
	(void)rundir_read_lines(path, &o, import_line, &im);
	free(path);
	*start = im.start;
	*summary = im.summary;
	*last_step = im.last_step;
}

/* One YAML scalar: strings JSON-quoted (a subset of YAML's double-quoted
 * style), numbers and booleans as they are. */
static void
yaml_value(struct cbuf *b, const json_t *v)
{
	char	*s;

	if (json_is_integer(v))
		(void)cbuf_addf(b, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		(void)cbuf_addf(b, "%.9g", json_real_value(v));
	else if (json_is_boolean(v))
		(void)cbuf_adds(b, json_is_true(v) ? "true" : "false");
	else {
		s = json_dumps(v, JSON_ENCODE_ANY);
		(void)cbuf_adds(b, s != NULL ? s : "\"\"");
		free(s);
	}
}

/* "  KEY: VALUE\n" when obj has key (not null). */
static void
yaml_key(struct cbuf *b, const char *indent, const char *key,
    const json_t *obj, const char *from)
{
	const json_t	*v = json_object_get(obj, from != NULL ? from : key);

	if (v == NULL || json_is_null(v) || json_is_object(v) ||
	    json_is_array(v))
		return;
	(void)cbuf_addf(b, "%s%s: ", indent, key);
	yaml_value(b, v);
	(void)cbuf_addc(b, '\n');
}

/*
 * A spec for a run cadred did not plan. full: every trainer setting of
 * train.json (else the few the start event records); otherwise only what
 * the report needs. The name carries a hash of the run dir: it is part of
 * the run id, so two imported dirs never share one.
 */
static char *
make_spec(const char *dir, const char *hash, const json_t *train,
    const json_t *start, const json_t *summary, int64_t nodes,
    int64_t last_step, int full)
{
	static const char *const trainer_keys[] = { "task", "data",
	    "eval_data", "vocab", "init", "seq_len", "batch_size",
	    "grad_accum", "steps", "precision", "grad_clip",
	    "grad_checkpointing", "dropout", "keep_checkpoints", "log_every",
	    "seed", NULL };
	static const char *const opt_keys[] = { "name", "lr", "weight_decay",
	    "beta1", "beta2", "eps", "warmup", "schedule", "power", NULL };
	static const char *const model_keys[] = { "layers", "hidden", "heads",
	    "intermediate", "vocab_size", "max_position", NULL };
	struct cbuf	 b;
	const json_t	*model, *src, *opt, *v;
	json_t		*desc;
	char		*d;
	int64_t		 ranks = 0, skip = -1, every;
	size_t		 i;

	cbuf_init(&b, SPEC_MAX_BYTES);
	(void)cbuf_addf(&b, "version: 1\nname: imported-%s\n", hash);
	desc = json_sprintf("imported by cadre import from %s", dir);
	d = json_dumps(desc, JSON_ENCODE_ANY);
	(void)cbuf_addf(&b, "description: %s\n", d);
	free(d);
	json_decref(desc);
	(void)cbuf_adds(&b, "scheduler: { backend: slurm }\n");
	if (start != NULL)
		(void)cjson_get_int(start, "ranks", &ranks);
	if (nodes < 1)
		nodes = 1;
	if (ranks > 0 && ranks % nodes != 0)
		nodes = ranks;	/* the ranks say more than the nodes */
	(void)cbuf_addf(&b, "resources:\n  nodes: %lld\n", (long long)nodes);
	if (ranks > 0)
		(void)cbuf_addf(&b, "  ranks_per_node: %lld\n",
		    (long long)(ranks / nodes));
	(void)cbuf_adds(&b, "trainer:\n");
	src = train != NULL ? train : start;
	model = src != NULL ? json_object_get(src, "model") : NULL;
	if (json_is_string(model) && full) {
		/* a name this cadre may not know: only in the full try */
		yaml_key(&b, "  ", "model", src, NULL);
	} else if (json_is_object(model) && full) {
		(void)cbuf_adds(&b, "  model:\n");
		for (i = 0; model_keys[i] != NULL; i++)
			yaml_key(&b, "    ", model_keys[i], model, NULL);
	}
	if (train != NULL && full) {
		for (i = 0; trainer_keys[i] != NULL; i++)
			yaml_key(&b, "  ", trainer_keys[i], train, NULL);
		if (cjson_get_int(train, "checkpoint_every", &every) == 0 &&
		    every >= 0)
			(void)cbuf_addf(&b, "  checkpoint_every: %llds\n",
			    (long long)every);
		opt = json_object_get(train, "optimizer");
		if (json_is_object(opt)) {
			(void)cbuf_adds(&b, "  optimizer:\n");
			for (i = 0; opt_keys[i] != NULL; i++)
				yaml_key(&b, "    ", opt_keys[i], opt, NULL);
		}
		(void)cjson_get_int(train, "skip_steps", &skip);
	} else {
		v = train != NULL ? json_object_get(train, "data") : NULL;
		if (json_is_string(v))
			yaml_key(&b, "  ", "data", train, NULL);
		else
			(void)cbuf_adds(&b, "  data: /not-recorded\n");
		if (src != NULL) {
			yaml_key(&b, "  ", "task", src, NULL);
			yaml_key(&b, "  ", "seq_len", src, NULL);
			yaml_key(&b, "  ", "batch_size", src, NULL);
			yaml_key(&b, "  ", "grad_accum", src, NULL);
			yaml_key(&b, "  ", "precision", src, NULL);
		}
		if (last_step > 0)
			(void)cbuf_addf(&b, "  steps: %lld\n",
			    (long long)last_step);
	}
	if (skip < 0 && summary != NULL)
		(void)cjson_get_int(summary, "skip_steps", &skip);
	if (skip >= 0)
		(void)cbuf_addf(&b, "measure:\n  skip_steps: %lld\n",
		    (long long)skip);
	return cbuf_detach(&b, NULL);
}

/* The run's state from status.json, else from the metrics summary. */
static enum run_state
run_outcome(const json_t *status, const json_t *summary, const char **reason,
    int64_t *exit_code)
{
	const char	*r = NULL, *ex;
	int		 complete = 0;

	*exit_code = -1;
	if (status != NULL && cjson_get_string(status, STATUS_REASON, &r) == 0) {
		*reason = r;
		(void)cjson_get_int(status, "exit_status", exit_code);
		return strcmp(r, REASON_DONE) == 0 ? RUN_DONE : RUN_FAILED;
	}
	if (summary != NULL) {
		(void)cjson_get_bool(summary, MX_COMPLETE, &complete);
		if (complete) {
			*reason = REASON_DONE;
			*exit_code = 0;
			return RUN_DONE;
		}
		*reason = cjson_get_string(summary, "exit", &ex) == 0 ? ex :
		    REASON_FAILED;
		return RUN_FAILED;
	}
	*reason = "no status.json and no summary in metrics.jsonl (still "
	    "running?)";
	return RUN_RUNNING;
}

static int
parse_spec(const char *file, const char *text, struct spec **s,
    struct spec_plan **p, int quiet)
{
	struct diags	d;
	int		rc;

	*s = NULL;
	*p = NULL;
	diags_init(&d);
	if ((rc = spec_parse(file, text, strlen(text), &d, s)) == 0 &&
	    (rc = spec_expand(*s, &d, p)) != 0) {
		spec_free(*s);
		*s = NULL;
	}
	if (rc != 0 && !quiet) {
		diags_sort(&d);
		diags_print(&d, stderr);
	}
	diags_free(&d);
	return rc;
}

static int
run_import(const struct cli_command *cmd, int argc, char **argv)
{
	struct import_opts	 o = { 0 };
	struct state		*st = NULL;
	struct state_run	 sr;
	struct spec		*s = NULL;
	struct spec_plan	*p = NULL;
	const struct spec_run	*r = NULL;
	struct stat		 sb;
	json_t			*status = NULL, *train = NULL, *runj = NULL;
	json_t			*start = NULL, *summary = NULL;
	struct cbuf		 spectext;
	enum run_state		 state;
	const char		*reason, *run_id = NULL, *spec_file = NULL;
	char			 dir[PATH_MAX], hash[SPEC_ID_LEN + 1];
	char			 expid[SPEC_ID_LEN + 2], *text = NULL;
	char			*specpath = NULL, *db = NULL, *sdir = NULL;
	uint8_t			 dg[SHA256_DIGEST_LEN];
	int64_t			 nodes = 1, last_step, exit_code, n;
	size_t			 i;
	int			 first, rc = CLI_EXIT_FAIL, e, ins;

	memset(&sr, 0, sizeof sr);
	cbuf_init(&spectext, SPEC_MAX_BYTES);
	if ((first = cli_parse(cmd, argc, argv, import_opt, &o)) < 0)
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	if (first != argc - 1) {
		cli_usage_error(cmd, "expected one run directory");
		return CLI_EXIT_USAGE;
	}
	if (o.experiment != NULL && !str_is_name(o.experiment, 64)) {
		cli_usage_error(cmd, "--experiment '%s': expected 1-64 of "
		    "A-Z a-z 0-9 . _ -", o.experiment);
		return CLI_EXIT_USAGE;
	}
	errno = 0;
	if (realpath(argv[first], dir) == NULL || stat(dir, &sb) != 0 ||
	    !S_ISDIR(sb.st_mode)) {
		fprintf(stderr, "cadre import: %s: %s\n", argv[first],
		    errno != 0 ? strerror(errno) : "not a directory");
		goto out;
	}
	status = load_json(dir, RUNDIR_STATUS, RUNDIR_STATUS_MAX);
	train = load_json(dir, RUNDIR_TRAIN_JSON, IMPORT_JSON_MAX);
	runj = load_json(dir, RUNDIR_RUN_JSON, IMPORT_JSON_MAX);
	load_metrics(dir, &start, &summary, &last_step);
	if (status == NULL && start == NULL && train == NULL) {
		fprintf(stderr, "cadre import: %s: no status.json, train.json "
		    "or metrics.jsonl: not a run directory (launch's --run-dir "
		    "and the trainer's --out should be this directory)\n",
		    dir);
		goto out;
	}
	if (status != NULL)
		(void)cjson_get_int(status, "nodes", &nodes);

	/* The spec: the one cadre script --write left, else one made up. */
	if (runj != NULL && cjson_get_string(runj, "run", &run_id) == 0 &&
	    cjson_get_string(runj, "spec_file", &spec_file) == 0) {
		xasprintf(&specpath, "%s/spec.yaml", dir);
		if ((e = cbuf_read_file(&spectext, specpath)) != 0) {
			fprintf(stderr, "cadre import: %s: %s\n", specpath,
			    e == CADRE_ERR_SYSTEM ? strerror(errno) :
			    cadre_strerror(e));
			goto out;
		}
		if (parse_spec(spec_file, spectext.data, &s, &p, 0) != 0) {
			fprintf(stderr, "cadre import: %s: the spec cannot be "
			    "read (above)\n", specpath);
			goto out;
		}
		for (i = 0; i < spec_plan_nruns(p) && r == NULL; i++)
			if (strcmp(spec_run_id(spec_plan_run(p, i)), run_id) ==
			    0)
				r = spec_plan_run(p, i);
		if (r == NULL) {
			fprintf(stderr, "cadre import: %s/run.json: run %s is "
			    "not one of the runs of spec.yaml\n", dir, run_id);
			goto out;
		}
		/* One experiment per spec text: its runs import together. */
		sha256(spectext.data, spectext.len, dg);
		text = cbuf_detach(&spectext, NULL);
	} else {
		sha256(dir, strlen(dir), dg);
		sha256_hex(dg, SPEC_ID_LEN / 2, hash);
		text = make_spec(dir, hash, train, start, summary, nodes,
		    last_step, 1);
		if (parse_spec(dir, text, &s, &p, 1) != 0) {
			/* train.json had a value this cadre does not take:
			 * the fewer keys the report needs */
			free(text);
			text = make_spec(dir, hash, train, start, summary,
			    nodes, last_step, 0);
			if (parse_spec(dir, text, &s, &p, 0) != 0) {
				fprintf(stderr, "cadre import: %s: cannot make "
				    "a spec of this run (above)\n", dir);
				goto out;
			}
		}
		r = spec_plan_run(p, 0);
		spec_file = "(imported)";
	}
	sha256_hex(dg, SPEC_ID_LEN / 2, hash);
	/* 'i' + 11 hex digits: never the id of a submitted experiment
	 * (those are hex only) */
	snprintf(expid, sizeof expid, "i%.*s", SPEC_ID_LEN - 1, hash);
	state = run_outcome(status, summary, &reason, &exit_code);

	if (o.state_dir != NULL)
		sdir = xstrdup(o.state_dir);
	else if (paths_state_dir(&sdir) != 0) {
		fprintf(stderr, "cadre import: no state directory: set "
		    "CADRE_STATE_DIR or HOME, or pass --state-dir\n");
		goto out;
	}
	if (paths_mkdir(sdir, 0700, 0) != 0) {
		fprintf(stderr, "cadre import: %s: cannot create the state "
		    "directory\n", sdir);
		goto out;
	}
	xasprintf(&db, "%s/cadre.db", sdir);
	if ((e = state_open(db, &st)) != 0) {
		fprintf(stderr, "cadre import: %s: %s\n", db,
		    cadre_strerror(e));
		goto out;
	}
	if ((e = state_begin(st)) != 0)
		goto fail;
	if ((e = state_add_experiment(st, expid, o.experiment != NULL ?
	    o.experiment : spec_get_string(s, SPEC_K_NAME), spec_file, text,
	    "import", NULL)) != 0 ||
	    (e = state_add_run(st, expid, spec_run_id(r),
	    spec_run_config_id(r), spec_run_repeat(r), dir, &ins)) != 0 ||
	    (e = state_set_run_state(st, spec_run_id(r), state, reason)) != 0 ||
	    (e = state_get_run(st, spec_run_id(r), &sr)) != 0)
		goto rollback;
	if (sr.attempts == 0) {
		if ((e = state_add_attempt(st, spec_run_id(r), &n)) != 0 ||
		    (e = state_set_attempt_state(st, spec_run_id(r), n,
		    state == RUN_DONE ? REASON_DONE : state == RUN_RUNNING ?
		    "running" : REASON_FAILED, exit_code, reason,
		    state != RUN_RUNNING)) != 0)
			goto rollback;
	}
	if ((e = state_add_event(st, sr.experiment, spec_run_id(r), "import",
	    dir)) != 0 || (e = state_commit(st)) != 0)
		goto rollback;
	if (strcmp(sr.run_dir, dir) != 0)
		fprintf(stderr, "cadre import: note: run %s was recorded before "
		    "with run dir %s; that one stays\n", spec_run_id(r),
		    sr.run_dir);
	printf("imported run %s (%s) into experiment %s%s\n", spec_run_id(r),
	    run_state_name(state), sr.experiment, ins ? "" :
	    " (already there: state updated)");
	rc = CLI_EXIT_OK;
	goto out;
 rollback:
	(void)state_rollback(st);
 fail:
	fprintf(stderr, "cadre import: %s: %s\n", db, cadre_strerror(e));
 out:
	state_run_free(&sr);
	state_close(st);
	free(db);
	free(sdir);
	free(specpath);
	free(text);
	cbuf_free(&spectext);
	json_decref(status);
	json_decref(train);
	json_decref(runj);
	json_decref(start);
	json_decref(summary);
	spec_plan_free(p);
	spec_free(s);
	return rc;
}

static const struct cli_option import_options[] = {
	{ "experiment", 'e', "NAME", "The experiment's name in the state "
	    "(default: the spec's, or imported-HASH)" },
	{ "state-dir", 0, "DIR", "The state directory holding cadre.db "
	    "(default as cadred)" },
	{ NULL, 0, NULL, NULL }
};

const struct cli_command cli_cmd_import = {
	.name = "import",
	.operands = "RUN_DIR",
	.summary = "Record a run submitted by hand, for cadre report",
	.description =
	    "Adds the run in RUN_DIR to the state database so that cadre report\n"
	    "covers it: a run of a job script from `cadre script --write`\n"
	    "(recorded under its spec: spec.yaml and run.json in RUN_DIR), or of\n"
	    "your own sbatch or qsub script with `cadre-agent launch --from-env`\n"
	    "(give launch's --run-dir and the trainer's --out the same directory):\n"
	    "then the experiment's spec is made from train.json or metrics.jsonl.\n"
	    "The run's state comes from status.json (done, or failed with its\n"
	    "reason), else from the metrics summary. Importing again updates the\n"
	    "state and adds nothing. Prints the run id and the experiment id.\n"
	    "\n"
	    "Exit status: 0 imported, 1 not a run directory or the database could\n"
	    "not be written, 2 bad command line.\n",
	.options = import_options,
	.run = run_import,
};
