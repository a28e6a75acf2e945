/* cadre report --at: the tables at equal training time, as Markdown, CSV
 * and the "at" member of the JSON report. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "buf.h"
#include "duration.h"
#include "report.h"
#include "report_render.h"
#include "xmalloc.h"

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
char *
render_config_label(const struct report *r, size_t ci)
{
	struct cbuf	b;
	size_t		j;

	const struct report_config	*c = &r->configs[ci];

	/* what a reader compares: the resources, batch and precision, then
	 * whatever else the matrix varies */
	cbuf_init(&b, SIZE_MAX);
	cbuf_addf(&b, "%lld node%s x %lld rank%s, batch %lld, %s",
	    (long long)c->nodes, c->nodes == 1 ? "" : "s",
	    (long long)(c->nodes > 0 ? c->ranks / c->nodes : c->ranks),
	    c->nodes > 0 && c->ranks / c->nodes == 1 ? "" : "s",
	    (long long)c->batch, c->precision);
	for (j = 0; j < spec_nvaried(r->spec); j++)
		if (!report_fixed_key(spec_varied(r->spec, j)))
			cbuf_addf(&b, ", %s=%s",
			    spec_key_leaf(spec_varied(r->spec, j)),
			    c->values[j]);
	return cbuf_detach(&b, NULL);
}

void
render_md_at(const struct report *r, const double *at, size_t nat, FILE *fp)
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
			row[c++] = render_config_label(r, rows[i].config);
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

void
render_csv_at(const struct report *r, const double *at, size_t nat, FILE *fp)
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

json_t *
render_at_json(const struct report *r, const double *at, size_t nat)
{
	struct report_at_row	*rows;
	json_t			*arr = json_array(), *t, *cs, *o;
	size_t			 i, n, k;

	for (k = 0; k < nat; k++) {
		report_at(r, at[k], &rows, &n);
		cs = json_array();
		for (i = 0; i < n; i++) {
			const struct report_config *cf = &r->configs[rows[i].config];
			char	*label = render_config_label(r, rows[i].config);

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
