/* cadre-agent launch: the readiness wait. Every node's agent must have
 * published agents/NODE.json and answer a handshake with its pinned host
 * key and the run key, probed in rounds with backoff instead of a fixed
 * sleep. */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <libssh/libssh.h>

#include "agent.h"
#include "buf.h"
#include "error.h"
#include "launch.h"
#include "log.h"
#include "rundir.h"
#include "xmalloc.h"

#define LAUNCH_PROBE_THREADS	32
#define LAUNCH_PROBE_MS		2000	/* one handshake attempt at most */
#define LAUNCH_BACKOFF_MIN	0.02	/* seconds between rounds */
#define LAUNCH_BACKOFF_MAX	0.5

/* One probe: published? handshake with the pinned key and the run key? */
static void
probe_node(struct launch *l, struct lnode *nd)
{
	ssh_session	 s = NULL;
	char		*rel, *path, msg[512];
	double		 left;
	long		 ms;

	xasprintf(&rel, "%s/%s.json", RUNDIR_AGENTS, nd->name);
	path = rundir_path(l->rundir, rel);
	free(rel);
	if (agent_info_load(path, &nd->info, msg, sizeof msg) != 0) {
		snprintf(nd->why, sizeof nd->why, "%s", msg);
		free(path);
		return;
	}
	free(path);
	left = l->deadline - now_mono();
	ms = left * 1000 < LAUNCH_PROBE_MS ? (long)(left * 1000) :
	    LAUNCH_PROBE_MS;
	if (ms < 50)
		ms = 50;
	if (agent_client_connect(&nd->info, l->keyfile, ms, &s, msg,
	    sizeof msg) != 0) {
		snprintf(nd->why, sizeof nd->why, "%s", msg);
		return;
	}
	ssh_disconnect(s);
	ssh_free(s);
	nd->ready = 1;
}

static void *
probe_thread(void *arg)
{
	struct launch	*l = arg;
	size_t		 i;

	for (;;) {
		pthread_mutex_lock(&l->mu);
		i = l->next < l->npending ? l->pending[l->next++] : SIZE_MAX;
		pthread_mutex_unlock(&l->mu);
		if (i == SIZE_MAX || now_mono() > l->deadline)
			return NULL;
		probe_node(l, &l->nodes[i]);
	}
}

/* Probes the nodes listed in l->pending, LAUNCH_PROBE_THREADS at a time. */
static void
probe_round(struct launch *l)
{
	static int	warned;
	pthread_t	th[LAUNCH_PROBE_THREADS];
	size_t		i, nth;
	int		rc = 0;

	l->next = 0;
	nth = l->npending < LAUNCH_PROBE_THREADS ? l->npending :
	    LAUNCH_PROBE_THREADS;
	for (i = 0; i < nth; i++) {
		if ((rc = pthread_create(&th[i], NULL, probe_thread, l)) != 0)
			break;
	}
	/* Threads are short when the node's processes (the job's among
	 * them) use up its limits: fewer probe in parallel, and with none
	 * this thread probes them one by one. */
	if (i < nth && !warned) {
		log_warn("pthread_create: %s: probing with %zu thread%s",
		    strerror(rc), i > 0 ? i : 1, i > 1 ? "s" : "");
		warned = 1;
	}
	nth = i;
	if (nth == 0)
		(void)probe_thread(l);
	for (i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
}

/* After a failed run: which agents no longer answer (lost nodes). Their
 * names go into a JSON array; the count is returned. */
size_t
launch_find_lost(struct launch *l, json_t **lostp, struct cbuf *names)
{
	size_t	i, nlost = 0;

	*lostp = json_array();
	l->npending = 0;
	for (i = 0; i < l->n; i++) {
		l->nodes[i].ready = 0;
		l->nodes[i].why[0] = '\0';
		l->pending[l->npending++] = i;
	}
	l->deadline = now_mono() + LAUNCH_PROBE_MS / 1000.0;
	probe_round(l);
	for (i = 0; i < l->n; i++) {
		if (l->nodes[i].ready)
			continue;
		nlost++;
		json_array_append_new(*lostp, json_pack("{s:s, s:s}", "node",
		    l->nodes[i].name, "why", l->nodes[i].why));
		cbuf_addf(names, "%s%s", names->len ? ", " : "",
		    l->nodes[i].name);
	}
	return nlost;
}

/* Rounds of probes over the nodes not yet ready, until all are or the
 * deadline passes. 0 or CADRE_ERR_TIMEOUT. */
int
launch_wait_ready(struct launch *l)
{
	size_t		i;
	double		backoff = LAUNCH_BACKOFF_MIN, left;

	if (l->pending == NULL)
		l->pending = xcalloc(l->n, sizeof *l->pending);
	for (;;) {
		l->npending = 0;
		for (i = 0; i < l->n; i++)
			if (!l->nodes[i].ready)
				l->pending[l->npending++] = i;
		if (l->npending == 0)
			return 0;
		if (launch_wait_signal(l, 0) != 0)
			return CADRE_ERR_CANCELLED;
		if (now_mono() >= l->deadline)
			return CADRE_ERR_TIMEOUT;
		probe_round(l);
		for (i = 0; i < l->n && l->nodes[i].ready; i++)
			;
		if (i == l->n)
			return 0;
		left = l->deadline - now_mono();
		if (left <= 0)
			return CADRE_ERR_TIMEOUT;
		if (launch_wait_signal(l, backoff < left ? backoff : left) != 0)
			return CADRE_ERR_CANCELLED;
		backoff = backoff * 2 < LAUNCH_BACKOFF_MAX ? backoff * 2 :
		    LAUNCH_BACKOFF_MAX;
	}
}


/* The wait ended without every agent ready (error: CADRE_ERR_CANCELLED or
 * CADRE_ERR_TIMEOUT): the log names each missing node and why, and
 * status.json says preempted or startup_timeout. Returns the exit status. */
int
launch_not_ready(struct launch *l, json_t *st, int error, int wait_only)
{
	json_t		*arr;
	struct cbuf	 why;
	size_t		 i;

	if (error == CADRE_ERR_CANCELLED) {
		log_notice("signal %d while waiting for the agents: stopping",
		    l->stop_sig);
		json_object_set_new(st, STATUS_REASON, json_string(REASON_PREEMPTED));
		json_object_set_new(st, "resumable", json_true());
		json_object_set_new(st, STATUS_MESSAGE, json_string(
		    "stopped by a signal while waiting for the agents"));
		json_object_set_new(st, "exit_status",
		    json_integer(LAUNCH_EXIT_PREEMPTED));
		if (!wait_only)
			launch_write_status(l, st);
		return LAUNCH_EXIT_PREEMPTED;
	}
	if (wait_only) {
		for (i = 0; i < l->n; i++)
			if (!l->nodes[i].ready)
				log_error("%s: not ready: %s", l->nodes[i].name,
				    l->nodes[i].why);
		return LAUNCH_EXIT_STARTUP_TIMEOUT;
	}
	arr = json_array();
	cbuf_init(&why, 1 << 20);
	for (i = 0; i < l->n; i++) {
		if (l->nodes[i].ready)
			continue;
		json_array_append_new(arr, json_pack("{s:s, s:s}",
		    "node", l->nodes[i].name, "why", l->nodes[i].why));
		cbuf_addf(&why, "%s%s", why.len ? ", " : "",
		    l->nodes[i].name);
		log_error("%s: not ready: %s", l->nodes[i].name,
		    l->nodes[i].why[0] ? l->nodes[i].why :
		    "not probed before the deadline");
	}
	log_error("startup_timeout: %zu of %zu agents not ready after "
	    "%llds: %s", json_array_size(arr), l->n,
	    (long long)l->startup_timeout, why.data ? why.data : "");
	json_object_set_new(st, STATUS_REASON, json_string(REASON_STARTUP_TIMEOUT));
	json_object_set_new(st, "resumable", json_true());
	json_object_set_new(st, "missing", arr);
	json_object_set_new(st, STATUS_MESSAGE, json_sprintf(
	    "agents not ready after %llds: %s",
	    (long long)l->startup_timeout, why.data ? why.data : ""));
	cbuf_free(&why);
	json_object_set_new(st, "exit_status",
	    json_integer(LAUNCH_EXIT_STARTUP_TIMEOUT));
	launch_write_status(l, st);
	return LAUNCH_EXIT_STARTUP_TIMEOUT;
}
