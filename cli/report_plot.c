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

#define LOSS_PLOT_POINTS	2000	/* per run: enough for the eye */
#define LOSS_PLOT_TOTAL		400000	/* over all runs: the SVG stays small */

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
