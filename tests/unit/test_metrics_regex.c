/* A program's output lines into metrics.jsonl events (agent/metrics_regex.c):
 * good lines, groups that did not take part, values that are not numbers,
 * huge numbers, a line over the bound, patterns that do not compile. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "metrics_regex.h"
#include "xmalloc.h"
#include "unit.h"

#define HF_REGEX "step (?<step>\\d+)/\\d+ loss=(?<loss>\\S+)" \
	"(?: samples/s=(?<samples_per_s>\\S+))?(?: acc=(?<accuracy>\\S+))?"

static struct metrics_regex *
compile(const char *pattern)
{
	struct metrics_regex	*mr;
	char			 msg[256] = "";

	ck_assert_msg(metrics_regex_compile(pattern, &mr, msg, sizeof msg) ==
	    0, "%s: %s", pattern, msg);
	return mr;
}

/* metrics_regex_line() of a NUL-terminated line. */
static int
match(struct metrics_regex *mr, const char *line, double elapsed,
    struct cbuf *out, char *msg, size_t msglen)
{
	return metrics_regex_line(mr, line, strlen(line), elapsed, out, msg,
	    msglen);
}

/* pattern on line gives the metrics line want. */
static void
expect(const char *pattern, const char *line, double elapsed,
    const char *want)
{
	struct metrics_regex	*mr = compile(pattern);
	struct cbuf		 out;
	char			 msg[256] = "";

	cbuf_init(&out, METRICS_REGEX_OUT_MAX);
	ck_assert_msg(match(mr, line, elapsed, &out, msg, sizeof msg) == 1,
	    "%s on %s: %s", pattern, line, msg);
	ck_assert_str_eq(out.data, want);
	cbuf_free(&out);
	metrics_regex_free(mr);
}

START_TEST(test_good)
{
	struct metrics_regex	*mr = compile(HF_REGEX);
	struct cbuf		 out;
	char			 msg[256];

	cbuf_init(&out, METRICS_REGEX_OUT_MAX);
	ck_assert_int_eq(match(mr, "[train] step 12/100 loss=2.5 "
	    "samples/s=310.25 acc=0.5 lr=1e-4", 3.5, &out, msg, sizeof msg), 1);
	ck_assert_str_eq(out.data, "{\"event\":\"step\",\"step\":12,"
	    "\"accuracy\":0.5,\"loss\":2.5,\"samples_per_s\":310.25,"
	    "\"elapsed_s\":3.5}\n");
	/* Values as numbers: the shortest text that reads back. */
	ck_assert_int_eq(match(mr, "step 0/1 loss=0.1", 0, &out, msg,
	    sizeof msg), 1);
	ck_assert_str_eq(out.data, "{\"event\":\"step\",\"step\":0,"
	    "\"loss\":0.1,\"elapsed_s\":0}\n");
	ck_assert_int_eq(match(mr, "step 3/9 loss=-1.5e-3", 0, &out, msg,
	    sizeof msg), 1);
	ck_assert_ptr_nonnull(strstr(out.data, "\"loss\":-0.0015,"));
	cbuf_free(&out);
	metrics_regex_free(mr);

	/* elapsed_s and samples captured: as written, samples an integer. */
	expect("it (?<step>\\d+) t=(?<elapsed_s>[0-9.]+)s n=(?<samples>\\d+)",
	    "it 7 t=12.25s n=896", 99, "{\"event\":\"step\",\"step\":7,"
	    "\"elapsed_s\":12.25,\"samples\":896}\n");
}
END_TEST

START_TEST(test_missing_groups)
{
	struct metrics_regex	*mr;
	struct cbuf		 out;
	char			 msg[256];

	/* Optional groups that did not take part are left out. */
	expect(HF_REGEX, "step 5/9 loss=3", 1.25, "{\"event\":\"step\","
	    "\"step\":5,\"loss\":3,\"elapsed_s\":1.25}\n");

	/* A step group that did not take part: no event. */
	mr = compile("(?:step (?<step>\\d+)|eval) loss=(?<loss>\\S+)");
	cbuf_init(&out, METRICS_REGEX_OUT_MAX);
	ck_assert_int_eq(match(mr, "eval loss=1.5", 0, &out, msg, sizeof msg),
	    0);
	ck_assert_uint_eq(out.len, 0);
	ck_assert_int_eq(match(mr, "step 4 loss=1.5", 0, &out, msg,
	    sizeof msg), 1);
	cbuf_free(&out);
	metrics_regex_free(mr);

	/* A name given twice ((?J)): written once, from the group that took
	 * part. */
	expect("(?J)(?:a (?<step>\\d+) (?<loss>\\S+)|b (?<loss>\\S+) "
	    "(?<step>\\d+))", "b 0.25 8", 0, "{\"event\":\"step\","
	    "\"step\":8,\"loss\":0.25,\"elapsed_s\":0}\n");
}
END_TEST

START_TEST(test_bad_numbers)
{
	static const char *const bad[] = {
		"step x loss=2.5",		/* not digits: no match */
		"step 1 loss=abc",
		"step 1 loss=2.5,",
		"step 1 loss=nan",
		"step 1 loss=inf",
		"step 1 loss=0x10",
		"step 1 loss=1e999",		/* out of range */
		"step 99999999999999999999 loss=1",	/* over INT64_MAX */
		"step 1 loss=1 samples=-4",
		"step 1 loss=1 samples=1.5",
	};
	struct metrics_regex	*mr;
	struct cbuf		 out;
	char			 msg[256];
	size_t			 i;
	int			 rc;

	mr = compile("step (?<step>\\S+) loss=(?<loss>\\S+)"
	    "(?: samples=(?<samples>\\S+))?");
	cbuf_init(&out, METRICS_REGEX_OUT_MAX);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		msg[0] = '\0';
		rc = match(mr, bad[i], 0, &out, msg, sizeof msg);
		ck_assert_msg(rc == CADRE_ERR_INVALID, "%s: %d", bad[i], rc);
		ck_assert_msg(msg[0] != '\0', "%s: no message", bad[i]);
		ck_assert_uint_eq(out.len, 0);
	}
	ck_assert_int_eq(match(mr, "step 1 loss=abc", 0, &out, msg,
	    sizeof msg), CADRE_ERR_INVALID);
	ck_assert_str_eq(msg, "loss: 'abc' is not a finite number");
	/* The largest of each type is fine. */
	ck_assert_int_eq(match(mr, "step 9223372036854775807 loss=1e308", 0,
	    &out, msg, sizeof msg), 1);
	ck_assert_ptr_nonnull(strstr(out.data,
	    "\"step\":9223372036854775807,\"loss\":1e+308"));
	/* A value of hundreds of digits is no number. */
	{
		char	line[600];

		snprintf(line, sizeof line, "step 1 loss=%0500d", 1);
		ck_assert_int_eq(match(mr, line, 0, &out, msg, sizeof msg),
		    CADRE_ERR_INVALID);
	}
	cbuf_free(&out);
	metrics_regex_free(mr);
}
END_TEST

START_TEST(test_long_lines)
{
	struct metrics_regex	*mr = compile(HF_REGEX);
	struct cbuf		 out;
	char			 msg[256], *line;
	size_t			 n = (size_t)1 << 20;

	cbuf_init(&out, METRICS_REGEX_OUT_MAX);
	line = xmalloc(n + 1);
	memset(line, 'x', n);
	memcpy(line, "step 1/2 loss=1", 15);
	line[n] = '\0';
	/* 1 MiB: refused unread, not matched. */
	ck_assert_int_eq(metrics_regex_line(mr, line, n, 0, &out, msg,
	    sizeof msg), CADRE_ERR_TOO_LARGE);
	ck_assert_uint_eq(out.len, 0);
	/* RANK_LINE_MAX bytes: matched. */
	line[15] = ' ';
	ck_assert_int_eq(metrics_regex_line(mr, line, RANK_LINE_MAX, 0, &out,
	    msg, sizeof msg), 1);
	/* A pattern that backtracks without end gives up. */
	metrics_regex_free(mr);
	mr = compile("(*NO_START_OPT)(?<step>\\d+)?(x+x+)+y");
	ck_assert_int_eq(metrics_regex_line(mr, line + 20, 4000, 0, &out, msg,
	    sizeof msg), CADRE_ERR_RANGE);
	/* No line at all, an empty one. */
	ck_assert_int_eq(metrics_regex_line(mr, NULL, 0, 0, &out, msg,
	    sizeof msg), 0);
	free(line);
	cbuf_free(&out);
	metrics_regex_free(mr);
}
END_TEST

START_TEST(test_no_match_and_bad_patterns)
{
	static const char *const bad[] = {
		"step (\\d+)",			/* no named step */
		"(?<loss>\\S+)",
		"(?<step>\\d+) (?<event>\\w+)",	/* the event's own member */
		"(?<step>\\d+",			/* does not compile */
		"(?<step>[)",
		"",
	};
	struct metrics_regex	*mr;
	struct cbuf		 out;
	char			 msg[256];
	size_t			 i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		msg[0] = '\0';
		mr = (struct metrics_regex *)1;
		ck_assert_msg(metrics_regex_compile(bad[i], &mr, msg,
		    sizeof msg) == CADRE_ERR_INVALID, "%s compiled", bad[i]);
		ck_assert_ptr_null(mr);
		ck_assert_msg(msg[0] != '\0', "%s: no message", bad[i]);
	}
	mr = compile("^step (?<step>\\d+)$");
	cbuf_init(&out, METRICS_REGEX_OUT_MAX);
	ck_assert_int_eq(match(mr, "Epoch 1: loss 3", 0, &out, msg,
	    sizeof msg), 0);
	ck_assert_int_eq(match(mr, " step 1", 0, &out, msg, sizeof msg), 0);
	ck_assert_int_eq(match(mr, "", 0, &out, msg, sizeof msg), 0);
	ck_assert_int_eq(match(mr, "step 1", 0, &out, msg, sizeof msg), 1);
	cbuf_free(&out);
	metrics_regex_free(mr);
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("metrics_regex");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_good);
	tcase_add_test(tc, test_missing_groups);
	tcase_add_test(tc, test_bad_numbers);
	tcase_add_test(tc, test_long_lines);
	tcase_add_test(tc, test_no_match_and_bad_patterns);
	suite_add_tcase(s, tc);
	return unit_run(s);
}
