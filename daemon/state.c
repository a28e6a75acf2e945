/* cadred's SQLite store (see state.h). */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "error.h"
#include "log.h"
#include "state.h"
#include "xmalloc.h"

#define STATE_BUSY_MS	5000	/* wait this long for a lock held elsewhere */

struct state {
	sqlite3	*db;
	char	*path;
};


/*
 * Version 1. States are checked by the database as well, so that a bug
 * cannot store a state no reader knows. Times are Unix seconds (REAL).
 */
static const char schema_v1[] =
    "CREATE TABLE experiments ("
    " id TEXT PRIMARY KEY,"
    " name TEXT NOT NULL,"
    " spec_file TEXT NOT NULL,"
    " spec TEXT NOT NULL,"
    " backend TEXT NOT NULL,"
    " created REAL NOT NULL);"
    "CREATE TABLE runs ("
    " id TEXT PRIMARY KEY,"
    " experiment TEXT NOT NULL REFERENCES experiments(id),"
    " config_id TEXT NOT NULL,"
    " repeat INTEGER NOT NULL,"
    " run_dir TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('new', 'queued', 'starting',"
    "  'running', 'done', 'failed', 'cancelled', 'requeued')),"
    " reason TEXT NOT NULL DEFAULT '',"
    " updated REAL NOT NULL);"
    "CREATE INDEX runs_experiment ON runs(experiment, id);"
    "CREATE TABLE attempts ("
    " run TEXT NOT NULL REFERENCES runs(id),"
    " n INTEGER NOT NULL CHECK (n >= 1),"
    " job_id TEXT,"
    " state TEXT NOT NULL DEFAULT 'unknown',"
    " exit_code INTEGER NOT NULL DEFAULT -1,"
    " reason TEXT NOT NULL DEFAULT '',"
    " submitted REAL NOT NULL,"
    " ended REAL NOT NULL DEFAULT 0,"
    " PRIMARY KEY (run, n));"
    "CREATE TABLE events ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " time REAL NOT NULL,"
    " experiment TEXT,"
    " run TEXT,"
    " kind TEXT NOT NULL,"
    " message TEXT NOT NULL);"
    "CREATE INDEX events_run ON events(run, id);"
    "PRAGMA user_version = 1;";

/* Version 2: the timed checkpoints (docs/contracts.md). */
static const char schema_v2[] =
    "CREATE TABLE checkpoints ("
    " run TEXT NOT NULL REFERENCES runs(id),"
    " step INTEGER NOT NULL CHECK (step >= 0),"
    " due_s REAL NOT NULL,"
    " elapsed_s REAL NOT NULL,"
    " samples INTEGER NOT NULL,"
    " path TEXT NOT NULL,"
    " attempt INTEGER NOT NULL,"
    " recorded REAL NOT NULL,"
    " eval_loss REAL,"
    " eval_accuracy REAL,"
    " eval_error TEXT,"
    " removed INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY (run, step));"
    "PRAGMA user_version = 2;";

/* Version 3: `cadre rerun`. rerun_base is how many attempts the run had
 * when it was last rerun: its retry budget counts the attempts after. */
static const char schema_v3[] =
    "ALTER TABLE runs ADD COLUMN rerun_base INTEGER NOT NULL DEFAULT 0;"
    "PRAGMA user_version = 3;";

static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Maps an SQLite result to ours, logging what failed. */
static int
db_err(struct state *st, int rc, const char *what)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return 0;
	case SQLITE_NOMEM:
		return CADRE_ERR_NOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		log_warn("%s: %s: database busy", st->path, what);
		return CADRE_ERR_BUSY;
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
		log_error("%s: %s: %s", st->path, what, sqlite3_errmsg(st->db));
		return CADRE_ERR_IO;
	case SQLITE_CONSTRAINT:
		log_warn("%s: %s: %s", st->path, what, sqlite3_errmsg(st->db));
		return CADRE_ERR_INVALID;
	default:
		log_error("%s: %s: %s", st->path, what, sqlite3_errmsg(st->db));
		return CADRE_ERR_IO;
	}
}

static int
exec_sql(struct state *st, const char *sql, const char *what)
{
	return db_err(st, sqlite3_exec(st->db, sql, NULL, NULL, NULL), what);
}

/* Prepares sql and binds text arguments (NULL binds SQL NULL) in order,
 * for the simple statements here. */
static int
prep(struct state *st, sqlite3_stmt **stmt, const char *sql)
{
	int	rc;

	*stmt = NULL;
	rc = sqlite3_prepare_v2(st->db, sql, -1, stmt, NULL);
	return db_err(st, rc, "prepare");
}

static void
bind_text(sqlite3_stmt *stmt, int i, const char *s)
{
	if (s == NULL)
		sqlite3_bind_null(stmt, i);
	else
		sqlite3_bind_text(stmt, i, s, -1, SQLITE_TRANSIENT);
}

/* Steps a statement that returns no rows; *changes gets the rows changed. */
static int
step_done(struct state *st, sqlite3_stmt *stmt, const char *what,
    int *changes)
{
	int	rc = sqlite3_step(stmt);

	if (rc == SQLITE_ROW)
		rc = SQLITE_DONE;
	if (changes != NULL)
		*changes = rc == SQLITE_DONE ? sqlite3_changes(st->db) : 0;
	return db_err(st, rc, what);
}

static char *
col_text(sqlite3_stmt *stmt, int i)
{
	const unsigned char	*t = sqlite3_column_text(stmt, i);

	return t != NULL ? xstrdup((const char *)t) : NULL;
}

int
state_schema_version(struct state *st, int64_t *v)
{
	sqlite3_stmt	*stmt;
	int		 r;

	if ((r = prep(st, &stmt, "PRAGMA user_version")) != 0)
		return r;
	if (sqlite3_step(stmt) == SQLITE_ROW) {
		*v = sqlite3_column_int64(stmt, 0);
		r = 0;
	} else
		r = db_err(st, sqlite3_errcode(st->db), "user_version");
	sqlite3_finalize(stmt);
	return r;
}

/* Creates the schema of a new database, or checks an existing one's
 * version (later versions migrate here, one step each). */
static int
migrate(struct state *st)
{
	int64_t	v;
	int	r;

	if ((r = exec_sql(st, "BEGIN IMMEDIATE", "begin")) != 0)
		return r;
	if ((r = state_schema_version(st, &v)) != 0)
		goto fail;
	if (v > STATE_SCHEMA_VERSION) {
		log_error("%s: schema version %lld is newer than this cadred's "
		    "(%d): use a newer cadred", st->path, (long long)v,
		    STATE_SCHEMA_VERSION);
		r = CADRE_ERR_VERSION;
		goto fail;
	}
	if (v == 0 && (r = exec_sql(st, schema_v1, "create schema")) != 0)
		goto fail;
	if (v < 2 && (r = exec_sql(st, schema_v2, "schema version 2")) != 0)
		goto fail;
	if (v < 3 && (r = exec_sql(st, schema_v3, "schema version 3")) != 0)
		goto fail;
	return exec_sql(st, "COMMIT", "commit");
fail:
	(void)sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return r;
}

/* The connection, with flags (read-write or read-only); *st is set even
 * on failure (state_close() it). */
static int
db_open(const char *path, int flags, struct state **stp)
{
	struct state	*st;
	int		 r;

	st = *stp = xcalloc(1, sizeof *st);
	st->path = xstrdup(path);
	if (sqlite3_open_v2(path, &st->db, flags | SQLITE_OPEN_FULLMUTEX,
	    NULL) != SQLITE_OK) {
		r = st->db != NULL ? db_err(st, sqlite3_errcode(st->db),
		    "open") : CADRE_ERR_NOMEM;
		return r != 0 ? r : CADRE_ERR_IO;
	}
	sqlite3_busy_timeout(st->db, STATE_BUSY_MS);
	return 0;
}

int
state_open(const char *path, struct state **out)
{
	struct state	*st;
	int		 fd, r;

	*out = NULL;
	/* Created 0600 by us, not with SQLite's umask-dependent mode. */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		log_error("%s: %s", path, strerror(errno));
		return CADRE_ERR_SYSTEM;
	}
	close(fd);
	if ((r = db_open(path, SQLITE_OPEN_READWRITE, &st)) != 0)
		goto fail;
	/*
	 * WAL: readers (cadre status) never wait for the monitor's writes.
	 * synchronous=NORMAL in WAL mode loses at most the last commits on a
	 * power failure and none on a crash of the process; insertions are
	 * idempotent, so a lost commit is redone, not duplicated.
	 */
	if ((r = exec_sql(st, "PRAGMA journal_mode=WAL", "journal_mode")) != 0 ||
	    (r = exec_sql(st, "PRAGMA synchronous=NORMAL", "synchronous")) != 0 ||
	    (r = exec_sql(st, "PRAGMA foreign_keys=ON", "foreign_keys")) != 0 ||
	    (r = migrate(st)) != 0)
		goto fail;
	*out = st;
	return 0;
fail:
	state_close(st);
	return r;
}

int
state_open_readonly(const char *path, struct state **out)
{
	struct state	*st;
	int64_t		 v;
	int		 r;

	*out = NULL;
	if (access(path, R_OK) != 0)
		return errno == ENOENT ? CADRE_ERR_NOT_FOUND : CADRE_ERR_SYSTEM;
	if ((r = db_open(path, SQLITE_OPEN_READONLY, &st)) != 0)
		goto fail;
	if ((r = state_schema_version(st, &v)) != 0)
		goto fail;
	if (v != STATE_SCHEMA_VERSION) {
		log_error("%s: schema version %lld, this cadre reads %d: %s",
		    path, (long long)v, STATE_SCHEMA_VERSION,
		    v < STATE_SCHEMA_VERSION ? "start cadred (or cadre run) "
		    "once to upgrade it" : "use a newer cadre");
		r = CADRE_ERR_VERSION;
		goto fail;
	}
	*out = st;
	return 0;
fail:
	state_close(st);
	return r;
}

void
state_close(struct state *st)
{
	if (st == NULL)
		return;
	if (st->db != NULL)
		sqlite3_close_v2(st->db);
	free(st->path);
	free(st);
}

int
state_begin(struct state *st)
{
	return exec_sql(st, "BEGIN IMMEDIATE", "begin");
}

int
state_commit(struct state *st)
{
	return exec_sql(st, "COMMIT", "commit");
}

int
state_rollback(struct state *st)
{
	return exec_sql(st, "ROLLBACK", "rollback");
}

/* ---------------------------------------------------------------- experiments */

int
state_add_experiment(struct state *st, const char *id, const char *name,
    const char *spec_file, const char *spec, const char *backend,
    int *inserted)
{
	sqlite3_stmt	*stmt;
	int		 r, changes = 0;

	if (inserted != NULL)
		*inserted = 0;
	if (id == NULL || *id == '\0' || strlen(id) >= STATE_ID_MAX ||
	    name == NULL || spec_file == NULL || spec == NULL || backend == NULL)
		return CADRE_ERR_INVALID;
	/* OR IGNORE (SQLite 3.22 has no upsert) also skips NOT NULL
	 * violations: the arguments were checked above. */
	if ((r = prep(st, &stmt, "INSERT OR IGNORE INTO experiments (id, name, "
	    "spec_file, spec, backend, created) VALUES (?, ?, ?, ?, ?, ?)")) != 0)
		return r;
	bind_text(stmt, 1, id);
	bind_text(stmt, 2, name);
	bind_text(stmt, 3, spec_file);
	bind_text(stmt, 4, spec);
	bind_text(stmt, 5, backend);
	sqlite3_bind_double(stmt, 6, now());
	r = step_done(st, stmt, "add experiment", &changes);
	sqlite3_finalize(stmt);
	if (r == 0 && inserted != NULL)
		*inserted = changes > 0;
	return r;
}

int
state_set_experiment_spec(struct state *st, const char *id,
    const char *spec_file, const char *spec)
{
	sqlite3_stmt	*stmt;
	int		 r, changes = 0;

	if (id == NULL || spec_file == NULL || spec == NULL)
		return CADRE_ERR_INVALID;
	if ((r = prep(st, &stmt, "UPDATE experiments SET spec_file = ?, "
	    "spec = ? WHERE id = ?")) != 0)
		return r;
	bind_text(stmt, 1, spec_file);
	bind_text(stmt, 2, spec);
	bind_text(stmt, 3, id);
	r = step_done(st, stmt, "set experiment spec", &changes);
	sqlite3_finalize(stmt);
	if (r == 0 && changes == 0)
		r = CADRE_ERR_NOT_FOUND;
	return r;
}

int
state_get_experiment(struct state *st, const char *id,
    struct state_experiment *out)
{
	sqlite3_stmt	*stmt;
	int		 r, rc;

	memset(out, 0, sizeof *out);
	if ((r = prep(st, &stmt, "SELECT id, name, spec_file, spec, backend, "
	    "created FROM experiments WHERE id = ?")) != 0)
		return r;
	bind_text(stmt, 1, id);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		out->id = col_text(stmt, 0);
		out->name = col_text(stmt, 1);
		out->spec_file = col_text(stmt, 2);
		out->spec = col_text(stmt, 3);
		out->backend = col_text(stmt, 4);
		out->created = sqlite3_column_double(stmt, 5);
		r = 0;
	} else if (rc == SQLITE_DONE)
		r = CADRE_ERR_NOT_FOUND;
	else
		r = db_err(st, rc, "get experiment");
	sqlite3_finalize(stmt);
	return r;
}

int
state_list_experiments(struct state *st,
    int (*fn)(void *ctx, const struct state_experiment *e), void *ctx)
{
	struct state_experiment	 e;
	sqlite3_stmt		*stmt;
	int			 r, rc;

	if ((r = prep(st, &stmt, "SELECT id, name, spec_file, spec, backend, "
	    "created FROM experiments ORDER BY created, id")) != 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		memset(&e, 0, sizeof e);
		e.id = col_text(stmt, 0);
		e.name = col_text(stmt, 1);
		e.spec_file = col_text(stmt, 2);
		e.spec = col_text(stmt, 3);
		e.backend = col_text(stmt, 4);
		e.created = sqlite3_column_double(stmt, 5);
		r = fn(ctx, &e);
		state_experiment_free(&e);
		if (r != 0)
			break;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = db_err(st, rc, "list experiments");
	sqlite3_finalize(stmt);
	return r;
}

void
state_experiment_free(struct state_experiment *e)
{
	free(e->id);
	free(e->name);
	free(e->spec_file);
	free(e->spec);
	free(e->backend);
	memset(e, 0, sizeof *e);
}

/* ---------------------------------------------------------------- runs */

int
state_add_run(struct state *st, const char *experiment, const char *run_id,
    const char *config_id, int64_t repeat, const char *run_dir,
    int *inserted)
{
	sqlite3_stmt	*stmt;
	int		 r, changes = 0;

	if (inserted != NULL)
		*inserted = 0;
	if (run_id == NULL || *run_id == '\0' ||
	    strlen(run_id) >= STATE_ID_MAX || experiment == NULL ||
	    config_id == NULL || run_dir == NULL)
		return CADRE_ERR_INVALID;
	/* A foreign key failure still fails under OR IGNORE. */
	if ((r = prep(st, &stmt, "INSERT OR IGNORE INTO runs (id, experiment, "
	    "config_id, repeat, run_dir, state, updated) "
	    "VALUES (?, ?, ?, ?, ?, 'new', ?)")) != 0)
		return r;
	bind_text(stmt, 1, run_id);
	bind_text(stmt, 2, experiment);
	bind_text(stmt, 3, config_id);
	sqlite3_bind_int64(stmt, 4, repeat);
	bind_text(stmt, 5, run_dir);
	sqlite3_bind_double(stmt, 6, now());
	r = step_done(st, stmt, "add run", &changes);
	sqlite3_finalize(stmt);
	if (r == 0 && inserted != NULL)
		*inserted = changes > 0;
	return r;
}

#define RUN_COLUMNS \
	"r.id, r.experiment, r.config_id, r.repeat, r.run_dir, r.state, " \
	"r.reason, r.updated, " \
	"(SELECT COUNT(*) FROM attempts a WHERE a.run = r.id), " \
	"(SELECT job_id FROM attempts a WHERE a.run = r.id " \
	"ORDER BY n DESC LIMIT 1), r.rerun_base"

static int
run_from_row(sqlite3_stmt *stmt, struct state_run *out)
{
	const char	*s = (const char *)sqlite3_column_text(stmt, 5);

	memset(out, 0, sizeof *out);
	out->id = col_text(stmt, 0);
	out->experiment = col_text(stmt, 1);
	out->config_id = col_text(stmt, 2);
	out->repeat = sqlite3_column_int64(stmt, 3);
	out->run_dir = col_text(stmt, 4);
	out->reason = col_text(stmt, 6);
	out->updated = sqlite3_column_double(stmt, 7);
	out->attempts = sqlite3_column_int64(stmt, 8);
	out->job_id = col_text(stmt, 9);
	out->rerun_base = sqlite3_column_int64(stmt, 10);
	if (s == NULL || run_state_parse(s, &out->state) != 0)
		return CADRE_ERR_INVALID;	/* the CHECK makes it impossible */
	return 0;
}

int
state_get_run(struct state *st, const char *run_id, struct state_run *out)
{
	sqlite3_stmt	*stmt;
	int		 r, rc;

	memset(out, 0, sizeof *out);
	if ((r = prep(st, &stmt, "SELECT " RUN_COLUMNS
	    " FROM runs r WHERE r.id = ?")) != 0)
		return r;
	bind_text(stmt, 1, run_id);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		if ((r = run_from_row(stmt, out)) != 0)
			state_run_free(out);
	} else if (rc == SQLITE_DONE)
		r = CADRE_ERR_NOT_FOUND;
	else
		r = db_err(st, rc, "get run");
	sqlite3_finalize(stmt);
	return r;
}

void
state_run_free(struct state_run *r)
{
	free(r->id);
	free(r->experiment);
	free(r->config_id);
	free(r->run_dir);
	free(r->reason);
	free(r->job_id);
	memset(r, 0, sizeof *r);
}

int
state_set_run_state(struct state *st, const char *run_id, enum run_state s,
    const char *reason)
{
	sqlite3_stmt	*stmt;
	int		 r, changes = 0;

	if ((unsigned)s >= RUN_STATE_COUNT)
		return CADRE_ERR_INVALID;
	if ((r = prep(st, &stmt, "UPDATE runs SET state = ?, reason = ?, "
	    "updated = ? WHERE id = ?")) != 0)
		return r;
	bind_text(stmt, 1, run_state_name(s));
	bind_text(stmt, 2, reason != NULL ? reason : "");
	sqlite3_bind_double(stmt, 3, now());
	bind_text(stmt, 4, run_id);
	r = step_done(st, stmt, "set run state", &changes);
	sqlite3_finalize(stmt);
	if (r == 0 && changes == 0)
		r = CADRE_ERR_NOT_FOUND;
	return r;
}

int
state_rerun_run(struct state *st, const char *run_id, const char *reason,
    int fresh)
{
	sqlite3_stmt	*stmt;
	int		 r, changes = 0;

	if (fresh) {
		if ((r = prep(st, &stmt, "DELETE FROM checkpoints WHERE "
		    "run = ?")) != 0)
			return r;
		bind_text(stmt, 1, run_id);
		r = step_done(st, stmt, "rerun: checkpoints", NULL);
		sqlite3_finalize(stmt);
		if (r != 0)
			return r;
	}
	if ((r = prep(st, &stmt, "UPDATE runs SET state = 'new', reason = ?, "
	    "updated = ?, rerun_base = (SELECT COUNT(*) FROM attempts a "
	    "WHERE a.run = runs.id) WHERE id = ?")) != 0)
		return r;
	bind_text(stmt, 1, reason != NULL ? reason : "");
	sqlite3_bind_double(stmt, 2, now());
	bind_text(stmt, 3, run_id);
	r = step_done(st, stmt, "rerun", &changes);
	sqlite3_finalize(stmt);
	if (r == 0 && changes == 0)
		r = CADRE_ERR_NOT_FOUND;
	return r;
}

int
state_list_runs(struct state *st, const char *experiment,
    int (*fn)(void *ctx, const struct state_run *r), void *ctx)
{
	sqlite3_stmt	*stmt;
	struct state_run run;
	int		 r, rc;

	if ((r = prep(st, &stmt, experiment != NULL ?
	    "SELECT " RUN_COLUMNS " FROM runs r WHERE r.experiment = ? "
	    "ORDER BY r.id" :
	    "SELECT " RUN_COLUMNS " FROM runs r ORDER BY r.id")) != 0)
		return r;
	if (experiment != NULL)
		bind_text(stmt, 1, experiment);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		r = run_from_row(stmt, &run);
		if (r == 0)
			r = fn(ctx, &run);
		state_run_free(&run);
		if (r != 0)
			break;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = db_err(st, rc, "list runs");
	sqlite3_finalize(stmt);
	return r;
}

int
state_count_runs(struct state *st, const char *experiment,
    int64_t counts[RUN_STATE_COUNT])
{
	sqlite3_stmt	*stmt;
	enum run_state	 s;
	int		 r, rc;

	memset(counts, 0, sizeof(int64_t) * RUN_STATE_COUNT);
	if ((r = prep(st, &stmt, experiment != NULL ?
	    "SELECT state, COUNT(*) FROM runs WHERE experiment = ? "
	    "GROUP BY state" :
	    "SELECT state, COUNT(*) FROM runs GROUP BY state")) != 0)
		return r;
	if (experiment != NULL)
		bind_text(stmt, 1, experiment);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(stmt, 0);

		if (name != NULL && run_state_parse(name, &s) == 0)
			counts[s] = sqlite3_column_int64(stmt, 1);
	}
	if (rc != SQLITE_DONE)
		r = db_err(st, rc, "count runs");
	sqlite3_finalize(stmt);
	return r;
}

/* ---------------------------------------------------------------- attempts */

int
state_add_attempt(struct state *st, const char *run_id, int64_t *n)
{
	sqlite3_stmt	*stmt;
	int		 r;

	*n = 0;
	/* One statement: the number and the row cannot race. */
	if ((r = prep(st, &stmt, "INSERT INTO attempts (run, n, submitted) "
	    "SELECT ?1, COALESCE(MAX(n), 0) + 1, ?2 FROM attempts "
	    "WHERE run = ?1")) != 0)
		return r;
	bind_text(stmt, 1, run_id);
	sqlite3_bind_double(stmt, 2, now());
	r = step_done(st, stmt, "add attempt", NULL);
	sqlite3_finalize(stmt);
	if (r != 0)
		return r;
	if ((r = prep(st, &stmt, "SELECT n FROM attempts WHERE rowid = ?")) != 0)
		return r;
	sqlite3_bind_int64(stmt, 1, sqlite3_last_insert_rowid(st->db));
	if (sqlite3_step(stmt) == SQLITE_ROW)
		*n = sqlite3_column_int64(stmt, 0);
	else
		r = CADRE_ERR_IO;
	sqlite3_finalize(stmt);
	return r;
}

int
state_set_attempt_job(struct state *st, const char *run_id, int64_t n,
    const char *job_id)
{
	sqlite3_stmt	*stmt;
	int		 r, changes = 0;

	if ((r = prep(st, &stmt, "UPDATE attempts SET job_id = ? "
	    "WHERE run = ? AND n = ?")) != 0)
		return r;
	bind_text(stmt, 1, job_id);
	bind_text(stmt, 2, run_id);
	sqlite3_bind_int64(stmt, 3, n);
	r = step_done(st, stmt, "set attempt job", &changes);
	sqlite3_finalize(stmt);
	if (r == 0 && changes == 0)
		r = CADRE_ERR_NOT_FOUND;
	return r;
}

int
state_set_attempt_state(struct state *st, const char *run_id, int64_t n,
    const char *sched_state, int64_t exit_code, const char *reason,
    int ended)
{
	sqlite3_stmt	*stmt;
	int		 r, changes = 0;

	if ((r = prep(st, &stmt, "UPDATE attempts SET state = ?, "
	    "exit_code = ?, reason = ?, ended = ? WHERE run = ? AND n = ?")) != 0)
		return r;
	bind_text(stmt, 1, sched_state);
	sqlite3_bind_int64(stmt, 2, exit_code);
	bind_text(stmt, 3, reason != NULL ? reason : "");
	sqlite3_bind_double(stmt, 4, ended ? now() : 0);
	bind_text(stmt, 5, run_id);
	sqlite3_bind_int64(stmt, 6, n);
	r = step_done(st, stmt, "set attempt state", &changes);
	sqlite3_finalize(stmt);
	if (r == 0 && changes == 0)
		r = CADRE_ERR_NOT_FOUND;
	return r;
}

int
state_get_attempt(struct state *st, const char *run_id, int64_t n,
    struct state_attempt *out)
{
	sqlite3_stmt	*stmt;
	int		 r, rc;

	memset(out, 0, sizeof *out);
	if ((r = prep(st, &stmt, "SELECT n, job_id, state, exit_code, reason, "
	    "submitted, ended FROM attempts WHERE run = ? AND n = ?")) != 0)
		return r;
	bind_text(stmt, 1, run_id);
	sqlite3_bind_int64(stmt, 2, n);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		out->n = sqlite3_column_int64(stmt, 0);
		out->job_id = col_text(stmt, 1);
		out->state = col_text(stmt, 2);
		out->exit_code = sqlite3_column_int64(stmt, 3);
		out->reason = col_text(stmt, 4);
		out->submitted = sqlite3_column_double(stmt, 5);
		out->ended = sqlite3_column_double(stmt, 6);
	} else if (rc == SQLITE_DONE)
		r = CADRE_ERR_NOT_FOUND;
	else
		r = db_err(st, rc, "get attempt");
	sqlite3_finalize(stmt);
	return r;
}

void
state_attempt_free(struct state_attempt *a)
{
	free(a->job_id);
	free(a->state);
	free(a->reason);
	memset(a, 0, sizeof *a);
}

/* ---------------------------------------------------------------- events */

int
state_add_event(struct state *st, const char *experiment, const char *run,
    const char *kind, const char *message)
{
	sqlite3_stmt	*stmt;
	int		 r;

	if ((r = prep(st, &stmt, "INSERT INTO events (time, experiment, run, "
	    "kind, message) VALUES (?, ?, ?, ?, ?)")) != 0)
		return r;
	sqlite3_bind_double(stmt, 1, now());
	bind_text(stmt, 2, experiment);
	bind_text(stmt, 3, run);
	bind_text(stmt, 4, kind);
	bind_text(stmt, 5, message);
	r = step_done(st, stmt, "add event", NULL);
	sqlite3_finalize(stmt);
	return r;
}

int
state_list_events(struct state *st, const char *run, int64_t after,
    size_t max, int (*fn)(void *ctx, const struct state_event *e),
    void *ctx)
{
	sqlite3_stmt		*stmt;
	struct state_event	 e;
	int			 r, rc;

	if ((r = prep(st, &stmt, run != NULL ?
	    "SELECT id, time, experiment, run, kind, message FROM events "
	    "WHERE id > ?1 AND run = ?3 ORDER BY id LIMIT ?2" :
	    "SELECT id, time, experiment, run, kind, message FROM events "
	    "WHERE id > ?1 ORDER BY id LIMIT ?2")) != 0)
		return r;
	sqlite3_bind_int64(stmt, 1, after);
	sqlite3_bind_int64(stmt, 2, max > INT64_MAX ? INT64_MAX : (int64_t)max);
	if (run != NULL)
		bind_text(stmt, 3, run);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		e.id = sqlite3_column_int64(stmt, 0);
		e.time = sqlite3_column_double(stmt, 1);
		e.experiment = col_text(stmt, 2);
		e.run = col_text(stmt, 3);
		e.kind = col_text(stmt, 4);
		e.message = col_text(stmt, 5);
		r = fn(ctx, &e);
		free(e.experiment);
		free(e.run);
		free(e.kind);
		free(e.message);
		if (r != 0)
			break;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = db_err(st, rc, "list events");
	sqlite3_finalize(stmt);
	return r;
}

int
state_add_checkpoint(struct state *st, const char *run_id,
    const struct state_checkpoint *c, int *inserted)
{
	sqlite3_stmt	*stmt;
	int		 r, changes = 0;

	if ((r = prep(st, &stmt, "INSERT OR IGNORE INTO checkpoints (run, step, "
	    "due_s, elapsed_s, samples, path, attempt, recorded) "
	    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")) != 0)
		return r;
	bind_text(stmt, 1, run_id);
	sqlite3_bind_int64(stmt, 2, c->step);
	sqlite3_bind_double(stmt, 3, c->due_s);
	sqlite3_bind_double(stmt, 4, c->elapsed_s);
	sqlite3_bind_int64(stmt, 5, c->samples);
	bind_text(stmt, 6, c->path);
	sqlite3_bind_int64(stmt, 7, c->attempt);
	sqlite3_bind_double(stmt, 8, now());
	r = step_done(st, stmt, "add checkpoint", &changes);
	sqlite3_finalize(stmt);
	if (inserted != NULL)
		*inserted = r == 0 && changes > 0;
	return r;
}

int
state_set_checkpoint_eval(struct state *st, const char *run_id, int64_t step,
    double loss, double accuracy, const char *error)
{
	sqlite3_stmt	*stmt;
	int		 r, changes = 0;

	if ((r = prep(st, &stmt, "UPDATE checkpoints SET eval_loss = ?, "
	    "eval_accuracy = ?, eval_error = ? WHERE run = ? AND step = ?")) != 0)
		return r;
	if (error == NULL) {
		sqlite3_bind_double(stmt, 1, loss);
		sqlite3_bind_double(stmt, 2, accuracy);
	} else {
		sqlite3_bind_null(stmt, 1);
		sqlite3_bind_null(stmt, 2);
	}
	bind_text(stmt, 3, error);
	bind_text(stmt, 4, run_id);
	sqlite3_bind_int64(stmt, 5, step);
	r = step_done(st, stmt, "set checkpoint eval", &changes);
	sqlite3_finalize(stmt);
	if (r == 0 && changes == 0)
		r = CADRE_ERR_NOT_FOUND;
	return r;
}

int
state_set_checkpoint_removed(struct state *st, const char *run_id,
    int64_t step)
{
	sqlite3_stmt	*stmt;
	int		 r, changes = 0;

	if ((r = prep(st, &stmt, "UPDATE checkpoints SET removed = 1 "
	    "WHERE run = ? AND step = ?")) != 0)
		return r;
	bind_text(stmt, 1, run_id);
	sqlite3_bind_int64(stmt, 2, step);
	r = step_done(st, stmt, "set checkpoint removed", &changes);
	sqlite3_finalize(stmt);
	if (r == 0 && changes == 0)
		r = CADRE_ERR_NOT_FOUND;
	return r;
}

int
state_list_checkpoints(struct state *st, const char *run_id,
    int (*fn)(void *ctx, const struct state_checkpoint *c), void *ctx)
{
	sqlite3_stmt		*stmt;
	struct state_checkpoint	 c;
	int			 r, rc;

	if ((r = prep(st, &stmt, "SELECT step, due_s, elapsed_s, samples, path, "
	    "attempt, recorded, eval_loss, eval_accuracy, eval_error, removed "
	    "FROM checkpoints WHERE run = ? ORDER BY step")) != 0)
		return r;
	bind_text(stmt, 1, run_id);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		memset(&c, 0, sizeof c);
		c.step = sqlite3_column_int64(stmt, 0);
		c.due_s = sqlite3_column_double(stmt, 1);
		c.elapsed_s = sqlite3_column_double(stmt, 2);
		c.samples = sqlite3_column_int64(stmt, 3);
		c.path = col_text(stmt, 4);
		c.attempt = sqlite3_column_int64(stmt, 5);
		c.recorded = sqlite3_column_double(stmt, 6);
		c.evaluated = sqlite3_column_type(stmt, 7) != SQLITE_NULL;
		c.eval_loss = sqlite3_column_double(stmt, 7);
		c.eval_accuracy = sqlite3_column_double(stmt, 8);
		c.eval_error = col_text(stmt, 9);
		c.removed = sqlite3_column_int(stmt, 10) != 0;
		r = fn(ctx, &c);
		free(c.path);
		free(c.eval_error);
		if (r != 0)
			break;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = db_err(st, rc, "list checkpoints");
	sqlite3_finalize(stmt);
	return r;
}

struct exp_find {
	const char	*arg;
	char		*prefix, *named;	/* the last match of each */
	size_t		 nprefix, nnamed;
	char		 other[STATE_ID_MAX + 1];	/* another match */
};

static int
find_exp(void *ctx, const struct state_experiment *e)
{
	struct exp_find	*f = ctx;

	if (strncmp(e->id, f->arg, strlen(f->arg)) == 0) {
		if (f->nprefix++ > 0)
			snprintf(f->other, sizeof f->other, "%s", f->prefix);
		free(f->prefix);
		f->prefix = xstrdup(e->id);
	}
	if (e->name != NULL && strcmp(e->name, f->arg) == 0) {
		f->nnamed++;
		free(f->named);
		f->named = xstrdup(e->id);	/* oldest first: newest stays */
	}
	return 0;
}

int
state_find_run(struct state *st, const char *arg, struct state_run *out,
    char *msg, size_t msglen)
{
	sqlite3_stmt	*stmt;
	char		 ids[2][STATE_ID_MAX];
	int		 r, n = 0;

	msg[0] = '\0';
	if ((r = state_get_run(st, arg, out)) != CADRE_ERR_NOT_FOUND) {
		if (r != 0)
			snprintf(msg, msglen, "%s", cadre_strerror(r));
		return r;
	}
	/* hex digits only: nothing of LIKE's syntax gets into the pattern */
	if (*arg != '\0' && strlen(arg) < STATE_ID_MAX &&
	    strspn(arg, "0123456789abcdef") == strlen(arg)) {
		if ((r = prep(st, &stmt, "SELECT id FROM runs WHERE id LIKE "
		    "? || '%' ORDER BY id LIMIT 2")) != 0)
			return r;
		bind_text(stmt, 1, arg);
		while (n < 2 && sqlite3_step(stmt) == SQLITE_ROW) {
			snprintf(ids[n], sizeof ids[n], "%s",
			    (const char *)sqlite3_column_text(stmt, 0));
			n++;
		}
		sqlite3_finalize(stmt);
	}
	if (n == 1)
		return state_get_run(st, ids[0], out);
	if (n > 1) {
		snprintf(msg, msglen, "'%s' is the start of several run ids "
		    "(%s, %s, ...): give more of it", arg, ids[0], ids[1]);
		return CADRE_ERR_EXISTS;
	}
	snprintf(msg, msglen, "no run '%s' (an id or a unique start of one; "
	    "cadre status lists the runs)", arg);
	return CADRE_ERR_NOT_FOUND;
}

int
state_find_experiment(struct state *st, const char *arg, char **id,
    char *msg, size_t msglen)
{
	struct state_experiment	 e;
	struct exp_find		 f;
	int			 rc;

	*id = NULL;
	msg[0] = '\0';
	memset(&e, 0, sizeof e);
	if (state_get_experiment(st, arg, &e) == 0) {
		state_experiment_free(&e);
		*id = xstrdup(arg);
		return 0;
	}
	memset(&f, 0, sizeof f);
	f.arg = arg;
	if (*arg == '\0') {
		snprintf(msg, msglen, "an empty experiment name");
		rc = CADRE_ERR_NOT_FOUND;
		goto out;
	}
	if ((rc = state_list_experiments(st, find_exp, &f)) != 0)
		goto out;
	if (f.nprefix == 1) {
		*id = f.prefix;
		f.prefix = NULL;
	} else if (f.nnamed > 0) {
		/* a name given again to a new experiment means the new one */
		if (f.nnamed > 1)
			snprintf(msg, msglen, "%zu experiments are named '%s': "
			    "the newest, %s", f.nnamed, arg, f.named);
		*id = f.named;
		f.named = NULL;
	} else if (f.nprefix > 1) {
		snprintf(msg, msglen, "'%s' is the start of %zu experiment "
		    "ids (%s, %s%s): give more of it", arg, f.nprefix, f.other,
		    f.prefix, f.nprefix > 2 ? ", ..." : "");
		rc = CADRE_ERR_EXISTS;
	} else {
		snprintf(msg, msglen, "no experiment '%s' (an id, a unique "
		    "id prefix or a name; cadre status lists them)", arg);
		rc = CADRE_ERR_NOT_FOUND;
	}

 out:
	free(f.prefix);
	free(f.named);
	return rc;
}
