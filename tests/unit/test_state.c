#include "config.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "error.h"
#include "log.h"
#include "state.h"
#include "xmalloc.h"
#include "unit.h"

static char	dir[4096];
static char	*db;

static void
setup(void)
{
	unit_mkdtemp(dir, sizeof dir, "test_state");
	xasprintf(&db, "%s/state.db", dir);
}

static void
teardown(void)
{
	unit_rmtree(dir);
	free(db);
}

static struct state *
open_db(void)
{
	struct state	*st = NULL;

	ck_assert_int_eq(state_open(db, &st), 0);
	ck_assert_ptr_nonnull(st);
	return st;
}

static void
add_exp(struct state *st, const char *id)
{
	ck_assert_int_eq(state_add_experiment(st, id, "exp", "spec.yaml",
	    "version: 1\n", "slurm", NULL), 0);
}

static void
add_runs(struct state *st, const char *exp, int from, int to)
{
	char	id[16];
	int	i, ins;

	for (i = from; i < to; i++) {
		snprintf(id, sizeof id, "%012x", i);
		ck_assert_int_eq(state_add_run(st, exp, id, "cfg", 1, "/runs/x",
		    &ins), 0);
	}
}

static int64_t
nruns(struct state *st)
{
	int64_t	c[RUN_STATE_COUNT], t = 0;
	int	i;

	ck_assert_int_eq(state_count_runs(st, NULL, c), 0);
	for (i = 0; i < RUN_STATE_COUNT; i++)
		t += c[i];
	return t;
}

START_TEST(test_open_schema)
{
	struct state	*st = open_db();
	struct stat	 sb;
	int64_t		 v;
	sqlite3		*raw;
	sqlite3_stmt	*stmt;

	ck_assert_int_eq(state_schema_version(st, &v), 0);
	ck_assert_int_eq(v, STATE_SCHEMA_VERSION);
	state_close(st);
	ck_assert_int_eq(stat(db, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0600);
	/* reopening keeps it; the journal is WAL */
	st = open_db();
	state_close(st);
	ck_assert_int_eq(sqlite3_open(db, &raw), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1,
	    &stmt, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(stmt), SQLITE_ROW);
	ck_assert_str_eq((const char *)sqlite3_column_text(stmt, 0), "wal");
	sqlite3_finalize(stmt);
	/* a newer schema is refused */
	ck_assert_int_eq(sqlite3_exec(raw, "PRAGMA user_version = 99", NULL,
	    NULL, NULL), SQLITE_OK);
	sqlite3_close(raw);
	st = NULL;
	ck_assert_int_eq(state_open(db, &st), CADRE_ERR_VERSION);
	ck_assert_ptr_null(st);
}
END_TEST

START_TEST(test_not_a_database)
{
	struct state	*st = NULL;
	int		 fd = open(db, O_WRONLY | O_CREAT, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "this is not a database, just text.....",
	    38), 38);
	close(fd);
	ck_assert_int_eq(state_open(db, &st), CADRE_ERR_IO);
	ck_assert_ptr_null(st);
	ck_assert_int_eq(state_open("/nonexistent/dir/state.db", &st),
	    CADRE_ERR_SYSTEM);
}
END_TEST

START_TEST(test_idempotent)
{
	struct state		*st = open_db();
	struct state_experiment	 e;
	struct state_run	 r;
	int			 ins = -1;

	ck_assert_int_eq(state_add_experiment(st, "e1", "exp", "a.yaml",
	    "version: 1\n", "slurm", &ins), 0);
	ck_assert_int_eq(ins, 1);
	ck_assert_int_eq(state_add_experiment(st, "e1", "other", "b.yaml",
	    "x", "pbs", &ins), 0);
	ck_assert_int_eq(ins, 0);
	ck_assert_int_eq(state_get_experiment(st, "e1", &e), 0);
	ck_assert_str_eq(e.name, "exp");	/* the first one stays */
	ck_assert_str_eq(e.backend, "slurm");
	state_experiment_free(&e);
	ck_assert_int_eq(state_get_experiment(st, "nope", &e),
	    CADRE_ERR_NOT_FOUND);

	ck_assert_int_eq(state_add_run(st, "e1", "0123456789ab", "cfg1", 2,
	    "/runs/0123456789ab", &ins), 0);
	ck_assert_int_eq(ins, 1);
	ck_assert_int_eq(state_set_run_state(st, "0123456789ab", RUN_RUNNING,
	    NULL), 0);
	ck_assert_int_eq(state_add_run(st, "e1", "0123456789ab", "cfg1", 2,
	    "/runs/0123456789ab", &ins), 0);
	ck_assert_int_eq(ins, 0);
	ck_assert_int_eq(state_get_run(st, "0123456789ab", &r), 0);
	ck_assert_int_eq(r.state, RUN_RUNNING);	/* not reset to new */
	ck_assert_int_eq(r.repeat, 2);
	ck_assert_str_eq(r.experiment, "e1");
	ck_assert_str_eq(r.run_dir, "/runs/0123456789ab");
	ck_assert_int_eq(r.attempts, 0);
	ck_assert_ptr_null(r.job_id);
	state_run_free(&r);
	ck_assert_int_eq(nruns(st), 1);

	/* bad input: refused, not ignored */
	ck_assert_int_eq(state_add_run(st, "nope", "fedcba987654", "c", 1,
	    "/r", &ins), CADRE_ERR_INVALID);	/* no such experiment */
	ck_assert_int_eq(state_add_run(st, "e1", "", "c", 1, "/r", &ins),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(state_add_run(st, "e1", "x", NULL, 1, "/r", &ins),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(state_add_experiment(st, "e2", NULL, "a", "b", "c",
	    &ins), CADRE_ERR_INVALID);
	ck_assert_int_eq(state_set_run_state(st, "0123456789ab",
	    (enum run_state)42, NULL), CADRE_ERR_INVALID);
	ck_assert_int_eq(state_set_run_state(st, "nope", RUN_DONE, NULL),
	    CADRE_ERR_NOT_FOUND);
	ck_assert_int_eq(nruns(st), 1);
	state_close(st);
}
END_TEST

START_TEST(test_transactions)
{
	struct state	*st = open_db();

	add_exp(st, "e1");
	ck_assert_int_eq(state_begin(st), 0);
	add_runs(st, "e1", 0, 100);
	ck_assert_int_eq(state_rollback(st), 0);
	ck_assert_int_eq(nruns(st), 0);
	ck_assert_int_eq(state_begin(st), 0);
	add_runs(st, "e1", 0, 100);
	ck_assert_int_eq(state_commit(st), 0);
	ck_assert_int_eq(nruns(st), 100);
	/* the same again, overlapping: only the new ones count */
	ck_assert_int_eq(state_begin(st), 0);
	add_runs(st, "e1", 50, 150);
	ck_assert_int_eq(state_commit(st), 0);
	ck_assert_int_eq(nruns(st), 150);
	state_close(st);
}
END_TEST

START_TEST(test_attempts)
{
	struct state		*st = open_db();
	struct state_attempt	 a;
	struct state_run	 r;
	int64_t			 n;

	add_exp(st, "e1");
	add_runs(st, "e1", 1, 2);
	ck_assert_int_eq(state_add_attempt(st, "000000000001", &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(state_get_attempt(st, "000000000001", 1, &a), 0);
	ck_assert_ptr_null(a.job_id);
	ck_assert_str_eq(a.state, "unknown");
	ck_assert_int_eq(a.exit_code, -1);
	ck_assert(a.submitted > 0);
	ck_assert(a.ended == 0);
	state_attempt_free(&a);
	ck_assert_int_eq(state_set_attempt_job(st, "000000000001", 1, "4242"),
	    0);
	ck_assert_int_eq(state_set_attempt_state(st, "000000000001", 1,
	    "timeout", -1, "TimeLimit", 1), 0);
	ck_assert_int_eq(state_add_attempt(st, "000000000001", &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(state_set_attempt_job(st, "000000000001", 2, "4243"),
	    0);
	ck_assert_int_eq(state_get_attempt(st, "000000000001", 1, &a), 0);
	ck_assert_str_eq(a.job_id, "4242");
	ck_assert_str_eq(a.state, "timeout");
	ck_assert_str_eq(a.reason, "TimeLimit");
	ck_assert(a.ended >= a.submitted);
	state_attempt_free(&a);
	ck_assert_int_eq(state_get_run(st, "000000000001", &r), 0);
	ck_assert_int_eq(r.attempts, 2);
	ck_assert_str_eq(r.job_id, "4243");
	state_run_free(&r);
	ck_assert_int_eq(state_get_attempt(st, "000000000001", 3, &a),
	    CADRE_ERR_NOT_FOUND);
	ck_assert_int_eq(state_set_attempt_job(st, "000000000001", 9, "1"),
	    CADRE_ERR_NOT_FOUND);
	ck_assert_int_eq(state_add_attempt(st, "nope", &n), CADRE_ERR_INVALID);
	state_close(st);
}
END_TEST

static int
count_ck(void *ctx, const struct state_checkpoint *c)
{
	(void)c;
	(*(int *)ctx)++;
	return 0;
}

/* cadre rerun's record, and the read-only open of status without cadred */
START_TEST(test_rerun_readonly)
{
	struct state		*st = open_db(), *ro;
	struct state_run	 r;
	struct state_experiment	 e;
	struct state_checkpoint	 ck;
	int64_t			 n;
	int			 nck;

	ck_assert_int_eq(state_open_readonly("/nonexistent/cadre.db", &ro),
	    CADRE_ERR_NOT_FOUND);
	add_exp(st, "e1");
	add_runs(st, "e1", 1, 2);
	ck_assert_int_eq(state_add_attempt(st, "000000000001", &n), 0);
	ck_assert_int_eq(state_add_attempt(st, "000000000001", &n), 0);
	ck_assert_int_eq(state_set_run_state(st, "000000000001", RUN_FAILED,
	    "oom"), 0);
	ck = (struct state_checkpoint){ .step = 10, .due_s = 60,
	    .elapsed_s = 55, .samples = 320, .path = (char *)"checkpoints/step-10",
	    .attempt = 2 };
	ck_assert_int_eq(state_add_checkpoint(st, "000000000001", &ck, NULL),
	    0);
	ck_assert_int_eq(state_rerun_run(st, "000000000001", "rerun", 1), 0);
	nck = 0;
	ck_assert_int_eq(state_list_checkpoints(st, "000000000001", count_ck,
	    &nck), 0);
	ck_assert_int_eq(nck, 0);	/* starting over forgets them */
	ck_assert_int_eq(state_rerun_run(st, "nope", "rerun", 0),
	    CADRE_ERR_NOT_FOUND);
	ck_assert_int_eq(state_set_experiment_spec(st, "e1", "/new.yaml",
	    "version: 1\nname: x\n"), 0);

	/* a run by its id or a unique start of one */
	{
		char	msg[256];

		add_runs(st, "e1", 16, 17);
		ck_assert_int_eq(state_find_run(st, "0000000000", &r, msg,
		    sizeof msg), CADRE_ERR_EXISTS);
		ck_assert_ptr_nonnull(strstr(msg, "give more of it"));
		ck_assert_int_eq(state_find_run(st, "00000000001", &r, msg,
		    sizeof msg), 0);
		ck_assert_str_eq(r.id, "000000000010");
		state_run_free(&r);
		ck_assert_int_eq(state_find_run(st, "0%", &r, msg, sizeof msg),
		    CADRE_ERR_NOT_FOUND);
		ck_assert_int_eq(state_find_run(st, "fff", &r, msg, sizeof msg),
		    CADRE_ERR_NOT_FOUND);
		ck_assert_ptr_nonnull(strstr(msg, "no run 'fff'"));
	}
	ck_assert_int_eq(state_open_readonly(db, &ro), 0);
	ck_assert_int_eq(state_get_run(ro, "000000000001", &r), 0);
	ck_assert_int_eq(r.state, RUN_NEW);
	ck_assert_str_eq(r.reason, "rerun");
	ck_assert_int_eq(r.attempts, 2);
	ck_assert_int_eq(r.rerun_base, 2);
	state_run_free(&r);
	ck_assert_int_eq(state_get_experiment(ro, "e1", &e), 0);
	ck_assert_str_eq(e.spec_file, "/new.yaml");
	state_experiment_free(&e);
	/* read-only: a write fails, nothing changes */
	ck_assert_int_ne(state_set_run_state(ro, "000000000001", RUN_DONE,
	    ""), 0);
	state_close(ro);
	ck_assert_int_eq(state_get_run(st, "000000000001", &r), 0);
	ck_assert_int_eq(r.state, RUN_NEW);
	state_run_free(&r);
	state_close(st);
}
END_TEST

struct collect {
	int	n;
	char	ids[8][64];
};

static int
collect_run(void *ctx, const struct state_run *r)
{
	struct collect	*c = ctx;

	if (c->n == 3)
		return 7;	/* stops the walk */
	snprintf(c->ids[c->n++], 64, "%s:%s", r->id, run_state_name(r->state));
	return 0;
}

static int
collect_event(void *ctx, const struct state_event *e)
{
	struct collect	*c = ctx;

	snprintf(c->ids[c->n++], 64, "%s:%s:%s", e->run ? e->run : "-",
	    e->kind, e->message);
	return 0;
}

START_TEST(test_lists_and_events)
{
	struct state	*st = open_db();
	struct collect	 c;
	int64_t		 counts[RUN_STATE_COUNT];

	add_exp(st, "e1");
	add_exp(st, "e2");
	add_runs(st, "e1", 0, 2);
	add_runs(st, "e2", 2, 6);
	ck_assert_int_eq(state_set_run_state(st, "000000000003", RUN_DONE,
	    "ok"), 0);
	memset(&c, 0, sizeof c);
	ck_assert_int_eq(state_list_runs(st, "e1", collect_run, &c), 0);
	ck_assert_int_eq(c.n, 2);
	ck_assert_str_eq(c.ids[0], "000000000000:new");
	memset(&c, 0, sizeof c);
	ck_assert_int_eq(state_list_runs(st, "e2", collect_run, &c), 7);
	ck_assert_int_eq(c.n, 3);
	ck_assert_str_eq(c.ids[1], "000000000003:done");
	ck_assert_int_eq(state_count_runs(st, "e2", counts), 0);
	ck_assert_int_eq(counts[RUN_NEW], 3);
	ck_assert_int_eq(counts[RUN_DONE], 1);

	ck_assert_int_eq(state_add_event(st, "e1", NULL, "submit", "2 runs"), 0);
	ck_assert_int_eq(state_add_event(st, "e1", "000000000000", "state",
	    "queued"), 0);
	ck_assert_int_eq(state_add_event(st, "e1", "000000000001", "state",
	    "it's \"quoted\"; DROP TABLE runs;"), 0);
	ck_assert_int_eq(state_add_event(st, "e1", "000000000000", "state",
	    "running"), 0);
	memset(&c, 0, sizeof c);
	ck_assert_int_eq(state_list_events(st, NULL, 0, 100, collect_event,
	    &c), 0);
	ck_assert_int_eq(c.n, 4);
	ck_assert_str_eq(c.ids[0], "-:submit:2 runs");
	ck_assert_str_eq(c.ids[2],
	    "000000000001:state:it's \"quoted\"; DROP TABLE runs;");
	memset(&c, 0, sizeof c);
	ck_assert_int_eq(state_list_events(st, "000000000000", 0, 100,
	    collect_event, &c), 0);
	ck_assert_int_eq(c.n, 2);
	ck_assert_str_eq(c.ids[1], "000000000000:state:running");
	memset(&c, 0, sizeof c);
	ck_assert_int_eq(state_list_events(st, NULL, 2, 1, collect_event, &c),
	    0);
	ck_assert_int_eq(c.n, 1);
	ck_assert_str_eq(c.ids[0],
	    "000000000001:state:it's \"quoted\"; DROP TABLE runs;");
	ck_assert_int_eq(nruns(st), 6);
	state_close(st);
}
END_TEST

/* A process killed in the middle of a transaction leaves nothing of it;
 * one killed right after a commit leaves all of it; submitting again
 * after either adds each run once. */
START_TEST(test_crash)
{
	struct state	*st;
	pid_t		 pid;
	int		 status, commit;

	st = open_db();
	add_exp(st, "e1");
	state_close(st);
	for (commit = 0; commit <= 1; commit++) {
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			st = NULL;
			if (state_open(db, &st) != 0 || state_begin(st) != 0)
				_exit(1);
			add_runs(st, "e1", 0, 500);
			if (commit && state_commit(st) != 0)
				_exit(1);
			kill(getpid(), SIGKILL);
			_exit(2);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		st = open_db();
		ck_assert_int_eq(nruns(st), commit ? 500 : 0);
		state_close(st);
	}
	st = open_db();
	ck_assert_int_eq(state_begin(st), 0);
	add_runs(st, "e1", 0, 1000);
	ck_assert_int_eq(state_commit(st), 0);
	ck_assert_int_eq(nruns(st), 1000);
	state_close(st);
}
END_TEST

START_TEST(test_state_names)
{
	enum run_state	s;
	int		i;

	for (i = 0; i < RUN_STATE_COUNT; i++) {
		ck_assert_int_eq(run_state_parse(run_state_name(
		    (enum run_state)i), &s), 0);
		ck_assert_int_eq(s, i);
	}
	ck_assert_int_eq(run_state_parse("Done", &s), CADRE_ERR_INVALID);
	ck_assert_str_eq(run_state_name((enum run_state)99), "unknown");
	ck_assert(run_state_final(RUN_CANCELLED));
	ck_assert(!run_state_final(RUN_REQUEUED));
}
END_TEST

static Suite *
state_suite(void)
{
	Suite	*s = suite_create("state");
	TCase	*tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_open_schema);
	tcase_add_test(tc, test_not_a_database);
	tcase_add_test(tc, test_idempotent);
	tcase_add_test(tc, test_transactions);
	tcase_add_test(tc, test_attempts);
	tcase_add_test(tc, test_rerun_readonly);
	tcase_add_test(tc, test_lists_and_events);
	tcase_add_test(tc, test_crash);
	tcase_add_test(tc, test_state_names);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	log_init("test_state", LOG_LEVEL_ERROR, LOG_TARGET_STDERR);
	return unit_run(state_suite());
}
