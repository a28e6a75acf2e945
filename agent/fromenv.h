/*
 * `cadre-agent launch --from-env`: inside a Slurm or PBS allocation, the
 * nodes and slots come from the scheduler's environment, and launch
 * starts the agents itself (srun, or one pbsdsh per node) before the
 * normal launch path; see agent/README.md "launch --from-env".
 */
#ifndef CADRE_AGENT_FROMENV_H
#define CADRE_AGENT_FROMENV_H

#include <stddef.h>
#include <sys/types.h>

struct container;

#define FROMENV_ADDRS_MAX	((size_t)16 << 20)

struct fromenv {
	char	*rundir;	/* the run dir chosen (absolute) */
	char	*nodefile;	/* RUN_DIR/nodefile, for launch --nodefile */
	pid_t	*pids;		/* srun, or one pbsdsh per node */
	size_t	 npids;
	size_t	 nnodes;
};

/*
 * Finds the nodes (Slurm, else PBS), picks the run dir (rundir_opt, else
 * $CADRE_RUN_DIR, else ./cadre-run.JOBID), makes its keys when missing,
 * writes RUN_DIR/nodefile and, when start_agents, starts `cadre-agent
 * node-serve` on every node (srun_path: srun under Slurm; ct: the
 * container the agents run in). slots > 0 overrides the slots per node.
 * 0, or an error after a message on stderr.
 */
int fromenv_start(struct fromenv *fe, const char *rundir_opt, int slots,
    int start_agents, const char *srun_path, const struct container *ct);
/* Waits a while for the agents to stop (they stop once status.json
 * appears), then stops them; frees fe. */
void fromenv_stop(struct fromenv *fe);

/* `cadre-agent node-serve`: what fromenv_start runs on every node. */
int cmd_node_serve(int argc, char **argv);

/* Parses SLURM_TASKS_PER_NODE ("2(x3),1") into n counts: 0, or
 * CADRE_ERR_INVALID when it is malformed or does not give n nodes. */
int fromenv_tasks_per_node(const char *s, size_t n, int *slots);

#endif
