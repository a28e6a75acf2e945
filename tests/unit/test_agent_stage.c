/* Staging's parsers (--stage SRC:DST, the %n expansion, the manifest
 * RUN_DIR/stage/K.json, bounds and bad input) and SLURM_TASKS_PER_NODE
 * for launch --from-env. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libssh/libssh.h>

#include "agent.h"
#include "error.h"
#include "fromenv.h"
#include "stage.h"
#include "xmalloc.h"
#include "unit.h"

/* main.c's helpers live beside main(): these stand in for them. */
const char *
agent_self_path(void)
{
	return "/nonexistent/cadre-agent";
}

double
now_mono(void)
{
	return (double)clock() / CLOCKS_PER_SEC;
}

const char *
rundir_default(const char *opt)
{
	return opt;
}

#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

START_TEST(test_pair)
{
	struct stage_pair	p;
	char			msg[512];

	ck_assert_int_eq(stage_pair_parse("/lustre/d:/tmp/%n/d", &p, msg,
	    sizeof msg), 0);
	ck_assert_str_eq(p.src, "/lustre/d");
	ck_assert_str_eq(p.dst, "/tmp/%n/d");
	stage_pair_free(&p);
	/* the first ":/" splits: a ':' inside SRC stays */
	ck_assert_int_eq(stage_pair_parse("/a:b/c:/x", &p, msg, sizeof msg),
	    0);
	ck_assert_str_eq(p.src, "/a:b/c");
	ck_assert_str_eq(p.dst, "/x");
	stage_pair_free(&p);
	ck_assert_int_eq(stage_pair_parse("rel:/x", &p, msg, sizeof msg),
	    CADRE_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(msg, "expected SRC:DST"));
	ck_assert_int_eq(stage_pair_parse("/a:rel", &p, msg, sizeof msg),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(stage_pair_parse("/a", &p, msg, sizeof msg),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(stage_pair_parse(":/a", &p, msg, sizeof msg),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(stage_pair_parse("/a:/b/%x", &p, msg, sizeof msg),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(stage_pair_parse("/a:/b/%", &p, msg, sizeof msg),
	    CADRE_ERR_INVALID);
}
END_TEST

START_TEST(test_expand)
{
	char	*out;

	ck_assert_int_eq(stage_expand_dst("/t/%n/x%%y%n", "node7", &out), 0);
	ck_assert_str_eq(out, "/t/node7/x%ynode7");
	free(out);
	ck_assert_int_eq(stage_expand_dst("t/%n", "n", &out),
	    CADRE_ERR_INVALID);
	ck_assert_ptr_null(out);
	ck_assert_int_eq(stage_expand_dst("", "n", &out), CADRE_ERR_INVALID);
	ck_assert_int_eq(stage_expand_dst("/%q", "n", &out),
	    CADRE_ERR_INVALID);
}
END_TEST

static int
parse(const char *text, struct stage_manifest *m, char *msg, size_t len)
{
	return stage_manifest_parse(text, strlen(text), m, msg, len);
}

START_TEST(test_manifest_good)
{
	struct stage_manifest	m;
	char			msg[512];

	ck_assert_int_eq(parse("{\"version\": 1, \"src\": \"/s\", \"dst\": "
	    "\"/d/%n\", \"files\": [{\"path\": \"a/b.bin\", \"size\": 3, "
	    "\"mode\": 420, \"sha256\": \"" H64 "\"}, {\"path\": \"c\", "
	    "\"size\": 0, \"mode\": 0, \"sha256\": \"" H64 "\"}]}", &m, msg,
	    sizeof msg), 0);
	ck_assert_uint_eq(m.n, 2);
	ck_assert_str_eq(m.files[0].path, "a/b.bin");
	ck_assert_int_eq(m.files[0].size, 3);
	ck_assert_uint_eq(m.files[0].mode, 0644);
	ck_assert_str_eq(m.files[1].sha256, H64);
	ck_assert_str_eq(m.dst, "/d/%n");
	stage_manifest_free(&m);
	ck_assert_int_eq(parse("{\"version\": 1, \"src\": \"/s\", \"dst\": "
	    "\"/d\", \"files\": []}", &m, msg, sizeof msg), 0);
	ck_assert_uint_eq(m.n, 0);
	stage_manifest_free(&m);
}
END_TEST

#define F(path, size, mode, hash) \
	"{\"version\": 1, \"src\": \"/s\", \"dst\": \"/d\", \"files\": " \
	"[{\"path\": " path ", \"size\": " size ", \"mode\": " mode \
	", \"sha256\": " hash "}]}"

static const char *const bad[] = {
	"",
	"[]",
	"{\"version\": 1",
	"{\"version\": 2, \"src\": \"/s\", \"dst\": \"/d\", \"files\": []}",
	"{\"version\": 1, \"src\": \"s\", \"dst\": \"/d\", \"files\": []}",
	"{\"version\": 1, \"src\": \"/s\", \"dst\": \"d\", \"files\": []}",
	"{\"version\": 1, \"src\": \"/s\", \"dst\": \"/d%x\", \"files\": []}",
	"{\"version\": 1, \"src\": \"/s\", \"dst\": \"/d\", \"files\": {}}",
	"{\"version\": 1, \"src\": \"/s\", \"dst\": \"/d\"}",
	F("\"../etc/passwd\"", "1", "0", "\"" H64 "\""),
	F("\"a/../../b\"", "1", "0", "\"" H64 "\""),
	F("\"/abs\"", "1", "0", "\"" H64 "\""),
	F("\"a//b\"", "1", "0", "\"" H64 "\""),
	F("\"a/./b\"", "1", "0", "\"" H64 "\""),
	F("\"\"", "1", "0", "\"" H64 "\""),
	F("\"a\\nb\"", "1", "0", "\"" H64 "\""),
	F("\"a/\"", "1", "0", "\"" H64 "\""),
	F("\"a\"", "-1", "0", "\"" H64 "\""),
	F("\"a\"", "1.5", "0", "\"" H64 "\""),
	F("\"a\"", "1", "4096", "\"" H64 "\""),
	F("\"a\"", "1", "0", "\"" H64 "0\""),
	F("\"a\"", "1", "0", "\"0123\""),
	F("\"a\"", "1", "0", "\"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\""),
	F("\"a\"", "1", "0", "null"),
	F("1", "1", "0", "\"" H64 "\""),
};

START_TEST(test_manifest_bad)
{
	struct stage_manifest	m;
	char			msg[512];

	msg[0] = '\0';
	ck_assert_int_ne(parse(bad[_i], &m, msg, sizeof msg), 0);
	ck_assert_msg(msg[0] != '\0', "no message for case %d", _i);
	ck_assert_ptr_null(m.files);
	ck_assert_ptr_null(m.src);
}
END_TEST

START_TEST(test_manifest_bounds)
{
	struct stage_manifest	m;
	char			msg[512], *big;
	size_t			n = STAGE_MANIFEST_MAX + 1;

	big = xmalloc(n);
	memset(big, ' ', n);
	ck_assert_int_eq(stage_manifest_parse(big, n, &m, msg, sizeof msg),
	    CADRE_ERR_TOO_LARGE);
	free(big);
}
END_TEST

START_TEST(test_tasks_per_node)
{
	int	s[8];

	ck_assert_int_eq(fromenv_tasks_per_node("2(x3),1", 4, s), 0);
	ck_assert_int_eq(s[0], 2);
	ck_assert_int_eq(s[2], 2);
	ck_assert_int_eq(s[3], 1);
	ck_assert_int_eq(fromenv_tasks_per_node("4", 1, s), 0);
	ck_assert_int_eq(s[0], 4);
	ck_assert_int_eq(fromenv_tasks_per_node("1,2,3", 3, s), 0);
	ck_assert_int_eq(s[2], 3);
	ck_assert_int_eq(fromenv_tasks_per_node("2(x3)", 2, s),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(fromenv_tasks_per_node("2(x1)", 2, s),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(fromenv_tasks_per_node("", 1, s), CADRE_ERR_INVALID);
	ck_assert_int_eq(fromenv_tasks_per_node("0", 1, s),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(fromenv_tasks_per_node("-1", 1, s),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(fromenv_tasks_per_node("1,", 1, s),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(fromenv_tasks_per_node("1(x1", 1, s),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(fromenv_tasks_per_node("1(y1)", 1, s),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(fromenv_tasks_per_node("1(x0)", 1, s),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(fromenv_tasks_per_node("1(x99999999999999999999)",
	    1, s), CADRE_ERR_INVALID);
	ck_assert_int_eq(fromenv_tasks_per_node("5000", 1, s),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(fromenv_tasks_per_node(" 1", 1, s),
	    CADRE_ERR_INVALID);
}
END_TEST

static Suite *
stage_suite(void)
{
	Suite	*s = suite_create("agent_stage");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_pair);
	tcase_add_test(tc, test_expand);
	tcase_add_test(tc, test_manifest_good);
	tcase_add_loop_test(tc, test_manifest_bad, 0,
	    (int)(sizeof bad / sizeof bad[0]));
	tcase_add_test(tc, test_manifest_bounds);
	tcase_add_test(tc, test_tasks_per_node);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	int	status;

	ssh_init();
	status = unit_run(stage_suite());
	ssh_finalize();
	return status;
}
