/* An experiment's report from cadred's database: its stored spec and
 * every run it recorded. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diag.h"
#include "error.h"
#include "report.h"
#include "state.h"

struct load_ctx {
	struct report	*r;
};

static int
load_run(void *ctx, const struct state_run *sr)
{
	struct load_ctx	*lc = ctx;

	return report_add_run(lc->r, sr->id, sr->run_dir, sr->state,
	    sr->reason, sr->attempts);
}

int
load_report(struct state *st, const char *exp_id, struct diags *d,
    struct report **out)
{
	struct state_experiment	 e;
	struct report		*r = NULL;
	struct load_ctx		 lc;
	int			 rc;

	*out = NULL;
	memset(&e, 0, sizeof e);
	if ((rc = state_get_experiment(st, exp_id, &e)) != 0)
		return rc;
	if ((rc = report_new(e.id, e.name, e.spec_file, e.spec != NULL ?
	    e.spec : "", d, &r)) != 0)
		goto out;
	lc.r = r;
	if ((rc = state_list_runs(st, exp_id, load_run, &lc)) != 0)
		goto out;
	report_finish(r);
	*out = r;
	r = NULL;

 out:
	report_free(r);
	state_experiment_free(&e);
	return rc;
}
