/*
 * cadre-agent launch's insides, shared by launch.c (options, the main
 * flow), launch_wait.c (the readiness wait), launch_run.c (the mpirun or
 * srun command), launch_signal.c (signals) and launch_status.c (the end
 * reason, status.json); nothing else includes this (cmd_launch is in
 * agent.h).
 */
#ifndef CADRE_AGENT_LAUNCH_H
#define CADRE_AGENT_LAUNCH_H

#include <sys/types.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent.h"
#include "buf.h"
#include "container.h"
#include "program.h"
#include "stage.h"

#define LAUNCH_MPI_ARGS_MAX	256
/* Seconds a program that saved after a stop request has to exit. */
#define PROGRAM_STOP_LINGER	10

struct lnode {
	char			*name;
	int			 slots;
	int			 ready;
	struct agent_info	 info;
	char			 why[512];	/* why it is not ready */
};

struct launch_prog;

struct launch {
	char		*rundir;	/* absolute */
	char		*keyfile;
	struct lnode	*nodes;
	size_t		 n;
	int		 total_slots;
	int		 nprocs;	/* processes started (rank-R.json): total_slots,
					 * or per node or one for a program */
	int64_t		 startup_timeout;
	int64_t		 term_grace;
	double		 deadline;
	/* The probe round: threads take the next index. */
	int		 sigfd;		/* read end of the signal pipe */
	int		 stop_sig;	/* a signal seen before the ranks start */
	struct launch_prog *prog;	/* a user's program; NULL: a COMMAND */
	pthread_mutex_t	 mu;
	size_t		 next;
	size_t		*pending;
	size_t		 npending;
};

/* What the command line asked for, beyond what goes into struct launch. */
struct launch_opts {
	const char		*rundir_opt, *hostlist, *nodefile;
	const char		*mpirun, *mpi_args[LAUNCH_MPI_ARGS_MAX];
	size_t			 nmpi;
	int			 slots, slots_set;
	int			 wait_only, use_srun, from_env, keep_staged;
	int			 stage_verify_full;
	const char		*srun;
	struct container	 ct;
	struct stage_pair	 stages[STAGE_PAIRS_MAX];
	size_t			 nstage;
	char			**cmd;		/* COMMAND [ARG...] */
	int			 ncmd;
	const char		*program;	/* --program FILE */
	int			 prog_launch;	/* wrapper mode: enum program_launch + 1; 0: none */
	int64_t			 checkpoint_every;	/* wrapper mode, seconds */
};

/* A user's program under launch (launch_program.c). */
struct launch_prog {
	struct program	  p;
	char		 *path;		/* program.json */
	char		 *workdir;	/* where relative checkpoint paths point */
	char		 *stop_file;
	int		  attempt;
	double		  base_elapsed;	/* program seconds of the earlier attempts */
	double		  t_start;	/* now_mono() when the program started */
	double		  next_tick;
	double		  next_mark;	/* the next timed checkpoint, program seconds; 0: none */
	double		  pending_due;	/* a request waiting for its checkpoint; 0: none */
	off_t		  mx_from;	/* metrics.jsonl's size when this attempt began */
	size_t		  mx_done;	/* lines past mx_from already taken */
	int64_t		  last_step, last_samples;
	double		  last_elapsed;
	int		  have_elapsed;
	char		**ckpts;	/* complete checkpoints, oldest first */
	size_t		  nckpts;
	int64_t		  ncheckpoints;	/* announced in this attempt */
	int		  trained;	/* a step line came in this attempt */
	int		  stopping;	/* cadre asked the program to stop */
	int		  stop_saved;	/* and it saved since, or had nothing to save */
};

/* The mpirun (or srun) command's words and the strings they point to. */
struct launch_cmd {
	char	**av;
	char	 *np, *agent_cmd;
	char	**cwords, **swords;
	size_t	  ncw, nsw;
	char	 *srun_alloc[4];
};

/* launch_wait.c */
int launch_wait_ready(struct launch *l);
size_t launch_find_lost(struct launch *l, json_t **lostp, struct cbuf *names);
int launch_not_ready(struct launch *l, json_t *st, int error, int wait_only);

/* launch_signal.c */
int launch_wait_signal(struct launch *l, double secs);
void launch_forward_signals(struct launch *l, pid_t pid, int exited,
    int *preempted, double *term_at);

/* launch_run.c */
int launch_write_hostfile(struct launch *l, char **pathp);
/* setup: a program's `rank --setup` once per node instead. */
int launch_command(struct launch *l, const struct launch_opts *o,
    char *hostfile, int setup, struct launch_cmd *c);
void launch_cmd_free(struct launch_cmd *c);
int launch_run_mpirun(struct launch *l, char **argv, int *wstatus, int *preempted,
    char *msg, size_t msglen);

/* launch_program.c */
const char *const *launch_program_exported(void);
int launch_program_open(struct launch *l, const char *path,
    struct launch_prog *lp, char *msg, size_t msglen);
void launch_program_start(struct launch *l, struct launch_prog *lp);
void launch_program_tick(struct launch *l, struct launch_prog *lp, pid_t pid);
void launch_program_stop(struct launch_prog *lp, pid_t pid);
void launch_program_end(struct launch *l, struct launch_prog *lp,
    const json_t *st, int rc);
void launch_program_free(struct launch_prog *lp);
/* Why `rank --setup` failed, from log/setup-NODE.json, into msg. */
void launch_setup_failure(struct launch *l, char *msg, size_t msglen);

/* launch_status.c */
void launch_write_status(struct launch *l, json_t *st);
int launch_end(struct launch *l, json_t *st, int wstatus, int preempted,
    int use_srun);

#endif
