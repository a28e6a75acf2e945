/* cadre report: an experiment's scaling tables (Markdown, CSV or JSON),
 * its plots as SVG, and a comparison with another experiment. It reads
 * the database and the run directories; it needs no daemon. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cli.h"
#include "diag.h"
#include "duration.h"
#include "error.h"
#include "paths.h"
#include "report.h"
#include "state.h"
#include "svg.h"
#include "xmalloc.h"

#define LOSS_PLOT_POINTS	2000	/* per run: enough for the eye */
#define LOSS_PLOT_TOTAL		400000	/* over all runs: the SVG stays small */

enum report_format { FMT_MD = 0, FMT_CSV, FMT_JSON };

#define REPORT_AT_MAX	32	/* times one --at may list */

struct report_opts {
	enum report_format	 format;
	const char		*plot;
	const char		*compare;
	const char		*state_dir;
	double			 at[REPORT_AT_MAX];	/* seconds */
	size_t			 nat;
};

/* --at 20m,40m: training times in seconds. */
static int
parse_at(struct report_opts *o, const char *arg)
{
	char	*copy = xstrdup(arg), *tok, *save = NULL;
	int64_t	 v;
	int	 rc = 0;

	for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
	    tok = strtok_r(NULL, ",", &save)) {
		if (duration_parse(tok, &v) != 0 || v <= 0) {
			cli_usage_error(&cli_cmd_report, "--at '%s': expected "
			    "training times such as 20m or 20m,40m (each > 0)",
			    tok);
			rc = -1;
		} else if (o->nat == REPORT_AT_MAX) {
			cli_usage_error(&cli_cmd_report, "--at: at most %d "
			    "times", REPORT_AT_MAX);
			rc = -1;
		} else
			o->at[o->nat++] = (double)v;
	}
	if (rc == 0 && o->nat == 0) {
		cli_usage_error(&cli_cmd_report, "--at '%s': no time given", arg);
		rc = -1;
	}
	free(copy);
	return rc;
}

static int
report_opt(void *ctx, const char *name, const char *arg)
{
	struct report_opts	*o = ctx;

	if (strcmp(name, "format") == 0) {
		if (strcmp(arg, "md") == 0)
			o->format = FMT_MD;
		else if (strcmp(arg, "csv") == 0)
			o->format = FMT_CSV;
		else if (strcmp(arg, "json") == 0)
			o->format = FMT_JSON;
		else {
			cli_usage_error(&cli_cmd_report, "--format '%s': "
			    "expected md, csv or json", arg);
			return -1;
		}
	} else if (strcmp(name, "plot") == 0)
		o->plot = arg;
	else if (strcmp(name, "compare") == 0)
		o->compare = arg;
	else if (strcmp(name, "at") == 0)
		return parse_at(o, arg);
	else if (strcmp(name, "state-dir") == 0)
		o->state_dir = arg;
	return 0;
}

/* ------------------------------------------------------------ text */

static char *
fmt_num(double v, int decimals)
{
	char	*r;

	if (isnan(v))
		return xstrdup("-");
	xasprintf(&r, "%.*f", decimals, v);
	return r;
}

static char *
fmt_pct(double v)
{
	char	*r;

	if (isnan(v))
		return xstrdup("-");
	xasprintf(&r, "%.1f%%", v * 100);
	return r;
}

static char *
fmt_secs(double v)
{
	char	buf[64];

	if (isnan(v))
		return xstrdup("-");
	if (v < 60) {
		snprintf(buf, sizeof buf, "%.1fs", v);
		return xstrdup(buf);
	}
	duration_format((int64_t)llround(v), buf, sizeof buf);
	return xstrdup(buf);
}

static char *
fmt_bytes(int64_t v)
{
	char	*r;

	if (v < 0)
		return xstrdup("-");
	if (v >= ((int64_t)1 << 30))
		xasprintf(&r, "%.2f GiB", (double)v / (1 << 30));
	else
		xasprintf(&r, "%.1f MiB", (double)v / (1 << 20));
	return r;
}

static char *
fmt_int(int64_t v)
{
	char	*r;

	xasprintf(&r, "%" PRId64, v);
	return r;
}

/* A Markdown table with aligned columns: cells[row * ncols + col]. */
struct table {
	size_t		  ncols, nrows;
	const char	**titles;
	int		 *right;
	char		**cells;
};

static void
table_init(struct table *t, size_t ncols)
{
	memset(t, 0, sizeof *t);
	t->ncols = ncols;
	t->titles = xcalloc(ncols, sizeof *t->titles);
	t->right = xcalloc(ncols, sizeof *t->right);
}

static void
table_col(struct table *t, size_t c, const char *title, int right)
{
	t->titles[c] = title;
	t->right[c] = right;
}

static char **
table_row(struct table *t)
{
	t->cells = xreallocarray(t->cells, (t->nrows + 1) * t->ncols,
	    sizeof *t->cells);
	memset(t->cells + t->nrows * t->ncols, 0, t->ncols * sizeof *t->cells);
	return t->cells + t->nrows++ * t->ncols;
}

/* Width in characters, not bytes: UTF-8 continuation bytes do not count. */
static size_t
text_width(const char *s)
{
	size_t	n = 0;

	for (; *s != '\0'; s++) {
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	}
	return n;
}

/* Markdown cells cannot hold '|' or a newline. */
static void
md_cell(FILE *fp, const char *s, size_t width, int right)
{
	size_t	w = text_width(s), i;

	if (right) {
		for (i = w; i < width; i++)
			fputc(' ', fp);
	}
	for (; *s != '\0'; s++) {
		if (*s == '|')
			fputs("\\|", fp);
		else if (*s == '\n' || *s == '\r')
			fputc(' ', fp);
		else
			fputc(*s, fp);
	}
	if (!right) {
		for (i = w; i < width; i++)
			fputc(' ', fp);
	}
}

static size_t
md_len(const char *s)
{
	size_t	n = text_width(s);

	for (; *s != '\0'; s++)
		n += *s == '|';
	return n;
}

static void
table_print_md(const struct table *t, FILE *fp)
{
	size_t	*w = xcalloc(t->ncols, sizeof *w), r, c, i;

	for (c = 0; c < t->ncols; c++) {
		w[c] = md_len(t->titles[c]);
		if (w[c] < 3)
			w[c] = 3;
		for (r = 0; r < t->nrows; r++) {
			if (md_len(t->cells[r * t->ncols + c]) > w[c])
				w[c] = md_len(t->cells[r * t->ncols + c]);
		}
	}
	for (c = 0; c < t->ncols; c++) {
		fputs(c == 0 ? "| " : " | ", fp);
		md_cell(fp, t->titles[c], w[c], 0);
	}
	fputs(" |\n", fp);
	for (c = 0; c < t->ncols; c++) {
		fputc('|', fp);
		for (i = 0; i < w[c] + 2 - (t->right[c] ? 1 : 0); i++)
			fputc('-', fp);
		if (t->right[c])
			fputc(':', fp);
	}
	fputs("|\n", fp);
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			fputs(c == 0 ? "| " : " | ", fp);
			md_cell(fp, t->cells[r * t->ncols + c], w[c],
			    t->right[c]);
		}
		fputs(" |\n", fp);
	}
	free(w);
}

static void
table_free(struct table *t)
{
	size_t	i;

	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->titles);
	free(t->right);
}

static const char *
short_name(enum spec_key k)
{
	const char	*p = spec_key_info(k)->path, *dot = strrchr(p, '.');

	return dot != NULL ? dot + 1 : p;
}

/* Varied keys shown as their own columns: all but the fixed ones. */
static int
fixed_key(enum spec_key k)
{
	return k == SPEC_K_RES_NODES || k == SPEC_K_RES_GPUS_PER_NODE ||
	    k == SPEC_K_BATCH_SIZE || k == SPEC_K_PRECISION;
}

static int
any_accuracy(const struct report *r)
{
	size_t	i;

	for (i = 0; i < r->nconfigs; i++) {
		if (!isnan(r->configs[i].accuracy))
			return 1;
	}
	return 0;
}

static char *
counts_text(const size_t *count)
{
	struct cbuf	b;
	int		k;

	cbuf_init(&b, SIZE_MAX);
	for (k = 0; k < REPORT_CLASS_COUNT; k++) {
		if (count[k] == 0)
			continue;
		cbuf_addf(&b, "%s%zu %s", b.len > 0 ? ", " : "", count[k],
		    report_class_name(k));
	}
	if (b.len == 0)
		cbuf_adds(&b, "none");
	return cbuf_detach(&b, NULL);
}

static void
md_configs(const struct report *r, FILE *fp)
{
	static const char *const fixed[] = { "config", "nodes", "gpus/node",
	    "ranks", "batch", "global batch", "precision" };
	static const char *const tail[] = { "done/total", "failed", "oom",
	    "cancelled", "other", "samples/s median", "mean", "min", "max", "speedup",
	    "efficiency", "time to train", "final loss" };
	const size_t		 nfixed = sizeof fixed / sizeof fixed[0];
	const size_t		 ntail = sizeof tail / sizeof tail[0];
	const struct report_config *c;
	struct table		 t;
	enum spec_key		 extra[SPEC_KEY_COUNT];
	size_t			 nextra = 0, xi[SPEC_KEY_COUNT], i, j, col;
	int			 acc = any_accuracy(r);
	char			**row;

	for (j = 0; j < spec_nvaried(r->spec); j++) {
		if (!fixed_key(spec_varied(r->spec, j))) {
			xi[nextra] = j;
			extra[nextra++] = spec_varied(r->spec, j);
		}
	}
	table_init(&t, nfixed + nextra + ntail + (size_t)acc + 1);
	for (col = 0; col < nfixed; col++)
		table_col(&t, col, fixed[col], col > 0 && col < 6);
	for (j = 0; j < nextra; j++)
		table_col(&t, col++, short_name(extra[j]), 0);
	for (j = 0; j < ntail; j++)
		table_col(&t, col++, tail[j], 1);
	if (acc)
		table_col(&t, col++, "accuracy", 1);
	table_col(&t, col++, "peak RSS", 1);

	for (i = 0; i < r->nconfigs; i++) {
		c = &r->configs[i];
		row = table_row(&t);
		col = 0;
		xasprintf(&row[col++], "%s%s", c->id, c->baseline == i ?
		    " (base)" : "");
		row[col++] = fmt_int(c->nodes);
		row[col++] = fmt_int(c->gpus_per_node);
		row[col++] = fmt_int(c->ranks);
		row[col++] = fmt_int(c->batch);
		row[col++] = fmt_int(c->global_batch);
		row[col++] = xstrdup(c->precision);
		for (j = 0; j < nextra; j++)
			row[col++] = xstrdup(c->values[xi[j]]);
		xasprintf(&row[col++], "%zu/%zu", c->count[REPORT_DONE],
		    c->nruns);
		row[col++] = fmt_int((int64_t)c->count[REPORT_FAILED]);
		row[col++] = fmt_int((int64_t)c->count[REPORT_OOM]);
		row[col++] = fmt_int((int64_t)c->count[REPORT_CANCELLED]);
		row[col++] = fmt_int((int64_t)(c->count[REPORT_UNFINISHED] +
		    c->count[REPORT_MISSING]));
		row[col++] = fmt_num(c->median, 1);
		row[col++] = fmt_num(c->mean, 1);
		row[col++] = fmt_num(c->min, 1);
		row[col++] = fmt_num(c->max, 1);
		row[col++] = fmt_num(c->speedup, 2);
		row[col++] = fmt_pct(c->efficiency);
		row[col++] = fmt_secs(c->time_to_train);
		row[col++] = fmt_num(c->loss, 4);
		if (acc)
			row[col++] = fmt_num(c->accuracy, 4);
		row[col++] = fmt_bytes(c->peak_rss);
	}
	table_print_md(&t, fp);
	table_free(&t);
}

static void
md_runs(const struct report *r, FILE *fp)
{
	static const char *const titles[] = { "run", "config", "repeat",
	    "state", "reason", "attempts", "samples/s", "last step",
	    "elapsed", "final loss", "peak RSS" };
	const struct report_run	*rr;
	struct table		 t;
	size_t			 i, col, ntitles = sizeof titles / sizeof titles[0];
	char			**row;
	int			 staged = 0;

	/* A column for the staging time only when a run staged its data. */
	for (i = 0; i < r->nruns; i++)
		if (!isnan(r->runs[i].stage_seconds))
			staged = 1;
	table_init(&t, ntitles + (size_t)staged);
	for (col = 0; col < ntitles; col++)
		table_col(&t, col, titles[col], col == 2 || col >= 5);
	if (staged)
		table_col(&t, ntitles, "staged", 1);
	for (i = 0; i < r->nruns; i++) {
		rr = &r->runs[i];
		row = table_row(&t);
		col = 0;
		row[col++] = xstrdup(rr->id);
		row[col++] = xstrdup(rr->config_id);
		row[col++] = fmt_int(rr->repeat);
		row[col++] = xstrdup(report_class_name(rr->cls));
		row[col++] = xstrdup(*rr->reason != '\0' ? rr->reason :
		    rr->cls == REPORT_UNFINISHED ? rr->state : "");
		row[col++] = fmt_int((int64_t)rr->m.nstarts);
		row[col++] = fmt_num(rr->throughput, 1);
		row[col++] = rr->m.last_step >= 0 ? fmt_int(rr->m.last_step) :
		    xstrdup("-");
		row[col++] = fmt_secs(rr->m.last_elapsed);
		row[col++] = fmt_num(rr->m.last_loss, 4);
		row[col++] = fmt_bytes(rr->m.peak_rss);
		if (staged)
			row[col++] = isnan(rr->stage_seconds) ? xstrdup("-") :
			    fmt_secs(rr->stage_seconds);
	}
	table_print_md(&t, fp);
	table_free(&t);
}

static void
md_scaling(const struct report *r, FILE *fp)
{
	static const char *const titles[] = { "ranks", "GPUs", "nodes",
	    "config", "samples/s", "speedup", "efficiency" };
	const struct report_group	*g;
	const struct report_config	*c, *b;
	struct table			 t;
	size_t				 i, j, col;
	double				 sp, ef;
	char				**row;

	for (i = 0; i < r->ngroups; i++) {
		g = &r->groups[i];
		b = &r->configs[g->baseline];
		fprintf(fp, "\n### %s\n\n", g->title);
		table_init(&t, sizeof titles / sizeof titles[0]);
		for (col = 0; col < t.ncols; col++)
			table_col(&t, col, titles[col], col != 3);
		for (j = 0; j < g->n; j++) {
			c = &r->configs[g->configs[j]];
			sp = ef = NAN;
			if (b->median > 0 && !isnan(c->median)) {
				sp = c->median / b->median;
				ef = sp / ((double)c->ranks / (double)b->ranks);
			}
			row = table_row(&t);
			col = 0;
			row[col++] = fmt_int(c->ranks);
			row[col++] = fmt_int(c->gpus);
			row[col++] = fmt_int(c->nodes);
			row[col++] = xstrdup(c->id);
			row[col++] = fmt_num(c->median, 1);
			row[col++] = fmt_num(sp, 2);
			row[col++] = fmt_pct(ef);
		}
		table_print_md(&t, fp);
		table_free(&t);
	}
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void
md_env(const struct report *r, FILE *fp)
{
	const char	*k, **keys;
	json_t		*v, *s;
	size_t		 i, j, n = 0;

	if (json_object_size(r->env) == 0) {
		fprintf(fp, "No run recorded its environment.\n");
		return;
	}
	keys = xcalloc(json_object_size(r->env), sizeof *keys);
	json_object_foreach(r->env, k, v)
		keys[n++] = k;
	qsort(keys, n, sizeof *keys, cmp_str);
	for (j = 0; j < n; j++) {
		fprintf(fp, "- %s: ", keys[j]);
		json_array_foreach(json_object_get(r->env, keys[j]), i, s)
			fprintf(fp, "%s%s", i > 0 ? ", " : "",
			    json_string_value(s));
		fputc('\n', fp);
	}
	free(keys);
}

static void
md_compare(const struct report *a, const struct report *b,
    const struct report_match *m, size_t nm, FILE *fp)
{
	static const char *const titles[] = { "config", "nodes", "ranks",
	    "batch", "precision", "samples/s A", "range A", "samples/s B",
	    "range B", "change", "verdict" };
	const struct report_config	*x, *y;
	struct table			 t;
	size_t				 i, col;
	char				**row, *lo, *hi;

	fprintf(fp, "\n## Compared with %s (%s)\n\n", b->exp_id, b->name);
	fprintf(fp, "A is %s, B is %s; a change counts when the min..max "
	    "ranges of the repeats do not overlap.\n\n", a->exp_id, b->exp_id);
	if (nm == 0) {
		fprintf(fp, "No configuration is in both experiments.\n");
		return;
	}
	table_init(&t, sizeof titles / sizeof titles[0]);
	for (col = 0; col < t.ncols; col++)
		table_col(&t, col, titles[col], col != 0 && col != 4 &&
		    col != 10);
	for (i = 0; i < nm; i++) {
		x = &a->configs[m[i].a];
		y = &b->configs[m[i].b];
		row = table_row(&t);
		col = 0;
		xasprintf(&row[col++], "%s / %s", x->id, y->id);
		row[col++] = fmt_int(x->nodes);
		row[col++] = fmt_int(x->ranks);
		row[col++] = fmt_int(x->batch);
		row[col++] = xstrdup(x->precision);
		row[col++] = fmt_num(x->median, 1);
		lo = fmt_num(x->min, 1);
		hi = fmt_num(x->max, 1);
		xasprintf(&row[col++], "%s..%s", lo, hi);
		free(lo);
		free(hi);
		row[col++] = fmt_num(y->median, 1);
		lo = fmt_num(y->min, 1);
		hi = fmt_num(y->max, 1);
		xasprintf(&row[col++], "%s..%s", lo, hi);
		free(lo);
		free(hi);
		if (isnan(m[i].change))
			row[col++] = xstrdup("-");
		else
			xasprintf(&row[col++], "%+.1f%%", m[i].change * 100);
		row[col++] = xstrdup(isnan(m[i].change) ? "no data" :
		    !m[i].outside ? "within noise" : m[i].change > 0 ?
		    "faster" : "slower");
	}
	table_print_md(&t, fp);
	table_free(&t);
}

static void
print_md(const struct report *r, const struct report *b,
    const struct report_match *m, size_t nm, FILE *fp)
{
	char	*counts = counts_text(r->count);

	fprintf(fp, "# Report: %s (%s)\n\n", r->name, r->exp_id);
	fprintf(fp, "Spec %s: %zu configurations x %" PRId64 " repeats; "
	    "runs: %s.\n", r->spec_file, r->nconfigs, spec_repeats(r->spec),
	    counts);
	fprintf(fp, "Throughput is the median samples/s of each run's step "
	    "lines after measure.skip_steps; per configuration over its done "
	    "runs. Speedup and efficiency are against the baseline (%s).\n",
	    r->has_baseline ? "report.baseline" : "fewest ranks");
	free(counts);
	fprintf(fp, "\n## Configurations\n\n");
	md_configs(r, fp);
	fprintf(fp, "\n## Scaling\n");
	md_scaling(r, fp);
	fprintf(fp, "\n## Runs\n\n");
	md_runs(r, fp);
	fprintf(fp, "\n## Environment\n\n");
	md_env(r, fp);
	if (r->warnings.nwarnings > 0)
		fprintf(fp, "\n%zu warning%s about the runs' files: see "
		    "standard error.\n", r->warnings.nwarnings,
		    r->warnings.nwarnings == 1 ? "" : "s");
	if (b != NULL)
		md_compare(r, b, m, nm, fp);
}

/* RFC 4180: quoted when it holds a comma, a quote or a line break. */
static void
csv_cell(FILE *fp, const char *s, int last)
{
	const char	*p;

	if (strpbrk(s, ",\"\r\n") != NULL) {
		fputc('"', fp);
		for (p = s; *p != '\0'; p++) {
			if (*p == '"')
				fputc('"', fp);
			fputc(*p, fp);
		}
		fputc('"', fp);
	} else
		fputs(s, fp);
	fputs(last ? "\r\n" : ",", fp);
}

static void
csv_num(FILE *fp, double v)
{
	if (isnan(v))
		fputs(",", fp);
	else
		fprintf(fp, "%.10g,", v);
}

static void
print_csv(const struct report *r, FILE *fp)
{
	const struct report_config	*c;
	size_t				 i, j;
	int				 k;

	fputs("experiment,config_id,nodes,gpus_per_node,gpus,ranks,"
	    "batch_size,global_batch,precision,", fp);
	for (j = 0; j < spec_nvaried(r->spec); j++)
		csv_cell(fp, spec_key_info(spec_varied(r->spec, j))->path, 0);
	fputs("runs,", fp);
	for (k = 0; k < REPORT_CLASS_COUNT; k++)
		fprintf(fp, "%s,", report_class_name(k));
	fputs("samples_per_s_median,samples_per_s_mean,samples_per_s_min,"
	    "samples_per_s_max,baseline,speedup,efficiency,time_to_train_s,"
	    "final_loss,accuracy,peak_rss_bytes\r\n", fp);
	for (i = 0; i < r->nconfigs; i++) {
		c = &r->configs[i];
		csv_cell(fp, r->exp_id, 0);
		fprintf(fp, "%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
		    ",%" PRId64 ",%" PRId64 ",%s,", c->id, c->nodes,
		    c->gpus_per_node, c->gpus, c->ranks, c->batch,
		    c->global_batch, c->precision);
		for (j = 0; j < spec_nvaried(r->spec); j++)
			csv_cell(fp, c->values[j], 0);
		fprintf(fp, "%zu,", c->nruns);
		for (k = 0; k < REPORT_CLASS_COUNT; k++)
			fprintf(fp, "%zu,", c->count[k]);
		csv_num(fp, c->median);
		csv_num(fp, c->mean);
		csv_num(fp, c->min);
		csv_num(fp, c->max);
		fprintf(fp, "%s,", c->baseline != SIZE_MAX ?
		    r->configs[c->baseline].id : "");
		csv_num(fp, c->speedup);
		csv_num(fp, c->efficiency);
		csv_num(fp, c->time_to_train);
		csv_num(fp, c->loss);
		csv_num(fp, c->accuracy);
		if (c->peak_rss >= 0)
			fprintf(fp, "%" PRId64, c->peak_rss);
		fputs("\r\n", fp);
	}
}

static json_t *
compare_json(const struct report *a, const struct report *b,
    const struct report_match *m, size_t nm)
{
	json_t	*o = json_object(), *arr = json_array(), *e;
	size_t	 i;

	json_object_set_new(o, "experiment", json_string(b->exp_id));
	json_object_set_new(o, "name", json_string(b->name));
	for (i = 0; i < nm; i++) {
		e = json_object();
		json_object_set_new(e, "config_a",
		    json_string(a->configs[m[i].a].id));
		json_object_set_new(e, "config_b",
		    json_string(b->configs[m[i].b].id));
		json_object_set_new(e, "samples_per_s_a",
		    isnan(a->configs[m[i].a].median) ? json_null() :
		    json_real(a->configs[m[i].a].median));
		json_object_set_new(e, "samples_per_s_b",
		    isnan(b->configs[m[i].b].median) ? json_null() :
		    json_real(b->configs[m[i].b].median));
		json_object_set_new(e, "change", isnan(m[i].change) ?
		    json_null() : json_real(m[i].change));
		json_object_set_new(e, "outside_noise",
		    json_boolean(m[i].outside));
		json_array_append_new(arr, e);
	}
	json_object_set_new(o, "configurations", arr);
	return o;
}

/* ------------------------------------------------------------ plots */

static int
plot_write(FILE *list, const char *dir, const char *file,
    const struct svg_chart *c, const struct svg_series *s, size_t ns)
{
	char	*path = NULL;
	int	 rc;

	xasprintf(&path, "%s/%s", dir, file);
	if ((rc = svg_chart_write(path, c, s, ns)) != 0)
		fprintf(stderr, "cadre report: %s: %s\n", path,
		    rc == CADRE_ERR_SYSTEM ? strerror(errno) :
		    cadre_strerror(rc));
	else
		fprintf(list, "%s\n", path);
	free(path);
	return rc;
}

static int
plots(const struct report *r, const char *dir, FILE *list)
{
	const struct report_group	*g;
	const struct report_config	*c, *b;
	struct svg_chart		 ch;
	struct svg_series		*ss;
	double				*x, *y, *ideal, *ex, *ey, *lx, *ly;
	char				*title = NULL, *file = NULL, **labels;
	double				 ix[2], iy[2] = { 100, 100 };
	size_t				 i, j, k, n, step, cap;
	int				 rc = 0;

	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "cadre report: --plot %s: %s\n", dir,
		    strerror(errno));
		return CADRE_ERR_SYSTEM;
	}

	/* throughput against ranks, one chart per scaling group */
	for (i = 0; i < r->ngroups && rc == 0; i++) {
		g = &r->groups[i];
		b = &r->configs[g->baseline];
		x = xcalloc(g->n, sizeof *x);
		y = xcalloc(g->n, sizeof *y);
		ideal = xcalloc(g->n, sizeof *ideal);
		for (j = 0; j < g->n; j++) {
			c = &r->configs[g->configs[j]];
			x[j] = (double)c->ranks;
			y[j] = c->median;
			ideal[j] = b->median * (double)c->ranks /
			    (double)b->ranks;
		}
		ss = xcalloc(2, sizeof *ss);
		ss[0] = (struct svg_series){ "measured (median)", x, y, g->n,
		    0, 1 };
		ss[1] = (struct svg_series){ "ideal (linear from baseline)", x,
		    ideal, g->n, 1, 0 };
		xasprintf(&title, "%s: throughput, %s", r->name, g->title);
		ch = (struct svg_chart){ title, "ranks (GPUs or processes)",
		    "samples/s", 1, 1, 0, 0 };
		xasprintf(&file, "throughput-%s.svg", g->slug);
		rc = plot_write(list, dir, file, &ch, ss, 2);
		free(file);
		free(title);
		free(ss);
		free(x);
		free(y);
		free(ideal);
	}

	/* efficiency against ranks, one line per group */
	if (rc == 0) {
		ss = xcalloc(r->ngroups + 2, sizeof *ss);
		ex = xcalloc(r->nconfigs + 1, sizeof *ex);
		ey = xcalloc(r->nconfigs + 1, sizeof *ey);
		for (i = 0, k = 0; i < r->ngroups; i++) {
			g = &r->groups[i];
			b = &r->configs[g->baseline];
			ss[i] = (struct svg_series){ g->title, ex + k, ey + k,
			    g->n, 0, 1 };
			for (j = 0; j < g->n; j++, k++) {
				c = &r->configs[g->configs[j]];
				ex[k] = (double)c->ranks;
				ey[k] = b->median > 0 ? c->median / b->median /
				    ((double)c->ranks / (double)b->ranks) *
				    100 : NAN;
			}
		}
		/* the ideal, 100%, across every rank count there is */
		ix[0] = ix[1] = NAN;
		for (i = 0; i < r->nconfigs; i++) {
			if (isnan(ix[0]) || r->configs[i].ranks < ix[0])
				ix[0] = (double)r->configs[i].ranks;
			if (isnan(ix[1]) || r->configs[i].ranks > ix[1])
				ix[1] = (double)r->configs[i].ranks;
		}
		ss[r->ngroups] = (struct svg_series){ "ideal (100%)", ix, iy, 2,
		    1, 0 };
		xasprintf(&title, "%s: scaling efficiency", r->name);
		ch = (struct svg_chart){ title, "ranks (GPUs or processes)",
		    "efficiency (%)", 1, 1, 0, 0 };
		rc = plot_write(list, dir, "efficiency.svg", &ch, ss,
		    r->ngroups + 1);
		free(title);
		free(ss);
		free(ex);
		free(ey);
	}

	/* loss against step, one line per run with step lines */
	if (rc == 0) {
		ss = xcalloc(r->nruns + 1, sizeof *ss);
		labels = xcalloc(r->nruns + 1, sizeof *labels);
		for (i = 0, n = 0; i < r->nruns; i++)
			n += r->runs[i].m.nloss > 0;
		cap = n > 0 ? LOSS_PLOT_TOTAL / n : LOSS_PLOT_POINTS;
		if (cap > LOSS_PLOT_POINTS)
			cap = LOSS_PLOT_POINTS;
		if (cap < 50)
			cap = 50;
		for (i = 0, k = 0; i < r->nruns; i++) {
			const struct report_run	*rr = &r->runs[i];

			if (rr->m.nloss == 0)
				continue;
			step = (rr->m.nloss + cap - 1) / cap;
			n = (rr->m.nloss + step - 1) / step;
			lx = xcalloc(n, sizeof *lx);
			ly = xcalloc(n, sizeof *ly);
			for (j = 0; j < n; j++) {
				lx[j] = rr->m.loss_step[j * step];
				ly[j] = rr->m.loss[j * step];
			}
			xasprintf(&labels[k], "%s r%" PRId64 " (%s)", rr->id,
			    rr->repeat, report_class_name(rr->cls));
			ss[k] = (struct svg_series){ labels[k], lx, ly, n, 0,
			    0 };
			k++;
		}
		xasprintf(&title, "%s: training loss", r->name);
		ch = (struct svg_chart){ title, "step", "loss", 0, 1, 0, 0 };
		rc = plot_write(list, dir, "loss.svg", &ch, ss, k);
		free(title);
		for (i = 0; i < k; i++) {
			free((void *)ss[i].x);
			free((void *)ss[i].y);
			free(labels[i]);
		}
		free(labels);
		free(ss);
	}
	return rc;
}

/* ------------------------------------------------------------ at a time */

/* "median [min..max]" with decimals; "-" when there is none. */
static char *
fmt_spread(const struct report_spread *v, int decimals)
{
	char	*r;

	if (v->n == 0 || isnan(v->median))
		return xstrdup("-");
	if (v->n == 1 || v->min == v->max)
		xasprintf(&r, "%.*f", decimals, v->median);
	else
		xasprintf(&r, "%.*f [%.*f..%.*f]", decimals, v->median, decimals,
		    v->min, decimals, v->max);
	return r;
}

static char *
fmt_ratio(double v)
{
	char	*r;

	if (isnan(v))
		return xstrdup("-");
	xasprintf(&r, "%.2fx", v);
	return r;
}

/* The configuration as its varied values ("batch_size=8"), or its id. */
static char *
config_label(const struct report *r, size_t ci)
{
	struct cbuf	b;
	size_t		j;

	cbuf_init(&b, SIZE_MAX);
	for (j = 0; j < spec_nvaried(r->spec); j++)
		cbuf_addf(&b, "%s%s=%s", j > 0 ? " " : "",
		    short_name(spec_varied(r->spec, j)), r->configs[ci].values[j]);
	if (b.len == 0)
		cbuf_adds(&b, r->configs[ci].id);
	return cbuf_detach(&b, NULL);
}

static void
md_at(const struct report *r, const double *at, size_t nat, FILE *fp)
{
	static const char *const cols[] = { "config", "values", "runs at T",
	    "steps", "samples", "samples/s", "eval accuracy", "eval loss",
	    "baseline", "steps x", "samples x", "samples/s x", "accuracy +/-" };
	struct report_at_row	*rows;
	struct table		 t;
	char			 d[32], **row;
	size_t			 i, n, k, c;

	for (k = 0; k < nat; k++) {
		report_at(r, at[k], &rows, &n);
		duration_format((int64_t)llround(at[k]), d, sizeof d);
		fprintf(fp, "\n## At %s of training\n\n", d);
		fprintf(fp, "Per configuration, over its runs with a timed "
		    "checkpoint at %s: the checkpoint's step and samples, the "
		    "run's samples/s, and the checkpoint's eval accuracy and loss "
		    "(eval.jsonl); median [min..max] over the repeats, and "
		    "against the baseline configuration.\n\n", d);
		table_init(&t, sizeof cols / sizeof cols[0]);
		for (c = 0; c < t.ncols; c++)
			table_col(&t, c, cols[c], c >= 2 && c != 8);
		for (i = 0; i < n; i++) {
			const struct report_config *cf = &r->configs[rows[i].config];

			row = table_row(&t);
			c = 0;
			row[c++] = xstrdup(cf->id);
			row[c++] = config_label(r, rows[i].config);
			xasprintf(&row[c++], "%zu/%zu", rows[i].nmark, rows[i].nruns);
			row[c++] = fmt_spread(&rows[i].steps, 0);
			row[c++] = fmt_spread(&rows[i].samples, 0);
			row[c++] = fmt_spread(&rows[i].sps, 1);
			row[c++] = fmt_spread(&rows[i].accuracy, 4);
			row[c++] = fmt_spread(&rows[i].loss, 4);
			row[c++] = xstrdup(cf->baseline != SIZE_MAX ?
			    r->configs[cf->baseline].id : "-");
			row[c++] = fmt_ratio(rows[i].vs_steps);
			row[c++] = fmt_ratio(rows[i].vs_samples);
			row[c++] = fmt_ratio(rows[i].vs_sps);
			if (isnan(rows[i].vs_accuracy))
				row[c++] = xstrdup("-");
			else
				xasprintf(&row[c++], "%+.4f", rows[i].vs_accuracy);
		}
		table_print_md(&t, fp);
		table_free(&t);
		free(rows);
	}
}

static void
csv_spread(FILE *fp, const struct report_spread *v)
{
	csv_num(fp, v->median);
	csv_num(fp, v->min);
	csv_num(fp, v->max);
}

static void
print_csv_at(const struct report *r, const double *at, size_t nat, FILE *fp)
{
	static const char *const figs[] = { "steps", "samples", "samples_per_s",
	    "accuracy", "loss" };
	struct report_at_row	*rows;
	size_t			 i, n, k, f;

	fputs("experiment,at_s,config_id,runs,runs_at,", fp);
	for (f = 0; f < 5; f++)
		fprintf(fp, "%s_median,%s_min,%s_max,", figs[f], figs[f], figs[f]);
	fputs("baseline,steps_ratio,samples_ratio,samples_per_s_ratio,"
	    "accuracy_diff\r\n", fp);
	for (k = 0; k < nat; k++) {
		report_at(r, at[k], &rows, &n);
		for (i = 0; i < n; i++) {
			const struct report_config *cf = &r->configs[rows[i].config];

			csv_cell(fp, r->exp_id, 0);
			fprintf(fp, "%.0f,%s,%zu,%zu,", at[k], cf->id, rows[i].nruns,
			    rows[i].nmark);
			csv_spread(fp, &rows[i].steps);
			csv_spread(fp, &rows[i].samples);
			csv_spread(fp, &rows[i].sps);
			csv_spread(fp, &rows[i].accuracy);
			csv_spread(fp, &rows[i].loss);
			fprintf(fp, "%s,", cf->baseline != SIZE_MAX ?
			    r->configs[cf->baseline].id : "");
			csv_num(fp, rows[i].vs_steps);
			csv_num(fp, rows[i].vs_samples);
			csv_num(fp, rows[i].vs_sps);
			if (!isnan(rows[i].vs_accuracy))
				fprintf(fp, "%.10g", rows[i].vs_accuracy);
			fputs("\r\n", fp);
		}
		free(rows);
	}
}

static json_t *
jnum(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

static json_t *
spread_json(const struct report_spread *v)
{
	return json_pack("{s:o, s:o, s:o, s:I}", "median", jnum(v->median),
	    "min", jnum(v->min), "max", jnum(v->max), "n", (json_int_t)v->n);
}

static json_t *
at_json(const struct report *r, const double *at, size_t nat)
{
	struct report_at_row	*rows;
	json_t			*arr = json_array(), *t, *cs, *o;
	size_t			 i, n, k;

	for (k = 0; k < nat; k++) {
		report_at(r, at[k], &rows, &n);
		cs = json_array();
		for (i = 0; i < n; i++) {
			const struct report_config *cf = &r->configs[rows[i].config];
			char	*label = config_label(r, rows[i].config);

			o = json_pack("{s:s, s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:o, "
			    "s:o, s:o, s:o, s:o, s:o}", "config", cf->id,
			    "label", label,
			    "runs", (json_int_t)rows[i].nruns,
			    "runs_at", (json_int_t)rows[i].nmark,
			    "steps", spread_json(&rows[i].steps),
			    "samples", spread_json(&rows[i].samples),
			    "samples_per_s", spread_json(&rows[i].sps),
			    "accuracy", spread_json(&rows[i].accuracy),
			    "loss", spread_json(&rows[i].loss),
			    "baseline", cf->baseline != SIZE_MAX ?
			    json_string(r->configs[cf->baseline].id) : json_null(),
			    "steps_ratio", jnum(rows[i].vs_steps),
			    "samples_ratio", jnum(rows[i].vs_samples),
			    "samples_per_s_ratio", jnum(rows[i].vs_sps),
			    "accuracy_diff", jnum(rows[i].vs_accuracy));
			free(label);
			if (o != NULL)
				json_array_append_new(cs, o);
		}
		t = json_pack("{s:f, s:o}", "seconds", at[k], "configs", cs);
		json_array_append_new(arr, t);
		free(rows);
	}
	return arr;
}

/* accuracy_vs_time.svg and accuracy_vs_samples.svg: per configuration,
 * the median eval accuracy over its runs at each timed mark. */
static int
plots_at(const struct report *r, const char *dir, FILE *list)
{
	struct svg_chart	 ch;
	struct svg_series	*ts, *ss;
	double			**tx, **sx, **ay, *marks;
	char			**labels;
	size_t			 ci, k, n, nm, ns = 0;
	int			 rc;

	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "cadre report: %s: %s\n", dir, strerror(errno));
		return CADRE_ERR_SYSTEM;
	}
	n = r->nconfigs;
	ts = xcalloc(n + 1, sizeof *ts);
	ss = xcalloc(n + 1, sizeof *ss);
	tx = xcalloc(n + 1, sizeof *tx);
	sx = xcalloc(n + 1, sizeof *sx);
	ay = xcalloc(n + 1, sizeof *ay);
	labels = xcalloc(n + 1, sizeof *labels);
	for (ci = 0; ci < n; ci++) {
		nm = report_marks(r, ci, &marks);
		if (nm == 0) {
			free(marks);
			continue;
		}
		tx[ns] = xcalloc(nm, sizeof **tx);
		sx[ns] = xcalloc(nm, sizeof **sx);
		ay[ns] = xcalloc(nm, sizeof **ay);
		for (k = 0; k < nm; k++) {
			struct report_at_row	*rows;
			size_t			 nr;

			report_at(r, marks[k], &rows, &nr);
			tx[ns][k] = marks[k] / 60.0;
			sx[ns][k] = rows[ci].samples.median;
			ay[ns][k] = rows[ci].accuracy.median;
			free(rows);
		}
		labels[ns] = config_label(r, ci);
		ts[ns] = (struct svg_series){ labels[ns], tx[ns], ay[ns], nm, 0, 1 };
		ss[ns] = (struct svg_series){ labels[ns], sx[ns], ay[ns], nm, 0, 1 };
		ns++;
		free(marks);
	}
	ch = (struct svg_chart){ "Eval accuracy of the timed checkpoints",
	    "training time (minutes)", "eval accuracy", 1, 0, 0, 0 };
	rc = plot_write(list, dir, "accuracy_vs_time.svg", &ch, ts, ns);
	ch.xlabel = "samples trained on";
	if (rc == 0)
		rc = plot_write(list, dir, "accuracy_vs_samples.svg", &ch, ss, ns);
	for (k = 0; k < ns; k++) {
		free(tx[k]);
		free(sx[k]);
		free(ay[k]);
		free(labels[k]);
	}
	free(tx);
	free(sx);
	free(ay);
	free(labels);
	free(ts);
	free(ss);
	return rc;
}

/* ------------------------------------------------------------ main */

int
cli_open_state(const char *prog, const char *state_dir, struct state **st)
{
	char	*db = NULL;
	int	 rc;

	*st = NULL;
	if (state_dir != NULL)
		xasprintf(&db, "%s/cadre.db", state_dir);
	else if ((rc = paths_db(&db)) != 0) {
		fprintf(stderr, "%s: no state directory: set CADRE_STATE_DIR or "
		    "HOME, or give --state-dir\n", prog);
		return rc;
	}
	if (access(db, F_OK) != 0) {
		fprintf(stderr, "%s: %s: %s (nothing submitted yet? --state-dir "
		    "names another state directory)\n", prog, db, strerror(errno));
		rc = CADRE_ERR_NOT_FOUND;
		goto out;
	}
	if ((rc = state_open(db, st)) != 0)
		fprintf(stderr, "%s: %s: %s\n", prog, db, cadre_strerror(rc));

 out:
	free(db);
	return rc;
}

static int
load(struct state *st, const char *arg, struct report **out)
{
	struct diags	 d;
	char		 msg[512], *id = NULL;
	int		 rc;

	*out = NULL;
	rc = state_find_experiment(st, arg, &id, msg, sizeof msg);
	if (*msg != '\0' || rc != 0)
		fprintf(stderr, "cadre report: %s\n", *msg != '\0' ? msg :
		    cadre_strerror(rc));
	if (rc != 0)
		return rc;
	diags_init(&d);
	rc = load_report(st, id, &d, out);
	diags_print(&d, stderr);
	diags_free(&d);
	if (rc != 0)
		fprintf(stderr, "cadre report: experiment %s: %s\n", id,
		    rc == CADRE_ERR_INVALID ? "its stored spec does not parse "
		    "with this version of cadre" : cadre_strerror(rc));
	else
		diags_print(&(*out)->warnings, stderr);
	free(id);
	return rc;
}

static int
run_report(const struct cli_command *cmd, int argc, char **argv)
{
	struct report_opts	 o;
	struct state		*st = NULL;
	struct report		*r = NULL, *b = NULL;
	struct report_match	*m = NULL;
	size_t			 nm = 0;
	json_t			*root;
	int			 first, ret = CLI_EXIT_FAIL;

	memset(&o, 0, sizeof o);
	o.format = FMT_MD;
	if ((first = cli_parse(cmd, argc, argv, report_opt, &o)) < 0)
		return first == -2 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (first >= argc) {
		cli_usage_error(cmd, "no experiment given");
		return CLI_EXIT_USAGE;
	}
	if (argc - first > 1) {
		cli_usage_error(cmd, "one experiment at a time ('%s' is one "
		    "too many); --compare EXP2 compares two", argv[first + 1]);
		return CLI_EXIT_USAGE;
	}
	if (cli_open_state("cadre report", o.state_dir, &st) != 0)
		goto out;
	if (load(st, argv[first], &r) != 0)
		goto out;
	if (o.compare != NULL) {
		if (load(st, o.compare, &b) != 0)
			goto out;
		report_compare(r, b, &m, &nm);
	}
	switch (o.format) {
	case FMT_MD:
		if (o.nat > 0) {
			fprintf(stdout, "# Report: %s (%s) at equal training "
			    "time\n", r->name, r->exp_id);
			md_at(r, o.at, o.nat, stdout);
		} else
			print_md(r, b, m, nm, stdout);
		break;
	case FMT_CSV:
		if (o.nat > 0)
			print_csv_at(r, o.at, o.nat, stdout);
		else
			print_csv(r, stdout);
		break;
	case FMT_JSON:
		root = report_json(r);
		if (o.nat > 0)
			json_object_set_new(root, "at", at_json(r, o.at, o.nat));
		if (b != NULL)
			json_object_set_new(root, "compare",
			    compare_json(r, b, m, nm));
		json_dumpf(root, stdout, JSON_INDENT(2) | JSON_SORT_KEYS |
		    JSON_REAL_PRECISION(17));
		putchar('\n');
		json_decref(root);
		break;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "cadre report: standard output: %s\n",
		    strerror(errno));
		goto out;
	}
	/* The plot paths go to stderr when stdout carries csv or json. */
	if (o.plot != NULL && plots(r, o.plot, o.format == FMT_MD ? stdout :
	    stderr) != 0)
		goto out;
	if (o.plot != NULL && o.nat > 0 && plots_at(r, o.plot, o.format ==
	    FMT_MD ? stdout : stderr) != 0)
		goto out;
	ret = CLI_EXIT_OK;

 out:
	free(m);
	report_free(b);
	report_free(r);
	state_close(st);
	return ret;
}

int
cli_report_print(const char *db, const char *exp_id, FILE *fp)
{
	struct state	*st = NULL;
	struct report	*r = NULL;
	int		 rc;

	if ((rc = state_open(db, &st)) != 0) {
		fprintf(stderr, "cadre: %s: %s\n", db, cadre_strerror(rc));
		return rc;
	}
	if ((rc = load(st, exp_id, &r)) == 0)
		print_md(r, NULL, NULL, 0, fp);
	report_free(r);
	state_close(st);
	return rc;
}

static const struct cli_option report_options[] = {
	{ "format", 'f', "FMT", "md (aligned Markdown, the default), csv or "
	    "json" },
	{ "plot", 'p', "DIR", "Also write SVG plots into DIR" },
	{ "compare", 'c', "EXP2", "Compare each configuration with EXP2's" },
	{ "at", 'a', "TIMES", "The table at these training times (20m,40m): "
	    "steps, samples, samples/s, eval accuracy of the timed checkpoints" },
	{ "state-dir", 0, "DIR", "State directory (default: $CADRE_STATE_DIR, "
	    "...)" },
	{ NULL, 0, NULL, NULL }
};

const struct cli_command cli_cmd_report = {
	.name = "report",
	.operands = "EXP",
	.summary = "Print an experiment's scaling report, plots and comparison",
	.description =
	    "EXP is an experiment id, a unique id prefix or a name (the newest\n"
	    "experiment of that name). Per configuration: runs done/total, failed,\n"
	    "out-of-memory and cancelled runs, median, mean, min and max samples/s\n"
	    "over the repeats (each run's own figure is the median of its step lines\n"
	    "after measure.skip_steps), speedup and scaling efficiency against the\n"
	    "baseline, time to train, final loss or accuracy, peak memory; then a\n"
	    "DLPerf-style table per batch size and precision, every run, and the\n"
	    "environment the runs recorded. Lines of metrics.jsonl that cannot be\n"
	    "used are warnings on standard error (FILE:LINE).\n"
	    "\n"
	    "--at TIMES (20m or 20m,40m) prints instead the table at equal training time: per\n"
	    "configuration, over its runs with a timed checkpoint at TIME (the trainer\n"
	    "takes one every trainer.checkpoint_every of training), the checkpoint's\n"
	    "step and samples, the run's samples/s and the checkpoint's eval accuracy\n"
	    "and loss (eval.jsonl), median [min..max], and against the baseline; with\n"
	    "--plot also accuracy_vs_time.svg and accuracy_vs_samples.svg. In json it\n"
	    "is the report's \"at\" member.\n"
	    "\n"
	    "--plot DIR writes throughput-*.svg (against ranks, with the ideal line),\n"
	    "efficiency.svg and loss.svg and prints their paths after the report.\n"
	    "--compare EXP2 gives the change in median samples/s of each\n"
	    "configuration in both (matched by values) and whether it is outside the\n"
	    "noise (the min..max ranges of the repeats do not overlap). The state\n"
	    "directory defaults to $CADRE_STATE_DIR, else $XDG_STATE_HOME/cadre, else\n"
	    "~/.local/state/cadre. See docs/report.md.\n"
	    "\n"
	    "Exit status: 0 done, 1 no such experiment, no or an unreadable database,\n"
	    "2 bad command line.\n",
	.options = report_options,
	.run = run_report,
};
