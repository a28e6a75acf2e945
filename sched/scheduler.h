/*
 * Scheduler backends behind one interface: local, slurm (sbatch and
 * friends), slurm-rest (slurmrestd over libcurl), pbs (qsub). Each backend
 * is a struct sched_ops in its own file (sched_slurm.c, ...); the daemon
 * holds a struct sched and calls through it, never a backend directly.
 *
 * A backend knows jobs, not runs: it submits a rendered job script with
 * the resources of a struct sched_job and reports scheduler states. The
 * run dir's status.json (written by the agent's launch) is what says how
 * a run ended once the scheduler has forgotten the job: Slurm without
 * accounting storage drops finished jobs after MinJobAge, and a job it no
 * longer knows is SCHED_UNKNOWN, not an error.
 */
#ifndef CADRE_SCHEDULER_H
#define CADRE_SCHEDULER_H

#include <stddef.h>
#include <stdint.h>

#define SCHED_JOB_ID_MAX	64	/* bytes of a job id, NUL included */
#define SCHED_REASON_MAX	128	/* bytes of a state reason, NUL included */
#define SCHED_NODES_MAX		1024	/* bytes of a node list, NUL included */

enum sched_state {
	SCHED_UNKNOWN = 0,	/* the scheduler does not (or no longer) know the job */
	SCHED_QUEUED,		/* pending, held, or requeued and pending again */
	SCHED_STARTING,		/* allocated, the script not yet running (configuring) */
	SCHED_RUNNING,		/* running, suspended, or completing */
	SCHED_DONE,		/* exited 0 */
	SCHED_FAILED,		/* exited non-zero, or refused after submission */
	SCHED_CANCELLED,
	SCHED_TIMEOUT,		/* reached its time limit */
	SCHED_PREEMPTED,
	SCHED_NODE_FAIL,	/* a node of the allocation failed */
	SCHED_STATE_COUNT
};

/* "unknown", "queued", ...; never NULL. */
const char *sched_state_name(enum sched_state st);
/* Whether the job has ended (done .. node_fail). */
int sched_state_final(enum sched_state st);

/*
 * What to submit. Strings are borrowed; NULL or 0 leave a value to the
 * scheduler's default. Every value that reaches a job script or a
 * scheduler's command line has been checked by jobscript_check_job(), which
 * submit() calls first.
 */
struct sched_job {
	const char	 *run_id;	/* [0-9a-f]{SPEC_ID_LEN} */
	const char	 *run_dir;	/* absolute; output and status go here */
	const char	 *job_name;	/* a name ([A-Za-z0-9._-]) */
	int64_t		  nodes;
	int64_t		  tasks_per_node;
	int64_t		  gpus_per_node;
	const char	 *gpu_type;	/* word */
	int64_t		  cpus_per_task;
	int64_t		  memory;	/* bytes per node */
	int64_t		  time_limit;	/* seconds */
	int64_t		  signal_grace;	/* seconds; SIGUSR1 to the batch shell */
	const char	 *partition;	/* words */
	const char	 *account;
	const char	 *qos;
	const char	 *constraint;	/* word (and & | ( ) *); NULL: none */
	const char	 *reservation;	/* word; NULL: none */
	int		  exclusive;	/* whole nodes */
	char *const	 *extra;	/* extra scheduler words, each one argument */
	size_t		  nextra;
	const char	 *script;	/* the rendered job script (absolute path) */
	char *const	 *env;		/* NAME=value exported to the job */
	size_t		  nenv;
};

/* What poll() knows about one job. */
struct sched_status {
	enum sched_state state;
	int		 exit_code;	/* when final; -1: not known */
	int		 exit_signal;	/* when killed by a signal; 0: none */
	char		 reason[SCHED_REASON_MAX];	/* scheduler's words, may be "" */
	char		 nodes[SCHED_NODES_MAX];	/* allocated nodes (hostlist), may be "" */
};

/* Settings of a backend instance (the daemon's config, not the spec). */
struct sched_config {
	const char	*bindir;	/* where sbatch/qsub... live; NULL: $PATH */
	int		 cmd_timeout;	/* seconds one scheduler command may take; 0: 30 */
	const char	*rest_url;	/* slurm-rest: unix:///PATH or http(s)://HOST:PORT */
	const char	*token_env;	/* slurm-rest: the variable holding the JWT */
	const char	*local_dir;	/* local: job records (ID.json); NULL: STATE/local */
	int		 dry;		/* local: submit records jobs that never run (queued) */
	int		 local_second_ms;	/* local: ms per second of a time limit; 0: 1000 (tests shorten it) */
};

struct sched;

struct sched_ops {
	const char	*name;		/* as in scheduler.backend */
	int		(*init)(struct sched *s);
	void		(*free)(struct sched *s);
	/* Submits job; *job_id gets the scheduler's id (caller frees). */
	int		(*submit)(struct sched *s, const struct sched_job *job,
			    char **job_id);
	/* States of n jobs at once (one scheduler query for all of them,
	 * n at most poll_batch when that is not 0: sched_poll splits); a
	 * job the scheduler does not know is SCHED_UNKNOWN. */
	int		(*poll)(struct sched *s, const char *const *job_ids,
			    size_t n, struct sched_status *out);
	size_t		  poll_batch;
	int		(*cancel)(struct sched *s, const char *job_id);
	/* The newest job named job_name that has not ended: *job_id, or
	 * NULL when there is none. After a crash between recording an
	 * attempt and recording its job id, this tells whether the
	 * submission went through. */
	int		(*find)(struct sched *s, const char *job_name,
			    char **job_id);
};

struct sched {
	const struct sched_ops	*ops;
	struct sched_config	 cfg;	/* strings copied */
	void			*priv;	/* the backend's */
};

/* The backend named name ("slurm", ...), initialised with a copy of cfg:
 * 0 and *out, CADRE_ERR_NOT_FOUND for an unknown name, or the backend's
 * error. */
int sched_open(const char *name, const struct sched_config *cfg,
    struct sched **out);
void sched_close(struct sched *s);

int sched_submit(struct sched *s, const struct sched_job *job, char **job_id);
int sched_poll(struct sched *s, const char *const *job_ids, size_t n,
    struct sched_status *out);
int sched_cancel(struct sched *s, const char *job_id);
int sched_find(struct sched *s, const char *job_name, char **job_id);

/* Whether id is a plausible job id of any backend: 1 to
 * SCHED_JOB_ID_MAX - 1 bytes of [A-Za-z0-9._-] ("123", "123_4",
 * "4567.pbs01"). Ids read from a scheduler are checked with it before
 * they go anywhere. */
int sched_job_id_ok(const char *id);

/* ---------------------------------------------------------------- backends */
extern const struct sched_ops sched_slurm_ops;	/* sched_slurm.c */
extern const struct sched_ops sched_slurmrest_ops;	/* sched_slurmrest.c */
extern const struct sched_ops sched_pbs_ops;		/* sched_pbs.c */
extern const struct sched_ops sched_local_ops;	/* sched_local.c */

/* ---------------------------------------------------------------- helpers */
/*
 * Runs argv (argv[0] a program name looked up in cfg->bindir, or $PATH
 * when that is NULL) without a shell, stdin from /dev/null, waiting at
 * most cfg->cmd_timeout seconds (then SIGKILL). stdout is captured up to
 * max bytes (more is CADRE_ERR_TOO_LARGE), stderr up to 4 KiB for
 * messages. Returns 0 with the exit status in *status (-1 when killed by
 * a signal), or CADRE_ERR_TIMEOUT / CADRE_ERR_SYSTEM. *out and *err
 * (either may be NULL) get NUL-terminated text; caller frees.
 */
int sched_run_cmd(const struct sched_config *cfg, char *const *argv,
    size_t max, int *status, char **out, char **err);

/* ---------------------------------------------------------------- parsers
 * Of scheduler output, exported for the unit tests. */
/* squeue --noheader --Format= this: one job per line, '|'-separated. */
#define SLURM_SQUEUE_FORMAT	"JobID:|,State:|,Reason:|,NodeList:|,exit_code:|"
/* A Slurm job state name ("PENDING", len bytes) -> ours; SCHED_UNKNOWN
 * for a name it does not know. */
enum sched_state slurm_state_parse(const char *s, size_t len);
/* Fills the statuses of the ids that squeue's output (SLURM_SQUEUE_FORMAT)
 * names; lines that do not parse (field count, id, state, exit status) are
 * skipped and counted in *bad; ids not in it keep what they had. */
int slurm_parse_squeue(const char *text, const char *const *ids, size_t n,
    struct sched_status *out, size_t *bad);
/* sbatch --parsable's "JOBID" or "JOBID;CLUSTER": 0 and *id (caller
 * frees), or CADRE_ERR_PROTOCOL. */
int slurm_parse_sbatch(const char *text, char **id);
/* The status of job_id in a slurmrestd GET /job/ID reply (jansson's
 * json_t): 0, CADRE_ERR_NOT_FOUND (not in it, or "Invalid job id"), or
 * CADRE_ERR_PROTOCOL for a reply without the expected members. */
struct json_t;
int slurmrest_parse_job(const struct json_t *reply, const char *job_id,
    struct sched_status *out);
/* Fills the statuses of the ids in a `qstat -x -f -F json` reply: 0, or
 * CADRE_ERR_PROTOCOL when a job's entry lacks what is needed. Exit_status
 * 0 done, 1..255 failed with that code, 256+N killed by signal N (timeout
 * when resources_used.walltime reached Resource_List.walltime, or the
 * comment names the walltime), negative (PBS could not run it)
 * failed; finished without an Exit_status: deleted before it ran. */
int pbs_parse_qstat(const struct json_t *reply, const char *const *ids,
    size_t n, struct sched_status *out);
/* The local backend's job id "local-PID-TICKS": 0 and its parts, or
 * CADRE_ERR_INVALID. */
int local_parse_id(const char *id, long *pid, unsigned long long *ticks);
/* A /proc/PID/stat line (NUL-terminated): 0 with the parent, the start
 * time in clock ticks after boot and whether it is a zombie, or
 * CADRE_ERR_INVALID (CADRE_ERR_RANGE for a start time past 64 bits). */
int local_parse_stat(const char *buf, long *ppid, unsigned long long *ticks,
    int *zombie);

#endif
