/* agents/NODE.json and log/rank-R.json parsing (bounds, types, bad input),
 * public key lines, lookup by name and address, and the run dir's
 * permission checks. */
#include "config.h"

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "agent.h"
#include "error.h"
#include "xmalloc.h"
#include "unit.h"

#define KEY "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINYCNVMKN7Eu2KTpK2UNi8Fjo/B1qc3dlrWR58YCyx9e"

static const char good[] =
    "{\"version\": 1, \"node\": \"node01\", \"addr\": \"127.0.1.1\", "
    "\"port\": 40022, \"hostkey\": \"" KEY "\", \"pid\": 1234, "
    "\"started\": 1795265090.5}";

static int
parse(const char *text, struct agent_info *ai, char *msg, size_t len)
{
	return agent_info_parse(text, strlen(text), ai, msg, len);
}

START_TEST(test_good)
{
	struct agent_info	ai;
	char			msg[256] = "";

	ck_assert_int_eq(parse(good, &ai, msg, sizeof msg), 0);
	ck_assert_str_eq(ai.node, "node01");
	ck_assert_str_eq(ai.addr, "127.0.1.1");
	ck_assert_int_eq(ai.port, 40022);
	ck_assert_str_eq(ai.hostkey, KEY);
	ck_assert_int_eq(ai.pid, 1234);
	ck_assert(ai.started > 1795265090.0);
}
END_TEST

/* Each bad document with a piece of the message it must give. */
static const struct {
	const char	*text;
	const char	*msg;
} bad[] = {
	{ "", "" },
	{ "[]", "not a JSON object" },
	{ "{\"version\": 1", "" },
	{ "{\"version\": 2}", "'version' must be 1" },
	{ "{\"version\": \"1\"}", "'version' must be 1" },
	{ "{\"version\": 1, \"version\": 1}", "" },
	{ "{\"version\": 1}", "'node' is missing" },
	{ "{\"version\": 1, \"node\": 5}", "'node' is not a string" },
	{ "{\"version\": 1, \"node\": \"../etc\"}", "'node' must match" },
	{ "{\"version\": 1, \"node\": \"\"}", "'node' must match" },
	{ "{\"version\": 1, \"node\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
	  "longer than 64" },
	{ "{\"version\": 1, \"node\": \"n\", \"addr\": \"a b\"}", "'addr' is not" },
	{ "{\"version\": 1, \"node\": \"n\", \"addr\": \"$(x)\"}", "'addr' is not" },
	{ "{\"version\": 1, \"node\": \"n\", \"addr\": \"h\", \"port\": 0}", "'port'" },
	{ "{\"version\": 1, \"node\": \"n\", \"addr\": \"h\", \"port\": 65536}", "'port'" },
	{ "{\"version\": 1, \"node\": \"n\", \"addr\": \"h\", \"port\": 22.5}", "'port'" },
	{ "{\"version\": 1, \"node\": \"n\", \"addr\": \"h\", \"port\": 22, \"hostkey\": \"ssh-rsa AAAA\"}",
	  "'hostkey' is not" },
	{ "{\"version\": 1, \"node\": \"n\", \"addr\": \"h\", \"port\": 22, \"hostkey\": \"ssh-ed25519 !!!\"}",
	  "'hostkey' is not" },
	{ "{\"version\": 1, \"node\": \"n\", \"addr\": \"h\", \"port\": 22, \"hostkey\": \"ssh-ed25519 AAAA\"}",
	  "'hostkey' is not" },
	{ "{\"version\": 1, \"node\": \"n\", \"addr\": \"h\", \"port\": 22, \"hostkey\": \"" KEY "\", \"pid\": 0}",
	  "'pid'" },
	{ "{\"version\": 1, \"node\": \"n\", \"addr\": \"h\", \"port\": 22, \"hostkey\": \"" KEY "\", \"pid\": 1}",
	  "'started'" },
	{ "{\"version\": 1, \"node\": \"n\", \"addr\": \"h\", \"port\": 22, \"hostkey\": \"" KEY "\", \"pid\": 1, \"started\": -1}",
	  "'started'" },
};

START_TEST(test_bad)
{
	struct agent_info	ai;
	char			msg[256];

	msg[0] = '\0';
	ck_assert_msg(parse(bad[_i].text, &ai, msg, sizeof msg) != 0,
	    "accepted: %s", bad[_i].text);
	ck_assert_msg(strstr(msg, bad[_i].msg) != NULL,
	    "'%s' gave '%s', expected '%s'", bad[_i].text, msg, bad[_i].msg);
}
END_TEST

START_TEST(test_bounds)
{
	struct agent_info	 ai;
	char			 msg[256], *big;
	size_t			 n = AGENT_INFO_MAX + 1;

	/* Over the bound: refused before parsing. */
	big = xmalloc(n + 1);
	memset(big, ' ', n);
	memcpy(big, good, strlen(good));
	big[n] = '\0';
	ck_assert_int_eq(agent_info_parse(big, n, &ai, msg, sizeof msg),
	    CADRE_ERR_TOO_LARGE);
	/* Exactly at the bound: fine. */
	ck_assert_int_eq(agent_info_parse(big, n - 1, &ai, msg, sizeof msg),
	    0);
	free(big);
	/* NUL inside and random bytes: refused, no crash. */
	ck_assert_int_ne(agent_info_parse("{\"a\"\0}", 6, &ai, msg,
	    sizeof msg), 0);
}
END_TEST

START_TEST(test_random_bytes)
{
	struct agent_info	ai;
	char			msg[256], buf[512];
	int			i, j;

	srand(42);
	for (i = 0; i < 2000; i++) {
		for (j = 0; j < (int)sizeof buf; j++)
			buf[j] = (char)(rand() & 0xff);
		if (i % 2)	/* keep a valid prefix half of the time */
			memcpy(buf, good, 40);
		ck_assert_int_ne(agent_info_parse(buf, (size_t)(rand() %
		    (int)sizeof buf), &ai, msg, sizeof msg), 0);
	}
}
END_TEST

START_TEST(test_pubkey_line)
{
	ssh_key	k = NULL;

	ck_assert_int_eq(pubkey_parse_line(KEY " comment\n",
	    strlen(KEY) + 9, &k), 0);
	ck_assert_ptr_nonnull(k);
	ssh_key_free(k);
	ck_assert_int_ne(pubkey_parse_line("ssh-ed25519", 11, &k), 0);
	ck_assert_ptr_null(k);
	ck_assert_int_ne(pubkey_parse_line("ssh-dss AAAA", 12, &k), 0);
	ck_assert_int_ne(pubkey_parse_line("ssh-ed25519 A\0AA", 16, &k), 0);
}
END_TEST

START_TEST(test_find_and_modes)
{
	struct agent_info	 ai;
	char			 tmpl[4096], msg[512];
	char			*p;
	FILE			*f;

	unit_mkdtemp(tmpl, sizeof tmpl, "test_agent_info");
	ck_assert_int_eq(rundir_keygen(tmpl, msg, sizeof msg), 0);
	ck_assert_int_eq(rundir_check(tmpl, msg, sizeof msg), 0);
	p = rundir_path(tmpl, RUNDIR_AGENTS);
	ck_assert_int_eq(rundir_mkdir_private(p, msg, sizeof msg), 0);
	free(p);
	p = rundir_path(tmpl, "agents/node01.json");
	f = fopen(p, "w");
	fputs(good, f);
	fclose(f);
	free(p);
	p = rundir_path(tmpl, "agents/junk.json");
	f = fopen(p, "w");
	fputs("not json", f);
	fclose(f);
	free(p);

	ck_assert_int_eq(agent_info_find(tmpl, "node01", &ai, msg, sizeof msg),
	    0);
	ck_assert_int_eq(agent_info_find(tmpl, "127.0.1.1", &ai, msg,
	    sizeof msg), 0);
	ck_assert_str_eq(ai.node, "node01");
	ck_assert_int_eq(agent_info_find(tmpl, "127.0.1.2", &ai, msg,
	    sizeof msg), CADRE_ERR_NOT_FOUND);
	ck_assert_int_eq(agent_info_find(tmpl, "../x", &ai, msg, sizeof msg),
	    CADRE_ERR_NOT_FOUND);
	ck_assert_int_ne(agent_info_find(tmpl, "junk", &ai, msg, sizeof msg),
	    0);

	/* Modes: a group-readable key or a 0755 run dir is refused. */
	p = rundir_path(tmpl, RUNDIR_CLIENT_KEY);
	chmod(p, 0640);
	ck_assert_int_eq(rundir_check(tmpl, msg, sizeof msg), CADRE_ERR_AUTH);
	ck_assert_ptr_nonnull(strstr(msg, "too open"));
	chmod(p, 0600);
	free(p);
	chmod(tmpl, 0755);
	ck_assert_int_eq(rundir_check(tmpl, msg, sizeof msg), CADRE_ERR_AUTH);
	chmod(tmpl, 0700);
	ck_assert_int_eq(rundir_keygen(tmpl, msg, sizeof msg),
	    CADRE_ERR_EXISTS);

	unit_rmtree(tmpl);
}
END_TEST

START_TEST(test_rank_status)
{
	static const struct {
		const char	*text;
		int		 ok;
	} cases[] = {
		{ "{\"version\": 1, \"rank\": 3, \"node\": \"n2\", \"exit\": 4, \"signal\": null}", 1 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"exit\": null, \"signal\": \"TERM\"}", 1 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"signal\": 9}", 1 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\"}", 0 },
		{ "{\"version\": 2, \"rank\": 0, \"node\": \"n1\", \"exit\": 0}", 0 },
		{ "{\"version\": 1, \"rank\": -1, \"node\": \"n1\", \"exit\": 0}", 0 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"../x\", \"exit\": 0}", 0 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"exit\": 256}", 0 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"exit\": \"0\"}", 0 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"signal\": \"term; rm\"}", 0 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"signal\": \"TERMTERMTERMTERMTERM\"}", 0 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"signal\": 0}", 0 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"exit\": 7, \"ended\": 1795265090.25}", 1 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"exit\": 7, \"ended\": -1}", 0 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"exit\": 7, \"ended\": \"now\"}", 0 },
		{ "[1, 2]", 0 },
		{ "", 0 },
		/* 17..: what a program's rank adds */
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"exit\": null, \"signal\": \"KILL\", \"peak_rss_bytes\": 123456789012, \"oom\": true}", 1 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"exit\": 127, \"message\": \"cannot run x: No such file or directory\"}", 1 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"exit\": 0, \"peak_rss_bytes\": -1}", 0 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"exit\": 0, \"peak_rss_bytes\": 1.5}", 0 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"exit\": 0, \"oom\": 1}", 0 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"exit\": 0, \"message\": 7}", 0 },
		{ "{\"version\": 1, \"rank\": 0, \"node\": \"n1\", \"exit\": 0, \"oom\": false, \"peak_rss_bytes\": null}", 1 },
	};
	struct rank_status	 rs;
	char			 msg[256], *big;
	size_t			 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_msg((rank_status_parse(cases[i].text,
		    strlen(cases[i].text), &rs, msg, sizeof msg) == 0) ==
		    cases[i].ok, "case %zu: %s", i, cases[i].text);
	ck_assert_int_eq(rank_status_parse(cases[0].text, strlen(cases[0].text),
	    &rs, msg, sizeof msg), 0);
	ck_assert_int_eq(rs.rank, 3);
	ck_assert_str_eq(rs.node, "n2");
	ck_assert_int_eq(rs.exited, 1);
	ck_assert_int_eq(rs.exit_code, 4);
	ck_assert(rs.ended == 0);
	ck_assert_int_eq(rank_status_parse(cases[12].text, strlen(cases[12].text),
	    &rs, msg, sizeof msg), 0);
	ck_assert(rs.ended == 1795265090.25);
	ck_assert(rs.peak_rss_bytes == -1 && !rs.oom && rs.message[0] == '\0');
	ck_assert_int_eq(rank_status_parse(cases[17].text, strlen(cases[17].text),
	    &rs, msg, sizeof msg), 0);
	ck_assert(rs.peak_rss_bytes == INT64_C(123456789012));
	ck_assert_int_eq(rs.oom, 1);
	ck_assert_str_eq(rs.signal, "KILL");
	ck_assert_int_eq(rank_status_parse(cases[18].text, strlen(cases[18].text),
	    &rs, msg, sizeof msg), 0);
	ck_assert_str_eq(rs.message, "cannot run x: No such file or directory");
	ck_assert_int_eq(rs.exit_code, 127);
	/* A message over RANK_MESSAGE_MAX bytes: rank never writes one. */
	big = xmalloc(RANK_MESSAGE_MAX + 200);
	snprintf(big, RANK_MESSAGE_MAX + 200, "{\"version\": 1, \"rank\": 0, "
	    "\"node\": \"n1\", \"exit\": 1, \"message\": \"%0*d\"}",
	    RANK_MESSAGE_MAX + 1, 0);
	ck_assert_int_ne(rank_status_parse(big, strlen(big), &rs, msg,
	    sizeof msg), 0);
	free(big);
	big = xmalloc(RANK_STATUS_MAX + 2);
	memset(big, ' ', RANK_STATUS_MAX + 1);
	memcpy(big, cases[0].text, strlen(cases[0].text));
	big[RANK_STATUS_MAX + 1] = '\0';
	ck_assert_int_eq(rank_status_parse(big, RANK_STATUS_MAX + 1, &rs, msg,
	    sizeof msg), CADRE_ERR_TOO_LARGE);
	free(big);
}
END_TEST

static Suite *
agent_info_suite(void)
{
	Suite	*s = suite_create("agent_info");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_good);
	tcase_add_loop_test(tc, test_bad, 0, (int)(sizeof bad / sizeof bad[0]));
	tcase_add_test(tc, test_bounds);
	tcase_add_test(tc, test_random_bytes);
	tcase_add_test(tc, test_pubkey_line);
	tcase_add_test(tc, test_rank_status);
	tcase_add_test(tc, test_find_and_modes);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	int	status;

	ssh_init();
	status = unit_run(agent_info_suite());
	ssh_finalize();
	return status;
}
