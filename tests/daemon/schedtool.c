/*
 * A test driver for the daemon's scheduler backends and job scripts, so
 * that shell tests can use them against a real Slurm:
 *   schedtool render slurm|slurm-rest|pbs|local TEMPLATES SPEC RUN_INDEX RUN_DIR OUT
 *   schedtool train-json SPEC RUN_INDEX RUN_DIR OUT     writes train.json
 *   schedtool program-json SPEC RUN_INDEX OUT          writes program.json
 *   schedtool submit TEMPLATES SPEC RUN_INDEX RUN_DIR   renders RUN_DIR/job.sh,
 *                                                       prints the job id
 *   schedtool poll JOB_ID...      one line each: ID STATE EXIT SIGNAL [REASON]
 *   schedtool cancel JOB_ID
 *   schedtool find JOB_NAME       the newest live job of that name, or none
 *   schedtool notify MS URL BODY [URL BODY]...   posts through notify.c,
 *                                 polls up to MS ms in 100 ms slices (or
 *                                 not at all with MS 0); prints "pending N"
 * The backend is $SCHEDTOOL_BACKEND (default slurm); slurm-rest reaches
 * $SCHEDTOOL_REST_URL with the token in $SLURM_JWT, if any. Scripts call
 * $SCHEDTOOL_AGENT (default /usr/bin/cadre-agent) and $SCHEDTOOL_TRAINER
 * (default /usr/bin/cadre-train). The local backend keeps its records in
 * $SCHEDTOOL_LOCAL_DIR, runs nothing with $SCHEDTOOL_DRY=1 and counts
 * $SCHEDTOOL_LOCAL_SECOND_MS milliseconds to a second of time limit
 * (tests shorten it). Exit 0 on success,
 * 1 on failure, 2 on usage errors.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "error.h"
#include "jobscript.h"
#include "log.h"
#include "notify.h"
#include "scheduler.h"
#include "spec.h"
#include "strutil.h"
#include "xmalloc.h"

static int
usage(void)
{
	fprintf(stderr, "usage: schedtool render|train-json|program-json|submit|"
	    "poll|cancel|find|notify ...\n");
	return 2;
}

/* Loads SPEC and fills js for run RUN_INDEX in RUN_DIR. */
static int
load_run(const char *spec, const char *index, const char *run_dir,
    struct spec **sp, struct spec_plan **pp, struct jobscript *js,
    char *name, size_t namelen)
{
	struct diags	d;
	int64_t		idx;
	int		r = 1;

	diags_init(&d);
	if (spec_load(spec, &d, sp) != 0) {
		diags_print(&d, stderr);
		goto out;
	}
	if (spec_expand(*sp, &d, pp) != 0 || str_to_int64(index, &idx) != 0 ||
	    idx < 0 || (size_t)idx >= spec_plan_nruns(*pp)) {
		fprintf(stderr, "schedtool: bad run index %s\n", index);
		goto out;
	}
	snprintf(name, namelen, "cadre-%s",
	    spec_run_id(spec_plan_run(*pp, (size_t)idx)));
	jobscript_from_run(*sp, spec_plan_run(*pp, (size_t)idx), run_dir, name,
	    getenv("SCHEDTOOL_AGENT") != NULL ? getenv("SCHEDTOOL_AGENT") :
	    "/usr/bin/cadre-agent", getenv("SCHEDTOOL_TRAINER") != NULL ?
	    getenv("SCHEDTOOL_TRAINER") : "/usr/bin/cadre-train", js);
	r = 0;
out:
	diags_free(&d);
	return r;
}

/* The job script a backend submits; slurm's for a name no other has. */
static enum jobscript_kind
kind_of(const char *backend)
{
	return strcmp(backend, "pbs") == 0 ? JOBSCRIPT_PBS :
	    strcmp(backend, "slurm-rest") == 0 ? JOBSCRIPT_SLURMREST :
	    strcmp(backend, "local") == 0 ? JOBSCRIPT_LOCAL : JOBSCRIPT_SLURM;
}

/* render KIND TEMPLATES SPEC RUN_INDEX RUN_DIR OUT */
static int
do_render(int argc, char **argv)
{
	struct spec		*s = NULL;
	struct spec_plan	*p = NULL;
	struct jobscript	 js;
	char			 err[JOBSCRIPT_ERR_MAX], name[JOBSCRIPT_NAME_MAX];
	int			 r = 1;

	if (argc != 8)
		return usage();
	if (load_run(argv[4], argv[5], argv[6], &s, &p, &js, name,
	    sizeof name) != 0)
		goto out;
	if (jobscript_write(kind_of(argv[2]), argv[3], &js, argv[7], err,
	    sizeof err) != 0) {
		fprintf(stderr, "schedtool: %s\n", err);
		goto out;
	}
	r = 0;
out:
	spec_plan_free(p);
	spec_free(s);
	return r;
}

/* submit TEMPLATES SPEC RUN_INDEX RUN_DIR: renders RUN_DIR/job.sh from
 * TEMPLATES/slurm.sh.in (pbs.sh.in for pbs) and submits it; prints the
 * job id. */
static int
do_submit(struct sched *sc, int argc, char **argv)
{
	struct spec		*s = NULL;
	struct spec_plan	*p = NULL;
	struct jobscript	 js;
	char			 err[JOBSCRIPT_ERR_MAX], name[JOBSCRIPT_NAME_MAX];
	char			*script = NULL, *id = NULL;
	int			 r = 1, e;

	if (argc != 6)
		return usage();
	if (load_run(argv[3], argv[4], argv[5], &s, &p, &js, name,
	    sizeof name) != 0)
		goto out;
	xasprintf(&script, "%s/job.sh", argv[5]);
	js.job.script = script;
	if (jobscript_write(kind_of(sc->ops->name), argv[2], &js, script, err,
	    sizeof err) != 0) {
		fprintf(stderr, "schedtool: %s\n", err);
		goto out;
	}
	if ((e = sched_submit(sc, &js.job, &id)) != 0) {
		fprintf(stderr, "schedtool: submit: %s\n", cadre_strerror(e));
		goto out;
	}
	printf("%s\n", id);
	r = 0;
out:
	free(id);
	free(script);
	spec_plan_free(p);
	spec_free(s);
	return r;
}

/* train-json SPEC RUN_INDEX RUN_DIR OUT, program-json SPEC RUN_INDEX OUT */
static int
do_config_json(int argc, char **argv)
{
	struct spec		*s = NULL;
	struct spec_plan	*p = NULL;
	struct jobscript	 js;
	char			 err[JOBSCRIPT_ERR_MAX], name[JOBSCRIPT_NAME_MAX];
	const struct spec_run	*run;
	int64_t			 idx;
	int			 r = 1, program = strcmp(argv[1],
				    "program-json") == 0;

	if (argc != (program ? 5 : 6))
		return usage();
	if (load_run(argv[2], argv[3], program ? "/" : argv[4], &s, &p, &js,
	    name, sizeof name) != 0)
		goto out;
	(void)str_to_int64(argv[3], &idx);
	run = spec_plan_run(p, (size_t)idx);
	if ((program ? jobscript_write_program_json(s, run, argv[4], err,
	    sizeof err) : jobscript_write_train_json(s, run, argv[4], argv[5],
	    err, sizeof err)) != 0) {
		fprintf(stderr, "schedtool: %s\n", err);
		goto out;
	}
	r = 0;
out:
	spec_plan_free(p);
	spec_free(s);
	return r;
}

static int
do_poll(struct sched *s, int argc, char **argv)
{
	struct sched_status	*st;
	size_t			 n = (size_t)argc - 2, i;
	int			 r;

	st = xcalloc(n + 1, sizeof *st);
	if ((r = sched_poll(s, (const char *const *)argv + 2, n, st)) != 0) {
		fprintf(stderr, "schedtool: poll: %s\n", cadre_strerror(r));
		free(st);
		return 1;
	}
	for (i = 0; i < n; i++)
		printf("%s %s %d %d %s\n", argv[2 + i],
		    sched_state_name(st[i].state), st[i].exit_code,
		    st[i].exit_signal, st[i].reason);
	free(st);
	return 0;
}

/* notify MS URL BODY [URL BODY]... */
static int
do_notify(int argc, char **argv)
{
	struct notifier	*n;
	int64_t		 ms, waited;
	int		 i, r = 0;

	if (argc < 5 || (argc - 3) % 2 != 0 || str_to_int64(argv[2], &ms) != 0)
		return usage();
	if ((n = notify_new()) == NULL)
		return 1;
	for (i = 3; i + 1 < argc; i += 2) {
		if (notify_post(n, argv[i], argv[i + 1]) != 0) {
			fprintf(stderr, "schedtool: notify_post refused %s\n",
			    argv[i]);
			r = 1;
		}
	}
	for (waited = 0; waited < ms && notify_pending(n) > 0; waited += 100)
		notify_poll(n, 100);
	printf("pending %zu\n", notify_pending(n));
	notify_free(n);
	return r;
}

int
main(int argc, char **argv)
{
	struct sched_config	 cfg;
	struct sched		*s = NULL;
	const char		*backend = getenv("SCHEDTOOL_BACKEND");
	char			*text = NULL;
	int			 r;

	log_init("schedtool", LOG_LEVEL_WARN, LOG_TARGET_STDERR);
	if (argc < 2)
		return usage();
	if (strcmp(argv[1], "render") == 0)
		return do_render(argc, argv);
	if (strcmp(argv[1], "train-json") == 0 ||
	    strcmp(argv[1], "program-json") == 0)
		return do_config_json(argc, argv);
	if (strcmp(argv[1], "notify") == 0)
		return do_notify(argc, argv);
	if (argc < 3)
		return usage();
	memset(&cfg, 0, sizeof cfg);
	cfg.bindir = getenv("SCHEDTOOL_BINDIR");
	cfg.rest_url = getenv("SCHEDTOOL_REST_URL");
	cfg.token_env = "SLURM_JWT";
	cfg.cmd_timeout = 20;
	cfg.local_dir = getenv("SCHEDTOOL_LOCAL_DIR");
	cfg.dry = getenv("SCHEDTOOL_DRY") != NULL &&
	    strcmp(getenv("SCHEDTOOL_DRY"), "1") == 0;
	if (getenv("SCHEDTOOL_LOCAL_SECOND_MS") != NULL)
		cfg.local_second_ms = atoi(getenv("SCHEDTOOL_LOCAL_SECOND_MS"));
	if ((r = sched_open(backend != NULL ? backend : "slurm", &cfg,
	    &s)) != 0) {
		fprintf(stderr, "schedtool: %s\n", cadre_strerror(r));
		return 1;
	}
	if (strcmp(argv[1], "submit") == 0)
		r = do_submit(s, argc, argv);
	else if (strcmp(argv[1], "poll") == 0)
		r = do_poll(s, argc, argv);
	else if (strcmp(argv[1], "cancel") == 0 && argc == 3)
		r = sched_cancel(s, argv[2]) != 0;
	else if (strcmp(argv[1], "find") == 0 && argc == 3) {
		if ((r = sched_find(s, argv[2], &text) != 0) == 0)
			printf("%s\n", text != NULL ? text : "none");
		free(text);
	} else
		r = usage();
	sched_close(s);
	return r;
}
