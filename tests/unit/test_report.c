#include "config.h"

#include <sys/stat.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "diag.h"
#include "error.h"
#include "report.h"
#include "svg.h"
#include "xmalloc.h"
#include "unit.h"

static char	dir[4096];

static void
setup(void)
{
	unit_mkdtemp(dir, sizeof dir, "test_report");
}

static void
teardown(void)
{
	unit_rmtree(dir);
}

static int
feed(struct metrics *m, const char *line)
{
	char	msg[256];

	return metrics_parse_line(m, line, strlen(line), msg, sizeof msg);
}

static char *
step_line(int step, double sps, double loss, double elapsed)
{
	char	*s;

	xasprintf(&s, "{\"event\":\"step\",\"step\":%d,\"epoch\":0,"
	    "\"loss\":%g,\"mlm_acc\":null,\"lr\":0.0001,\"grad_norm\":1,"
	    "\"samples_per_s\":%g,\"tokens_per_s\":1,\"step_ms\":1,"
	    "\"elapsed_s\":%g,\"samples\":%d}", step, loss, sps, elapsed,
	    step * 8);
	return s;
}

START_TEST(test_median_mean)
{
	const double	odd[] = { 5, 1, 3 }, even[] = { 4, 1, 3, 2 };

	ck_assert_double_eq(report_median(odd, 3), 3);
	ck_assert_double_eq(report_median(even, 4), 2.5);
	ck_assert_double_eq(report_mean(even, 4), 2.5);
	ck_assert_double_eq(report_median(odd, 1), 5);
	ck_assert(isnan(report_median(NULL, 0)));
	ck_assert(isnan(report_mean(NULL, 0)));
}
END_TEST

START_TEST(test_step_lines)
{
	struct metrics	 m;
	char		*l;
	int		 i;
	const double	 sps[] = { 1000, 1000, 10, 30, 20, 40 };

	metrics_init(&m, 10);
	/* steps 5 and 10 are warm-up (step <= skip_steps) */
	for (i = 0; i < 6; i++) {
		l = step_line(5 * (i + 1), sps[i], 10 - i, 2.0 * (i + 1));
		ck_assert_int_eq(feed(&m, l), 0);
		free(l);
	}
	ck_assert_uint_eq(m.nsteps, 6);
	ck_assert_uint_eq(m.nsps, 4);
	ck_assert_double_eq(metrics_throughput(&m), 25);
	ck_assert_int_eq(m.last_step, 30);
	ck_assert_double_eq(m.last_elapsed, 12);
	ck_assert_double_eq(m.last_loss, 5);
	ck_assert_uint_eq(m.nloss, 6);
	ck_assert(isnan(m.last_mlm_acc));
	ck_assert_int_eq(feed(&m, "{\"event\":\"summary\",\"step\":30,"
	    "\"complete\":true,\"peak_rss_bytes\":1234,\"env\":{\"commit\":"
	    "\"abc\",\"mpi\":\"Open MPI\",\"nested\":{}}}"), 0);
	ck_assert_int_eq(m.peak_rss, 1234);
	ck_assert_int_eq(m.complete, 1);
	ck_assert_str_eq(json_string_value(json_object_get(m.env, "mpi")),
	    "Open MPI");
	ck_assert_ptr_null(json_object_get(m.env, "nested"));
	ck_assert_int_eq(feed(&m, "{\"event\":\"eval\",\"step\":30,"
	    "\"loss\":2.5,\"accuracy\":0.75}"), 0);
	ck_assert_double_eq(m.eval_accuracy, 0.75);
	ck_assert_int_eq(feed(&m, "{\"event\":\"error\",\"kind\":\"oom\","
	    "\"message\":\"x\"}"), 0);
	ck_assert_int_eq(m.oom, 1);
	/* events this version does not know are no error */
	ck_assert_int_eq(feed(&m, "{\"event\":\"future\",\"x\":1}"), 0);
	metrics_free(&m);
}
END_TEST

START_TEST(test_bad_lines)
{
	static const char *const bad[] = {
		"",
		"not json",
		"[1,2]",
		"{\"step\":1}",
		"{\"event\":5}",
		"{\"event\":\"step\",\"step\":20,\"loss\":1,\"elapsed_s\":1}",
		"{\"event\":\"step\",\"step\":20,\"loss\":1,\"elapsed_s\":1,"
		    "\"samples_per_s\":\"x\"}",
		"{\"event\":\"step\",\"step\":-1,\"loss\":1,\"elapsed_s\":1,"
		    "\"samples_per_s\":1}",
		"{\"event\":\"step\",\"step\":1.5,\"loss\":1,\"elapsed_s\":1,"
		    "\"samples_per_s\":1}",
		"{\"event\":\"step\",\"step\":20,\"loss\":1,\"elapsed_s\":1,"
		    "\"samples_per_s\":-4}",
		"{\"event\":\"step\",\"step\":20,\"loss\":1,\"elapsed_s\":1,"
		    "\"samples_per_s\":1,\"samples\":-1}",
		"{\"event\":\"step\",\"step\":20,\"step\":21,\"loss\":1,"
		    "\"elapsed_s\":1,\"samples_per_s\":1}",
		"{\"event\":\"summary\",\"peak_rss_bytes\":\"big\"}",
		"{\"event\":\"eval\",\"accuracy\":\"high\"}",
		"{\"event\":\"checkpoint_skipped\",\"path\":\"checkpoints/step-8\"}",
		"{\"event\":\"checkpoint_skipped\",\"path\":1,\"why\":\"x\"}",
		"{\"event\":\"step\",\"step\":20,\"loss\":1e999,\"elapsed_s\":1,"
		    "\"samples_per_s\":1}",
		NULL
	};
	struct metrics	 m;
	char		 msg[256];
	size_t		 i;
	char		*big;

	metrics_init(&m, 0);
	for (i = 0; bad[i] != NULL; i++) {
		msg[0] = '\0';
		ck_assert_msg(metrics_parse_line(&m, bad[i], strlen(bad[i]),
		    msg, sizeof msg) < 0, "accepted: %s", bad[i]);
		ck_assert_msg(msg[0] != '\0', "no reason for: %s", bad[i]);
	}
	ck_assert_uint_eq(m.nsteps, 0);
	ck_assert_uint_eq(m.nsps, 0);
	ck_assert_int_eq(m.peak_rss, -1);
	ck_assert(isnan(m.eval_accuracy));
	ck_assert_uint_eq(m.nskipped, 0);
	/* a resume's fallbacks are kept, up to a bound */
	for (i = 0; i < REPORT_SKIPPED_MAX + 3; i++)
		ck_assert_int_eq(feed(&m, "{\"event\":\"checkpoint_skipped\","
		    "\"path\":\"checkpoints/step-8\",\"why\":\"corrupt\"}"), 0);
	ck_assert_uint_eq(m.nskipped, REPORT_SKIPPED_MAX);
	ck_assert_str_eq(m.skipped[0], "checkpoints/step-8: corrupt");
	/* a line over the bound is refused before it is parsed */
	big = xmalloc(RUNDIR_LINE_MAX + 2);
	memset(big, ' ', RUNDIR_LINE_MAX + 1);
	big[RUNDIR_LINE_MAX + 1] = '\0';
	ck_assert_int_eq(metrics_parse_line(&m, big, RUNDIR_LINE_MAX + 1,
	    msg, sizeof msg), CADRE_ERR_TOO_LARGE);
	ck_assert_ptr_nonnull(strstr(msg, "longer than"));
	free(big);
	metrics_free(&m);
}
END_TEST

START_TEST(test_load_warnings_and_truncation)
{
	struct metrics	 m;
	struct diags	 d;
	struct cbuf	 b;
	char		*path, *l;
	int		 i;

	xasprintf(&path, "%s/metrics.jsonl", dir);
	cbuf_init(&b, SIZE_MAX);
	for (i = 1; i <= 4; i++) {
		l = step_line(i, 10.0 * i, 1, i);
		cbuf_addf(&b, "%s\n", l);
		free(l);
		if (i == 2)
			cbuf_adds(&b, "{\"event\":\"step\",oops\n\n");
	}
	/* a run still writing: the last line is cut */
	cbuf_adds(&b, "{\"event\":\"step\",\"step\":5,\"samples_per");
	unit_write_file(path, b.data);

	diags_init(&d);
	metrics_init(&m, 0);
	ck_assert_int_eq(metrics_load(&m, path, &d), 0);
	ck_assert_uint_eq(m.nsteps, 4);
	ck_assert_double_eq(metrics_throughput(&m), 25);
	ck_assert_uint_eq(d.nwarnings, 1);
	ck_assert_uint_eq(d.v[0].line, 3);
	ck_assert_str_eq(d.v[0].file, path);
	ck_assert_ptr_nonnull(strstr(d.v[0].message, "not JSON"));
	metrics_free(&m);
	diags_free(&d);

	/* a whole last line without its newline counts */
	l = step_line(6, 1000, 1, 6);
	cbuf_reset(&b);
	cbuf_adds(&b, l);
	free(l);
	unit_write_file(path, b.data);
	diags_init(&d);
	metrics_init(&m, 0);
	ck_assert_int_eq(metrics_load(&m, path, &d), 0);
	ck_assert_uint_eq(m.nsteps, 1);
	ck_assert_uint_eq(d.nwarnings, 0);
	metrics_free(&m);

	metrics_init(&m, 0);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(metrics_load(&m, path, &d), CADRE_ERR_NOT_FOUND);
	metrics_free(&m);
	diags_free(&d);
	cbuf_free(&b);
	free(path);
}
END_TEST

START_TEST(test_loss_points_bounded)
{
	struct metrics	 m;
	char		*l;
	size_t		 i, n = REPORT_POINTS_MAX * 3;

	metrics_init(&m, 0);
	for (i = 1; i <= n; i++) {
		xasprintf(&l, "{\"event\":\"step\",\"step\":%zu,\"loss\":%zu,"
		    "\"samples_per_s\":1,\"elapsed_s\":1}", i, i);
		ck_assert_int_eq(feed(&m, l), 0);
		free(l);
	}
	ck_assert_uint_le(m.nloss, REPORT_POINTS_MAX);
	ck_assert_uint_ge(m.nloss, REPORT_POINTS_MAX / 4);
	ck_assert_double_eq(m.loss_step[0], 1);
	for (i = 1; i < m.nloss; i++)
		ck_assert(m.loss_step[i] > m.loss_step[i - 1]);
	metrics_free(&m);
}
END_TEST

static const char spec_text[] =
    "version: 1\n"
    "name: unit\n"
    "resources:\n"
    "  gpus_per_node: 0\n"
    "trainer:\n"
    "  data: /scratch/shards\n"
    "  log_every: 5\n"
    "measure:\n"
    "  skip_steps: 0\n"
    "repeats: 2\n"
    "matrix:\n"
    "  resources.nodes: [1, 2, 4]\n";

/* One run of the plan: its metrics with throughput sps (and a summary),
 * state s, status.json reason (NULL: none). */
static void
add_run(struct report *r, size_t i, double sps, enum run_state s,
    const char *reason)
{
	const struct spec_run	*pr = spec_plan_run(r->plan, i);
	char			*rd, *path, *l, *text;

	xasprintf(&rd, "%s/%s", dir, spec_run_id(pr));
	ck_assert_int_eq(mkdir(rd, 0700), 0);
	if (sps > 0) {
		l = step_line(5, sps, 2.0, 30);
		xasprintf(&text, "%s\n{\"event\":\"summary\",\"peak_rss_bytes\":"
		    "%d}\n", l, 100 + (int)i);
		xasprintf(&path, "%s/metrics.jsonl", rd);
		unit_write_file(path, text);
		free(path);
		free(text);
		free(l);
	}
	if (reason != NULL) {
		xasprintf(&path, "%s/status.json", rd);
		xasprintf(&text, "{\"reason\":\"%s\"}", reason);
		unit_write_file(path, text);
		free(path);
		free(text);
	}
	ck_assert_int_eq(report_add_run(r, spec_run_id(pr), rd, s, "", -1), 0);
	free(rd);
}

START_TEST(test_report_figures)
{
	struct report		*r = NULL;
	struct diags		 d;
	const struct report_config *c;

	diags_init(&d);
	ck_assert_int_eq(report_new("exp", "unit", "unit.yaml", spec_text, &d,
	    &r), 0);
	ck_assert_uint_eq(r->nconfigs, 3);
	/* 1 node: 100 and 120; 2 nodes: 180, OOM; 4 nodes: failed, left
	 * out of the database (missing) */
	add_run(r, 0, 100, RUN_DONE, "done");
	add_run(r, 1, 120, RUN_DONE, "done");
	add_run(r, 2, 180, RUN_DONE, "done");
	add_run(r, 3, 50, RUN_FAILED, "oom");
	add_run(r, 4, 0, RUN_FAILED, "failed");
	report_finish(r);
	ck_assert_uint_eq(r->nruns, 6);
	ck_assert_uint_eq(r->count[REPORT_DONE], 3);
	ck_assert_uint_eq(r->count[REPORT_OOM], 1);
	ck_assert_uint_eq(r->count[REPORT_FAILED], 1);
	ck_assert_uint_eq(r->count[REPORT_MISSING], 1);

	c = &r->configs[0];
	ck_assert_int_eq(c->ranks, 1);
	ck_assert_double_eq(c->median, 110);
	ck_assert_double_eq(c->mean, 110);
	ck_assert_double_eq(c->min, 100);
	ck_assert_double_eq(c->max, 120);
	ck_assert_uint_eq(c->baseline, 0);
	ck_assert_double_eq(c->speedup, 1);
	ck_assert_int_eq(c->peak_rss, 101);
	ck_assert_double_eq(c->time_to_train, 30);

	c = &r->configs[1];
	ck_assert_uint_eq(c->count[REPORT_DONE], 1);
	ck_assert_uint_eq(c->count[REPORT_OOM], 1);
	/* the OOM run's steps do not count */
	ck_assert_uint_eq(c->nthroughput, 1);
	ck_assert_double_eq_tol(c->speedup, 180.0 / 110, 1e-12);
	ck_assert_double_eq_tol(c->efficiency, 180.0 / 110 / 2, 1e-12);

	c = &r->configs[2];
	ck_assert_uint_eq(c->nruns, 2);
	ck_assert_uint_eq(c->count[REPORT_FAILED], 1);
	ck_assert_uint_eq(c->count[REPORT_MISSING], 1);
	ck_assert(isnan(c->median));
	ck_assert(isnan(c->speedup));

	ck_assert_uint_eq(r->ngroups, 1);
	ck_assert_uint_eq(r->groups[0].n, 3);
	ck_assert_str_eq(r->groups[0].slug, "b32-fp32");
	ck_assert_uint_eq(r->warnings.nwarnings, 0);
	report_free(r);
	diags_free(&d);
}
END_TEST

/* A large run's status.json lists every rank: the report reads it whole
 * (it once stopped at 64 KiB, about 500 ranks, and the run lost its
 * reason). */
START_TEST(test_report_large_status)
{
	struct report		*r = NULL;
	struct diags		 d;
	struct cbuf		 b;
	const struct spec_run	*pr;
	char			*rd, *path;
	int			 i;

	diags_init(&d);
	ck_assert_int_eq(report_new("exp", "unit", "unit.yaml", spec_text, &d,
	    &r), 0);
	pr = spec_plan_run(r->plan, 0);
	xasprintf(&rd, "%s/%s", dir, spec_run_id(pr));
	ck_assert_int_eq(mkdir(rd, 0700), 0);
	cbuf_init(&b, RUNDIR_STATUS_MAX);
	cbuf_adds(&b, "{\"version\": 1, \"reason\": \"oom\", \"ranks\": [");
	for (i = 0; i < 8192; i++)
		cbuf_addf(&b, "%s{\"rank\": %d, \"node\": \"node%04d\", "
		    "\"exit_code\": %d, \"signal\": 0, \"seconds\": 3.5}",
		    i > 0 ? ", " : "", i, i / 8, i == 17 ? 3 : 0);
	cbuf_adds(&b, "]}\n");
	ck_assert_uint_gt(b.len, (size_t)256 << 10);	/* cadred's old bound */
	cbuf_addc(&b, '\0');
	xasprintf(&path, "%s/" RUNDIR_STATUS, rd);
	unit_write_file(path, b.data);
	ck_assert_int_eq(report_add_run(r, spec_run_id(pr), rd, RUN_FAILED, "", -1),
	    0);
	report_finish(r);
	ck_assert_uint_eq(r->count[REPORT_OOM], 1);
	ck_assert_uint_eq(r->warnings.nwarnings, 0);
	report_free(r);
	diags_free(&d);
	cbuf_free(&b);
	free(path);
	free(rd);
}
END_TEST

START_TEST(test_report_bad_spec)
{
	struct report	*r = NULL;
	struct diags	 d;

	diags_init(&d);
	ck_assert_int_eq(report_new("exp", "x", "x.yaml", "version: 9\n", &d,
	    &r), CADRE_ERR_INVALID);
	ck_assert_ptr_null(r);
	ck_assert_uint_ge(d.nerrors, 1);
	diags_free(&d);
}
END_TEST

START_TEST(test_svg_escape)
{
	struct cbuf	b;

	cbuf_init(&b, SIZE_MAX);
	svg_escape(&b, "<a href=\"x\">&'</a>");
	ck_assert_str_eq(b.data,
	    "&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;");
	cbuf_reset(&b);
	/* valid UTF-8 kept; a bad byte, a cut sequence and controls not */
	svg_escape(&b, "\xc3\xa9\xff\x01\tz\xe2\x82");
	ck_assert_str_eq(b.data, "\xc3\xa9?  z??");
	cbuf_free(&b);
}
END_TEST

START_TEST(test_svg_render)
{
	const double		 x[] = { 1, 2, NAN, 8 };
	const double		 y[] = { 10, NAN, 3, 70 };
	const double		 lo[] = { 8, 1, 1, 65 };
	const double		 hi[] = { 12, 1, 1, 90 };
	struct svg_series	 s[2] = {
		{ "a<b", x, y, 4, 0, 1, lo, hi },
		{ "ideal", x, y, 0, 1, 0, NULL, NULL },
	};
	struct svg_chart	 c = { "T & t", "ranks", "samples/s", 1, 1, 0,
	    0 };
	struct cbuf		 b;

	cbuf_init(&b, SIZE_MAX);
	ck_assert_int_eq(svg_chart_render(&b, &c, s, 2), 0);
	ck_assert_ptr_nonnull(strstr(b.data, "version=\"1.1\""));
	ck_assert_ptr_nonnull(strstr(b.data, "T &amp; t"));
	ck_assert_ptr_nonnull(strstr(b.data, ">a&lt;b</text>"));
	ck_assert_ptr_null(strstr(b.data, "nan"));
	ck_assert_ptr_null(strstr(b.data, "inf"));
	ck_assert_ptr_nonnull(strstr(b.data, "</svg>\n"));
	/* the band: one shaded polygon, and the y axis reaches its top
	 * (90), above the line's (70): a tick at 100 */
	ck_assert_ptr_nonnull(strstr(b.data, "<polygon fill="));
	ck_assert_ptr_null(strstr(strstr(b.data, "<polygon") + 1, "<polygon"));
	ck_assert_ptr_nonnull(strstr(b.data, ">100</text>"));
	/* extreme and equal values: the axes stay finite, ticks bounded */
	{
		const double	ex[] = { -1e300, 1e14, 1e14 + 1, 1e15 };
		const double	ey[] = { 5, 5, 5, 5 };
		struct svg_series e = { "e", ex, ey, 4, 0, 1, NULL, NULL };

		cbuf_reset(&b);
		ck_assert_int_eq(svg_chart_render(&b, &c, &e, 1), 0);
		ck_assert_ptr_null(strstr(b.data, "nan"));
		ck_assert_ptr_null(strstr(b.data, "inf"));
		ck_assert_uint_lt(b.len, 100000);
	}
	/* nothing at all to plot is still a chart */
	cbuf_reset(&b);
	ck_assert_int_eq(svg_chart_render(&b, &c, NULL, 0), 0);
	ck_assert_ptr_null(strstr(b.data, "nan"));
	cbuf_free(&b);
}
END_TEST

static Suite *
report_suite(void)
{
	Suite	*s = suite_create("report");
	TCase	*tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_median_mean);
	tcase_add_test(tc, test_step_lines);
	tcase_add_test(tc, test_bad_lines);
	tcase_add_test(tc, test_load_warnings_and_truncation);
	tcase_add_test(tc, test_loss_points_bounded);
	tcase_add_test(tc, test_report_figures);
	tcase_add_test(tc, test_report_large_status);
	tcase_add_test(tc, test_report_bad_spec);
	tcase_add_test(tc, test_svg_escape);
	tcase_add_test(tc, test_svg_render);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(report_suite());
}
