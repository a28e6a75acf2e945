/*
 * Test-only: records a fixture experiment in a state database as cadred
 * would (tests/daemon/report-*.sh), without cadred.
 *
 *   reportfix add STATE_DIR EXP_ID SPEC_FILE
 *	records the experiment (name from the spec) and its planned runs with
 *	run dirs STATE_DIR/runs/RUN_ID (created); prints one line per run:
 *	RUN_ID CONFIG_INDEX REPEAT NODES BATCH RUN_DIR
 *   reportfix state STATE_DIR RUN_ID STATE [REASON]
 *	sets a run's state (done, failed, cancelled, running, ...)
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "diag.h"
#include "error.h"
#include "log.h"
#include "spec.h"
#include "state.h"
#include "xmalloc.h"

static int
add(const char *dir, const char *exp, const char *file)
{
	struct diags		 d;
	struct spec		*s = NULL;
	struct spec_plan	*p = NULL;
	const struct spec_run	*r;
	struct state		*st = NULL;
	struct cbuf		 text;
	char			*db = NULL, *rd = NULL, *runs = NULL;
	size_t			 i;
	int			 rc = 1;

	diags_init(&d);
	cbuf_init(&text, SPEC_MAX_BYTES);
	if (cbuf_read_file(&text, file) != 0 || spec_parse(file, text.data,
	    text.len, &d, &s) != 0 || spec_expand(s, &d, &p) != 0) {
		diags_print(&d, stderr);
		fprintf(stderr, "reportfix: %s: cannot load\n", file);
		goto out;
	}
	xasprintf(&db, "%s/cadre.db", dir);
	xasprintf(&runs, "%s/runs", dir);
	if (mkdir(runs, 0700) != 0 && errno != EEXIST)
		fatal("mkdir %s", runs);
	if (state_open(db, &st) != 0 || state_add_experiment(st, exp,
	    spec_get_string(s, SPEC_K_NAME), file, text.data, "local",
	    NULL) != 0)
		goto out;
	for (i = 0; i < spec_plan_nruns(p); i++) {
		r = spec_plan_run(p, i);
		xasprintf(&rd, "%s/%s", runs, spec_run_id(r));
		if (mkdir(rd, 0700) != 0 && errno != EEXIST)
			fatal("mkdir %s", rd);
		if (state_add_run(st, exp, spec_run_id(r),
		    spec_run_config_id(r), spec_run_repeat(r), rd, NULL) != 0)
			goto out;
		printf("%s %zu %u %" PRId64 " %" PRId64 " %s\n", spec_run_id(r),
		    spec_run_config(r), spec_run_repeat(r),
		    spec_run_int(r, SPEC_K_RES_NODES),
		    spec_run_int(r, SPEC_K_BATCH_SIZE), rd);
		free(rd);
		rd = NULL;
	}
	rc = 0;

 out:
	free(rd);
	free(runs);
	free(db);
	state_close(st);
	spec_plan_free(p);
	spec_free(s);
	cbuf_free(&text);
	diags_free(&d);
	return rc;
}

static int
set_state(const char *dir, const char *run, const char *name,
    const char *reason)
{
	struct state	*st = NULL;
	enum run_state	 rs;
	char		*db = NULL;
	int		 rc = 1;

	if (run_state_parse(name, &rs) != 0) {
		fprintf(stderr, "reportfix: unknown state '%s'\n", name);
		return 1;
	}
	xasprintf(&db, "%s/cadre.db", dir);
	if (state_open(db, &st) == 0 && state_set_run_state(st, run, rs,
	    reason) == 0)
		rc = 0;
	state_close(st);
	free(db);
	return rc;
}

int
main(int argc, char **argv)
{
	log_init("reportfix", LOG_LEVEL_WARN, LOG_TARGET_STDERR);
	if (argc == 5 && strcmp(argv[1], "add") == 0)
		return add(argv[2], argv[3], argv[4]);
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "state") == 0)
		return set_state(argv[2], argv[3], argv[4],
		    argc == 6 ? argv[5] : "");
	fprintf(stderr, "usage: reportfix add STATE_DIR EXP_ID SPEC_FILE\n"
	    "       reportfix state STATE_DIR RUN_ID STATE [REASON]\n");
	return 2;
}
