/* common/rundir.c and rundir_read.c: the step-N names, the end reasons
 * and run states, and the one reader of metrics.jsonl and eval.jsonl on
 * good and bad input (long lines, a cut first line, a line being written,
 * the bounds, a FIFO, a symbolic link). */
#include "config.h"

#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "error.h"
#include "rundir.h"
#include "rundir_read.h"
#include "xmalloc.h"
#include "unit.h"

static char	dir[4096];

static void
setup(void)
{
	unit_mkdtemp(dir, sizeof dir, "test_rundir");
}

static void
teardown(void)
{
	unit_rmtree(dir);
}

/* dir/name with text; its path (caller frees). */
static char *
put(const char *name, const char *text)
{
	char	*path;

	xasprintf(&path, "%s/%s", dir, name);
	unit_write_file(path, text);
	return path;
}

/* What the reader handed over, one "KIND:LINENO:TEXT|" per call. */
static int
record(void *ctx, enum rundir_line kind, const char *line, size_t len,
    size_t lineno)
{
	static const char	kinds[] = { 'L', 'E', 'T' };

	cbuf_addf(ctx, "%c%zu:%.*s|", kinds[kind], lineno, (int)len,
	    line != NULL ? line : "");
	return 0;
}

static void
read_to(const char *path, const struct rundir_lines *o, int want_rc,
    const char *want)
{
	struct cbuf	b;

	cbuf_init(&b, 1 << 20);
	ck_assert_int_eq(rundir_read_lines(path, o, record, &b), want_rc);
	cbuf_addc(&b, '\0');
	ck_assert_str_eq(b.data, want);
	cbuf_free(&b);
}

START_TEST(test_ckpt_step)
{
	ck_assert_int_eq(rundir_ckpt_step(CKPT_DIR_PREFIX "0"), 0);
	ck_assert_int_eq(rundir_ckpt_step("step-120"), 120);
	ck_assert_int_eq(rundir_ckpt_step("step-"), -1);
	ck_assert_int_eq(rundir_ckpt_step("step--1"), -1);
	ck_assert_int_eq(rundir_ckpt_step("step-+1"), -1);
	ck_assert_int_eq(rundir_ckpt_step("step- 1"), -1);
	ck_assert_int_eq(rundir_ckpt_step("step-12x"), -1);
	ck_assert_int_eq(rundir_ckpt_step(".tmp-step-12"), -1);
	ck_assert_int_eq(rundir_ckpt_step("step-99999999999999999999"), -1);
	ck_assert_int_eq(rundir_ckpt_step(CKPT_LATEST), -1);
}
END_TEST

START_TEST(test_words)
{
	enum run_state	s;
	int		i;

	for (i = 0; rundir_status_reasons[i] != NULL; i++)
		ck_assert(rundir_status_reason_known(rundir_status_reasons[i]));
	ck_assert_int_eq(i, 7);
	ck_assert(rundir_status_reason_known(REASON_IO));
	ck_assert(!rundir_status_reason_known(REASON_TIMEOUT));
	ck_assert(!rundir_status_reason_known("Done"));
	ck_assert(!rundir_status_reason_known(""));
	for (i = 0; i < RUN_STATE_COUNT; i++) {
		ck_assert_int_eq(run_state_parse(run_state_name(i), &s), 0);
		ck_assert_int_eq(s, i);
	}
	ck_assert_str_eq(run_state_name(RUN_DONE), REASON_DONE);
	ck_assert_str_eq(run_state_name(RUN_FAILED), REASON_FAILED);
	ck_assert_str_eq(run_state_name(RUN_STATE_COUNT), "unknown");
	ck_assert_int_eq(run_state_parse("unknown", &s), CADRE_ERR_INVALID);
	ck_assert(run_state_final(RUN_CANCELLED) && !run_state_final(RUN_REQUEUED));
}
END_TEST

START_TEST(test_read_lines)
{
	struct rundir_lines	 o = { 0, 8, 0, 0, 0 };
	char			*p, *q;

	p = put("m", "a\n\nbbbbbbbbbbbbbbbb\nc\nlast");
	/* empty lines count but are not handed over; a long line is named;
	 * the last one without its newline comes as being written */
	read_to(p, &o, 0, "L1:a|T3:|L4:c|E5:last|");
	/* from an offset the first, cut, line is dropped */
	o.from = 2;
	read_to(p, &o, 0, "T1:|L2:c|E3:last|");
	o.from = 4;
	read_to(p, &o, 0, "L1:c|E2:last|");
	o.from = 0;
	o.max_lines = 3;
	read_to(p, &o, CADRE_ERR_TOO_LARGE, "L1:a|T3:|");
	o.max_lines = 0;
	o.max_bytes = 10;
	read_to(p, &o, CADRE_ERR_TOO_LARGE, "");
	free(p);

	xasprintf(&p, "%s/none", dir);
	read_to(p, &o, CADRE_ERR_NOT_FOUND, "");
	ck_assert_int_eq(mkfifo(p, 0600), 0);
	read_to(p, &o, CADRE_ERR_INVALID, "");	/* and does not block */
	free(p);

	p = put("real", "x\n");
	xasprintf(&q, "%s/link", dir);
	ck_assert_int_eq(symlink(p, q), 0);
	o.max_bytes = 0;
	read_to(q, &o, 0, "L1:x|");
	o.nofollow = 1;
	read_to(q, &o, CADRE_ERR_INVALID, "");
	free(p);
	free(q);
}
END_TEST

START_TEST(test_split_lines)
{
	struct cbuf	b;
	const char	*t = "cut\n{\"event\":\"step\"}\n\nend";

	cbuf_init(&b, 1 << 20);
	ck_assert_int_eq(rundir_split_lines(t, strlen(t), 1, 64, record, &b), 0);
	cbuf_addc(&b, '\0');
	ck_assert_str_eq(b.data, "L1:{\"event\":\"step\"}|E3:end|");
	cbuf_free(&b);
}
END_TEST

START_TEST(test_metrics_event)
{
	static const char *const bad[] = { "", "x", "[]", "{}", "{\"event\":1}",
	    "{\"step\":1}", "\"step\"", "{\"event\":\"step\"" };
	json_t		*o;
	const char	*ev;
	const char	*good = "{\"event\":\"summary\",\"complete\":true}";
	size_t		 i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_msg(rundir_metrics_event(RUNDIR_LINE, bad[i],
		    strlen(bad[i]), 1024, &o, &ev) == CADRE_ERR_INVALID,
		    "accepted %s", bad[i]);
		ck_assert_ptr_null(o);
	}
	ck_assert_int_eq(rundir_metrics_event(RUNDIR_LINE, good, strlen(good),
	    1024, &o, &ev), 0);
	ck_assert_str_eq(ev, MX_EV_SUMMARY);
	json_decref(o);
	/* over the bound, and a line the reader already found too long */
	ck_assert_int_eq(rundir_metrics_event(RUNDIR_LINE, good, strlen(good),
	    8, &o, &ev), CADRE_ERR_INVALID);
	ck_assert_int_eq(rundir_metrics_event(RUNDIR_LINE_TOO_LONG, NULL, 0,
	    1024, &o, &ev), CADRE_ERR_INVALID);
}
END_TEST

struct evals {
	int	good, bad;
	int64_t	last;
};

static int
eval_good(void *ctx, const struct rundir_eval *e)
{
	struct evals	*v = ctx;

	v->good++;
	v->last = e->step;
	return 0;
}

static void
eval_bad(void *ctx, size_t lineno, const char *msg)
{
	struct evals	*v = ctx;

	(void)lineno;
	ck_assert(msg[0] != '\0');
	v->bad++;
}

START_TEST(test_read_eval)
{
	struct evals	 v = { 0, 0, -1 };
	struct cbuf	 b;
	char		*p;

	p = put("eval.jsonl", "{\"step\":4,\"loss\":2,\"accuracy\":0.5}\n"
	    "not json\n{\"step\":8,\"error\":\"checksum\"}\n"
	    "{\"step\":12,\"loss\":1,\"accuracy\":0.7}");
	ck_assert_int_eq(rundir_read_eval(p, &v, eval_good, eval_bad), 0);
	/* the last line, not yet ended, is left for the next read */
	ck_assert_int_eq(v.good, 2);
	ck_assert_int_eq(v.bad, 1);
	ck_assert_int_eq(v.last, 8);
	free(p);

	/* a line over the bound is one bad line; a file over its bound is
	 * not read at all */
	cbuf_init(&b, RUNDIR_EVAL_LINE_MAX + 64);
	cbuf_addc(&b, '{');
	while (b.len < RUNDIR_EVAL_LINE_MAX + 10)
		cbuf_adds(&b, "        ");
	cbuf_adds(&b, "}\n");
	cbuf_addc(&b, '\0');
	p = put("long.jsonl", b.data);
	memset(&v, 0, sizeof v);
	ck_assert_int_eq(rundir_read_eval(p, &v, eval_good, eval_bad), 0);
	ck_assert_int_eq(v.bad, 1);
	free(p);
	p = put("big.jsonl", "{\"step\":4,\"loss\":2,\"accuracy\":0.5}\n");
	ck_assert_int_eq(truncate(p, (off_t)RUNDIR_EVAL_MAX + 1), 0);
	memset(&v, 0, sizeof v);
	ck_assert_int_eq(rundir_read_eval(p, &v, eval_good, eval_bad),
	    CADRE_ERR_TOO_LARGE);
	ck_assert_int_eq(v.bad + v.good, 0);
	free(p);
	cbuf_free(&b);
}
END_TEST

static const char *
lookup_test(const char *name, void *ctx)
{
	(void)ctx;
	if (strcmp(name, "batch") == 0)
		return "32";
	if (strcmp(name, "dir") == 0)
		return "a b'c";
	return rundir_placeholder_env(name) != NULL ? "V" : NULL;
}

/* {name} expansion: the one reader of the syntax (spec check, agent). */
START_TEST(test_expand)
{
	static const struct {
		const char	*in;
		int		 shell;
		const char	*out;	/* NULL: an error at pos */
		size_t		 pos;
	} cases[] = {
		{ "--batch={batch}", 0, "--batch=32", 0 },
		{ "{nnodes}x{node_rank}", 0, "VxV", 0 },
		{ "{{literal}} }}", 0, "{literal} }", 0 },
		{ "cd {dir}", 1, "cd 'a b'\\''c'", 0 },
		{ "cd {dir}", 0, "cd a b'c", 0 },
		{ "plain", 0, "plain", 0 },
		{ "", 0, "", 0 },
		{ "x{nope}", 0, NULL, 1 },
		{ "a {batch} {nope}", 0, NULL, 10 },
		{ "x{batch", 0, "x{batch", 0 },
		{ "ab{}", 0, "ab{}", 0 },
		{ "a}b", 0, "a}b", 0 },
		{ "{ba-tch}", 0, "{ba-tch}", 0 },
		{ "{1x}", 0, "{1x}", 0 },
		{ "${HOME} ${batch}", 0, "${HOME} ${batch}", 0 },
		{ "{ echo {batch}; }", 1, "{ echo 32; }", 0 },
		{ "'{\"a\": {batch}}'", 0, "'{\"a\": 32}'", 0 },
		{ "{{batch}}", 0, "{batch}", 0 },
	};
	struct cbuf	b;
	char		msg[256];
	size_t		i, pos;
	int		rc;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cbuf_init(&b, 1 << 10);
		rc = rundir_expand(cases[i].in, lookup_test, NULL,
		    cases[i].shell, &b, &pos, msg, sizeof msg);
		if (cases[i].out != NULL) {
			ck_assert_msg(rc == 0, "%s: %s", cases[i].in, msg);
			ck_assert_str_eq(b.data != NULL ? b.data : "",
			    cases[i].out);
		} else {
			ck_assert_msg(rc == CADRE_ERR_INVALID, "%s: %d",
			    cases[i].in, rc);
			ck_assert_uint_eq(pos, cases[i].pos);
			ck_assert(msg[0] != '\0');
		}
		cbuf_free(&b);
	}
	/* the bound of out */
	cbuf_init(&b, 4);
	ck_assert_int_eq(rundir_expand("{batch}{batch}{batch}", lookup_test,
	    NULL, 0, &b, &pos, msg, sizeof msg), CADRE_ERR_TOO_LARGE);
	cbuf_free(&b);
}
END_TEST

static Suite *
rundir_suite(void)
{
	Suite	*s = suite_create("rundir");
	TCase	*tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_ckpt_step);
	tcase_add_test(tc, test_words);
	tcase_add_test(tc, test_read_lines);
	tcase_add_test(tc, test_split_lines);
	tcase_add_test(tc, test_metrics_event);
	tcase_add_test(tc, test_read_eval);
	tcase_add_test(tc, test_expand);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(rundir_suite());
}
