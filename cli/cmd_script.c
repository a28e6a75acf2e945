/* cadre script: the job script cadred would submit for one run of a spec,
 * printed for users who submit by hand (and, with --write, the run dir it
 * needs: train.json or program.json, keys, job.sh, and the spec for
 * `cadre import`). */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

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
#include "jobscript.h"
#include "monitor.h"
#include "paths.h"
#include "rundir.h"
#include "spec.h"
#include "xmalloc.h"

#ifndef DATADIR
#define DATADIR	"/usr/local/share/cadre"
#endif

struct script_opts {
	const char	*run;
	const char	*backend;
	const char	*run_dir;
	const char	*templates;
	const char	*agent;
	const char	*trainer;
	int		 write;
};

static int
script_opt(void *ctx, const char *name, const char *arg)
{
	struct script_opts	*o = ctx;

	if (strcmp(name, "run") == 0)
		o->run = arg;
	else if (strcmp(name, "backend") == 0)
		o->backend = arg;
	else if (strcmp(name, "run-dir") == 0)
		o->run_dir = arg;
	else if (strcmp(name, "templates") == 0)
		o->templates = arg;
	else if (strcmp(name, "agent") == 0)
		o->agent = arg;
	else if (strcmp(name, "trainer") == 0)
		o->trainer = arg;
	else if (strcmp(name, "write") == 0)
		o->write = 1;
	return 0;
}

/* The run of plan p whose id is id or starts with it; *nmatch counts. */
static const struct spec_run *
find_run(const struct spec_plan *p, const char *id, size_t *nmatch)
{
	const struct spec_run	*found = NULL, *r;
	size_t			 i, len = strlen(id);

	*nmatch = 0;
	for (i = 0; i < spec_plan_nruns(p); i++) {
		r = spec_plan_run(p, i);
		if (strcmp(spec_run_id(r), id) == 0) {
			*nmatch = 1;
			return r;
		}
		if (len > 0 && strncmp(spec_run_id(r), id, len) == 0) {
			found = r;
			(*nmatch)++;
		}
	}
	return *nmatch == 1 ? found : NULL;
}

/* agent keygen --run-dir dir, unless dir/keys/id_ed25519 is there. */
static int
keygen(const char *agent, const char *dir)
{
	char	*key;
	pid_t	 pid;
	int	 status, have;

	xasprintf(&key, "%s/keys/id_ed25519", dir);
	have = access(key, F_OK) == 0;
	free(key);
	if (have)
		return 0;
	if ((pid = fork()) == -1)
		return CADRE_ERR_SYSTEM;
	if (pid == 0) {
		execl(agent, agent, "keygen", "--run-dir", dir, (char *)NULL);
		fprintf(stderr, "cadre script: %s: %s\n", agent,
		    strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			return CADRE_ERR_SYSTEM;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 :
	    CADRE_ERR_SYSTEM;
}

/* The run dir for a hand submission: train.json (program.json for a
 * program), keys, job.sh, the spec and which run it is (for cadre
 * import). */
static int
write_run_dir(const struct spec *s, const struct spec_run *r,
    const char *text, size_t len, const char *dir, const char *agent,
    enum jobscript_kind kind, const char *templates,
    const struct jobscript *js, char *err, size_t errlen)
{
	json_t	*run = NULL;
	char	*path = NULL;
	FILE	*f;
	int	 rc;

	if ((rc = paths_mkdir(dir, 0700, 1)) != 0) {
		snprintf(err, errlen, "%s: cannot create the run dir", dir);
		return rc;
	}
	if ((rc = keygen(agent, dir)) != 0) {
		snprintf(err, errlen, "%s keygen --run-dir %s failed", agent,
		    dir);
		return rc;
	}
	if ((rc = jobscript_write_run_json(s, r, dir, err, errlen)) != 0)
		return rc;
	xasprintf(&path, "%s/" RUNDIR_JOB_SCRIPT, dir);
	rc = jobscript_write(kind, templates, js, path, err, errlen);
	free(path);
	if (rc != 0)
		return rc;
	xasprintf(&path, "%s/%s", dir, RUNDIR_SPEC);
	if ((f = fopen(path, "w")) == NULL ||
	    fwrite(text, 1, len, f) != len || fclose(f) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		free(path);
		return CADRE_ERR_SYSTEM;
	}
	free(path);
	xasprintf(&path, "%s/%s", dir, RUNDIR_RUN_JSON);
	run = json_pack("{s:i, s:s, s:s, s:s}", "version", 1, "run",
	    spec_run_id(r), "spec_file", spec_file(s), "spec_dir",
	    spec_dir(s));
	if ((rc = cjson_write_atomic(path, run, 0600)) != 0)
		snprintf(err, errlen, "%s: %s", path, cadre_strerror(rc));
	json_decref(run);
	free(path);
	return rc;
}

static int
run_script(const struct cli_command *cmd, int argc, char **argv)
{
	struct script_opts	 o = { 0 };
	struct spec		*s = NULL;
	struct spec_plan	*p = NULL;
	const struct spec_run	*r;
	struct jobscript	 js;
	struct diags		 d;
	struct cbuf		 text, tmpl;
	enum jobscript_kind	 kind;
	const char		*backend;
	struct monitor_config	 defaults;
	char			*dir = NULL, *agent = NULL, *trainer = NULL;
	char			*tpath = NULL, *out = NULL, name[64], err[1024];
	char			 rp[PATH_MAX];
	size_t			 nmatch, i;
	int			 first, rc = CLI_EXIT_FAIL, e;

	if ((first = cli_parse(cmd, argc, argv, script_opt, &o)) < 0)
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	if (first != argc - 1) {
		cli_usage_error(cmd, "expected one spec file");
		return CLI_EXIT_USAGE;
	}
	diags_init(&d);
	cbuf_init(&text, SPEC_MAX_BYTES);
	cbuf_init(&tmpl, JOBSCRIPT_MAX);
	/* cadred's defaults: the programs beside this one, the installed
	 * templates or, in a build tree, the source tree's */
	monitor_config_init(&defaults);
	if ((e = cbuf_read_file(&text, argv[first])) != 0) {
		fprintf(stderr, "cadre script: %s: %s\n", argv[first],
		    e == CADRE_ERR_SYSTEM ? strerror(errno) :
		    cadre_strerror(e));
		goto out;
	}
	if (spec_parse(argv[first], text.data, text.len, &d, &s) != 0 ||
	    spec_expand(s, &d, &p) != 0) {
		rc = CLI_EXIT_USAGE;
		goto diag;
	}
	if (spec_is_set(s, SPEC_K_INIT_FROM)) {
		fprintf(stderr, "cadre script: %s: trainer.init.from is found "
		    "when cadred or cadre run starts the run; by hand, give "
		    "trainer.init: DIR (the checkpoint directory)\n",
		    argv[first]);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	backend = o.backend != NULL ? o.backend :
	    spec_get_string(s, SPEC_K_SCHED_BACKEND);
	if (strcmp(backend, "slurm") == 0 ||
	    strcmp(backend, "slurm-rest") == 0) {
		/* by hand it goes through sbatch, which reads #SBATCH */
		kind = JOBSCRIPT_SLURM;
		backend = "slurm";
	} else if (strcmp(backend, "pbs") == 0) {
		kind = JOBSCRIPT_PBS;
	} else {
		cli_usage_error(cmd, o.backend != NULL ? "--backend '%s': "
		    "expected slurm or pbs" : "the spec's scheduler.backend "
		    "is %s: pass --backend slurm or pbs", backend);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (o.run != NULL) {
		if ((r = find_run(p, o.run, &nmatch)) == NULL) {
			fprintf(stderr, "cadre script: --run %s: %s of the %zu "
			    "runs of %s (cadre plan lists them)\n", o.run,
			    nmatch == 0 ? "matches none" : "matches several",
			    spec_plan_nruns(p), argv[first]);
			rc = CLI_EXIT_USAGE;
			goto out;
		}
	} else if (spec_plan_nruns(p) == 1) {
		r = spec_plan_run(p, 0);
	} else {
		fprintf(stderr, "cadre script: %s plans %zu runs: pass --run "
		    "ID, one of:", argv[first], spec_plan_nruns(p));
		for (i = 0; i < spec_plan_nruns(p) && i < 8; i++)
			fprintf(stderr, " %s", spec_run_id(spec_plan_run(p,
			    i)));
		fprintf(stderr, "%s (cadre plan shows their values)\n",
		    spec_plan_nruns(p) > 8 ? " ..." : "");
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (o.run_dir != NULL) {
		if (o.run_dir[0] != '/') {
			/* made absolute: the job runs elsewhere */
			if (getcwd(rp, sizeof rp) == NULL) {
				fprintf(stderr, "cadre script: getcwd: %s\n",
				    strerror(errno));
				goto out;
			}
			xasprintf(&dir, "%s/%s", rp, o.run_dir);
		} else
			dir = xstrdup(o.run_dir);
	} else if ((e = paths_run_dir(spec_run_id(r), &dir)) != 0) {
		fprintf(stderr, "cadre script: no state directory: set "
		    "CADRE_STATE_DIR or HOME, or pass --run-dir\n");
		goto out;
	}
	agent = xstrdup(o.agent != NULL ? o.agent : defaults.agent);
	trainer = xstrdup(o.trainer != NULL ? o.trainer : defaults.trainer);
	snprintf(name, sizeof name, "cadre-%s", spec_run_id(r));
	jobscript_from_run(s, r, dir, name, agent, trainer, &js);
	xasprintf(&tpath, "%s/%s.sh.in", o.templates != NULL ? o.templates :
	    defaults.templates, kind == JOBSCRIPT_PBS ? "pbs" : "slurm");
	if ((e = cbuf_read_file(&tmpl, tpath)) != 0) {
		fprintf(stderr, "cadre script: %s: %s (--templates DIR names "
		    "the directory of slurm.sh.in and pbs.sh.in)\n", tpath,
		    e == CADRE_ERR_SYSTEM ? strerror(errno) :
		    cadre_strerror(e));
		goto out;
	}
	if (jobscript_render(kind, tmpl.data, tmpl.len, &js, &out, err,
	    sizeof err) != 0) {
		fprintf(stderr, "cadre script: %s\n", err);
		goto out;
	}
	if (o.write) {
		*strrchr(tpath, '/') = '\0';
		if (write_run_dir(s, r, text.data, text.len, dir, agent, kind,
		    tpath, &js, err, sizeof err) != 0) {
			fprintf(stderr, "cadre script: %s\n", err);
			goto out;
		}
		fprintf(stderr, "cadre script: wrote %s (%s, keys/, "
		    "job.sh, %s, %s)\n", dir, spec_is_program(s) ?
		    RUNDIR_PROGRAM : RUNDIR_TRAIN_JSON, RUNDIR_SPEC,
		    RUNDIR_RUN_JSON);
	}
	if (fputs(out, stdout) == EOF || fflush(stdout) != 0) {
		fprintf(stderr, "cadre script: standard output: %s\n",
		    strerror(errno));
		goto out;
	}
	rc = CLI_EXIT_OK;
	goto out;
 diag:
	diags_sort(&d);
	diags_print(&d, stderr);
 out:
	monitor_config_free(&defaults);
	free(out);
	free(tpath);
	free(agent);
	free(trainer);
	free(dir);
	cbuf_free(&tmpl);
	cbuf_free(&text);
	diags_free(&d);
	spec_plan_free(p);
	spec_free(s);
	return rc;
}

static const struct cli_option script_options[] = {
	{ "run", 'r', "ID", "The run (an id or unique prefix, as cadre plan "
	    "shows); needed when the spec plans several" },
	{ "backend", 'b', "BACKEND", "slurm or pbs (default: the spec's "
	    "scheduler.backend)" },
	{ "run-dir", 'd', "DIR", "The run dir the script uses (default: "
	    "STATE/runs/RUN_ID, as cadred)" },
	{ "write", 'w', NULL, "Also create the run dir: train.json (a "
	    "program's: program.json), keys/, job.sh, spec.yaml, run.json" },
	{ "templates", 0, "DIR", "Where slurm.sh.in and pbs.sh.in are "
	    "(default: cadred's: the installed ones, in a build tree the "
	    "source tree's)" },
	{ "agent", 0, "PATH", "cadre-agent on the nodes (default: the one "
	    "next to this cadre)" },
	{ "trainer", 0, "PATH", "cadre-train on the nodes (default: the one "
	    "next to this cadre)" },
	{ NULL, 0, NULL, NULL }
};

const struct cli_command cli_cmd_script = {
	.name = "script",
	.operands = "SPEC",
	.summary = "Print the job script cadred would submit for a run",
	.description =
	    "Renders the Slurm or PBS job script of one run of SPEC, as cadred\n"
	    "would submit it, on standard output; nothing is written unless\n"
	    "--write creates the run dir the script needs (train.json, or\n"
	    "program.json for a program spec, the run's keys, job.sh, and\n"
	    "spec.yaml and run.json, from which cadre import\n"
	    "records the run under its spec). Submit it by hand with sbatch or\n"
	    "qsub; afterwards `cadre import RUN_DIR` adds the run to the state so\n"
	    "that cadre report covers it. See README \"Using cadre in your own\n"
	    "sbatch or qsub script\".\n"
	    "\n"
	    "Exit status: 0 printed, 1 a file could not be read or written,\n"
	    "2 a bad command line or an invalid spec.\n",
	.options = script_options,
	.run = run_script,
};
