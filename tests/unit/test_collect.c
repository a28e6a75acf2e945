/* daemon/collect.c: meta.json and eval.jsonl parsing (bad input
 * included), recording a run dir's timed checkpoints with their checksums
 * verified, the eval figures, a schema-1 database migrated, thinning. */
#include "config.h"

#include <sys/stat.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "collect.h"
#include "error.h"
#include "log.h"
#include "rundir_read.h"
#include "sha256.h"
#include "state.h"
#include "xmalloc.h"
#include "unit.h"

static char	dir[4096];

static void
setup(void)
{
	unit_mkdtemp(dir, sizeof dir, "test_collect");
}

static void
teardown(void)
{
	unit_rmtree(dir);
}

static const char *zeros =
    "0000000000000000000000000000000000000000000000000000000000000000";

START_TEST(test_parse_meta)
{
	struct collect_meta	 m;
	char			 msg[512], *big;
	static const char *const bad[] = {
		"",
		"[1]",
		"{\"step\": 1}",
		"{\"step\": -1, \"elapsed_s\": 1, \"samples\": 2, \"files\": {}}",
		"{\"step\": 1, \"elapsed_s\": 1, \"samples\": 2}",
		"{\"step\": 1, \"elapsed_s\": 1, \"samples\": 2, \"files\": "
		    "{\"../x\": \"0000000000000000000000000000000000000000000000"
		    "000000000000000000\"}}",
		"{\"step\": 1, \"elapsed_s\": 1, \"samples\": 2, \"files\": "
		    "{\"a\": \"00\"}}",
		"{\"step\": 1, \"elapsed_s\": 1, \"samples\": 2, \"due_s\": -5, "
		    "\"files\": {\"a\": \"0000000000000000000000000000000000000"
		    "000000000000000000000000000\"}}",
		"{\"step\": 1, \"elapsed_s\": 1, \"samples\": 2, \"due_s\": \"1\", "
		    "\"files\": {\"a\": \"0000000000000000000000000000000000000"
		    "000000000000000000000000000\"}}",
		"{\"step\": 1, \"elapsed_s\": 1e999, \"samples\": 2}",
		"{\"step\": 1,",
	};
	size_t	i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		msg[0] = '\0';
		ck_assert_msg(collect_parse_meta(bad[i], strlen(bad[i]), &m, msg,
		    sizeof msg) != 0, "accepted: %s", bad[i]);
		ck_assert_msg(msg[0] != '\0', "no message for %s", bad[i]);
	}
	xasprintf(&big, "{\"step\": 4, \"elapsed_s\": 61.5, \"samples\": 32, "
	    "\"due_s\": 60, \"files\": {\"model.safetensors\": \"%s\"}}", zeros);
	ck_assert_int_eq(collect_parse_meta(big, strlen(big), &m, msg,
	    sizeof msg), 0);
	ck_assert_int_eq(m.step, 4);
	ck_assert(m.due_s == 60 && m.elapsed_s == 61.5);
	ck_assert_int_eq(m.samples, 32);
	ck_assert_int_eq(m.nfiles, 1);
	ck_assert_str_eq(m.file[0], "model.safetensors");
	free(big);
	/* no due_s: a checkpoint, not a timed one */
	xasprintf(&big, "{\"step\": 4, \"elapsed_s\": 61.5, \"samples\": 32, "
	    "\"files\": {\"a\": \"%s\"}}", zeros);
	ck_assert_int_eq(collect_parse_meta(big, strlen(big), &m, msg,
	    sizeof msg), 0);
	ck_assert(m.due_s < 0);
	free(big);
	/* the size bound */
	big = xmalloc(COLLECT_META_MAX + 2);
	memset(big, ' ', COLLECT_META_MAX + 1);
	big[COLLECT_META_MAX + 1] = '\0';
	ck_assert_int_eq(collect_parse_meta(big, COLLECT_META_MAX + 1, &m, msg,
	    sizeof msg), CADRE_ERR_TOO_LARGE);
	free(big);
}
END_TEST

START_TEST(test_parse_eval)
{
	struct rundir_eval	 e;
	char			 msg[512];
	static const char *const bad[] = {
		"", "x", "[]", "{}", "{\"step\": -1, \"loss\": 1, \"accuracy\": 0}",
		"{\"step\": 1, \"loss\": 1}", "{\"step\": 1, \"loss\": 1, "
		"\"accuracy\": 1.5}", "{\"step\": 1, \"loss\": null, "
		"\"accuracy\": 0.5}", "{\"step\": \"1\", \"loss\": 1, "
		"\"accuracy\": 0.5}",
	};
	const char	*good = "{\"step\": 40, \"due_s\": 60, \"loss\": 5.25, "
	    "\"accuracy\": 0.125, \"task\": \"pretrain\"}";
	const char	*failed = "{\"step\": 80, \"error\": \"checksum\"}";
	size_t		 i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		msg[0] = '\0';
		ck_assert_msg(rundir_parse_eval(bad[i], strlen(bad[i]), &e,
		    msg, sizeof msg) != 0, "accepted %s", bad[i]);
		ck_assert_ptr_null(e.error);
		ck_assert(msg[0] != '\0');
	}
	ck_assert_int_eq(rundir_parse_eval(good, strlen(good), &e, msg,
	    sizeof msg), 0);
	ck_assert_int_eq(e.step, 40);
	ck_assert(e.loss == 5.25 && e.accuracy == 0.125);
	ck_assert_ptr_null(e.error);
	ck_assert_int_eq(rundir_parse_eval(failed, strlen(failed), &e, msg,
	    sizeof msg), 0);
	ck_assert_int_eq(e.step, 80);
	ck_assert_str_eq(e.error, "checksum");
	free(e.error);
}
END_TEST

/* RUN/checkpoints/step-N with one file and its true (or a wrong) sum. */
static void
make_ckpt(const char *run, int64_t step, double due, int wrong_sum)
{
	char		*d, *p, *meta, hex[65];
	uint64_t	 bytes;

	xasprintf(&d, "%s/checkpoints/step-%lld", run, (long long)step);
	ck_assert_int_eq(mkdir(d, 0755), 0);
	xasprintf(&p, "%s/model.safetensors", d);
	unit_write_file(p, "weights of this step");
	ck_assert_int_eq(sha256_file(p, hex, &bytes), 0);
	if (wrong_sum)
		hex[0] = hex[0] == 'a' ? 'b' : 'a';
	free(p);
	if (due > 0)
		xasprintf(&meta, "{\"step\": %lld, \"elapsed_s\": %g, \"samples\": "
		    "%lld, \"due_s\": %g, \"files\": {\"model.safetensors\": "
		    "\"%s\"}}\n", (long long)step, due + 0.25, (long long)step * 8,
		    due, hex);
	else
		xasprintf(&meta, "{\"step\": %lld, \"elapsed_s\": 1, \"samples\": "
		    "1, \"files\": {\"model.safetensors\": \"%s\"}}\n",
		    (long long)step, hex);
	xasprintf(&p, "%s/meta.json", d);
	unit_write_file(p, meta);
	free(p);
	free(meta);
	free(d);
}

struct seen {
	int64_t	step[8];
	double	due[8], loss[8], acc[8];
	int	evaluated[8], error[8], removed[8];
	size_t	n;
};

static int
seen_one(void *ctx, const struct state_checkpoint *c)
{
	struct seen	*s = ctx;

	ck_assert_uint_lt(s->n, 8);
	s->step[s->n] = c->step;
	s->due[s->n] = c->due_s;
	s->evaluated[s->n] = c->evaluated;
	s->loss[s->n] = c->eval_loss;
	s->acc[s->n] = c->eval_accuracy;
	s->error[s->n] = c->eval_error != NULL;
	s->removed[s->n] = c->removed;
	s->n++;
	return 0;
}

START_TEST(test_collect_run)
{
	struct state	*st = NULL;
	struct seen	 s;
	char		*db, *run, *p;
	int		 added = -1, removed = -1;
	char		*at[] = { (char *)"120" };

	xasprintf(&db, "%s/cadre.db", dir);
	xasprintf(&run, "%s/runs/r1", dir);
	xasprintf(&p, "%s/runs", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	ck_assert_int_eq(mkdir(run, 0755), 0);
	free(p);
	xasprintf(&p, "%s/checkpoints", run);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	free(p);
	ck_assert_int_eq(state_open(db, &st), 0);
	ck_assert_int_eq(state_add_experiment(st, "e1", "exp", "s.yaml",
	    "version: 1\n", "local", NULL), 0);
	ck_assert_int_eq(state_add_run(st, "e1", "r1", "c1", 1, run, NULL), 0);

	/* no checkpoints dir content yet: nothing, no error */
	ck_assert_int_eq(collect_run(st, "r1", run, 1, &added), 0);
	ck_assert_int_eq(added, 0);
	make_ckpt(run, 40, 60, 0);
	make_ckpt(run, 80, 120, 0);
	make_ckpt(run, 90, 0, 0);	/* a signal checkpoint: not timed */
	make_ckpt(run, 130, 180, 1);	/* does not match its sum */
	ck_assert_int_eq(collect_run(st, "r1", run, 2, &added), 0);
	ck_assert_int_eq(added, 2);
	/* again: nothing new */
	ck_assert_int_eq(collect_run(st, "r1", run, 2, &added), 0);
	ck_assert_int_eq(added, 0);

	xasprintf(&p, "%s/eval.jsonl", run);
	unit_write_file(p, "{\"step\": 40, \"loss\": 6.5, \"accuracy\": 0.25}\n"
	    "not json\n"
	    "{\"step\": 80, \"error\": \"bad checksum\"}\n"
	    "{\"step\": 999, \"loss\": 1, \"accuracy\": 1}\n"
	    "{\"step\": 80, \"loss\": 1");	/* being written */
	free(p);
	ck_assert_int_eq(collect_run(st, "r1", run, 2, &added), 0);
	memset(&s, 0, sizeof s);
	ck_assert_int_eq(state_list_checkpoints(st, "r1", seen_one, &s), 0);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_int_eq(s.step[0], 40);
	ck_assert(s.due[0] == 60 && s.evaluated[0] && s.loss[0] == 6.5 &&
	    s.acc[0] == 0.25);
	ck_assert_int_eq(s.step[1], 80);
	ck_assert(s.due[1] == 120 && !s.evaluated[1] && s.error[1]);

	/* thinning to [120]: step-40 goes, step-80 stays */
	xasprintf(&p, "%s/checkpoints/latest", run);
	unit_write_file(p, "step-90\n");
	free(p);
	ck_assert_int_eq(collect_thin(st, "r1", run, at, 1, &removed), 0);
	ck_assert_int_eq(removed, 1);
	xasprintf(&p, "%s/checkpoints/step-40", run);
	ck_assert_int_ne(access(p, F_OK), 0);
	free(p);
	xasprintf(&p, "%s/checkpoints/step-80/model.safetensors", run);
	ck_assert_int_eq(access(p, F_OK), 0);
	free(p);
	memset(&s, 0, sizeof s);
	ck_assert_int_eq(state_list_checkpoints(st, "r1", seen_one, &s), 0);
	ck_assert(s.removed[0] && !s.removed[1]);
	/* a removed one is not recorded again */
	ck_assert_int_eq(collect_run(st, "r1", run, 2, &added), 0);
	ck_assert_int_eq(added, 0);
	state_close(st);
	free(run);
	free(db);
}
END_TEST

/* A database of schema 1 (before checkpoints and reruns) gets the table
 * and the column. */
START_TEST(test_migrate_v1)
{
	struct state	*st = NULL;
	struct state_checkpoint c = { 0 };
	sqlite3		*raw;
	char		*db;
	int64_t		 v = 0;
	int		 ins = 0;

	xasprintf(&db, "%s/old.db", dir);
	ck_assert_int_eq(state_open(db, &st), 0);
	state_close(st);
	ck_assert_int_eq(sqlite3_open(db, &raw), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(raw, "DROP TABLE checkpoints; "
	    "ALTER TABLE runs DROP COLUMN rerun_base; "
	    "PRAGMA user_version = 1", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(raw);
	ck_assert_int_eq(state_open(db, &st), 0);
	ck_assert_int_eq(state_schema_version(st, &v), 0);
	ck_assert_int_eq(v, STATE_SCHEMA_VERSION);
	ck_assert_int_eq(state_add_experiment(st, "e", "n", "f", "t", "local",
	    NULL), 0);
	ck_assert_int_eq(state_add_run(st, "e", "r", "c", 1, "/x", NULL), 0);
	c.step = 1;
	c.due_s = 60;
	c.path = (char *)"checkpoints/step-1";
	ck_assert_int_eq(state_add_checkpoint(st, "r", &c, &ins), 0);
	ck_assert_int_eq(ins, 1);
	ck_assert_int_eq(state_add_checkpoint(st, "r", &c, &ins), 0);
	ck_assert_int_eq(ins, 0);
	ck_assert_int_eq(state_set_checkpoint_eval(st, "r", 2, 1, 0.5, NULL),
	    CADRE_ERR_NOT_FOUND);
	state_close(st);
	free(db);
}
END_TEST

static Suite *
collect_suite(void)
{
	Suite	*s = suite_create("collect");
	TCase	*tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_parse_meta);
	tcase_add_test(tc, test_parse_eval);
	tcase_add_test(tc, test_collect_run);
	tcase_add_test(tc, test_migrate_v1);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	log_init("test_collect", LOG_LEVEL_ERROR, LOG_TARGET_STDERR);
	return unit_run(collect_suite());
}
