/* The run directory's words that need code: the end reasons a job may
 * write and the run states' names (the names themselves are in rundir.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "rundir.h"

long long
rundir_ckpt_step(const char *name)
{
	const size_t	 pre = sizeof CKPT_DIR_PREFIX - 1;
	char		*end;
	long long	 v;

	if (strncmp(name, CKPT_DIR_PREFIX, pre) != 0 || name[pre] < '0' ||
	    name[pre] > '9')
		return -1;
	errno = 0;
	v = strtoll(name + pre, &end, 10);
	if (errno != 0 || *end != '\0' || v < 0)
		return -1;
	return v;
}

const struct rundir_placeholder rundir_placeholders[] = {
	{ "nnodes", ENV_NNODES },
	{ "nproc_per_node", ENV_NPROC_PER_NODE },
	{ "node_rank", ENV_NODE_RANK },
	{ "ranks", ENV_RANKS },
	{ "rdzv_endpoint", ENV_RDZV_ENDPOINT },
	{ "master_addr", ENV_MASTER_ADDR },
	{ "master_port", ENV_MASTER_PORT },
	{ "hostfile", ENV_HOSTFILE },
	{ "run_dir", ENV_RUN_DIR },
	{ "checkpoint_dir", ENV_CHECKPOINT_DIR },
	{ "resume_from", ENV_RESUME_FROM },
	{ "attempt", ENV_ATTEMPT },
	{ "metrics", ENV_METRICS },
	{ NULL, NULL }
};

const char *
rundir_placeholder_env(const char *name)
{
	size_t	i;

	for (i = 0; rundir_placeholders[i].name != NULL; i++)
		if (strcmp(name, rundir_placeholders[i].name) == 0)
			return rundir_placeholders[i].env;
	return NULL;
}

const char *const rundir_status_reasons[] = { REASON_DONE, REASON_FAILED,
    REASON_NODE_FAIL, REASON_PREEMPTED, REASON_STARTUP_TIMEOUT, REASON_OOM,
    NULL };

int
rundir_status_reason_known(const char *reason)
{
	size_t	i;

	for (i = 0; rundir_status_reasons[i] != NULL; i++) {
		if (strcmp(reason, rundir_status_reasons[i]) == 0)
			return 1;
	}
	return 0;
}

static const char *const run_state_names[RUN_STATE_COUNT] = {
	"new", "queued", "starting", "running", REASON_DONE, REASON_FAILED,
	REASON_CANCELLED, "requeued",
};

const char *
run_state_name(enum run_state s)
{
	if ((unsigned)s >= RUN_STATE_COUNT)
		return "unknown";
	return run_state_names[s];
}

int
run_state_parse(const char *name, enum run_state *s)
{
	int	i;

	for (i = 0; i < RUN_STATE_COUNT; i++) {
		if (strcmp(run_state_names[i], name) == 0) {
			*s = (enum run_state)i;
			return 0;
		}
	}
	return CADRE_ERR_INVALID;
}

int
run_state_final(enum run_state s)
{
	return s == RUN_DONE || s == RUN_FAILED || s == RUN_CANCELLED;
}
