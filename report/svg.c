/* Line charts as SVG 1.1 (svg.h). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "strutil.h"
#include "svg.h"
#include "xmalloc.h"

#define SVG_MAX_BYTES	((size_t)64 << 20)
#define LABEL_MAX	34	/* characters of a legend entry */
#define VALUE_MAX	1e15	/* larger values are not plotted */
#define TICKS_MAX	50

/* Tableau 10: distinct, and readable on white. */
static const char *const palette[] = {
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"
};
#define NPALETTE	(sizeof palette / sizeof palette[0])

void
svg_escape(struct cbuf *b, const char *text)
{
	const unsigned char	*p = (const unsigned char *)text;
	size_t			 n, i;

	while (*p != '\0') {
		switch (*p) {
		case '&':
			cbuf_adds(b, "&amp;");
			break;
		case '<':
			cbuf_adds(b, "&lt;");
			break;
		case '>':
			cbuf_adds(b, "&gt;");
			break;
		case '"':
			cbuf_adds(b, "&quot;");
			break;
		case '\'':
			cbuf_adds(b, "&apos;");
			break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				cbuf_addc(b, ' ');	/* not allowed in XML 1.0 */
				break;
			}
			if (*p < 0x80) {
				cbuf_addc(b, (char)*p);
				break;
			}
			n = *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc0 ? 2 : 1;
			for (i = 1; i < n; i++) {
				if (p[i] == '\0')
					break;
			}
			if (i == n && n > 1 && str_valid_utf8((const char *)p,
			    n, NULL)) {
				cbuf_add(b, p, n);
				p += n;
				continue;
			}
			cbuf_addc(b, '?');
			break;
		}
		p++;
	}
}

/* A step of 1, 2, 2.5 or 5 times a power of ten giving about n
 * intervals. */
static double
nice_step(double range, int n, int integers)
{
	double	raw = range / n, mag, f, step;

	if (!(raw > 0))
		return 1;
	mag = pow(10, floor(log10(raw)));
	f = raw / mag;
	step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * mag;
	if (integers)
		step = step < 1 ? 1 : ceil(step);	/* 2.5 ranks: no */
	return step;
}

struct axis {
	double	lo, hi, step;
	int	decimals;
	int	nticks;		/* intervals between lo and hi */
};

/* Whether a point can be drawn: finite, and small enough that the axis
 * arithmetic stays finite. */
static int
plottable(double x, double y)
{
	return isfinite(x) && isfinite(y) && fabs(x) <= VALUE_MAX &&
	    fabs(y) <= VALUE_MAX;
}

static void
axis_fit(struct axis *a, double lo, double hi, int from_zero, int integers)
{
	if (from_zero && lo > 0)
		lo = 0;
	if (from_zero && hi < 0)
		hi = 0;
	if (!(hi > lo)) {
		double	pad = fabs(lo) > 0 ? fabs(lo) * 0.1 : 1;

		lo -= pad;
		hi += pad;
		if (from_zero && lo < 0 && hi - pad >= 0)
			lo = 0;
	}
	if (!integers)
		hi += (hi - lo) * 0.04;	/* a line at the maximum stays off the frame */
	a->step = nice_step(hi - lo, 5, integers);
	a->lo = floor(lo / a->step) * a->step;
	a->hi = ceil(hi / a->step) * a->step;
	if (a->hi <= a->lo)
		a->hi = a->lo + a->step;
	/* as many decimals as the step has: 0.25 needs two */
	for (a->decimals = 0; a->decimals < 9; a->decimals++) {
		double	sc = a->step * pow(10, a->decimals);

		if (fabs(sc - round(sc)) < 1e-6 * sc)
			break;
	}
	a->nticks = (int)llround((a->hi - a->lo) / a->step);
	if (a->nticks < 1 || a->nticks > TICKS_MAX) {
		/* a step below the precision of the values: ends only */
		a->nticks = 1;
		a->step = a->hi - a->lo;
	}
}

static void
tick_text(char *buf, size_t len, double v, int decimals)
{
	if (fabs(v) < 1e-12)
		v = 0;	/* no "-0" */
	if (fabs(v) >= 1e7)
		snprintf(buf, len, "%.3g", v);
	else
		snprintf(buf, len, "%.*f", decimals, v);
}

static void
text_at(struct cbuf *b, double x, double y, const char *anchor,
    const char *extra, const char *text)
{
	cbuf_addf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s>", x, y,
	    anchor, extra);
	svg_escape(b, text);
	cbuf_adds(b, "</text>\n");
}

int
svg_chart_render(struct cbuf *b, const struct svg_chart *c,
    const struct svg_series *s, size_t ns)
{
	struct axis	 ax, ay;
	double		 W = c->width > 0 ? c->width : 900;
	double		 H = c->height > 0 ? c->height : 500;
	double		 L = 80, R = 290, T = 50, B = 60;
	double		 pw, ph, xmin = INFINITY, xmax = -INFINITY;
	double		 ymin = INFINITY, ymax = -INFINITY, v, px, py, ly;
	size_t		 i, j, nshown, npts;
	char		 num[64], label[LABEL_MAX * 4 + 8];
	const char	*col;
	int		 pen, k;

	pw = W - L - R;
	ph = H - T - B;
	/* what the document needs at most: refuse early rather than write
	 * half of it */
	for (i = 0, npts = 0; i < ns; i++)
		npts += s[i].n;
	if (b->max - b->len < 16384 + ns * 512 + npts * 160)
		return CADRE_ERR_TOO_LARGE;
	for (i = 0; i < ns; i++) {
		for (j = 0; j < s[i].n; j++) {
			if (!plottable(s[i].x[j], s[i].y[j]))
				continue;
			xmin = fmin(xmin, s[i].x[j]);
			xmax = fmax(xmax, s[i].x[j]);
			ymin = fmin(ymin, s[i].y[j]);
			ymax = fmax(ymax, s[i].y[j]);
			if (s[i].ylo != NULL && s[i].yhi != NULL &&
			    plottable(s[i].ylo[j], s[i].yhi[j])) {
				ymin = fmin(ymin, s[i].ylo[j]);
				ymax = fmax(ymax, s[i].yhi[j]);
			}
		}
	}
	if (!isfinite(xmin)) {
		xmin = 0;
		xmax = 1;
		ymin = 0;
		ymax = 1;
	}
	axis_fit(&ax, xmin, xmax, 0, c->x_integers);
	axis_fit(&ay, ymin, ymax, c->y_from_zero, 0);

	cbuf_adds(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	cbuf_addf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
	    "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
	    "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
	    "font-size=\"13\">\n", W, H, W, H);
	cbuf_adds(b, "<title>");
	svg_escape(b, c->title != NULL ? c->title : "");
	cbuf_adds(b, "</title>\n");
	cbuf_addf(b, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" "
	    "fill=\"#ffffff\"/>\n", W, H);
	text_at(b, L + pw / 2, 28, "middle", " font-size=\"17\" "
	    "font-weight=\"bold\"", c->title != NULL ? c->title : "");

	/* grid, ticks and numbers */
	cbuf_adds(b, "<g stroke=\"#dddddd\" stroke-width=\"1\">\n");
	for (k = 0; k <= ay.nticks; k++) {
		v = ay.lo + k * ay.step;
		py = T + ph - (v - ay.lo) / (ay.hi - ay.lo) * ph;
		cbuf_addf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
		    "y2=\"%.1f\"/>\n", L, py, L + pw, py);
	}
	for (k = 0; k <= ax.nticks; k++) {
		v = ax.lo + k * ax.step;
		px = L + (v - ax.lo) / (ax.hi - ax.lo) * pw;
		cbuf_addf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
		    "y2=\"%.1f\"/>\n", px, T, px, T + ph);
	}
	cbuf_adds(b, "</g>\n<g fill=\"#333333\">\n");
	for (k = 0; k <= ay.nticks; k++) {
		v = ay.lo + k * ay.step;
		py = T + ph - (v - ay.lo) / (ay.hi - ay.lo) * ph;
		tick_text(num, sizeof num, v, ay.decimals);
		text_at(b, L - 8, py + 4, "end", "", num);
	}
	for (k = 0; k <= ax.nticks; k++) {
		v = ax.lo + k * ax.step;
		px = L + (v - ax.lo) / (ax.hi - ax.lo) * pw;
		tick_text(num, sizeof num, v, ax.decimals);
		text_at(b, px, T + ph + 18, "middle", "", num);
	}
	cbuf_adds(b, "</g>\n");
	cbuf_addf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
	    "height=\"%.1f\" fill=\"none\" stroke=\"#333333\" "
	    "stroke-width=\"1\"/>\n",
	    L, T, pw, ph);
	text_at(b, L + pw / 2, H - 15, "middle", "",
	    c->xlabel != NULL ? c->xlabel : "");
	cbuf_addf(b, "<text x=\"0\" y=\"0\" text-anchor=\"middle\" "
	    "transform=\"translate(20 %.1f) rotate(-90)\">", T + ph / 2);
	svg_escape(b, c->ylabel != NULL ? c->ylabel : "");
	cbuf_adds(b, "</text>\n");

	/* the bands first, under every line */
	for (i = 0; i < ns; i++) {
		if (s[i].ylo == NULL || s[i].yhi == NULL)
			continue;
		cbuf_addf(b, "<polygon fill=\"%s\" fill-opacity=\"0.18\" "
		    "stroke=\"none\" points=\"", palette[i % NPALETTE]);
		pen = 0;
		/* along the top, then back along the bottom */
		for (k = 0; k < 2; k++) {
			for (j = 0; j < s[i].n; j++) {
				size_t	jj = k == 0 ? j : s[i].n - 1 - j;
				double	yy = k == 0 ? s[i].yhi[jj] : s[i].ylo[jj];

				if (!plottable(s[i].x[jj], s[i].y[jj]) ||
				    !plottable(s[i].ylo[jj], s[i].yhi[jj]))
					continue;
				px = L + (s[i].x[jj] - ax.lo) / (ax.hi - ax.lo) *
				    pw;
				py = T + ph - (yy - ay.lo) / (ay.hi - ay.lo) * ph;
				cbuf_addf(b, "%s%.1f,%.1f", pen++ ? " " : "", px,
				    py);
			}
		}
		cbuf_adds(b, "\"/>\n");
	}

	/* the series */
	for (i = 0; i < ns; i++) {
		col = palette[i % NPALETTE];
		cbuf_addf(b, "<polyline fill=\"none\" stroke=\"%s\" "
		    "stroke-width=\"2\"%s points=\"", col, s[i].dashed ?
		    " stroke-dasharray=\"6 4\"" : "");
		pen = 0;
		for (j = 0; j < s[i].n; j++) {
			if (!plottable(s[i].x[j], s[i].y[j]))
				continue;
			px = L + (s[i].x[j] - ax.lo) / (ax.hi - ax.lo) * pw;
			py = T + ph - (s[i].y[j] - ay.lo) / (ay.hi - ay.lo) * ph;
			cbuf_addf(b, "%s%.1f,%.1f", pen++ ? " " : "", px, py);
		}
		cbuf_adds(b, "\"/>\n");
		if (!s[i].markers)
			continue;
		cbuf_addf(b, "<g fill=\"%s\">\n", col);
		for (j = 0; j < s[i].n; j++) {
			if (!plottable(s[i].x[j], s[i].y[j]))
				continue;
			px = L + (s[i].x[j] - ax.lo) / (ax.hi - ax.lo) * pw;
			py = T + ph - (s[i].y[j] - ay.lo) / (ay.hi - ay.lo) * ph;
			cbuf_addf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" "
			    "r=\"4\"/>\n", px, py);
		}
		cbuf_adds(b, "</g>\n");
	}

	/* the legend, right of the plot */
	nshown = ns > SVG_MAX_SERIES ? SVG_MAX_SERIES - 1 : ns;
	ly = T + 10;
	for (i = 0; i < nshown && ly < H - 10; i++, ly += 20) {
		col = palette[i % NPALETTE];
		cbuf_addf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
		    "y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
		    L + pw + 15, ly, L + pw + 45, ly, col, s[i].dashed ?
		    " stroke-dasharray=\"6 4\"" : "");
		if (s[i].markers)
			cbuf_addf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
			    "fill=\"%s\"/>\n", L + pw + 30, ly, col);
		npts = strlen(s[i].label != NULL ? s[i].label : "");
		if (npts > LABEL_MAX) {
			memcpy(label, s[i].label, LABEL_MAX - 3);
			/* do not cut a UTF-8 sequence in two */
			j = LABEL_MAX - 3;
			while (j > 0 && ((unsigned char)label[j] & 0xc0) == 0x80)
				j--;
			memcpy(label + j, "...", 4);
		} else
			snprintf(label, sizeof label, "%s",
			    s[i].label != NULL ? s[i].label : "");
		text_at(b, L + pw + 52, ly + 4, "start", "", label);
	}
	if (nshown < ns) {
		snprintf(label, sizeof label, "... %zu more", ns - nshown);
		text_at(b, L + pw + 52, ly + 4, "start", "", label);
	}
	return cbuf_adds(b, "</svg>\n");
}

int
svg_chart_write(const char *path, const struct svg_chart *c,
    const struct svg_series *s, size_t ns)
{
	struct cbuf	 b;
	char		*tmp = NULL;
	FILE		*f = NULL;
	int		 rc, saved;

	cbuf_init(&b, SVG_MAX_BYTES);
	if ((rc = svg_chart_render(&b, c, s, ns)) != 0)
		goto out;
	xasprintf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	rc = CADRE_ERR_SYSTEM;
	if ((f = fopen(tmp, "w")) == NULL)
		goto out;
	if (fwrite(b.data, 1, b.len, f) != b.len || fflush(f) != 0) {
		saved = errno;
		fclose(f);
		unlink(tmp);
		errno = saved;
		goto out;
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		saved = errno;
		unlink(tmp);
		errno = saved;
		goto out;
	}
	rc = 0;

 out:
	free(tmp);
	cbuf_free(&b);
	return rc;
}
