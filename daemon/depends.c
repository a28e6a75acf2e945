/*
 * `after:` (docs/daemon.md, "Dependencies"): an experiment's new runs wait
 * until every run of the experiments it names is done, and fail when one
 * of those can no longer be (a run failed or was cancelled).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "error.h"
#include "monitor.h"
#include "monitor_int.h"
#include "rundir.h"
#include "spec.h"
#include "state.h"
#include "xmalloc.h"

#define AFTER_DEPTH_MAX	16	/* a chain of after: longer is refused */
#define DEPS_MAX	17	/* after: (16) and trainer.init.from */

/* What s waits for: after:'s names, and trainer.init.from's (whose
 * checkpoint must exist first). */
static size_t
dep_names(const struct spec *s, const char **names)
{
	char *const	*after;
	size_t		 n, i;

	after = spec_get_list(s, SPEC_K_AFTER, &n);
	for (i = 0; i < n && i < DEPS_MAX - 1; i++)
		names[i] = after[i];
	if (spec_is_set(s, SPEC_K_INIT_FROM))
		names[i++] = spec_get_string(s, SPEC_K_INIT_FROM);
	return i;
}

int
mon_after_state(struct monitor *m, struct mexp *e, char *why, size_t len)
{
	const char	*after[DEPS_MAX];
	char		*id, msg[256];
	int64_t		 c[RUN_STATE_COUNT], total, bad;
	size_t		 n, i;
	int		 k;

	n = dep_names(e->spec, after);
	for (i = 0; i < n; i++) {
		if (state_find_experiment(m->st, after[i], &id, msg,
		    sizeof msg) != 0) {
			snprintf(why, len, "after: %s", msg);
			return -1;
		}
		if (strcmp(id, e->id) == 0) {
			snprintf(why, len, "after: '%s' is this experiment",
			    after[i]);
			free(id);
			return -1;
		}
		if (state_count_runs(m->st, id, c) != 0) {
			/* the database did not answer: ask again later */
			snprintf(why, len, "after %s: its state cannot be read "
			    "now", id);
			free(id);
			return 1;
		}
		for (k = 0, total = 0; k < RUN_STATE_COUNT; k++)
			total += c[k];
		bad = c[RUN_FAILED] + c[RUN_CANCELLED];
		if (bad > 0) {
			snprintf(why, len, "after: experiment %s (%s) has %lld "
			    "run%s failed or cancelled (cadre rerun %s, then "
			    "cadre rerun %s)", id, after[i], (long long)bad,
			    bad == 1 ? "" : "s", id, e->id);
			free(id);
			return -1;
		}
		if (c[RUN_DONE] < total) {
			/* no counts: the reason changes (an event) only when
			 * the experiment waited for does */
			snprintf(why, len, "waiting for experiment %s (%s) to "
			    "be done (after)", id, after[i]);
			free(id);
			return 1;
		}
		free(id);
	}
	return 0;
}

/* Whether the chain of after: from the experiment recorded as id (and
 * what it names, depth deep) leads back to target. */
static int
leads_to(struct monitor *m, const char *id, const char *target, int depth,
    char *path, size_t pathlen)
{
	struct state_experiment	 se;
	struct spec		*s = NULL;
	struct spec_plan	*p = NULL;
	const char		*after[DEPS_MAX];
	char			*next, msg[256], err[MONITOR_ERR_MAX];
	size_t			 n, i, plen = strlen(path);
	int			 found = 0;

	if (depth > AFTER_DEPTH_MAX)
		return 1;
	if (state_get_experiment(m->st, id, &se) != 0)
		return 0;
	if (mon_load_spec(se.spec_file, se.spec, strlen(se.spec), &s, &p, err,
	    sizeof err) == 0) {
		n = dep_names(s, after);
		for (i = 0; i < n && !found; i++) {
			if (state_find_experiment(m->st, after[i], &next, msg,
			    sizeof msg) != 0)
				continue;
			snprintf(path + plen, pathlen - plen, " -> %s", next);
			found = strcmp(next, target) == 0 ||
			    leads_to(m, next, target, depth + 1, path, pathlen);
			if (!found)
				path[plen] = '\0';
			free(next);
		}
	}
	spec_plan_free(p);
	spec_free(s);
	state_experiment_free(&se);
	return found;
}

int
mon_after_check(struct monitor *m, const struct spec *s, const char *id,
    char *err, size_t errlen)
{
	const char	*after[DEPS_MAX];
	char		*dep, msg[256], path[1024];
	size_t		 n, i;
	int		 rc = 0;

	n = dep_names(s, after);
	for (i = 0; i < n && rc == 0; i++) {
		if (strcmp(after[i], spec_get_string(s, SPEC_K_NAME)) == 0 ||
		    strcmp(after[i], id) == 0)
			return cadre_errf(err, errlen, CADRE_ERR_INVALID,
			    "%s: after: '%s' is this experiment itself",
			    spec_file(s), after[i]);
		if (state_find_experiment(m->st, after[i], &dep, msg,
		    sizeof msg) != 0)
			return cadre_errf(err, errlen, CADRE_ERR_INVALID,
			    "%s: after: %s (submit that experiment first)",
			    spec_file(s), msg);
		snprintf(path, sizeof path, "%s -> %s", id, dep);
		if (strcmp(dep, id) == 0 || leads_to(m, dep, id, 1, path,
		    sizeof path))
			rc = cadre_errf(err, errlen, CADRE_ERR_INVALID,
			    "%s: after: a cycle: %s (or a chain over %d long)",
			    spec_file(s), path, AFTER_DEPTH_MAX);
		free(dep);
	}
	return rc;
}

/* ---------------------------------------------------------------- init */

struct init_pick {
	const char	*config;	/* trainer.init.config; NULL: any */
	char		 configs[2][STATE_ID_MAX];	/* distinct ones seen */
	size_t		 nconfigs;
	char		*run_id, *run_dir;	/* the done run picked */
	int64_t		 repeat;
};

static int
pick_run(void *ctx, const struct state_run *sr)
{
	struct init_pick	*ip = ctx;
	size_t			 i;

	if (ip->config != NULL && strncmp(sr->config_id, ip->config,
	    strlen(ip->config)) != 0)
		return 0;
	for (i = 0; i < ip->nconfigs && strcmp(ip->configs[i],
	    sr->config_id) != 0; i++)
		;
	if (i == ip->nconfigs && ip->nconfigs < 2)
		snprintf(ip->configs[ip->nconfigs++], STATE_ID_MAX, "%s",
		    sr->config_id);
	else if (i == ip->nconfigs)
		ip->nconfigs++;
	/* the done run of the lowest repeat: the same choice every time */
	if (sr->state == RUN_DONE && (ip->run_id == NULL ||
	    sr->repeat < ip->repeat)) {
		free(ip->run_id);
		free(ip->run_dir);
		ip->run_id = xstrdup(sr->id);
		ip->run_dir = xstrdup(sr->run_dir);
		ip->repeat = sr->repeat;
	}
	return 0;
}

struct init_timed {
	double	 due;
	char	*path;
};

static int
pick_timed(void *ctx, const struct state_checkpoint *c)
{
	struct init_timed	*it = ctx;

	if (it->path == NULL && !c->removed && c->due_s > it->due - 0.5 &&
	    c->due_s < it->due + 0.5)
		it->path = xstrdup(c->path);
	return 0;
}

int
mon_init_path(struct monitor *m, struct mrun *r, char **path, char *err,
    size_t errlen)
{
	const struct spec	*s = r->exp->spec;
	const char		*from = spec_get_string(s, SPEC_K_INIT_FROM);
	const char		*at = spec_get_string(s, SPEC_K_INIT_AT);
	struct init_pick	 ip;
	struct init_timed	 it;
	char			*id = NULL, *p = NULL, msg[256];
	int64_t			 secs, step;
	int			 rc;

	*path = NULL;
	memset(&ip, 0, sizeof ip);
	memset(&it, 0, sizeof it);
	ip.config = spec_get_string(s, SPEC_K_INIT_CONFIG);
	if (state_find_experiment(m->st, from, &id, msg, sizeof msg) != 0)
		return cadre_errf(err, errlen, CADRE_ERR_NOT_FOUND,
		    "trainer.init.from: %s", msg);
	if ((rc = state_list_runs(m->st, id, pick_run, &ip)) != 0)
		goto out;
	rc = CADRE_ERR_NOT_FOUND;
	if (ip.config == NULL && ip.nconfigs > 1) {
		cadre_errf(err, errlen, rc, "trainer.init.from %s has %zu "
		    "configurations: name one with trainer.init.config (%s, "
		    "%s%s)", id, ip.nconfigs, ip.configs[0], ip.configs[1],
		    ip.nconfigs > 2 ? ", ..." : "");
		goto out;
	}
	if (ip.run_id == NULL) {
		cadre_errf(err, errlen, rc, "trainer.init.from %s: no done run%s%s "
		    "to start from", id, ip.config != NULL ? " of configuration " :
		    "", ip.config != NULL ? ip.config : "");
		goto out;
	}
	if (at == NULL || strcmp(at, "final") == 0) {
		/* the newest complete checkpoint: what the run ended with */
		if (rundir_latest_checkpoint(ip.run_dir, &p, &step) == 0)
			xasprintf(path, "%s/%s", ip.run_dir, p);
	} else if (duration_parse(at, &secs) == 0) {
		it.due = (double)secs;
		(void)state_list_checkpoints(m->st, ip.run_id, pick_timed, &it);
		if (it.path != NULL)
			xasprintf(path, "%s/%s", ip.run_dir, it.path);
	}
	if (*path == NULL) {
		cadre_errf(err, errlen, rc, "trainer.init.from %s: run %s has no "
		    "checkpoint at %s (cadre status %s lists its timed ones)",
		    id, ip.run_id, at != NULL ? at : "final", ip.run_id);
		goto out;
	}
	mon_event(m, r, "init", "starts from %s (experiment %s, run %s)",
	    *path, id, ip.run_id);
	rc = 0;
out:
	free(it.path);
	free(ip.run_id);
	free(ip.run_dir);
	free(id);
	free(p);
	return rc;
}
