/* cadre-agent rank: what rank.c (options, running a command with its
 * output tagged and capped, rank-R.json) and rank_program.c (a program's
 * identity, environment and signals, --setup) share. */
#ifndef CADRE_AGENT_RANK_H
#define CADRE_AGENT_RANK_H

#include <sys/types.h>

#include <stdint.h>

#include <jansson.h>

#include "agent.h"
#include "buf.h"
#include "metrics_regex.h"

struct program;

/* CADRE_LOG_MAX: the bytes of output rank writes to its log file; 1/16 of
 * it (at least RANK_RELAY_MIN) goes on to its stdout and stderr. */
#define RANK_LOG_MAX_ENV	"CADRE_LOG_MAX"
#define RANK_LOG_MAX_DEFAULT	((int64_t)256 << 20)
#define RANK_RELAY_MIN		((int64_t)1 << 20)
#define RANK_WARN_MAX		10	/* metrics warnings in the log */
/* After the command has exited, how long rank still reads the output of
 * what it left running with the pipes open, before it stops reading. */
#define RANK_DRAIN_S		10.0

/* Where the output of what rank runs goes. */
struct rank_output {
	char			 tag[256];	/* "rank R NODE", "setup NODE" */
	int			 logfd;		/* -1: none */
	int64_t			 log_max, relay_max;
	int64_t			 log_bytes, relay_bytes;
	int			 log_full, relay_full;
	struct metrics_regex	*mr;		/* NULL: no metrics from output */
	int			 metrics_fd;
	double			 started;	/* now_mono() when rank started */
	int			 warnings;
	struct cbuf		 line;		/* the tagged line being written */
	struct cbuf		 mline;		/* the metrics line */
	/* the command's last stderr line that reads as an error, else its
	 * last one with words (rank_last_error()) */
	char			 last_error[RANK_MESSAGE_MAX + 1];
	char			 last_words[RANK_MESSAGE_MAX + 1];
};

/* How the signals rank gets reach what it runs. */
struct rank_signals {
	int	program;	/* 0: `-- COMMAND`: as they come, USR2 as TERM */
	int	ckpt_signal;	/* a program's checkpoint request (USR1's) */
	int	per_node;	/* USR1 to the ranks under the node's launcher */
};

/* How a command ended. */
struct rank_result {
	int	status;		/* wait status */
	int	exec_errno;	/* exec failed with this (status 127); 0: ran */
	int	stopped;	/* TERM, INT, HUP or USR2 came while it ran */
	int64_t	peak_rss;	/* bytes, the largest process waited for */
	int	oom;		/* killed by SIGKILL as the cgroup OOM-killed */
};

/* rank.c */
/* Opens rundir/log/name to append (0600); -1 (a warning) when it cannot,
 * or rundir is NULL. */
int rank_open_log(const char *rundir, const char *name);
void rank_output_init(struct rank_output *o, const char *tag, int logfd);
void rank_output_free(struct rank_output *o);
/* One line of rank's own on stderr and in the log (as the command's
 * stderr, with the same cap), printf-style. */
void rank_say(struct rank_output *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Runs argv (execvp) in its own process group with its output through o,
 * the signals of sigfd (cmd_rank's sigpipe) passed on as rs says, until
 * it has exited and its output is read. 0 with *res, or CADRE_ERR_SYSTEM
 * (errno) when it could not start. */
int rank_exec(char *const *argv, struct rank_output *o,
    const struct rank_signals *rs, int sigfd, struct rank_result *res);
/* 128 + N for a signal, the exit status otherwise. */
int rank_exit_code(int status);
/* What the command last said on stderr that explains an end: a line
 * with an error word ("Error", "error:", "Exception", "out of memory",
 * "Killed", ...), else the last line with letters in it; "" when none. */
const char *rank_last_error(const struct rank_output *o);
/* Takes one line of the command's stderr for rank_last_error(). */
void rank_note_stderr(struct rank_output *o, const char *p, size_t len);
/* A message as a JSON string of at most RANK_MESSAGE_MAX bytes. */
json_t *rank_message_json(const char *msg);
/* The node's name: $CADRE_NODE, $SLURMD_NODENAME, the short host name
 * (into buf). */
const char *rank_node_name(char *buf, size_t len);

/* rank_program.c */
/*
 * Sets the identity variables of p's launch mode (RANK, WORLD_SIZE,
 * LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK, CADRE_NODE_RANK)
 * from Open MPI's or Slurm's variables, rank_opt (--rank; -1: none)
 * where they say nothing. *indexp: the process's index (its log's R).
 * lenient (--setup): what is missing is left unset, not an error.
 * 0, or CADRE_ERR_INVALID with why in msg.
 */
int rank_identity(const struct program *p, int rank_opt, int lenient,
    int *indexp, char *msg, size_t msglen);
/* program.env into the environment. */
void rank_program_env(const struct program *p);
/* Into p's workdir, else rundir (NULL: stays). 0 or an error with msg. */
int rank_program_chdir(const struct program *p, const char *rundir,
    char *msg, size_t msglen);
/* Sends sig to the ranks under the per-node launcher child (the
 * descendants whose environment has LOCAL_RANK and whose parent's has
 * not), never to the launcher itself (torchrun dies of SIGUSR1). The
 * number of processes signalled: 0 before the launcher started them. */
int rank_signal_ranks(pid_t child, int sig);
/* The oom_kill count of this process's cgroup (v2), or -1 when unknown. */
int64_t rank_oom_kills(void);
/* --setup: runs p's setup commands in order, output into
 * log/setup-NODE.log, log/setup-NODE.json for launch; p NULL: the
 * program did not load, why says why. rank_opt: the node's index where
 * no launcher's variable gives it. The exit status. */
int rank_setup(const struct program *p, const char *why, const char *rundir,
    const char *node, int rank_opt, int sigfd);

#endif
