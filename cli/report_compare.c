/* cadre report --compare: the comparison table (Markdown) and the
 * "compare" member of the JSON report. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "report.h"
#include "spec.h"
#include "report_render.h"
#include "xmalloc.h"

static void
md_diff_line(void *ctx, enum spec_key k, const char *va, const char *vb)
{
	fprintf(ctx, "- %s: %s -> %s\n", spec_key_info(k)->path,
	    *va != '\0' ? va : "(unset)", *vb != '\0' ? vb : "(unset)");
}

static void
json_diff_entry(void *ctx, enum spec_key k, const char *va, const char *vb)
{
	json_array_append_new(ctx, json_pack("{s:s, s:s, s:s}", "key",
	    spec_key_info(k)->path, "a", va, "b", vb));
}

void
render_md_compare(const struct report *a, const struct report *b,
    const struct report_match *m, size_t nm, FILE *fp)
{
	static const char *const titles[] = { "config", "nodes", "ranks",
	    "batch", "precision" };
	static const char *const figures[] = { "samples/s A", "range A",
	    "samples/s B", "range B", "change", "verdict" };
	const struct report_config	*x, *y;
	struct table			 t;
	size_t				 i, j, col, nfixed, nother = 0;
	char				**row, *lo, *hi;

	fprintf(fp, "\n## Compared with %s (%s)\n\n", b->exp_id, b->name);
	fprintf(fp, "A is %s, B is %s; configurations match when every "
	    "varied value is the same; a change counts when the min..max "
	    "ranges of the repeats do not overlap.\n\n", a->exp_id,
	    b->exp_id);
	/* what else differs between the two: the likely cause of a change */
	fprintf(fp, "Spec differences outside the matrix (A -> B):\n\n");
	if (spec_diff(a->spec, b->spec, md_diff_line, fp) == 0)
		fprintf(fp, "- none\n");
	fputc('\n', fp);
	if (nm == 0) {
		fprintf(fp, "No configuration is in both experiments.\n");
		return;
	}
	nfixed = sizeof titles / sizeof titles[0];
	for (j = 0; j < spec_nvaried(a->spec); j++)
		nother += !report_fixed_key(spec_varied(a->spec, j));
	table_init(&t, nfixed + nother + sizeof figures / sizeof figures[0]);
	for (col = 0; col < nfixed; col++)
		table_col(&t, col, titles[col], col != 0 && col != 4);
	for (j = 0; j < spec_nvaried(a->spec); j++)
		if (!report_fixed_key(spec_varied(a->spec, j)))
			table_col(&t, col++, spec_key_leaf(spec_varied(a->spec,
			    j)), 0);
	for (i = 0; i < sizeof figures / sizeof figures[0]; i++, col++)
		table_col(&t, col, figures[i], i < 5);
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
		for (j = 0; j < spec_nvaried(a->spec); j++)
			if (!report_fixed_key(spec_varied(a->spec, j)))
				row[col++] = xstrdup(x->values[j]);
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

json_t *
render_compare_json(const struct report *a, const struct report *b,
    const struct report_match *m, size_t nm)
{
	json_t	*o = json_object(), *arr = json_array(), *e;
	size_t	 i;

	json_object_set_new(o, "experiment", json_string(b->exp_id));
	json_object_set_new(o, "name", json_string(b->name));
	e = json_array();
	(void)spec_diff(a->spec, b->spec, json_diff_entry, e);
	json_object_set_new(o, "spec_diff", e);
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
