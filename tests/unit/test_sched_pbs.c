#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "error.h"
#include "scheduler.h"
#include "unit.h"

static int
parse(const char *json, const char *id, struct sched_status *st)
{
	json_t	*j = json_loads(json, 0, NULL);
	int	 r;

	ck_assert_msg(j != NULL, "bad test JSON: %s", json);
	memset(st, 0, sizeof *st);
	st->exit_code = -1;
	r = pbs_parse_qstat((const struct json_t *)j, &id, 1, st);
	json_decref(j);
	return r;
}

START_TEST(test_states)
{
	static const struct {
		const char	*job;
		enum sched_state state;
		int		 exit_code, exit_signal;
	} cases[] = {
		{ "{\"job_state\":\"Q\"}", SCHED_QUEUED, -1, 0 },
		{ "{\"job_state\":\"H\"}", SCHED_QUEUED, -1, 0 },
		{ "{\"job_state\":\"R\",\"Exit_status\":null}", SCHED_RUNNING, -1, 0 },
		{ "{\"job_state\":\"E\"}", SCHED_RUNNING, -1, 0 },
		{ "{\"job_state\":\"F\",\"Exit_status\":0}", SCHED_DONE, 0, 0 },
		{ "{\"job_state\":\"X\",\"Exit_status\":2}", SCHED_FAILED, 2, 0 },
		{ "{\"job_state\":\"F\",\"Exit_status\":271,\"comment\":"
		  "\"job killed: walltime 3630 exceeded limit 3600\"}",
		  SCHED_TIMEOUT, -1, 15 },
		{ "{\"job_state\":\"F\",\"Exit_status\":271,"
		  "\"Resource_List\":{\"walltime\":\"01:00:00\"},"
		  "\"resources_used\":{\"walltime\":\"01:00:01\"}}",
		  SCHED_TIMEOUT, -1, 15 },
		{ "{\"job_state\":\"F\",\"Exit_status\":271,"
		  "\"Resource_List\":{\"walltime\":\"01:00:00\"},"
		  "\"resources_used\":{\"walltime\":\"00:10:00\"}}",
		  SCHED_FAILED, -1, 15 },
		{ "{\"job_state\":\"F\",\"Exit_status\":271,"
		  "\"Resource_List\":{\"walltime\":\"garbage\"},"
		  "\"resources_used\":{\"walltime\":7}}", SCHED_FAILED, -1, 15 },
		{ "{\"job_state\":\"F\"}", SCHED_CANCELLED, -1, 0 },
		{ "{\"job_state\":\"F\",\"Exit_status\":-3}", SCHED_FAILED, -1, 0 },
		{ "{\"job_state\":\"F\",\"Exit_status\":99999}", SCHED_FAILED, -1, 0 },
	};
	struct sched_status	 st;
	char			 json[512];
	size_t			 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(json, sizeof json, "{\"Jobs\":{\"7.s\":%s}}",
		    cases[i].job);
		ck_assert_msg(parse(json, "7.s", &st) == 0, "case %zu", i);
		ck_assert_msg(st.state == cases[i].state, "case %zu: %s", i,
		    sched_state_name(st.state));
		ck_assert_int_eq(st.exit_code, cases[i].exit_code);
		ck_assert_int_eq(st.exit_signal, cases[i].exit_signal);
	}
}
END_TEST

START_TEST(test_nodes_and_reason)
{
	struct sched_status	st;

	ck_assert_int_eq(parse("{\"Jobs\":{\"7.s\":{\"job_state\":\"R\","
	    "\"exec_host\":\"cn01/0*2+cn02/1*2\",\"comment\":\"running\"}}}",
	    "7.s", &st), 0);
	ck_assert_str_eq(st.nodes, "cn01,cn02");
	ck_assert_str_eq(st.reason, "running");
	ck_assert_int_eq(parse("{\"Jobs\":{\"7.s\":{\"job_state\":\"R\","
	    "\"exec_host\":\"/0+\",\"comment\":\"a\\nb\"}}}", "7.s", &st), 0);
	ck_assert_str_eq(st.nodes, "");
	ck_assert_str_eq(st.reason, "");
	ck_assert_int_eq(parse("{\"Jobs\":{\"7.s\":{\"job_state\":\"R\","
	    "\"exec_host\":\"bad host/0\"}}}", "7.s", &st), 0);
	ck_assert_str_eq(st.nodes, "");
}
END_TEST

START_TEST(test_bad)
{
	static const char *const bad[] = {
		"{\"Jobs\":[]}",
		"{\"Jobs\":{\"7.s\":1}}",
		"{\"Jobs\":{\"7.s\":{}}}",
		"{\"Jobs\":{\"7.s\":{\"job_state\":5}}}",
		"{\"Jobs\":{\"7.s\":{\"job_state\":\"\"}}}",
		"{\"Jobs\":{\"7.s\":{\"job_state\":\"RR\"}}}",
		"{\"Jobs\":{\"7.s\":{\"job_state\":\"Z\"}}}",
	};
	struct sched_status	st;
	size_t			i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(parse(bad[i], "7.s", &st) == CADRE_ERR_PROTOCOL,
		    "%s", bad[i]);
	/* not there: left as it was */
	ck_assert_int_eq(parse("{\"Jobs\":{\"8.s\":{\"job_state\":\"R\"}}}",
	    "7.s", &st), 0);
	ck_assert_int_eq(st.state, SCHED_UNKNOWN);
	ck_assert_int_eq(parse("{\"timestamp\":1}", "7.s", &st), 0);
	ck_assert_int_eq(st.state, SCHED_UNKNOWN);
}
END_TEST

static Suite *
pbs_suite(void)
{
	Suite	*s = suite_create("sched_pbs");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_states);
	tcase_add_test(tc, test_nodes_and_reason);
	tcase_add_test(tc, test_bad);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(pbs_suite());
}
