/* cadre report --plot: the SVG figures (throughput, efficiency, loss and,
 * with --at, accuracy over training time and samples) built from a
 * report for report/svg.c to write. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "report.h"
#include "report_render.h"
#include "svg.h"
#include "xmalloc.h"

#define LOSS_PLOT_POINTS	2000	/* per line: enough for the eye */
#define LOSS_PLOT_TOTAL		400000	/* over all lines: the SVG stays small */

/* The loss of run rr at step s (its last value there: a resumed attempt
 * logs a step again), NAN when it logged none; *at walks rr's steps in
 * order as s grows. */
static double
loss_at(const struct report_run *rr, double s, size_t *at)
{
	double	v = NAN;

	while (*at < rr->m.nloss && rr->m.loss_step[*at] < s)
		(*at)++;
	while (*at < rr->m.nloss && rr->m.loss_step[*at] == s)
		v = rr->m.loss[(*at)++];
	return v;
}

/*
 * Configuration ci's loss curve over its runs with step lines: on the
 * steps of its longest run (thinned to a cap), the median, min and max
 * of the runs that logged the step. Returns the points (0: none; the
 * four arrays are then NULL).
 */
static size_t
config_loss(const struct report *r, size_t ci, double **x, double **med,
    double **lo, double **hi)
{
	const struct report_run	**runs, *grid = NULL;
	double			*v;
	size_t			*at, nr = 0, i, j, k, nv, n, step, cap, nlines = 0;

	*x = *med = *lo = *hi = NULL;
	for (i = 0; i < r->nconfigs; i++) {
		for (j = 0; j < r->nruns; j++) {
			if (r->runs[j].config == i && r->runs[j].m.nloss > 0) {
				nlines++;
				break;
			}
		}
	}
	runs = xcalloc(r->nruns + 1, sizeof *runs);
	for (i = 0; i < r->nruns; i++) {
		if (r->runs[i].config != ci || r->runs[i].m.nloss == 0)
			continue;
		runs[nr++] = &r->runs[i];
		if (grid == NULL || r->runs[i].m.nloss > grid->m.nloss)
			grid = &r->runs[i];
	}
	if (nr == 0) {
		free(runs);
		return 0;
	}
	cap = nlines > 0 ? LOSS_PLOT_TOTAL / nlines : LOSS_PLOT_POINTS;
	if (cap > LOSS_PLOT_POINTS)
		cap = LOSS_PLOT_POINTS;
	if (cap < 50)
		cap = 50;
	step = (grid->m.nloss + cap - 1) / cap;
	n = (grid->m.nloss + step - 1) / step;
	*x = xcalloc(n, sizeof **x);
	*med = xcalloc(n, sizeof **med);
	*lo = xcalloc(n, sizeof **lo);
	*hi = xcalloc(n, sizeof **hi);
	at = xcalloc(nr, sizeof *at);
	v = xcalloc(nr, sizeof *v);
	for (j = 0; j < n; j++) {
		(*x)[j] = grid->m.loss_step[j * step];
		for (k = 0, nv = 0; k < nr; k++) {
			double	l = loss_at(runs[k], (*x)[j], &at[k]);

			if (!isnan(l))
				v[nv++] = l;
		}
		(*med)[j] = report_median(v, nv);
		(*lo)[j] = (*hi)[j] = NAN;
		for (k = 0; k < nv; k++) {
			(*lo)[j] = k == 0 ? v[k] : fmin((*lo)[j], v[k]);
			(*hi)[j] = k == 0 ? v[k] : fmax((*hi)[j], v[k]);
		}
	}
	free(v);
	free(at);
	free(runs);
	return n;
}

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

int
render_plots(const struct report *r, const char *dir, FILE *list)
{
	const struct report_group	*g;
	const struct report_config	*c, *b;
	struct svg_chart		 ch;
	struct svg_series		*ss;
	double				*x, *y, *ideal, *ex, *ey, *lx, *ly;
	double				*lo, *hi;
	char				*title = NULL, *file = NULL, **labels;
	double				 ix[2], iy[2] = { 100, 100 };
	size_t				 i, j, k, n;
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
		lo = xcalloc(g->n, sizeof *lo);
		hi = xcalloc(g->n, sizeof *hi);
		for (j = 0; j < g->n; j++) {
			lo[j] = r->configs[g->configs[j]].min;
			hi[j] = r->configs[g->configs[j]].max;
		}
		ss = xcalloc(2, sizeof *ss);
		ss[0] = (struct svg_series){ "measured (median; band: min..max "
		    "of the repeats)", x, y, g->n, 0, 1, lo, hi };
		ss[1] = (struct svg_series){ "ideal (linear from baseline)", x,
		    ideal, g->n, 1, 0, NULL, NULL };
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
		free(lo);
		free(hi);
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
			    g->n, 0, 1, NULL, NULL };
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
		    1, 0, NULL, NULL };
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

	/* loss against step, one line per configuration: the median over
	 * its repeats, their min..max as a band */
	if (rc == 0) {
		ss = xcalloc(r->nconfigs + 1, sizeof *ss);
		labels = xcalloc(r->nconfigs + 1, sizeof *labels);
		for (i = 0, k = 0; i < r->nconfigs; i++) {
			if ((n = config_loss(r, i, &lx, &ly, &lo, &hi)) == 0)
				continue;
			labels[k] = render_config_label(r, i);
			ss[k] = (struct svg_series){ labels[k], lx, ly, n, 0, 0,
			    lo, hi };
			k++;
		}
		xasprintf(&title, "%s: training loss (median of the repeats, "
		    "band: min..max)", r->name);
		ch = (struct svg_chart){ title, "step", "loss", 0, 1, 0, 0 };
		rc = plot_write(list, dir, "loss.svg", &ch, ss, k);
		free(title);
		for (i = 0; i < k; i++) {
			free((void *)ss[i].x);
			free((void *)ss[i].y);
			free((void *)ss[i].ylo);
			free((void *)ss[i].yhi);
			free(labels[i]);
		}
		free(labels);
		free(ss);
	}
	return rc;
}

/* accuracy_vs_time.svg and accuracy_vs_samples.svg: per configuration,
 * the median eval accuracy over its runs at each timed mark. */
int
render_plots_at(const struct report *r, const char *dir, FILE *list)
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
		labels[ns] = render_config_label(r, ci);
		ts[ns] = (struct svg_series){ labels[ns], tx[ns], ay[ns], nm, 0, 1,
		    NULL, NULL };
		ss[ns] = (struct svg_series){ labels[ns], sx[ns], ay[ns], nm, 0, 1,
		    NULL, NULL };
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
