/*
 * Job scripts: etc/templates/{slurm,pbs}.sh.in rendered for one run.
 *
 * Every value that reaches a script goes through one of two doors in
 * jobscript.c: cbuf_add_shell_word() (common/buf.h: one shell word) for the
 * script's body, and jobscript_word_ok() (a conservative character set,
 * nothing to quote) for #SBATCH/#PBS lines, which the shell never reads
 * but sbatch and qsub parse with rules of their own. Values that may hold
 * anything (the run dir, extra scheduler words) never go into a directive:
 * the backend passes them to sbatch or qsub as argv words.
 *
 * Templates hold @NAME@ placeholders (NAME in [A-Z_]): @DIRECTIVES@ and
 * @ENV@ alone on a line become lines; @WRAP@ becomes zero or more quoted
 * words, as does @STAGE@ (`--stage SRC:DST` for launch, or nothing);
 * @PROGRAM@, what launch runs, is fixed text naming the script's own
 * $trainer and $run_dir, no value: `-- "$trainer" train --config
 * "$run_dir/train.json"` for a trainer spec, `--program
 * "$run_dir/program.json"` for a program spec; @EVAL_DATA@ and @EVAL_AT@
 * ("1200,2400") are one word, empty when unset (always for a program);
 * any other known NAME becomes one quoted word (@SELF_SIGNAL@: yes
 * when the script must send itself SIGUSR1 signal_grace before the time
 * limit, as under PBS and slurmrestd). An unknown @NAME@
 * is an error, so a template cannot leave a value unrendered.
 */
#ifndef CADRE_JOBSCRIPT_H
#define CADRE_JOBSCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "scheduler.h"

struct cbuf;
struct spec;
struct spec_run;

#define JOBSCRIPT_MAX		((size_t)1 << 20)	/* bytes of a rendered script */
#define JOBSCRIPT_NAME_MAX	128	/* bytes of a job name */
#define JOBSCRIPT_ERR_MAX	512	/* bytes of an error message */

enum jobscript_kind {
	JOBSCRIPT_SLURM = 0,	/* #SBATCH lines */
	JOBSCRIPT_PBS,		/* #PBS lines */
	/* slurm.sh.in for slurmrestd, which reads no #SBATCH lines and
	 * refuses "B:" signals (22.05): the script signals itself */
	JOBSCRIPT_SLURMREST,
	/* local.sh.in: this machine, virtual nodes as agents on loopback
	 * addresses (sched_local.c); no directives, the script times its
	 * own SIGUSR1 like slurm-rest's */
	JOBSCRIPT_LOCAL
};

/* What a script needs beyond the job's resources. Strings borrowed. */
struct jobscript {
	struct sched_job	 job;
	const char		*agent;		/* cadre-agent, absolute */
	const char		*trainer;	/* cadre-train, absolute */
	const char		*launcher;	/* mpirun | srun */
	int64_t			 startup_timeout;	/* seconds */
	const char		*container_runtime;	/* none | apptainer | ... */
	const char		*container_image;
	char *const		*binds;
	size_t			 nbinds;
	/* the data read inside the container (trainer.data or stage.from),
	 * bound there unless a bind or the run dir holds it; NULL: none */
	const char		*data;
	/* stage.to: launch copies stage_src (trainer.data) to stage_dst on
	 * every node first, and train.json's data is stage_dst; NULL: none */
	const char		*stage_src;
	const char		*stage_dst;
	/* eval: after training, the head node runs `cadre-train eval
	 * --run-dir` over the timed checkpoints (C9.4); eval_data NULL:
	 * none. eval_at: decimal seconds. spec resolves a relative path. */
	const struct spec	*spec;
	/* a program spec: launch runs RUN_DIR/program.json, not the trainer */
	int			 program;
	const char		*experiment;	/* the spec's name */
	const char		*config_id;
	const char		*eval_data;
	int64_t			 eval_batch;
	char *const		*eval_at;
	size_t			 neval_at;
	/* scheduler.srun_extra: words for the job's srun steps */
	char *const		*srun_extra;
	size_t			 nsrun_extra;
	/* setup: shell lines each node runs before its agent */
	char *const		*setup;
	size_t			 nsetup;
	/* env: name, value, name, value, ... (spec_run_pairs) */
	char *const		*env;
	size_t			 nenv;
};


/*
 * Fills js from run r of spec s, for run_dir (absolute) and job_name;
 * agent and trainer are the programs' paths. Strings are borrowed from s,
 * r and the arguments: keep them alive while js is used.
 */
void jobscript_from_run(const struct spec *s, const struct spec_run *r,
    const char *run_dir, const char *job_name, const char *agent,
    const char *trainer, struct jobscript *js);

/* Checks every value of job against what a script or a scheduler command
 * line may take: 0, or CADRE_ERR_INVALID with a message in err. */
int jobscript_check_job(const struct sched_job *job, char *err,
    size_t errlen);

/* Renders template text tmpl (len bytes) for js: 0 and *out (caller
 * frees), or CADRE_ERR_INVALID / CADRE_ERR_TOO_LARGE with a message. */
int jobscript_render(enum jobscript_kind kind, const char *tmpl, size_t len,
    const struct jobscript *js, char **out, char *err, size_t errlen);

/* Reads DIR/slurm.sh.in (slurm, slurm-rest), DIR/pbs.sh.in or
 * DIR/local.sh.in, renders it and writes path (0700, atomically). */
int jobscript_write(enum jobscript_kind kind, const char *templates_dir,
    const struct jobscript *js, const char *path, char *err, size_t errlen);

/*
 * Writes the trainer's config for run r of s (docs/contracts.md,
 * docs/daemon-backends.md) to path: every key resolved from the run, paths
 * made absolute against the spec's directory, "out" = run_dir (absolute),
 * "resume" = "auto"; 0600, atomically. 0, or CADRE_ERR_INVALID /
 * CADRE_ERR_SYSTEM with a message in err.
 */
int jobscript_write_train_json(const struct spec *s, const struct spec_run *r,
    const char *run_dir, const char *path, char *err, size_t errlen);

/*
 * Writes the program's launch for run r of program spec s to path
 * (docs/daemon-backends.md): exactly the PJ_* members of common/rundir.h,
 * the run's values (the matrix's included), workdir absolute; 0600,
 * atomically. 0, or CADRE_ERR_INVALID / CADRE_ERR_SYSTEM with a message.
 */
int jobscript_write_program_json(const struct spec *s,
    const struct spec_run *r, const char *path, char *err, size_t errlen);

/* Sets train.json's "init" in run_dir to path (absolute): a checkpoint
 * of another experiment that trainer.init.from names, found when the run
 * starts. 0, or a negative cadre_err with a message in err. */
int jobscript_set_init(const char *run_dir, const char *path, char *err,
    size_t errlen);

/* What run r's launch reads, into run_dir: program.json for a program
 * spec, else train.json. As the two above. */
int jobscript_write_run_json(const struct spec *s, const struct spec_run *r,
    const char *run_dir, char *err, size_t errlen);

#endif
