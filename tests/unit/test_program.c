/* program.json (agent/program.c): good and bad files, writing and reading
 * back, and the command with its {name}s expanded. */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "program.h"
#include "rundir.h"
#include "xmalloc.h"
#include "unit.h"

static int
parse(const char *text, struct program *p, char *msg, size_t msglen)
{
	return program_parse(text, strlen(text), p, msg, msglen);
}

START_TEST(test_good)
{
	struct program	 p;
	char		 msg[512], **av;

	ck_assert_int_eq(parse("{\"version\":1,\"command\":[\"torchrun\","
	    "\"--nnodes\",\"{nnodes}\",\"--batch={batch}\"],\"launch\":"
	    "\"per_node\",\"workdir\":\"/w\",\"env\":{\"OMP_NUM_THREADS\":\"4\"},"
	    "\"vars\":{\"batch\":\"32\"},\"signal\":\"SIGUSR2\","
	    "\"checkpoint_every\":300,\"keep_checkpoints\":2,\"setup\":"
	    "[\"true\"],\"metrics_regex\":\"step (?P<step>\\\\d+)\"}", &p, msg,
	    sizeof msg), 0);
	ck_assert_int_eq(p.launch, PROGRAM_PER_NODE);
	ck_assert_int_eq(p.signal, SIGUSR2);
	ck_assert_int_eq(p.checkpoint_every, 300);
	ck_assert_int_eq(p.keep_checkpoints, 2);
	ck_assert_uint_eq(p.nenv, 1);
	ck_assert_uint_eq(p.nsetup, 1);
	ck_assert_str_eq(p.metrics_regex, "step (?P<step>\\d+)");
	setenv(ENV_NNODES, "4", 1);
	ck_assert_int_eq(program_argv(&p, &av, msg, sizeof msg), 0);
	ck_assert_str_eq(av[0], "torchrun");
	ck_assert_str_eq(av[2], "4");
	ck_assert_str_eq(av[3], "--batch=32");
	ck_assert_ptr_null(av[4]);
	program_argv_free(av);
	program_free(&p);

	/* a string: sh -c, each value one shell word */
	ck_assert_int_eq(parse("{\"version\":1,\"command\":\"echo {x} && "
	    "exit\",\"vars\":{\"x\":\"a b\"}}", &p, msg, sizeof msg), 0);
	ck_assert_int_eq(p.launch, PROGRAM_PER_RANK);
	ck_assert_int_eq(p.signal, SIGUSR1);
	ck_assert_int_eq(program_argv(&p, &av, msg, sizeof msg), 0);
	ck_assert_str_eq(av[0], "/bin/sh");
	ck_assert_str_eq(av[2], "echo 'a b' && exit");
	program_argv_free(av);
	program_free(&p);
}
END_TEST

START_TEST(test_bad)
{
	static const struct {
		const char	*text, *why;
	} cases[] = {
		{ "", "line" },
		{ "[]", "object" },
		{ "{\"command\":[\"x\"]}", "version" },
		{ "{\"version\":2,\"command\":[\"x\"]}", "version" },
		{ "{\"version\":1}", "command" },
		{ "{\"version\":1,\"command\":[]}", "command" },
		{ "{\"version\":1,\"command\":\"\"}", "command" },
		{ "{\"version\":1,\"command\":[1]}", "command[0]" },
		{ "{\"version\":1,\"command\":[\"x\"],\"launch\":\"all\"}", "launch" },
		{ "{\"version\":1,\"command\":[\"x\"],\"workdir\":\"rel\"}", "absolute" },
		{ "{\"version\":1,\"command\":[\"x\"],\"env\":{\"A-B\":\"1\"}}", "variable name" },
		{ "{\"version\":1,\"command\":[\"x\"],\"env\":{\"A\":1}}", "env.A" },
		{ "{\"version\":1,\"command\":[\"x\"],\"signal\":\"USR1\"}", "signal" },
		{ "{\"version\":1,\"command\":[\"x\"],\"signal\":\"SIGNOPE\"}", "signal" },
		{ "{\"version\":1,\"command\":[\"x\"],\"checkpoint_every\":-1}", "negative" },
		{ "{\"version\":1,\"command\":[\"x\"],\"setup\":\"true\"}", "setup" },
	};
	struct program	p;
	char		msg[512];
	size_t		i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		msg[0] = '\0';
		ck_assert_msg(parse(cases[i].text, &p, msg, sizeof msg) != 0,
		    "%s parsed", cases[i].text);
		ck_assert_msg(strstr(msg, cases[i].why) != NULL, "%s: '%s'",
		    cases[i].text, msg);
	}
}
END_TEST

START_TEST(test_bad_name_at_run)
{
	struct program	 p;
	char		 msg[512], **av;

	ck_assert_int_eq(parse("{\"version\":1,\"command\":[\"x\","
	    "\"{nope}\"]}", &p, msg, sizeof msg), 0);
	ck_assert_int_eq(program_argv(&p, &av, msg, sizeof msg),
	    CADRE_ERR_INVALID);
	ck_assert_ptr_null(av);
	ck_assert_ptr_nonnull(strstr(msg, "unknown {nope}"));
	program_free(&p);
}
END_TEST

START_TEST(test_write_read)
{
	struct program	 p, q;
	char		 msg[512], dir[4096], *path;

	ck_assert_int_eq(parse("{\"version\":1,\"command\":[\"a\",\"b c\"],"
	    "\"launch\":\"once\",\"workdir\":\"/tmp\",\"vars\":{\"v\":\"1\"},"
	    "\"signal\":\"SIGTERM\",\"checkpoint_every\":5}", &p, msg,
	    sizeof msg), 0);
	unit_mkdtemp(dir, sizeof dir, "test_program");
	xasprintf(&path, "%s/program.json", dir);
	ck_assert_int_eq(program_write(path, &p, msg, sizeof msg), 0);
	ck_assert_int_eq(program_load(path, &q, msg, sizeof msg), 0);
	ck_assert_uint_eq(q.nwords, 2);
	ck_assert_str_eq(q.words[1], "b c");
	ck_assert_int_eq(q.launch, PROGRAM_ONCE);
	ck_assert_int_eq(q.signal, SIGTERM);
	ck_assert_int_eq(q.checkpoint_every, 5);
	ck_assert_str_eq(q.vars[0].value, "1");
	program_free(&p);
	program_free(&q);
	free(path);
	unit_rmtree(dir);
}
END_TEST

static Suite *
program_suite(void)
{
	Suite	*s = suite_create("program");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_good);
	tcase_add_test(tc, test_bad);
	tcase_add_test(tc, test_bad_name_at_run);
	tcase_add_test(tc, test_write_read);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(program_suite());
}
