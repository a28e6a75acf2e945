/*
 * `after:` (docs/daemon.md, "Dependencies"): an experiment's new runs wait
 * until every run of the experiments it names is done, and fail when one
 * of those can no longer be (a run failed or was cancelled).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "monitor.h"
#include "monitor_int.h"
#include "spec.h"
#include "state.h"
#include "xmalloc.h"

#define AFTER_DEPTH_MAX	16	/* a chain of after: longer is refused */

int
mon_after_state(struct monitor *m, struct mexp *e, char *why, size_t len)
{
	char *const	*after;
	char		*id, msg[256];
	int64_t		 c[RUN_STATE_COUNT], total, bad;
	size_t		 n, i;
	int		 k;

	after = spec_get_list(e->spec, SPEC_K_AFTER, &n);
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
	char *const		*after;
	char			*next, msg[256], err[MONITOR_ERR_MAX];
	size_t			 n, i, plen = strlen(path);
	int			 found = 0;

	if (depth > AFTER_DEPTH_MAX)
		return 1;
	if (state_get_experiment(m->st, id, &se) != 0)
		return 0;
	if (mon_load_spec(se.spec_file, se.spec, strlen(se.spec), &s, &p, err,
	    sizeof err) == 0) {
		after = spec_get_list(s, SPEC_K_AFTER, &n);
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
	char *const	*after;
	char		*dep, msg[256], path[1024];
	size_t		 n, i;
	int		 rc = 0;

	after = spec_get_list(s, SPEC_K_AFTER, &n);
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
