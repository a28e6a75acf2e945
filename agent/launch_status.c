/* cadre-agent launch: how the run ended. The ranks' log/rank-R.json and
 * mpirun's wait status give the reason (docs/contracts.md) that status.json
 * carries to cadred, and launch's exit status. */
#include "config.h"

#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent.h"
#include "buf.h"
#include "error.h"
#include "json.h"
#include "launch.h"
#include "log.h"
#include "rundir.h"
#include "xmalloc.h"

void
launch_write_status(struct launch *l, json_t *st)
{
	char	*path = rundir_path(l->rundir, RUNDIR_STATUS);
	int	 error;

	json_object_set_new(st, "version", json_integer(STATUS_VERSION));
	if ((error = cjson_write_atomic(path, st, 0600)) != 0)
		log_error("%s: %s", path, cadre_strerror(error));
	free(path);
}

/* Reads log/rank-R.json of every rank into a JSON array; sets the first
 * rank that failed (a non-zero exit other than the trainer's 3 and 75)
 * and how many ranks left no (valid) status. */
static json_t *
collect_ranks(struct launch *l, int *failed_rank, const char **failed_node,
    int *missing)
{
	struct rank_status	 rs;
	json_t			*arr = json_array(), *entry;
	char			*rel, *path, msg[512];
	const char		*node;
	int			 r;

	*failed_rank = -1;
	*failed_node = NULL;
	*missing = 0;
	for (r = 0; r < l->nprocs; r++) {
		xasprintf(&rel, "%s/rank-%d.json", RUNDIR_LOG, r);
		path = rundir_path(l->rundir, rel);
		free(rel);
		entry = json_object();
		json_object_set_new(entry, "rank", json_integer(r));
		if (rank_status_load(path, &rs, msg, sizeof msg) == 0 &&
		    rs.rank == r) {
			json_object_set_new(entry, "node", json_string(rs.node));
			json_object_set_new(entry, "exit", rs.exited ?
			    json_integer(rs.exit_code) : json_null());
			if (rs.ended > 0)
				json_object_set_new(entry, "ended",
				    json_real(rs.ended));
			json_object_set_new(entry, "signal", rs.signal[0] ?
			    json_string(rs.signal) : json_null());
			if (rs.peak_rss_bytes >= 0)
				json_object_set_new(entry, MX_PEAK_RSS,
				    json_integer(rs.peak_rss_bytes));
			if (rs.oom)
				json_object_set_new(entry, REASON_OOM,
				    json_true());
			if (rs.message[0] != '\0')
				json_object_set_new(entry, STATUS_MESSAGE,
				    json_string(rs.message));
			if (rs.last_error[0] != '\0')
				json_object_set_new(entry, "last_error",
				    json_string(rs.last_error));
			/* exit 3 is cadre-train's "out of memory", not a
			 * program's */
			if (rs.exited && rs.exit_code != 0 &&
			    (rs.exit_code != TRAIN_EXIT_OOM || l->prog != NULL) &&
			    rs.exit_code != TRAIN_EXIT_PREEMPTED &&
			    *failed_rank < 0)
				*failed_rank = r;
		} else {
			json_object_set_new(entry, "exit", json_null());
			json_object_set_new(entry, "lost", json_true());
			(*missing)++;
		}
		free(path);
		json_array_append_new(arr, entry);
	}
	if (*failed_rank >= 0 &&
	    cjson_get_string(json_array_get(arr, (size_t)*failed_rank), "node",
	    &node) == 0)
		*failed_node = node;
	return arr;
}

/*
 * What the ranks' exits say beyond a plain failure (docs/contracts.md,
 * "End reasons"). The first rank (in rank order) of each kind: exit 3
 * (the trainer ran out of memory), exit 74 (its checkpoints could not be
 * written), killed by a signal other than SIGTERM,
 * killed by SIGTERM, exit 75 (the trainer checkpointed and stopped on a
 * signal); -1: none.
 */
struct rank_kinds {
	int	oom, io, killed, termed, stopped;
};

static void
rank_kinds(const json_t *ranks, int program, struct rank_kinds *k)
{
	const json_t	*e;
	const char	*sig;
	size_t		 i;
	int64_t		 code;

	k->oom = k->io = k->killed = k->termed = k->stopped = -1;
	json_array_foreach(ranks, i, e) {
		if (cjson_get_int(e, "exit", &code) == 0) {
			if (code == TRAIN_EXIT_OOM && !program && k->oom < 0)
				k->oom = (int)i;
			if (code == TRAIN_EXIT_IO && !program && k->io < 0)
				k->io = (int)i;
			if (code == TRAIN_EXIT_PREEMPTED && k->stopped < 0)
				k->stopped = (int)i;
		}
		/* the kernel's OOM killer (the cgroup's count grew) */
		if (json_is_true(json_object_get(e, REASON_OOM)) && k->oom < 0)
			k->oom = (int)i;
		if (json_is_integer(json_object_get(e, "signal")))
			sig = "";	/* a number: not TERM */
		else if (cjson_get_string(e, "signal", &sig) != 0)
			continue;
		if (strcmp(sig, "TERM") == 0) {
			if (k->termed < 0)
				k->termed = (int)i;
		} else if (k->killed < 0)
			k->killed = (int)i;
	}
}

/* Whether rank a (>= 0) of ranks ended before rank b, by their "ended"
 * times: a rank that exits with an error first is the cause, and ranks
 * that mpirun then kills (SIGKILL, when SIGTERM was not enough) are not. */
static int
ended_before(const json_t *ranks, int a, int b)
{
	const json_t	*ea, *eb;

	if (a < 0)
		return 0;
	ea = json_object_get(json_array_get(ranks, (size_t)a), "ended");
	eb = json_object_get(json_array_get(ranks, (size_t)b), "ended");
	return json_is_number(ea) && json_is_number(eb) &&
	    json_number_value(ea) < json_number_value(eb);
}

/* "rank R on NODE was killed by signal N (NAME)" for rank r of ranks. */
static json_t *
killed_message(const json_t *ranks, int r)
{
	const json_t	*e = json_array_get(ranks, (size_t)r);
	const json_t	*sv = json_object_get(e, "signal");
	const char	*node = "an unknown node", *name = NULL;
	char		 buf[32];
	int		 n = 0;

	(void)cjson_get_string(e, "node", &node);
	if (json_is_integer(sv))
		n = (int)json_integer_value(sv);
	else if (json_is_string(sv)) {
		n = ssh_signal_number(json_string_value(sv));
		snprintf(buf, sizeof buf, "SIG%s", json_string_value(sv));
		name = buf;
	}
	if (name == NULL && n > 0 && sigabbrev_np(n) != NULL) {
		snprintf(buf, sizeof buf, "SIG%s", sigabbrev_np(n));
		name = buf;
	}
	return json_sprintf("rank %d on %s was killed by signal %d (%s)", r,
	    node, n, name != NULL ? name : "unknown");
}

/* Sets failed_rank and failed_node of status st to rank r's. */
static void
set_failed(json_t *st, const json_t *ranks, int r)
{
	const char	*node;

	json_object_set_new(st, "failed_rank", json_integer(r));
	json_object_set_new(st, "failed_node", cjson_get_string(
	    json_array_get(ranks, (size_t)r), "node", &node) == 0 ?
	    json_string(node) : json_null());
}

/* The reason, resumable, the failed rank and the message from mpirun's
 * wait status and the ranks' exits, into st. Returns the exit status. */
int
launch_end(struct launch *l, json_t *st, int wstatus, int preempted,
    int use_srun)
{
	struct rank_kinds rk;
	struct cbuf	 lostnames;
	json_t		*lost = NULL, *ranks;
	const char	*failed_node, *rank_msg;
	int		 rc, failed_rank, missing, code;

	cbuf_init(&lostnames, 1 << 20);
	ranks = collect_ranks(l, &failed_rank, &failed_node, &missing);
	json_object_set_new(st, "ranks", ranks);
	json_object_set_new(st, "mpirun_exit", WIFEXITED(wstatus) ?
	    json_integer(WEXITSTATUS(wstatus)) : json_null());
	code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
	rank_kinds(ranks, l->prog != NULL, &rk);
	/*
	 * The end reason, root causes first (docs/contracts.md): when one
	 * rank dies, mpirun stops the others (SIGTERM, which the trainer
	 * answers with a checkpoint and exit 75), so their exits say less
	 * than the first one's.
	 */
	if (preempted) {
		rc = LAUNCH_EXIT_PREEMPTED;
		json_object_set_new(st, STATUS_REASON, json_string(REASON_PREEMPTED));
		json_object_set_new(st, "resumable", json_true());
		json_object_set_new(st, STATUS_MESSAGE,
		    json_string("stopped by a signal"));
	} else if (rk.oom >= 0) {
		rc = LAUNCH_EXIT_OOM;
		json_object_set_new(st, STATUS_REASON, json_string(REASON_OOM));
		json_object_set_new(st, "resumable", json_false());
		set_failed(st, ranks, rk.oom);
		rank_msg = NULL;
		(void)cjson_get_string(json_array_get(ranks, (size_t)rk.oom),
		    "last_error", &rank_msg);
		json_object_set_new(st, STATUS_MESSAGE, json_is_true(
		    json_object_get(json_array_get(ranks, (size_t)rk.oom),
		    REASON_OOM)) ? json_sprintf("rank %d was killed by the "
		    "kernel's OOM killer", rk.oom) : json_sprintf(
		    "rank %d ran out of memory (exit %d)%s%s", rk.oom,
		    TRAIN_EXIT_OOM, rank_msg != NULL ? ": " : "",
		    rank_msg != NULL ? rank_msg : ""));
		log_error("%s", json_string_value(json_object_get(st,
		    STATUS_MESSAGE)));
	} else if (rk.io >= 0) {
		/* the checkpoint before the failures is intact, but the
		 * disk that failed three writes would fail a resume too */
		rc = LAUNCH_EXIT_IO;
		json_object_set_new(st, STATUS_REASON, json_string(REASON_IO));
		json_object_set_new(st, "resumable", json_true());
		set_failed(st, ranks, rk.io);
		json_object_set_new(st, STATUS_MESSAGE, json_sprintf(
		    "rank %d could not write its checkpoints (exit %d): see the "
		    "error lines of metrics.jsonl", rk.io, TRAIN_EXIT_IO));
		log_error("%s", json_string_value(json_object_get(st,
		    STATUS_MESSAGE)));
	} else if ((rk.killed >= 0 && !ended_before(ranks, failed_rank,
	    rk.killed)) || (failed_rank < 0 && rk.termed >= 0)) {
		/* a signal launch did not send: the node, or someone on
		 * it, killed the rank */
		int	r = rk.killed >= 0 ? rk.killed : rk.termed;

		rc = LAUNCH_EXIT_NODE_FAIL;
		json_object_set_new(st, STATUS_REASON, json_string(REASON_NODE_FAIL));
		json_object_set_new(st, "resumable", json_true());
		set_failed(st, ranks, r);
		json_object_set_new(st, STATUS_MESSAGE, killed_message(ranks, r));
		log_error("%s", json_string_value(json_object_get(st,
		    STATUS_MESSAGE)));
	} else if (failed_rank < 0 && rk.stopped >= 0) {
		/* the trainer checkpointed and stopped on a signal that did
		 * not come through launch (the scheduler's, on the node) */
		rc = LAUNCH_EXIT_PREEMPTED;
		json_object_set_new(st, STATUS_REASON, json_string(REASON_PREEMPTED));
		json_object_set_new(st, "resumable", json_true());
		set_failed(st, ranks, rk.stopped);
		json_object_set_new(st, STATUS_MESSAGE, json_sprintf(
		    "rank %d stopped after a checkpoint (exit %d)", rk.stopped,
		    TRAIN_EXIT_PREEMPTED));
	} else if (failed_rank >= 0) {
		rc = LAUNCH_EXIT_FAILED;
		json_int_t ec = json_integer_value(json_object_get(
		    json_array_get(ranks, (size_t)failed_rank), "exit"));
		log_error("rank %d on %s exited with status %lld", failed_rank,
		    failed_node ? failed_node : "an unknown node",
		    (long long)ec);
		json_object_set_new(st, STATUS_REASON, json_string(REASON_FAILED));
		json_object_set_new(st, "resumable", json_false());
		json_object_set_new(st, "failed_rank",
		    json_integer(failed_rank));
		json_object_set_new(st, "failed_node",
		    failed_node ? json_string(failed_node) : json_null());
		rank_msg = NULL;
		if (cjson_get_string(json_array_get(ranks,
		    (size_t)failed_rank), STATUS_MESSAGE, &rank_msg) != 0)
			(void)cjson_get_string(json_array_get(ranks,
			    (size_t)failed_rank), "last_error", &rank_msg);
		json_object_set_new(st, STATUS_MESSAGE, json_sprintf(
		    "rank %d on %s exited with status %lld%s%s%s", failed_rank,
		    failed_node ? failed_node : "an unknown node",
		    (long long)ec, ec == PROGRAM_EXIT_NOT_FOUND ?
		    " (command not found)" : "", rank_msg != NULL ? ": " : "",
		    rank_msg != NULL ? rank_msg : ""));
	} else if (code != 0 && !use_srun &&
	    launch_find_lost(l, &lost, &lostnames) > 0) {
		rc = LAUNCH_EXIT_NODE_FAIL;
		log_error("node_fail: the agent of %s no longer answers",
		    lostnames.data);
		json_object_set_new(st, STATUS_REASON, json_string(REASON_NODE_FAIL));
		json_object_set_new(st, "resumable", json_true());
		json_object_set_new(st, "lost", lost);
		lost = NULL;
		json_object_set_new(st, STATUS_MESSAGE, json_sprintf(
		    "lost node(s): %s", lostnames.data));
	} else if (missing > 0 || code != 0) {
		rc = missing > 0 ? LAUNCH_EXIT_NODE_FAIL : LAUNCH_EXIT_FAILED;
		log_error("mpirun %s %d; %d of %d ranks left no status",
		    WIFEXITED(wstatus) ? "exited with status" :
		    "was killed by signal", WIFEXITED(wstatus) ?
		    WEXITSTATUS(wstatus) : WTERMSIG(wstatus), missing,
		    l->nprocs);
		json_object_set_new(st, STATUS_REASON, json_string(missing > 0 ?
		    REASON_NODE_FAIL : REASON_FAILED));
		json_object_set_new(st, "resumable", missing > 0 ?
		    json_true() : json_false());
		json_object_set_new(st, STATUS_MESSAGE, json_sprintf(
		    "mpirun exited with status %d; %d ranks left no status",
		    code, missing));
	} else {
		rc = LAUNCH_EXIT_DONE;
		json_object_set_new(st, STATUS_REASON, json_string(REASON_DONE));
		json_object_set_new(st, "resumable", json_false());
	}
	json_decref(lost);
	cbuf_free(&lostnames);
	return rc;
}
