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
#include "stage.h"

#define LAUNCH_MPI_ARGS_MAX	256

struct lnode {
	char			*name;
	int			 slots;
	int			 ready;
	struct agent_info	 info;
	char			 why[512];	/* why it is not ready */
};

struct launch {
	char		*rundir;	/* absolute */
	char		*keyfile;
	struct lnode	*nodes;
	size_t		 n;
	int		 total_slots;
	int64_t		 startup_timeout;
	int64_t		 term_grace;
	double		 deadline;
	/* The probe round: threads take the next index. */
	int		 sigfd;		/* read end of the signal pipe */
	int		 stop_sig;	/* a signal seen before the ranks start */
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
	const char		*srun;
	struct container	 ct;
	struct stage_pair	 stages[STAGE_PAIRS_MAX];
	size_t			 nstage;
	char			**cmd;		/* COMMAND [ARG...] */
	int			 ncmd;
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
int launch_command(struct launch *l, const struct launch_opts *o,
    char *hostfile, struct launch_cmd *c);
void launch_cmd_free(struct launch_cmd *c);
int launch_run_mpirun(struct launch *l, char **argv, int *wstatus, int *preempted,
    char *msg, size_t msglen);

/* launch_status.c */
void launch_write_status(struct launch *l, json_t *st);
int launch_end(struct launch *l, json_t *st, int wstatus, int preempted,
    int use_srun);

#endif
