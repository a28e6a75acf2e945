/* daemon/: the requeue policy (requeue.c: end reasons, verdicts,
 * backoff), the progress reader (run_files.c), the config file, and
 * submit/tick/cancel over a real database with the local backend in dry
 * mode. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "monitor.h"
#include "state.h"
#include "xmalloc.h"
#include "unit.h"

START_TEST(test_end_reason)
{
	static const struct {
		enum sched_state	 st;
		const char		*status, *want;
		int			 code, sig;
	} c[] = {
		{ SCHED_DONE, NULL, "done", 0, 0 },
		{ SCHED_DONE, "done", "done", 0, 0 },
		{ SCHED_DONE, "failed", "failed", 0, 0 },
		{ SCHED_FAILED, NULL, "failed", 0, 0 },
		{ SCHED_FAILED, "preempted", "preempted", 0, 0 },
		{ SCHED_FAILED, "node_fail", "node_fail", 0, 0 },
		{ SCHED_FAILED, "startup_timeout", "startup_timeout", 0, 0 },
		{ SCHED_FAILED, "oom", "oom", 0, 0 },
		{ SCHED_FAILED, "weird", "failed", 0, 0 },
		{ SCHED_TIMEOUT, NULL, "timeout", 0, 0 },
		{ SCHED_TIMEOUT, "preempted", "timeout", 0, 0 },
		{ SCHED_TIMEOUT, "done", "done", 0, 0 },
		{ SCHED_PREEMPTED, NULL, "preempted", 0, 0 },
		{ SCHED_NODE_FAIL, "failed", "node_fail", 0, 0 },
		{ SCHED_CANCELLED, "preempted", "cancelled", 0, 0 },
		/* forgotten by the scheduler: status.json decides */
		{ SCHED_UNKNOWN, "done", "done", 0, 0 },
		{ SCHED_UNKNOWN, "preempted", "preempted", 0, 0 },
		{ SCHED_UNKNOWN, NULL, "lost", 0, 0 },
		/* launch killed: no status.json, the job killed or 128 + N */
		{ SCHED_FAILED, NULL, "node_fail", 137, 0 },
		{ SCHED_FAILED, NULL, "node_fail", -1, 9 },
		{ SCHED_FAILED, "failed", "failed", 137, 0 },
		{ SCHED_FAILED, NULL, "failed", 1, 0 },
		{ SCHED_CANCELLED, NULL, "cancelled", -1, 15 },
		{ SCHED_TIMEOUT, NULL, "timeout", -1, 9 },
	};
	struct sched_status	ss;
	size_t			i;

	for (i = 0; i < sizeof c / sizeof c[0]; i++) {
		memset(&ss, 0, sizeof ss);
		ss.state = c[i].st;
		ss.exit_code = c[i].code;
		ss.exit_signal = c[i].sig;
		ck_assert_msg(strcmp(monitor_end_reason(&ss, c[i].status),
		    c[i].want) == 0, "case %zu: %s", i,
		    monitor_end_reason(&ss, c[i].status));
	}
}
END_TEST

START_TEST(test_decide)
{
	struct monitor_end	e = { 0 };
	char			why[256];

	e.retries_max = 3;
	e.prev_step = e.step = -1;
	e.reason = "done";
	e.attempts = 1;
	ck_assert_int_eq(monitor_decide(&e, why, sizeof why), MONITOR_DONE);
	e.reason = "cancelled";
	ck_assert_int_eq(monitor_decide(&e, why, sizeof why),
	    MONITOR_CANCELLED);
	/* a reason not in retries.on fails at once */
	e.reason = "oom";
	e.retry_on = 0;
	ck_assert_int_eq(monitor_decide(&e, why, sizeof why), MONITOR_FAILED);
	ck_assert_str_eq(why, "oom (not in retries.on)");
	/* preempted, first attempt: requeued */
	e.reason = "preempted";
	e.retry_on = 1;
	e.step = 40;
	ck_assert_int_eq(monitor_decide(&e, why, sizeof why), MONITOR_REQUEUE);
	ck_assert_str_eq(why, "preempted, attempt 1 of 4");
	/* the same reason again, with progress: requeued */
	e.attempts = 2;
	e.prev_reason = "preempted";
	e.prev_step = 40;
	e.step = 80;
	ck_assert_int_eq(monitor_decide(&e, why, sizeof why), MONITOR_REQUEUE);
	/* the same reason at the same step: stops */
	e.step = 40;
	ck_assert_int_eq(monitor_decide(&e, why, sizeof why), MONITOR_FAILED);
	ck_assert_str_eq(why, "preempted twice at step 40 without progress: "
	    "not retried");
	/* another reason at the same step: retried */
	e.prev_reason = "node_fail";
	ck_assert_int_eq(monitor_decide(&e, why, sizeof why), MONITOR_REQUEUE);
	/* twice before any step */
	e.prev_reason = "startup_timeout";
	e.reason = "startup_timeout";
	e.prev_step = e.step = -1;
	ck_assert_int_eq(monitor_decide(&e, why, sizeof why), MONITOR_FAILED);
	ck_assert_str_eq(why, "startup_timeout twice before the first step: "
	    "not retried");
	/* attempts <= retries.max: requeue; beyond: exhausted */
	e.prev_reason = NULL;
	e.reason = "timeout";
	e.attempts = 3;
	ck_assert_int_eq(monitor_decide(&e, why, sizeof why), MONITOR_REQUEUE);
	e.attempts = 4;
	ck_assert_int_eq(monitor_decide(&e, why, sizeof why), MONITOR_FAILED);
	ck_assert_str_eq(why, "timeout; retries exhausted (4 attempts, "
	    "retries.max 3)");
	e.retries_max = 0;
	e.attempts = 1;
	ck_assert_int_eq(monitor_decide(&e, why, sizeof why), MONITOR_FAILED);
}
END_TEST

START_TEST(test_backoff)
{
	ck_assert(monitor_backoff(60, 1, 3600) == 60);
	ck_assert(monitor_backoff(60, 2, 3600) == 120);
	ck_assert(monitor_backoff(60, 3, 3600) == 240);
	ck_assert(monitor_backoff(60, 10, 3600) == 3600);
	ck_assert(monitor_backoff(60, 1000000, 3600) == 3600);
	ck_assert(monitor_backoff(0, 5, 3600) == 0);
}
END_TEST

START_TEST(test_metrics)
{
	struct monitor_progress	p;
	const char		*t;

	monitor_parse_metrics("", 0, &p);
	ck_assert_int_eq(p.step, -1);
	t = "{\"event\":\"start\",\"step\":0}\n"
	    "{\"event\":\"step\",\"step\":10,\"samples_per_s\":50.5,"
	    "\"elapsed_s\":3}\n"
	    "{\"event\":\"checkpoint\",\"step\":12,\"elapsed_s\":4}\n";
	monitor_parse_metrics(t, strlen(t), &p);
	ck_assert_int_eq(p.step, 12);
	ck_assert(p.samples_per_s == 50.5);
	ck_assert(p.elapsed_s == 4);
	ck_assert_int_eq(p.complete, 0);
	ck_assert_str_eq(p.skipped, "");
	/* a resume's fallback: the last one in the tail */
	t = "{\"event\":\"checkpoint_skipped\",\"path\":\"checkpoints/step-9\","
	    "\"why\":\"a\"}\n{\"event\":\"checkpoint_skipped\",\"path\":"
	    "\"checkpoints/step-8\",\"why\":\"meta.json: bad\"}\n"
	    "{\"event\":\"checkpoint_skipped\",\"path\":7}\n"
	    "{\"event\":\"start\",\"step\":5}\n";
	monitor_parse_metrics(t, strlen(t), &p);
	ck_assert_int_eq(p.step, 5);
	ck_assert_str_eq(p.skipped, "checkpoints/step-8: meta.json: bad");
	/* a cut first line, garbage, a line being written, no newline */
	t = "p\":3}\nnot json\n{\"event\":\"step\",\"step\":7,"
	    "\"samples_per_s\":1e3}\n[1,2]\n{\"event\":\"summary\",\"step\":8,"
	    "\"complete\":true}\n{\"event\":\"st";
	monitor_parse_metrics(t, strlen(t), &p);
	ck_assert_int_eq(p.step, 8);
	ck_assert(p.samples_per_s == 1000);
	ck_assert_int_eq(p.complete, 1);
	/* wrong types are skipped */
	t = "{\"event\":\"step\",\"step\":\"9\",\"samples_per_s\":\"x\"}\n";
	monitor_parse_metrics(t, strlen(t), &p);
	ck_assert_int_eq(p.step, -1);
	ck_assert(p.samples_per_s == 0);
}
END_TEST

START_TEST(test_config)
{
	struct monitor_config	c;
	char			err[512];
	const char		*t;

	monitor_config_init(&c);
	ck_assert(c.poll_interval == 5);
	t = "# comment\n\n poll_interval = 0.5 \nagent=/opt/a\ndry = 1\r\n"
	    "cmd_timeout = 20\nlog_level = debug\n";
	ck_assert_int_eq(monitor_config_parse("x.conf", t, strlen(t), &c, err,
	    sizeof err), 0);
	ck_assert(c.poll_interval == 0.5);
	ck_assert_str_eq(c.agent, "/opt/a");
	ck_assert_int_eq(c.dry, 1);
	ck_assert_int_eq(c.cmd_timeout, 20);
	ck_assert_str_eq(c.log_level, "debug");
	/* errors name the line; c stays as it was */
	t = "dry = 0\nbogus = 1\n";
	ck_assert_int_eq(monitor_config_parse("x.conf", t, strlen(t), &c, err,
	    sizeof err), CADRE_ERR_PARSE);
	ck_assert_ptr_nonnull(strstr(err, "x.conf:2: error: unknown key "
	    "'bogus'"));
	ck_assert_int_eq(c.dry, 1);
	t = "poll_interval = fast\n";
	ck_assert_int_eq(monitor_config_parse("x.conf", t, strlen(t), &c, err,
	    sizeof err), CADRE_ERR_PARSE);
	ck_assert_ptr_nonnull(strstr(err, "x.conf:1: error: poll_interval"));
	t = "poll_interval = 0\n";
	ck_assert_int_eq(monitor_config_parse("x.conf", t, strlen(t), &c, err,
	    sizeof err), CADRE_ERR_PARSE);
	t = "agent = relative/path\n";
	ck_assert_int_eq(monitor_config_parse("x.conf", t, strlen(t), &c, err,
	    sizeof err), CADRE_ERR_PARSE);
	t = "just words\n";
	ck_assert_int_eq(monitor_config_parse("x.conf", t, strlen(t), &c, err,
	    sizeof err), CADRE_ERR_PARSE);
	ck_assert_ptr_nonnull(strstr(err, "expected 'key = value'"));
	t = "dry = 1\0";
	ck_assert_int_eq(monitor_config_parse("x.conf", t, 8, &c, err,
	    sizeof err), CADRE_ERR_PARSE);
	ck_assert_int_eq(monitor_config_parse("x.conf", "\xff", 1, &c, err,
	    sizeof err), CADRE_ERR_PARSE);
	ck_assert_int_eq(monitor_config_load("/nonexistent/cadred.conf", 1, &c,
	    err, sizeof err), 0);
	ck_assert_int_ne(monitor_config_load("/nonexistent/cadred.conf", 0, &c,
	    err, sizeof err), 0);
	monitor_config_free(&c);
}
END_TEST

static const char spec_text[] =
    "version: 1\n"
    "name: unit\n"
    "scheduler: { backend: local, max_concurrent: 2 }\n"
    "trainer: { model: bert-tiny, data: /nonexistent, steps: 10 }\n"
    "measure: { skip_steps: 0 }\n"
    "matrix:\n"
    "  trainer.seed: [1, 2, 3]\n";

static int64_t
count_state(struct monitor *m, const char *exp, const char *state)
{
	json_t	*st, *r;
	size_t	 i;
	int64_t	 n = 0;
	char	 err[256];

	ck_assert_int_eq(monitor_status(m, exp, &st, err, sizeof err), 0);
	json_array_foreach(json_object_get(st, "runs"), i, r) {
		if (strcmp(json_string_value(json_object_get(r, "state")),
		    state) == 0)
			n++;
	}
	json_decref(st);
	return n;
}

START_TEST(test_submit_dry)
{
	char			 dir[4096], *db;
	char			 err[1024], id[64];
	struct monitor_config	 cfg;
	struct monitor		*m, *m2;
	struct state		*st;
	json_t			*rep;
	int64_t			 n;

	unit_mkdtemp(dir, sizeof dir, "test_monitor");
	setenv("CADRE_STATE_DIR", dir, 1);
	xasprintf(&db, "%s/cadre.db", dir);
	ck_assert_int_eq(state_open(db, &st), 0);
	monitor_config_init(&cfg);
	cfg.dry = 1;
	free(cfg.templates);
	xasprintf(&cfg.templates, "%s/etc/templates", getenv("top_srcdir") !=
	    NULL ? getenv("top_srcdir") : ".");
	ck_assert_int_eq(monitor_open(st, &cfg, 1, &m), 0);

	/* an invalid spec: the diagnostics come back */
	ck_assert_int_eq(monitor_submit(m, "/x/bad.yaml", "version: 1\n", 11,
	    &rep, err, sizeof err), CADRE_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(err, "/x/bad.yaml:"));
	ck_assert_ptr_null(rep);

	ck_assert_int_eq(monitor_submit(m, "/x/spec.yaml", spec_text,
	    strlen(spec_text), &rep, err, sizeof err), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(rep, "new")), 3);
	snprintf(id, sizeof id, "%s", json_string_value(json_object_get(rep,
	    "experiment")));
	ck_assert_uint_eq(strlen(id), 12);
	json_decref(rep);
	/* again: the same id, nothing new */
	ck_assert_int_eq(monitor_submit(m, "/x/spec.yaml", spec_text,
	    strlen(spec_text), &rep, err, sizeof err), 0);
	ck_assert_str_eq(json_string_value(json_object_get(rep, "experiment")),
	    id);
	ck_assert_int_eq(json_integer_value(json_object_get(rep, "new")), 0);
	json_decref(rep);
	ck_assert_int_eq(count_state(m, id, "new"), 3);

	/* max_concurrent 2: two go to the (dry) scheduler */
	monitor_tick(m, 1e10);
	ck_assert_int_eq(count_state(m, id, "queued"), 2);
	ck_assert_int_eq(count_state(m, id, "new"), 1);
	ck_assert_int_eq(monitor_all_final(m, id), 0);

	/* the id rule of every command: a unique start of an id */
	{
		json_t	*stj;
		char	 rid[8];

		ck_assert_int_eq(monitor_status(m, "unit", &stj, err,
		    sizeof err), 0);
		snprintf(rid, sizeof rid, "%.6s", json_string_value(
		    json_object_get(json_array_get(json_object_get(stj, "runs"),
		    0), "id")));
		json_decref(stj);
		ck_assert_int_eq(monitor_status(m, rid, &stj, err, sizeof err),
		    0);
		ck_assert_uint_eq(json_array_size(json_object_get(stj, "runs")),
		    1);
		json_decref(stj);
		ck_assert_int_eq(monitor_status(m, "", &stj, err, sizeof err),
		    CADRE_ERR_NOT_FOUND);
	}

	/* a second monitor over the same database picks the runs up */
	ck_assert_int_eq(monitor_open(st, &cfg, 1, &m2), 0);
	ck_assert_int_eq(count_state(m2, id, "queued"), 2);
	monitor_free(m2);

	ck_assert_int_eq(monitor_cancel(m, "nosuch", &n, err, sizeof err),
	    CADRE_ERR_NOT_FOUND);
	ck_assert_int_eq(monitor_cancel(m, "unit", &n, err, sizeof err), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(count_state(m, id, "cancelled"), 3);
	ck_assert_int_eq(monitor_all_final(m, id), 1);

	/* rerun: refused ones change nothing */
	{
		static const char	 changed_text[] =
		    "version: 1\n"
		    "name: unit\n"
		    "scheduler: { backend: local, max_concurrent: 2 }\n"
		    "trainer: { model: bert-tiny, data: /nonexistent, steps: 10 }\n"
		    "measure: { skip_steps: 0 }\n"
		    "retries: { max: 5 }\n"
		    "matrix:\n"
		    "  trainer.seed: [1, 2, 3]\n";
		char			*none[] = { (char *)"0123456789ab" };
		struct monitor_rerun	 q = { .target = "nosuch" };
		json_t			*ch;

		ck_assert_int_eq(monitor_rerun(m, &q, &rep, err, sizeof err),
		    CADRE_ERR_NOT_FOUND);
		q.target = id;
		q.runs = none;
		q.nruns = 1;
		ck_assert_int_eq(monitor_rerun(m, &q, &rep, err, sizeof err),
		    CADRE_ERR_NOT_FOUND);
		ck_assert_ptr_nonnull(strstr(err, "is not a run of experiment"));
		ck_assert_int_eq(count_state(m, id, "cancelled"), 3);

		/* the same runs, another retries.max: said, not applied */
		ck_assert_int_eq(monitor_submit(m, "/x/spec.yaml", changed_text,
		    strlen(changed_text), &rep, err, sizeof err), 0);
		ch = json_object_get(rep, "changed");
		ck_assert_uint_eq(json_array_size(ch), 1);
		ck_assert_str_eq(json_string_value(json_array_get(ch, 0)),
		    "retries.max: 3 -> 5");
		json_decref(rep);

		/* every cancelled run again, the change applied */
		q.runs = NULL;
		q.nruns = 0;
		q.spec_path = "/x/spec.yaml";
		q.spec_text = changed_text;
		q.spec_len = strlen(changed_text);
		ck_assert_int_eq(monitor_rerun(m, &q, &rep, err, sizeof err), 0);
		ck_assert_int_eq(json_integer_value(json_object_get(rep,
		    "rerun")), 3);
		ck_assert_uint_eq(json_array_size(json_object_get(rep,
		    "changed")), 1);
		json_decref(rep);
		ck_assert_int_eq(count_state(m, id, "new"), 3);
		ck_assert_int_eq(monitor_submit(m, "/x/spec.yaml", changed_text,
		    strlen(changed_text), &rep, err, sizeof err), 0);
		ck_assert_uint_eq(json_array_size(json_object_get(rep,
		    "changed")), 0);
		json_decref(rep);

		/* a run that has not ended is refused by name */
		q.spec_text = NULL;
		{
			json_t	*stj;
			char	*rid;

			ck_assert_int_eq(monitor_status(m, id, &stj, err,
			    sizeof err), 0);
			rid = xstrdup(json_string_value(json_object_get(
			    json_array_get(json_object_get(stj, "runs"), 0),
			    "id")));
			json_decref(stj);
			q.target = rid;
			ck_assert_int_eq(monitor_rerun(m, &q, &rep, err,
			    sizeof err), CADRE_ERR_INVALID);
			ck_assert_ptr_nonnull(strstr(err, "has not ended (new)"));
			free(rid);
		}

		/* a monitor holding nothing loads the experiment when its
		 * spec comes again (cadre run of the same spec) */
		ck_assert_int_eq(monitor_open(st, &cfg, 0, &m2), 0);
		ck_assert_int_eq(monitor_submit(m2, "/x/spec.yaml", changed_text,
		    strlen(changed_text), &rep, err, sizeof err), 0);
		ck_assert_int_eq(json_integer_value(json_object_get(rep, "new")),
		    0);
		json_decref(rep);
		ck_assert_int_eq(count_state(m2, id, "new"), 3);
		monitor_free(m2);
	}

	monitor_free(m);
	monitor_config_free(&cfg);
	state_close(st);
	unit_rmtree(dir);
	free(db);
}
END_TEST

static Suite *
monitor_suite(void)
{
	Suite	*s = suite_create("monitor");
	TCase	*tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_end_reason);
	tcase_add_test(tc, test_decide);
	tcase_add_test(tc, test_backoff);
	tcase_add_test(tc, test_metrics);
	tcase_add_test(tc, test_config);
	tcase_add_test(tc, test_submit_dry);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	log_init("test_monitor", LOG_LEVEL_ERROR, LOG_TARGET_STDERR);
	return unit_run(monitor_suite());
}
