/* Job scripts rendered from templates; every value quoted or validated
 * here and nowhere else (see jobscript.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "duration.h"
#include "error.h"
#include "jobscript.h"
#include "json.h"
#include "rundir.h"
#include "spec.h"
#include "strutil.h"
#include "xmalloc.h"

#define WORD_MAX	SPEC_MAX_WORD
#define SLURM_SIG_MAX	65535	/* --signal's time is 16 bits */

/* Whether s is an environment variable name. */
static int
env_name_ok(const char *s, size_t len)
{
	size_t	i;

	if (len == 0 || len > 128 || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (i = 0; i < len; i++) {
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	}
	return 1;
}

void
jobscript_from_run(const struct spec *s, const struct spec_run *r,
    const char *run_dir, const char *job_name, const char *agent,
    const char *trainer, struct jobscript *js)
{
	struct sched_job	*j = &js->job;
	int64_t			 cpus;

	memset(js, 0, sizeof *js);
	j->run_id = spec_run_id(r);
	j->run_dir = run_dir;
	j->job_name = job_name;
	j->nodes = spec_run_int(r, SPEC_K_RES_NODES);
	j->tasks_per_node = spec_run_ranks_per_node(r);
	j->gpus_per_node = spec_run_int(r, SPEC_K_RES_GPUS_PER_NODE);
	j->gpu_type = spec_run_string(r, SPEC_K_RES_GPU_TYPE);
	cpus = spec_run_int(r, SPEC_K_RES_CPUS_PER_RANK);
	j->cpus_per_task = cpus;
	j->memory = spec_run_is_set(r, SPEC_K_RES_MEMORY) ?
	    spec_run_int(r, SPEC_K_RES_MEMORY) : 0;
	j->time_limit = spec_run_int(r, SPEC_K_SCHED_TIME_LIMIT);
	j->signal_grace = spec_run_int(r, SPEC_K_SCHED_SIGNAL_GRACE);
	j->partition = spec_run_string(r, SPEC_K_SCHED_PARTITION);
	j->account = spec_run_string(r, SPEC_K_SCHED_ACCOUNT);
	j->qos = spec_run_string(r, SPEC_K_SCHED_QOS);
	j->extra = spec_run_list(r, SPEC_K_SCHED_EXTRA, &j->nextra);
	j->constraint = spec_run_string(r, SPEC_K_SCHED_CONSTRAINT);
	j->reservation = spec_run_string(r, SPEC_K_SCHED_RESERVATION);
	j->exclusive = spec_run_bool(r, SPEC_K_RES_EXCLUSIVE);
	js->srun_extra = spec_run_list(r, SPEC_K_SCHED_SRUN_EXTRA,
	    &js->nsrun_extra);
	js->setup = spec_run_list(r, SPEC_K_SETUP, &js->nsetup);
	js->env = spec_run_pairs(r, SPEC_K_ENV, &js->nenv);
	js->agent = agent;
	js->trainer = trainer;
	js->launcher = spec_run_string(r, SPEC_K_LAUNCHER);
	js->startup_timeout = spec_run_int(r, SPEC_K_AGENT_STARTUP_TIMEOUT);
	js->container_runtime = spec_run_string(r, SPEC_K_CONTAINER_RUNTIME);
	js->container_image = spec_run_string(r, SPEC_K_CONTAINER_IMAGE);
	js->binds = spec_run_list(r, SPEC_K_CONTAINER_BINDS, &js->nbinds);
	js->spec = s;
	js->program = s != NULL && spec_is_program(s);
	js->experiment = s != NULL ? spec_get_string(s, SPEC_K_NAME) : NULL;
	js->config_id = spec_run_config_id(r);
	js->data = spec_run_string(r, js->program ? SPEC_K_STAGE_FROM :
	    SPEC_K_DATA);
	if (js->program) {
		/* a program's data is stage.from; no eval */
		if (spec_run_is_set(r, SPEC_K_STAGE_TO)) {
			js->stage_src = spec_run_string(r, SPEC_K_STAGE_FROM);
			js->stage_dst = spec_run_string(r, SPEC_K_STAGE_TO);
		}
		return;
	}
	if (spec_run_is_set(r, SPEC_K_STAGE_TO)) {
		js->stage_src = spec_run_string(r, SPEC_K_DATA);
		js->stage_dst = spec_run_string(r, SPEC_K_STAGE_TO);
	}
	js->eval_data = spec_run_string(r, SPEC_K_CKPT_EVAL_DATA);
	js->eval_batch = spec_run_int(r, SPEC_K_CKPT_EVAL_BATCH);
	js->eval_at = spec_run_list(r, SPEC_K_CKPT_EVAL_AT, &js->neval_at);
}

static int
check_word(const char *what, const char *v, const char *extra, char *err,
    size_t errlen)
{
	if (v == NULL || str_is_sched_word(v, WORD_MAX, extra))
		return 0;
	return cadre_errf(err, errlen, CADRE_ERR_INVALID, "%s: '%s' cannot be written into a job "
	    "script's scheduler lines: use letters, digits and %s%s only", what,
	    v, STR_SCHED_WORD_CHARS, extra != NULL ? extra : "");
}

int
jobscript_check_job(const struct sched_job *j, char *err, size_t errlen)
{
	size_t	i;
	int	r;

	if (j->run_id == NULL || strlen(j->run_id) != SPEC_ID_LEN ||
	    strspn(j->run_id, "0123456789abcdef") != SPEC_ID_LEN)
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "run id: expected %d hex digits",
		    SPEC_ID_LEN);
	if (j->run_dir == NULL || j->run_dir[0] != '/' ||
	    !str_no_control(j->run_dir, SPEC_MAX_PATH))
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "run dir: expected an absolute path "
		    "without control characters");
	if (j->job_name == NULL || !str_is_name(j->job_name, JOBSCRIPT_NAME_MAX))
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "job name: expected 1 to %d of "
		    "A-Z a-z 0-9 . _ -", JOBSCRIPT_NAME_MAX);
	if (j->nodes < 1 || j->nodes > 100000)
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "nodes: %" PRId64 " out of range",
		    j->nodes);
	if (j->tasks_per_node < 1 || j->tasks_per_node > 100000)
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "tasks per node: %" PRId64
		    " out of range", j->tasks_per_node);
	if (j->gpus_per_node < 0 || j->gpus_per_node > 1024 ||
	    j->cpus_per_task < 0 || j->cpus_per_task > 100000 ||
	    j->memory < 0)
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "gpus, cpus or memory out of range");
	if (j->time_limit < 60 || j->time_limit > DURATION_MAX)
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "time limit: at least 1 minute");
	if (j->signal_grace < 0 || j->signal_grace > SLURM_SIG_MAX ||
	    (j->signal_grace > 0 && j->signal_grace >= j->time_limit))
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "signal grace: %" PRId64 " s: expected "
		    "0 to %d s and less than the time limit", j->signal_grace,
		    SLURM_SIG_MAX);
	if ((r = check_word("scheduler.partition", j->partition, NULL, err,
	    errlen)) != 0 ||
	    (r = check_word("scheduler.account", j->account, NULL, err,
	    errlen)) != 0 ||
	    (r = check_word("scheduler.qos", j->qos, NULL, err, errlen)) != 0 ||
	    (r = check_word("resources.gpu_type", j->gpu_type, NULL, err,
	    errlen)) != 0 ||
	    (r = check_word("scheduler.constraint", j->constraint,
	    STR_SCHED_CONSTRAINT_CHARS, err, errlen)) != 0 ||
	    (r = check_word("scheduler.reservation", j->reservation, NULL, err,
	    errlen)) != 0)
		return r;
	/* Extra words are argv words of sbatch/qsub, never script text. */
	for (i = 0; i < j->nextra; i++) {
		if (*j->extra[i] == '\0' ||
		    !str_no_control(j->extra[i], WORD_MAX))
			return cadre_errf(err, errlen, CADRE_ERR_INVALID, "scheduler.extra[%zu]: expected "
			    "1 to %d bytes without control characters", i,
			    WORD_MAX);
	}
	if (j->script != NULL && (j->script[0] != '/' ||
	    !str_no_control(j->script, SPEC_MAX_PATH)))
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "job script: expected an absolute path");
	for (i = 0; i < j->nenv; i++) {
		const char	*eq = strchr(j->env[i], '=');

		if (eq == NULL || !env_name_ok(j->env[i],
		    (size_t)(eq - j->env[i])) ||
		    !str_no_control(eq + 1, SPEC_MAX_TEXT))
			return cadre_errf(err, errlen, CADRE_ERR_INVALID, "environment entry %zu: expected "
			    "NAME=value, a variable name and no control "
			    "characters", i);
	}
	return 0;
}

/* ---------------------------------------------------------------- directives */

/* Directive values are numbers or checked words: no quoting needed. */
static void
slurm_directives(struct cbuf *b, const struct sched_job *j)
{
	char	t[64];

	duration_format_slurm(j->time_limit, t, sizeof t);
	cbuf_addf(b, "#SBATCH --job-name=%s\n", j->job_name);
	cbuf_addf(b, "#SBATCH --nodes=%" PRId64 "\n", j->nodes);
	cbuf_addf(b, "#SBATCH --ntasks-per-node=%" PRId64 "\n",
	    j->tasks_per_node);
	if (j->cpus_per_task > 0)
		cbuf_addf(b, "#SBATCH --cpus-per-task=%" PRId64 "\n",
		    j->cpus_per_task);
	if (j->gpus_per_node > 0) {
		if (j->gpu_type != NULL)
			cbuf_addf(b, "#SBATCH --gpus-per-node=%s:%" PRId64 "\n",
			    j->gpu_type, j->gpus_per_node);
		else
			cbuf_addf(b, "#SBATCH --gpus-per-node=%" PRId64 "\n",
			    j->gpus_per_node);
	}
	if (j->memory > 0)
		cbuf_addf(b, "#SBATCH --mem=%" PRId64 "M\n",
		    (j->memory + (1 << 20) - 1) >> 20);
	cbuf_addf(b, "#SBATCH --time=%s\n", t);
	if (j->signal_grace > 0)
		cbuf_addf(b, "#SBATCH --signal=B:USR1@%" PRId64 "\n",
		    j->signal_grace);
	if (j->partition != NULL)
		cbuf_addf(b, "#SBATCH --partition=%s\n", j->partition);
	if (j->account != NULL)
		cbuf_addf(b, "#SBATCH --account=%s\n", j->account);
	if (j->qos != NULL)
		cbuf_addf(b, "#SBATCH --qos=%s\n", j->qos);
	if (j->constraint != NULL)
		cbuf_addf(b, "#SBATCH --constraint=%s\n", j->constraint);
	if (j->reservation != NULL)
		cbuf_addf(b, "#SBATCH --reservation=%s\n", j->reservation);
	if (j->exclusive)
		cbuf_adds(b, "#SBATCH --exclusive\n");
	cbuf_adds(b, "#SBATCH --requeue\n");
}

static void
pbs_directives(struct cbuf *b, const struct sched_job *j)
{
	int64_t	ncpus = j->tasks_per_node *
		    (j->cpus_per_task > 0 ? j->cpus_per_task : 1);

	cbuf_addf(b, "#PBS -N %s\n", j->job_name);
	cbuf_addf(b, "#PBS -l select=%" PRId64 ":ncpus=%" PRId64
	    ":mpiprocs=%" PRId64, j->nodes, ncpus, j->tasks_per_node);
	if (j->gpus_per_node > 0)
		cbuf_addf(b, ":ngpus=%" PRId64, j->gpus_per_node);
	if (j->gpu_type != NULL)
		cbuf_addf(b, ":gpu_model=%s", j->gpu_type);
	if (j->memory > 0)
		cbuf_addf(b, ":mem=%" PRId64 "mb",
		    (j->memory + (1 << 20) - 1) >> 20);
	cbuf_addf(b, "\n#PBS -l place=scatter%s\n", j->exclusive ? ":excl" :
	    "");
	/* PBS walltime: hours may exceed 24 */
	cbuf_addf(b, "#PBS -l walltime=%" PRId64 ":%02" PRId64 ":%02" PRId64
	    "\n", j->time_limit / 3600, j->time_limit / 60 % 60,
	    j->time_limit % 60);
	if (j->partition != NULL)
		cbuf_addf(b, "#PBS -q %s\n", j->partition);
	if (j->account != NULL)
		cbuf_addf(b, "#PBS -A %s\n", j->account);
	cbuf_adds(b, "#PBS -j oe\n#PBS -r y\n");
}

/* ---------------------------------------------------------------- rendering */

static void
add_int_word(struct cbuf *b, int64_t v)
{
	char	n[32];

	snprintf(n, sizeof n, "%" PRId64, v);
	cbuf_add_shell_word(b, n);
}

/* Whether path is dir or under it. */
static int
path_under(const char *path, const char *dir)
{
	size_t	len = strlen(dir);

	return strncmp(path, dir, len) == 0 && (path[len] == '\0' ||
	    path[len] == '/' || (len > 0 && dir[len - 1] == '/'));
}

/* The container prefix: `cadre-agent wrap ... --` as quoted words, or
 * nothing without a container. */
static void
add_wrap(struct cbuf *b, const struct jobscript *js)
{
	size_t	i;
	char	*data = NULL;
	int	 bound;

	if (js->container_runtime == NULL ||
	    strcmp(js->container_runtime, "none") == 0)
		return;
	cbuf_add_shell_word(b, js->agent);
	cbuf_adds(b, " 'wrap' '--container' ");
	cbuf_add_shell_word(b, js->container_runtime);
	if (js->container_image != NULL) {
		/* a path relative to the spec, as validate checked it; a
		 * reference (docker://..., registry#image) as written */
		data = js->spec != NULL && strstr(js->container_image,
		    "://") == NULL && strchr(js->container_image, '#') ==
		    NULL ? spec_resolve_path(js->spec, js->container_image) :
		    xstrdup(js->container_image);
		cbuf_adds(b, " '--image' ");
		cbuf_add_shell_word(b, data);
		free(data);
		data = NULL;
	}
	for (i = 0; i < js->nbinds; i++) {
		cbuf_adds(b, " '--bind' ");
		cbuf_add_shell_word(b, js->binds[i]);
	}
	if (js->data != NULL) {
		data = js->spec != NULL ? spec_resolve_path(js->spec,
		    js->data) : xstrdup(js->data);
		bound = data[0] != '/' || strpbrk(data, ",:") != NULL ||
		    path_under(data, js->job.run_dir);
		for (i = 0; i < js->nbinds && !bound; i++)
			bound = path_under(data, js->binds[i]);
		if (!bound) {
			cbuf_adds(b, " '--bind' ");
			cbuf_add_shell_word(b, data);
		}
		free(data);
	}
	if (js->job.gpus_per_node > 0)
		cbuf_adds(b, " '--nv'");
	cbuf_adds(b, " '--run-dir' ");
	cbuf_add_shell_word(b, js->job.run_dir);
	cbuf_adds(b, " '--'");
}

static void
add_env(struct cbuf *b, const struct jobscript *js)
{
	const struct sched_job	*j = &js->job;
	size_t			 i;
	int			 omp = 0;

	/* the spec's env first: the job's own (j->env) may override */
	for (i = 0; i + 1 < 2 * js->nenv; i += 2) {
		if (strcmp(js->env[i], "OMP_NUM_THREADS") == 0)
			omp = 1;
		cbuf_addf(b, "export %s=", js->env[i]);
		cbuf_add_shell_word(b, js->env[i + 1]);
		cbuf_addc(b, '\n');
	}
	for (i = 0; i < j->nenv; i++) {
		const char	*eq = strchr(j->env[i], '=');

		if (strncmp(j->env[i], "OMP_NUM_THREADS=", 16) == 0)
			omp = 1;

		/* the name was checked by jobscript_check_job() */
		cbuf_adds(b, "export ");
		cbuf_add(b, j->env[i], (size_t)(eq - j->env[i]));
		cbuf_addc(b, '=');
		cbuf_add_shell_word(b, eq + 1);
		cbuf_addc(b, '\n');
	}
	/* The trainer takes OpenMP's thread count (all cores otherwise):
	 * cpus_per_rank must bound it, or ranks sharing a node oversubscribe
	 * it. The agents inherit it from the script, the ranks from them. */
	if (j->cpus_per_task > 0 && !omp)
		cbuf_addf(b, "export OMP_NUM_THREADS=%" PRId64 "\n",
		    j->cpus_per_task);
}

/*
 * `sh -c PROGRAM cadre-setup` before a node's agent (and launch): the
 * spec's setup lines in order, each in its own braces so that a comment
 * or a ';' in one stays in it, stopping at the first that fails with a
 * line naming the node; then PROGRAM execs the words after it, so that
 * what the setup exported (module load) is the agent's environment, and
 * its ranks'. Nothing without setup.
 */
static void
add_setup_exec(struct cbuf *b, const struct jobscript *js)
{
	struct cbuf	prog;
	size_t		i;

	if (js->nsetup == 0)
		return;
	cbuf_init(&prog, SIZE_MAX);
	for (i = 0; i < js->nsetup; i++)
		cbuf_addf(&prog, "%s{\n%s\n}", i > 0 ? " && " : "",
		    js->setup[i]);
	cbuf_adds(&prog, " || { rc=$?; echo \"cadre: setup failed on "
	    "$(hostname) (exit $rc)\" >&2; exit \"$rc\"; }\nexec \"$@\"");
	cbuf_adds(b, "'sh' '-c' ");
	cbuf_add_shell_word(b, prog.data);
	cbuf_adds(b, " 'cadre-setup'");
	cbuf_free(&prog);
}

/* Replaces placeholder name (len bytes); alone: it stands alone on its
 * line. */
static int
expand(struct cbuf *b, enum jobscript_kind kind, const char *name,
    size_t len, int alone, const struct jobscript *js, char *err,
    size_t errlen)
{
	const struct sched_job	*j = &js->job;

#define IS(s)	(len == sizeof(s) - 1 && memcmp(name, s, len) == 0)
	if (IS("DIRECTIVES") || IS("ENV")) {
		if (!alone)
			return cadre_errf(err, errlen, CADRE_ERR_INVALID, "template: @%.*s@ must stand "
			    "alone on its line", (int)len, name);
		if (IS("ENV"))
			add_env(b, js);
		else if (kind == JOBSCRIPT_PBS)
			pbs_directives(b, j);
		else if (kind != JOBSCRIPT_LOCAL)
			slurm_directives(b, j);
	} else if (IS("WRAP"))
		add_wrap(b, js);
	else if (IS("SETUP_EXEC"))
		add_setup_exec(b, js);
	else if (IS("SRUN_EXTRA") || IS("SRUN_EXTRA_LAUNCH")) {
		size_t	i;
		int	launch = IS("SRUN_EXTRA_LAUNCH");

		/* launch hands --mpi-arg words to srun when it starts the
		 * ranks with it; mpirun gets none */
		if (launch && (js->launcher == NULL ||
		    strcmp(js->launcher, "srun") != 0))
			return 0;
		for (i = 0; i < js->nsrun_extra; i++) {
			if (i > 0)
				cbuf_addc(b, ' ');
			if (launch)
				cbuf_adds(b, "'--mpi-arg' ");
			cbuf_add_shell_word(b, js->srun_extra[i]);
		}
	}
	else if (IS("STAGE")) {
		/* launch splits SRC:DST at the first ':' (checked above) */
		if (js->stage_src != NULL && js->stage_dst != NULL) {
			char	*pair;

			cbuf_adds(b, "--stage ");
			xasprintf(&pair, "%s:%s", js->stage_src, js->stage_dst);
			cbuf_add_shell_word(b, pair);
			free(pair);
		}
	}
	else if (IS("PROGRAM")) {
		/* fixed words: the script's variables, no value */
		if (js->program)
			cbuf_adds(b, "--program \"$run_dir/" RUNDIR_PROGRAM "\"");
		else
			cbuf_adds(b, "-- \"$trainer\" train --config \"$run_dir/"
			    RUNDIR_TRAIN_JSON "\"");
	} else if (IS("EVAL_DATA")) {
		char	*abs = js->eval_data == NULL ? xstrdup("") :
		    js->spec != NULL ? spec_resolve_path(js->spec,
		    js->eval_data) : xstrdup(js->eval_data);

		cbuf_add_shell_word(b, abs);
		free(abs);
	} else if (IS("EVAL_BATCH"))
		add_int_word(b, js->eval_batch > 0 ? js->eval_batch : 32);
	else if (IS("EVAL_AT")) {
		struct cbuf	at;
		size_t		i;

		cbuf_init(&at, SIZE_MAX);
		for (i = 0; i < js->neval_at; i++)
			cbuf_addf(&at, "%s%s", i > 0 ? "," : "", js->eval_at[i]);
		cbuf_add_shell_word(b, at.data != NULL ? at.data : "");
		cbuf_free(&at);
	}
	else if (IS("RUN_ID"))
		cbuf_add_shell_word(b, j->run_id);
	else if (IS("EXPERIMENT"))
		cbuf_add_shell_word(b, js->experiment != NULL ?
		    js->experiment : "");
	else if (IS("CONFIG_ID"))
		cbuf_add_shell_word(b, js->config_id != NULL ?
		    js->config_id : "");
	else if (IS("RUN_DIR"))
		cbuf_add_shell_word(b, j->run_dir);
	else if (IS("JOB_NAME"))
		cbuf_add_shell_word(b, j->job_name);
	else if (IS("AGENT"))
		cbuf_add_shell_word(b, js->agent);
	else if (IS("TRAINER"))
		cbuf_add_shell_word(b, js->trainer);
	else if (IS("LAUNCHER"))
		cbuf_add_shell_word(b, js->launcher != NULL ? js->launcher :
		    "mpirun");
	else if (IS("NODES"))
		add_int_word(b, j->nodes);
	else if (IS("TASKS_PER_NODE"))
		add_int_word(b, j->tasks_per_node);
	else if (IS("TIME_LIMIT"))
		add_int_word(b, j->time_limit);
	else if (IS("SIGNAL_GRACE"))
		add_int_word(b, j->signal_grace);
	else if (IS("SELF_SIGNAL"))
		cbuf_add_shell_word(b, kind == JOBSCRIPT_SLURM ? "no" : "yes");
	else if (IS("STARTUP_TIMEOUT")) {
		char	d[64];

		duration_format(js->startup_timeout, d, sizeof d);
		cbuf_add_shell_word(b, d);
	} else
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "template: unknown placeholder @%.*s@",
		    (int)len, name);
#undef IS
	return 0;
}

int
jobscript_render(enum jobscript_kind kind, const char *tmpl, size_t len,
    const struct jobscript *js, char **out, char *err, size_t errlen)
{
	struct cbuf	b;
	size_t		i = 0, start;
	int		r;

	*out = NULL;
	if (js->agent == NULL || js->agent[0] != '/' ||
	    !str_no_control(js->agent, SPEC_MAX_PATH) || js->trainer == NULL ||
	    js->trainer[0] != '/' || !str_no_control(js->trainer, SPEC_MAX_PATH))
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "agent and trainer: expected absolute "
		    "paths");
	if ((r = jobscript_check_job(&js->job, err, errlen)) != 0)
		return r;
	/* enroot runs through pyxis's srun options, which the templates'
	 * serve and launch lines do not carry yet: refuse rather than
	 * render a script whose `wrap --container enroot` would refuse. */
	if (js->container_runtime != NULL &&
	    strcmp(js->container_runtime, "enroot") == 0)
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "container.runtime enroot: cadred's "
		    "job scripts do not start enroot containers yet; use "
		    "apptainer or singularity, or `cadre-agent launch "
		    "--from-env` in an sbatch script with pyxis's options");
	if (js->stage_src != NULL && (js->stage_dst == NULL ||
	    strchr(js->stage_src, ':') != NULL ||
	    !str_no_control(js->stage_src, SPEC_MAX_PATH) ||
	    !str_no_control(js->stage_dst, SPEC_MAX_PATH)))
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "stage.to: trainer.data and stage.to "
		    "must be paths without ':' (launch --stage takes SRC:DST)");
	/* Unbounded while rendering (the inputs are bounded), checked at the
	 * end: a failed append could not be noticed in the middle. */
	cbuf_init(&b, SIZE_MAX / 4);
	while (i < len) {
		const char	*at = memchr(tmpl + i, '@', len - i);
		size_t		 n;
		int		 alone;

		if (at == NULL) {
			cbuf_add(&b, tmpl + i, len - i);
			break;
		}
		start = (size_t)(at - tmpl);
		cbuf_add(&b, tmpl + i, start - i);
		n = 1;
		while (start + n < len && ((tmpl[start + n] >= 'A' &&
		    tmpl[start + n] <= 'Z') || tmpl[start + n] == '_'))
			n++;
		if (n == 1 || start + n >= len || tmpl[start + n] != '@') {
			/* a lone '@': text */
			cbuf_addc(&b, '@');
			i = start + 1;
			continue;
		}
		alone = (start == 0 || tmpl[start - 1] == '\n') &&
		    (start + n + 1 == len || tmpl[start + n + 1] == '\n');
		if ((r = expand(&b, kind, tmpl + start + 1, n - 1, alone, js,
		    err, errlen)) != 0)
			goto out;
		i = start + n + 1;
		/* a line placeholder ends its lines itself */
		if (alone && i < len)
			i++;
	}
	if (b.len > JOBSCRIPT_MAX) {
		r = cadre_errf(err, errlen, CADRE_ERR_INVALID, "job script: larger than %zu bytes",
		    (size_t)JOBSCRIPT_MAX);
		goto out;
	}
	*out = cbuf_detach(&b, NULL);
	r = 0;
out:
	cbuf_free(&b);
	return r;
}

int
jobscript_write(enum jobscript_kind kind, const char *templates_dir,
    const struct jobscript *js, const char *path, char *err, size_t errlen)
{
	struct cbuf	 t;
	char		*tpath = NULL, *text = NULL, *tmp = NULL;
	size_t		 n;
	int		 fd, ok, r;

	cbuf_init(&t, JOBSCRIPT_MAX);
	xasprintf(&tpath, "%s/%s", templates_dir,
	    kind == JOBSCRIPT_PBS ? "pbs.sh.in" :
	    kind == JOBSCRIPT_LOCAL ? "local.sh.in" : "slurm.sh.in");
	if ((r = cbuf_read_file(&t, tpath)) != 0) {
		cadre_errf(err, errlen, CADRE_ERR_INVALID, "%s: %s", tpath, r == CADRE_ERR_SYSTEM ?
		    strerror(errno) : cadre_strerror(r));
		goto out;
	}
	if ((r = jobscript_render(kind, t.data, t.len, js, &text, err,
	    errlen)) != 0)
		goto out;
	xasprintf(&tmp, "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	if (fd < 0) {
		r = cadre_errf(err, errlen, CADRE_ERR_INVALID, "%s: %s", tmp, strerror(errno));
		r = CADRE_ERR_SYSTEM;
		goto out;
	}
	n = strlen(text);
	ok = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
	if (close(fd) != 0)
		ok = 0;
	if (!ok || rename(tmp, path) != 0) {
		cadre_errf(err, errlen, CADRE_ERR_INVALID, "%s: %s", path, strerror(errno));
		(void)unlink(tmp);
		r = CADRE_ERR_SYSTEM;
		goto out;
	}
	r = 0;
out:
	cbuf_free(&t);
	free(tpath);
	free(text);
	free(tmp);
	return r;
}

/* ---------------------------------------------------------------- train.json */

#define TRAIN_JSON_KEYS		24	/* top-level members of train.json */
#define TRAIN_JSON_OPT_KEYS	9	/* members of "optimizer" */

/* A path of the spec as the trainer must read it, or JSON null when unset. */
static json_t *
path_value(const struct spec *s, const struct spec_run *r, enum spec_key k)
{
	const char	*v = spec_run_string(r, k);
	char		*abs;
	json_t		*j;

	if (v == NULL)
		return json_null();
	abs = spec_resolve_path(s, v);
	j = json_string(abs);
	free(abs);
	return j;
}

static void
set_int(json_t *o, const char *key, int64_t v)
{
	json_object_set_new(o, key, json_integer((json_int_t)v));
}

static void
set_real(json_t *o, const char *key, double v)
{
	json_object_set_new(o, key, json_real(v));
}

/* o into path, 0600, atomically: 0, or an error with a message. */
static int
write_json(const char *path, const json_t *o, char *err, size_t errlen)
{
	int	rc;

	if ((rc = cjson_write_atomic(path, o, 0600)) != 0)
		cadre_errf(err, errlen, rc, "%s: %s", path,
		    rc == CADRE_ERR_SYSTEM ? strerror(errno) :
		    cadre_strerror(rc));
	return rc;
}

int
jobscript_write_train_json(const struct spec *s, const struct spec_run *r,
    const char *run_dir, const char *path, char *err, size_t errlen)
{
	struct spec_model_dims	 m;
	const char		*model;
	json_t			*o = NULL, *opt, *mo;
	int			 rc;

	if (run_dir == NULL || run_dir[0] != '/' ||
	    !str_no_control(run_dir, SPEC_MAX_PATH))
		return cadre_errf(err, errlen, CADRE_ERR_INVALID, "run dir: expected an absolute path "
		    "without control characters");
	o = json_object();
	set_int(o, TJ_VERSION, 1);
	model = spec_run_string(r, SPEC_K_MODEL);
	if (model != NULL && strcmp(model, "custom") != 0)
		json_object_set_new(o, TJ_MODEL, json_string(model));
	else {
		/* an explicit model goes over with every dimension resolved
		 * (intermediate 0 is 4 x hidden by then) */
		spec_run_model(r, &m);
		mo = json_object();
		set_int(mo, TJ_MODEL_LAYERS, m.layers);
		set_int(mo, TJ_MODEL_HIDDEN, m.hidden);
		set_int(mo, TJ_MODEL_HEADS, m.heads);
		set_int(mo, TJ_MODEL_INTERMEDIATE, m.intermediate);
		set_int(mo, TJ_MODEL_VOCAB_SIZE, m.vocab_size);
		set_int(mo, TJ_MODEL_MAX_POSITION, m.max_position);
		json_object_set_new(o, TJ_MODEL, mo);
	}
	json_object_set_new(o, TJ_TASK,
	    json_string(spec_run_string(r, SPEC_K_TASK)));
	/* Staged, the trainer reads the node-local copy. */
	json_object_set_new(o, TJ_DATA, path_value(s, r,
	    spec_run_is_set(r, SPEC_K_STAGE_TO) ? SPEC_K_STAGE_TO : SPEC_K_DATA));
	json_object_set_new(o, TJ_EVAL_DATA, path_value(s, r, SPEC_K_EVAL_DATA));
	json_object_set_new(o, TJ_VOCAB, path_value(s, r, SPEC_K_VOCAB));
	json_object_set_new(o, TJ_INIT, path_value(s, r, SPEC_K_INIT));
	set_int(o, TJ_SEQ_LEN, spec_run_int(r, SPEC_K_SEQ_LEN));
	set_int(o, TJ_BATCH_SIZE, spec_run_int(r, SPEC_K_BATCH_SIZE));
	set_int(o, TJ_GRAD_ACCUM, spec_run_int(r, SPEC_K_GRAD_ACCUM));
	set_int(o, TJ_STEPS, spec_run_int(r, SPEC_K_STEPS));
	json_object_set_new(o, TJ_PRECISION,
	    json_string(spec_run_string(r, SPEC_K_PRECISION)));
	opt = json_object();
	json_object_set_new(opt, TJ_OPT_NAME,
	    json_string(spec_run_string(r, SPEC_K_OPT_NAME)));
	set_real(opt, TJ_OPT_LR, spec_run_double(r, SPEC_K_OPT_LR));
	set_real(opt, TJ_OPT_WEIGHT_DECAY, spec_run_double(r,
	    SPEC_K_OPT_WEIGHT_DECAY));
	set_real(opt, TJ_OPT_BETA1, spec_run_double(r, SPEC_K_OPT_BETA1));
	set_real(opt, TJ_OPT_BETA2, spec_run_double(r, SPEC_K_OPT_BETA2));
	set_real(opt, TJ_OPT_EPS, spec_run_double(r, SPEC_K_OPT_EPS));
	set_real(opt, TJ_OPT_WARMUP, spec_run_double(r, SPEC_K_OPT_WARMUP));
	json_object_set_new(opt, TJ_OPT_SCHEDULE,
	    json_string(spec_run_string(r, SPEC_K_OPT_SCHEDULE)));
	set_real(opt, TJ_OPT_POWER, spec_run_double(r, SPEC_K_OPT_POWER));
	json_object_set_new(o, TJ_OPTIMIZER, opt);
	set_real(o, TJ_GRAD_CLIP, spec_run_double(r, SPEC_K_GRAD_CLIP));
	json_object_set_new(o, TJ_GRAD_CHECKPOINTING,
	    json_boolean(spec_run_bool(r, SPEC_K_GRAD_CHECKPOINTING)));
	set_real(o, TJ_DROPOUT, spec_run_double(r, SPEC_K_DROPOUT));
	set_int(o, TJ_CHECKPOINT_EVERY, spec_run_int(r,
	    SPEC_K_CHECKPOINT_EVERY));
	set_int(o, TJ_KEEP_CHECKPOINTS, spec_run_int(r,
	    SPEC_K_KEEP_CHECKPOINTS));
	json_object_set_new(o, TJ_KEEP_TIMED, json_boolean(strcmp(
	    spec_run_string(r, SPEC_K_KEEP_TIMED), "none") != 0));
	set_int(o, TJ_LOG_EVERY, spec_run_int(r, SPEC_K_LOG_EVERY));
	set_int(o, TJ_SEED, spec_run_int(r, SPEC_K_SEED));
	set_int(o, TJ_SKIP_STEPS, spec_run_int(r, SPEC_K_MEASURE_SKIP_STEPS));
	json_object_set_new(o, TJ_OUT, json_string(run_dir));
	json_object_set_new(o, TJ_RESUME, json_string("auto"));
	/* json_string() refuses invalid UTF-8 (a run dir could hold it) and
	 * the member is then left out: the trainer would find it missing */
	if (json_object_size(o) != TRAIN_JSON_KEYS ||
	    json_object_size(opt) != TRAIN_JSON_OPT_KEYS) {
		rc = cadre_errf(err, errlen, CADRE_ERR_INVALID, "train.json: a value is not valid "
		    "UTF-8 (the run dir?)");
		goto out;
	}
	rc = write_json(path, o, err, errlen);
out:
	json_decref(o);
	return rc;
}

/* ---------------------------------------------------------------- program.json */

#define PROGRAM_JSON_KEYS	13	/* members of program.json, metrics_regex aside */

/* A JSON array of strings, or NULL when one is not UTF-8. */
static json_t *
string_array(char *const *v, size_t n)
{
	json_t	*a = json_array(), *j;
	size_t	 i;

	for (i = 0; i < n; i++) {
		if ((j = json_string(v[i])) == NULL ||
		    json_array_append_new(a, j) != 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* program.env or program.vars of r as an object of strings, or NULL. */
static json_t *
pairs_object(const struct spec_run *r, enum spec_key k)
{
	char *const	*pairs;
	json_t		*o = json_object(), *j;
	size_t		 n, i;

	pairs = spec_run_pairs(r, k, &n);
	for (i = 0; i < n; i++) {
		if ((j = json_string(pairs[2 * i + 1])) == NULL ||
		    json_object_set_new(o, pairs[2 * i], j) != 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* program.workdir made absolute: relative to the spec's directory, which
 * is itself relative to ours when the spec was given so. Caller frees. */
static char *
program_workdir(const struct spec *s, const struct spec_run *r)
{
	const char	*w = spec_run_string(r, SPEC_K_PROG_WORKDIR);
	char		*path, *abs, cwd[4096];
	const char	*rel;

	while (w[0] == '.' && w[1] == '/')
		w += 2 + strspn(w + 2, "/");
	if (*w == '\0' || strcmp(w, ".") == 0)
		path = xstrdup(spec_dir(s));
	else
		path = spec_resolve_path(s, w);
	if (path[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
		return path;
	rel = path;
	while (rel[0] == '.' && (rel[1] == '/' || rel[1] == '\0'))
		rel += 1 + strspn(rel + 1, "/");
	if (*rel == '\0')
		abs = xstrdup(cwd);
	else
		xasprintf(&abs, "%s/%s", cwd, rel);
	free(path);
	return abs;
}

int
jobscript_write_program_json(const struct spec *s, const struct spec_run *r,
    const char *path, char *err, size_t errlen)
{
	char *const	*list;
	const char	*str;
	json_t		*o, *cmd;
	char		*workdir;
	size_t		 n, want = PROGRAM_JSON_KEYS;
	int		 rc;

	if (!spec_is_program(s))
		return cadre_errf(err, errlen, CADRE_ERR_INVALID,
		    "program.json: the spec has no program section");
	workdir = program_workdir(s, r);
	o = json_object();
	set_int(o, PJ_VERSION, PROGRAM_VERSION);
	if ((str = spec_run_string(r, SPEC_K_PROG_COMMAND)) != NULL)
		cmd = json_string(str);
	else {
		list = spec_run_list(r, SPEC_K_PROG_COMMAND, &n);
		cmd = string_array(list, n);
	}
	json_object_set_new(o, PJ_COMMAND, cmd);
	json_object_set_new(o, PJ_LAUNCH,
	    json_string(spec_run_string(r, SPEC_K_PROG_LAUNCH)));
	json_object_set_new(o, PJ_WORKDIR, json_string(workdir));
	json_object_set_new(o, PJ_ENV, pairs_object(r, SPEC_K_PROG_ENV));
	json_object_set_new(o, PJ_VARS, pairs_object(r, SPEC_K_PROG_VARS));
	json_object_set_new(o, PJ_SIGNAL,
	    json_string(spec_run_string(r, SPEC_K_PROG_SIGNAL)));
	set_int(o, PJ_CHECKPOINT_EVERY, spec_run_int(r,
	    SPEC_K_PROG_CHECKPOINT_EVERY));
	set_int(o, PJ_KEEP_CHECKPOINTS, spec_run_int(r,
	    SPEC_K_PROG_KEEP_CHECKPOINTS));
	if ((str = spec_run_string(r, SPEC_K_PROG_METRICS_REGEX)) != NULL) {
		json_object_set_new(o, PJ_METRICS_REGEX, json_string(str));
		want++;
	}
	list = spec_run_list(r, SPEC_K_PROG_SETUP, &n);
	json_object_set_new(o, PJ_SETUP, string_array(list, n));
	json_object_set_new(o, PJ_EXPERIMENT,
	    json_string(spec_get_string(s, SPEC_K_NAME)));
	json_object_set_new(o, PJ_RUN_ID, json_string(spec_run_id(r)));
	json_object_set_new(o, PJ_CONFIG_ID,
	    json_string(spec_run_config_id(r)));
	/* a member whose value was not UTF-8 (a NULL) is left out */
	if (json_object_size(o) != want) {
		rc = cadre_errf(err, errlen, CADRE_ERR_INVALID, "program.json: "
		    "a value is not valid UTF-8 (program.workdir?)");
		goto out;
	}
	if (workdir[0] != '/') {
		rc = cadre_errf(err, errlen, CADRE_ERR_INVALID, "program.json: "
		    "program.workdir %s is not absolute", workdir);
		goto out;
	}
	rc = write_json(path, o, err, errlen);
out:
	free(workdir);
	json_decref(o);
	return rc;
}

int
jobscript_set_init(const char *run_dir, const char *init, char *err,
    size_t errlen)
{
	json_t	*o = NULL;
	char	*path;
	int	 rc;

	xasprintf(&path, "%s/" RUNDIR_TRAIN_JSON, run_dir);
	if ((rc = cjson_load_file(path, SPEC_MAX_BYTES, &o, NULL)) == 0 &&
	    json_is_object(o)) {
		json_object_set_new(o, TJ_INIT, json_string(init));
		rc = cjson_write_atomic(path, o, 0600);
	} else if (rc == 0)
		rc = CADRE_ERR_INVALID;
	if (rc != 0)
		cadre_errf(err, errlen, rc, "%s: cannot set its init: %s", path,
		    cadre_strerror(rc));
	json_decref(o);
	free(path);
	return rc;
}

int
jobscript_write_run_json(const struct spec *s, const struct spec_run *r,
    const char *run_dir, char *err, size_t errlen)
{
	char	*path;
	int	 rc;

	xasprintf(&path, "%s/%s", run_dir, spec_is_program(s) ?
	    RUNDIR_PROGRAM : RUNDIR_TRAIN_JSON);
	if (spec_is_program(s))
		rc = jobscript_write_program_json(s, r, path, err, errlen);
	else
		rc = jobscript_write_train_json(s, r, run_dir, path, err,
		    errlen);
	free(path);
	return rc;
}
