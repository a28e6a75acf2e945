#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "error.h"
#include "log.h"
#include "scheduler.h"
#include "xmalloc.h"
#include "unit.h"

static void
reset(struct sched_status *st, size_t n)
{
	size_t	i;

	memset(st, 0, n * sizeof *st);
	for (i = 0; i < n; i++)
		st[i].exit_code = -1;
}

START_TEST(test_state_names)
{
	ck_assert_str_eq(sched_state_name(SCHED_UNKNOWN), "unknown");
	ck_assert_str_eq(sched_state_name(SCHED_NODE_FAIL), "node_fail");
	ck_assert_str_eq(sched_state_name((enum sched_state)99), "unknown");
	ck_assert(!sched_state_final(SCHED_RUNNING));
	ck_assert(!sched_state_final(SCHED_UNKNOWN));
	ck_assert(sched_state_final(SCHED_DONE));
	ck_assert(sched_state_final(SCHED_TIMEOUT));
	ck_assert_int_eq(slurm_state_parse("PENDING", 7), SCHED_QUEUED);
	ck_assert_int_eq(slurm_state_parse("CONFIGURING", 11), SCHED_STARTING);
	ck_assert_int_eq(slurm_state_parse("COMPLETED", 9), SCHED_DONE);
	ck_assert_int_eq(slurm_state_parse("TIMEOUT", 7), SCHED_TIMEOUT);
	ck_assert_int_eq(slurm_state_parse("NODE_FAIL", 9), SCHED_NODE_FAIL);
	ck_assert_int_eq(slurm_state_parse("PENDINGX", 8), SCHED_UNKNOWN);
	ck_assert_int_eq(slurm_state_parse("PEND", 4), SCHED_UNKNOWN);
	ck_assert_int_eq(slurm_state_parse("", 0), SCHED_UNKNOWN);
}
END_TEST

START_TEST(test_job_id_ok)
{
	char	big[SCHED_JOB_ID_MAX + 1];

	ck_assert(sched_job_id_ok("123"));
	ck_assert(sched_job_id_ok("123_4"));
	ck_assert(sched_job_id_ok("4567.pbs01"));
	ck_assert(!sched_job_id_ok(""));
	ck_assert(!sched_job_id_ok(NULL));
	ck_assert(!sched_job_id_ok("12 3"));
	ck_assert(!sched_job_id_ok("1;rm"));
	ck_assert(!sched_job_id_ok("1\n"));
	memset(big, '1', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	ck_assert(!sched_job_id_ok(big));
	big[SCHED_JOB_ID_MAX - 1] = '\0';
	ck_assert(sched_job_id_ok(big));
}
END_TEST

START_TEST(test_parse_squeue)
{
	const char		*ids[] = { "1", "2", "3", "4", "5", "77" };
	struct sched_status	 st[6];
	size_t			 bad = 99;

	reset(st, 6);
	ck_assert_int_eq(slurm_parse_squeue(
	    "1|FAILED|NonZeroExitCode|node1|768|\n"
	    "2|CANCELLED|None|node1|15|\n"
	    "3|RUNNING|None|node[1-2]|0|\n"
	    "4|PENDING|Priority||0|\n"
	    "5|COMPLETED|None|node3|0|\n"
	    "\n"
	    "99|RUNNING|None|node4|0|\n",
	    ids, 6, st, &bad), 0);
	ck_assert_uint_eq(bad, 0);
	ck_assert_int_eq(st[0].state, SCHED_FAILED);
	ck_assert_int_eq(st[0].exit_code, 3);
	ck_assert_int_eq(st[0].exit_signal, 0);
	ck_assert_str_eq(st[0].reason, "NonZeroExitCode");
	ck_assert_str_eq(st[0].nodes, "node1");
	ck_assert_int_eq(st[1].state, SCHED_CANCELLED);
	ck_assert_int_eq(st[1].exit_code, -1);
	ck_assert_int_eq(st[1].exit_signal, 15);
	ck_assert_str_eq(st[1].reason, "");
	ck_assert_int_eq(st[2].state, SCHED_RUNNING);
	ck_assert_int_eq(st[2].exit_code, -1);	/* not final: not set */
	ck_assert_str_eq(st[2].nodes, "node[1-2]");
	ck_assert_int_eq(st[3].state, SCHED_QUEUED);
	ck_assert_str_eq(st[3].reason, "Priority");
	ck_assert_str_eq(st[3].nodes, "");
	ck_assert_int_eq(st[4].state, SCHED_DONE);
	ck_assert_int_eq(st[4].exit_code, 0);
	ck_assert_int_eq(st[5].state, SCHED_UNKNOWN);	/* not listed */
}
END_TEST

/* Garbage lines are counted and skipped; good lines among them count. */
START_TEST(test_parse_squeue_bad)
{
	static const char *const lines[] = {
		"1|RUNNING|None|node1|0",		/* no trailing bar */
		"1|RUNNING|None|node1|0|extra|",	/* too many */
		"1|RUNNING|None|node1|",		/* too few */
		"1|RUNNING|None|node1|x|",		/* exit not a number */
		"1|RUNNING|None|node1|-1|",
		"1|RUNNING|None|node1|70000|",
		"1|RUNNING|None|node1|99999999999999999999999|",
		"1|BOGUS|None|node1|0|",		/* unknown state */
		"|RUNNING|None|node1|0|",		/* empty id */
		"1 2|RUNNING|None|node1|0|",		/* bad id */
		"1;x|RUNNING|None|node1|0|",
		"||||||",
		"|",
		"garbage",
	};
	const char		*ids[] = { "1" };
	struct sched_status	 st[1];
	size_t			 i, bad;

	for (i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		reset(st, 1);
		bad = 0;
		ck_assert_int_eq(slurm_parse_squeue(lines[i], ids, 1, st,
		    &bad), 0);
		ck_assert_msg(bad == 1, "line %zu: %s", i, lines[i]);
		ck_assert_int_eq(st[0].state, SCHED_UNKNOWN);
	}
	/* one bad line among good ones */
	reset(st, 1);
	ck_assert_int_eq(slurm_parse_squeue("x|y\n1|TIMEOUT|TimeLimit|n1|15|\n",
	    ids, 1, st, &bad), 0);
	ck_assert_uint_eq(bad, 1);
	ck_assert_int_eq(st[0].state, SCHED_TIMEOUT);
	ck_assert_str_eq(st[0].reason, "TimeLimit");
}
END_TEST

/* Fields too long for the status, or with control characters, come out
 * empty, never truncated or overflowing. */
START_TEST(test_parse_squeue_long_fields)
{
	const char		*ids[] = { "1" };
	struct sched_status	 st[1];
	char			*text = NULL, *longf;
	size_t			 bad;

	longf = xmalloc(100001);
	memset(longf, 'n', 100000);
	longf[100000] = '\0';
	xasprintf(&text, "1|RUNNING|%s|%s|0|\n", longf, longf);
	reset(st, 1);
	ck_assert_int_eq(slurm_parse_squeue(text, ids, 1, st, &bad), 0);
	ck_assert_uint_eq(bad, 0);
	ck_assert_int_eq(st[0].state, SCHED_RUNNING);
	ck_assert_str_eq(st[0].reason, "");
	ck_assert_str_eq(st[0].nodes, "");
	free(text);
	reset(st, 1);
	ck_assert_int_eq(slurm_parse_squeue("1|RUNNING|a\033[2Jb|n1|0|", ids,
	    1, st, &bad), 0);
	ck_assert_str_eq(st[0].reason, "");
	ck_assert_str_eq(st[0].nodes, "n1");
	free(longf);
}
END_TEST

START_TEST(test_parse_sbatch)
{
	char	*id = NULL;

	ck_assert_int_eq(slurm_parse_sbatch("123\n", &id), 0);
	ck_assert_str_eq(id, "123");
	free(id);
	ck_assert_int_eq(slurm_parse_sbatch("456;cluster\n", &id), 0);
	ck_assert_str_eq(id, "456");
	free(id);
	ck_assert_int_eq(slurm_parse_sbatch("", &id), CADRE_ERR_PROTOCOL);
	ck_assert_ptr_null(id);
	ck_assert_int_eq(slurm_parse_sbatch("\n", &id), CADRE_ERR_PROTOCOL);
	ck_assert_int_eq(slurm_parse_sbatch("Submitted batch job 5\n", &id),
	    CADRE_ERR_PROTOCOL);
	ck_assert_int_eq(slurm_parse_sbatch("12a\n", &id), CADRE_ERR_PROTOCOL);
	ck_assert_int_eq(slurm_parse_sbatch(
	    "1111111111111111111111111111111111111111111111111111111111111111111",
	    &id), CADRE_ERR_PROTOCOL);
	ck_assert_ptr_null(id);
}
END_TEST

START_TEST(test_run_cmd)
{
	struct sched_config	 cfg = { .cmd_timeout = 2 };
	char			*out = NULL, *err = NULL;
	char			*echo[] = { (char *)"sh", (char *)"-c",
				    (char *)"echo out; echo err >&2; exit 3", NULL };
	char			*sleeper[] = { (char *)"sleep", (char *)"30", NULL };
	char			*big[] = { (char *)"head", (char *)"-c",
				    (char *)"100000", (char *)"/dev/zero", NULL };
	char			*missing[] = { (char *)"/nonexistent/cmd", NULL };
	int			 status;

	ck_assert_int_eq(sched_run_cmd(&cfg, echo, 1024, &status, &out, &err),
	    0);
	ck_assert_int_eq(status, 3);
	ck_assert_str_eq(out, "out\n");
	ck_assert_str_eq(err, "err\n");
	free(out);
	free(err);
	ck_assert_int_eq(sched_run_cmd(&cfg, sleeper, 1024, &status, &out,
	    &err), CADRE_ERR_TIMEOUT);
	ck_assert_ptr_null(out);
	ck_assert_int_eq(sched_run_cmd(&cfg, big, 1000, &status, &out, NULL),
	    CADRE_ERR_TOO_LARGE);
	ck_assert_ptr_null(out);
	ck_assert_int_eq(sched_run_cmd(&cfg, missing, 1000, &status, NULL,
	    NULL), 0);
	ck_assert_int_eq(status, 127);
}
END_TEST

START_TEST(test_open)
{
	struct sched	*s = NULL;

	ck_assert_int_eq(sched_open("nope", NULL, &s), CADRE_ERR_NOT_FOUND);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(sched_open("slurm", NULL, &s), 0);
	ck_assert_str_eq(s->ops->name, "slurm");
	ck_assert_int_eq(sched_cancel(s, "1;reboot"), CADRE_ERR_INVALID);
	sched_close(s);
}
END_TEST

/* slurmrestd replies: the job, an unknown id, and replies that lack what
 * is needed. */
START_TEST(test_parse_rest)
{
	static const struct {
		const char	*json;
		int		 ret;
		enum sched_state state;
		int		 exit_code, exit_signal;
	} cases[] = {
		{ "{\"jobs\":[{\"job_id\":7,\"job_state\":\"FAILED\","
		  "\"state_reason\":\"NonZeroExitCode\",\"nodes\":\"node1\","
		  "\"exit_code\":768}],\"errors\":[]}", 0, SCHED_FAILED, 3, 0 },
		{ "{\"jobs\":[{\"job_id\":7,\"job_state\":\"CANCELLED\","
		  "\"exit_code\":15}]}", 0, SCHED_CANCELLED, -1, 15 },
		{ "{\"jobs\":[{\"job_id\":7,\"job_state\":\"RUNNING\"}]}", 0,
		  SCHED_RUNNING, -1, 0 },
		{ "{\"jobs\":[{\"job_id\":8,\"job_state\":\"RUNNING\"}]}",
		  CADRE_ERR_NOT_FOUND, SCHED_UNKNOWN, -1, 0 },
		{ "{\"jobs\":[],\"errors\":[{\"error_number\":2017,"
		  "\"error\":\"Invalid job id specified\"}]}",
		  CADRE_ERR_NOT_FOUND, SCHED_UNKNOWN, -1, 0 },
		{ "{}", CADRE_ERR_PROTOCOL, SCHED_UNKNOWN, -1, 0 },
		{ "{\"jobs\":{}}", CADRE_ERR_PROTOCOL, SCHED_UNKNOWN, -1, 0 },
		{ "{\"jobs\":[1]}", CADRE_ERR_PROTOCOL, SCHED_UNKNOWN, -1, 0 },
		{ "{\"jobs\":[{\"job_id\":\"7\"}]}", CADRE_ERR_PROTOCOL,
		  SCHED_UNKNOWN, -1, 0 },
		{ "{\"jobs\":[{\"job_id\":7}]}", CADRE_ERR_PROTOCOL,
		  SCHED_UNKNOWN, -1, 0 },
		{ "{\"jobs\":[{\"job_id\":7,\"job_state\":\"WEIRD\"}]}",
		  CADRE_ERR_PROTOCOL, SCHED_UNKNOWN, -1, 0 },
		{ "{\"jobs\":[{\"job_id\":7,\"job_state\":\"COMPLETED\","
		  "\"exit_code\":99999999}]}", 0, SCHED_DONE, -1, 0 },
	};
	struct sched_status	st;
	json_t			*j;
	size_t			 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		j = json_loads(cases[i].json, 0, NULL);
		ck_assert_ptr_nonnull(j);
		reset(&st, 1);
		ck_assert_msg(slurmrest_parse_job((const struct json_t *)j, "7",
		    &st) == cases[i].ret, "case %zu", i);
		if (cases[i].ret == 0) {
			ck_assert_int_eq(st.state, cases[i].state);
			ck_assert_int_eq(st.exit_code, cases[i].exit_code);
			ck_assert_int_eq(st.exit_signal, cases[i].exit_signal);
		}
		json_decref(j);
	}
	j = json_loads(cases[0].json, 0, NULL);
	reset(&st, 1);
	ck_assert_int_eq(slurmrest_parse_job(j, "7", &st), 0);
	ck_assert_str_eq(st.reason, "NonZeroExitCode");
	ck_assert_str_eq(st.nodes, "node1");
	json_decref(j);
}
END_TEST

START_TEST(test_rest_open)
{
	struct sched		*s = NULL;
	struct sched_config	 cfg = { .rest_url = "ftp://x" };

	ck_assert_int_eq(sched_open("slurm-rest", &cfg, &s), CADRE_ERR_INVALID);
	ck_assert_ptr_null(s);
	cfg.rest_url = NULL;
	ck_assert_int_eq(sched_open("slurm-rest", &cfg, &s), CADRE_ERR_INVALID);
	cfg.rest_url = "unix:///run/x.sock";
	ck_assert_int_eq(sched_open("slurm-rest", &cfg, &s), 0);
	sched_close(s);
	cfg.rest_url = "https://slurm.example.org:6820/";
	ck_assert_int_eq(sched_open("slurm-rest", &cfg, &s), 0);
	sched_close(s);
}
END_TEST

static Suite *
slurm_suite(void)
{
	Suite	*s = suite_create("sched_slurm");
	TCase	*tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_state_names);
	tcase_add_test(tc, test_job_id_ok);
	tcase_add_test(tc, test_parse_squeue);
	tcase_add_test(tc, test_parse_squeue_bad);
	tcase_add_test(tc, test_parse_squeue_long_fields);
	tcase_add_test(tc, test_parse_sbatch);
	tcase_add_test(tc, test_run_cmd);
	tcase_add_test(tc, test_open);
	tcase_add_test(tc, test_parse_rest);
	tcase_add_test(tc, test_rest_open);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	log_init("test_sched_slurm", LOG_LEVEL_ERROR, LOG_TARGET_STDERR);
	return unit_run(slurm_suite());
}
