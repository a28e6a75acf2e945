/* cadre report's Markdown and CSV output: the aligned-table writer that
 * every Markdown section uses, the sections of the main report, and its
 * CSV. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "duration.h"
#include "report.h"
#include "report_render.h"
#include "rundir.h"
#include "xmalloc.h"

char *
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

char *
fmt_int(int64_t v)
{
	char	*r;

	xasprintf(&r, "%" PRId64, v);
	return r;
}

void
table_init(struct table *t, size_t ncols)
{
	memset(t, 0, sizeof *t);
	t->ncols = ncols;
	t->titles = xcalloc(ncols, sizeof *t->titles);
	t->right = xcalloc(ncols, sizeof *t->right);
}

void
table_col(struct table *t, size_t c, const char *title, int right)
{
	t->titles[c] = title;
	t->right[c] = right;
}

char **
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

void
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

void
table_free(struct table *t)
{
	size_t	i;

	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->titles);
	free(t->right);
}

int
report_fixed_key(enum spec_key k)
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
	static const char *const tail[] = { "done/total", REASON_FAILED, REASON_OOM,
	    REASON_CANCELLED, "other", "samples/s median", "mean", "min", "max", "speedup",
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
		if (!report_fixed_key(spec_varied(r->spec, j))) {
			xi[nextra] = j;
			extra[nextra++] = spec_varied(r->spec, j);
		}
	}
	table_init(&t, nfixed + nextra + ntail + (size_t)acc + 1);
	for (col = 0; col < nfixed; col++)
		table_col(&t, col, fixed[col], col > 0 && col < 6);
	for (j = 0; j < nextra; j++)
		table_col(&t, col++, spec_key_leaf(extra[j]), 0);
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
		row[col++] = fmt_int(rr->attempts);
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

/* The checkpoints a resume passed over (metrics.jsonl's checkpoint_skipped):
 * the run went on from an older one, and lost the steps between. */
static void
md_skipped(const struct report *r, FILE *fp)
{
	const struct report_run	*rr;
	size_t			 i, j, n = 0;

	for (i = 0; i < r->nruns; i++) {
		rr = &r->runs[i];
		for (j = 0; j < rr->m.nskipped; j++) {
			if (n++ == 0)
				fprintf(fp, "\nCheckpoints passed over on resume "
				    "(the run went on from an older one):\n\n");
			fprintf(fp, "- %s: %s\n", rr->id, rr->m.skipped[j]);
		}
	}
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


void
render_md(const struct report *r, const struct report *b,
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
	md_skipped(r, fp);
	fprintf(fp, "\n## Environment\n\n");
	md_env(r, fp);
	if (r->warnings.nwarnings > 0)
		fprintf(fp, "\n%zu warning%s about the runs' files: see "
		    "standard error.\n", r->warnings.nwarnings,
		    r->warnings.nwarnings == 1 ? "" : "s");
	if (b != NULL)
		render_md_compare(r, b, m, nm, fp);
}

/* RFC 4180: quoted when it holds a comma, a quote or a line break. */
void
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

void
csv_num(FILE *fp, double v)
{
	if (isnan(v))
		fputs(",", fp);
	else
		fprintf(fp, "%.10g,", v);
}

void
render_csv(const struct report *r, FILE *fp)
{
	const struct report_config	*c;
	size_t				 i, j;
	int				 k;

	fputs("experiment,config_id,nodes,gpus_per_node,gpus,ranks,"
	    "batch_size,global_batch,precision,", fp);
	/* the fixed columns already hold nodes, GPUs, batch and precision */
	for (j = 0; j < spec_nvaried(r->spec); j++)
		if (!report_fixed_key(spec_varied(r->spec, j)))
			csv_cell(fp, spec_key_info(spec_varied(r->spec,
			    j))->path, 0);
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
			if (!report_fixed_key(spec_varied(r->spec, j)))
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
