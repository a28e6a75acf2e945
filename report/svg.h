/*
 * A small writer of line charts as SVG 1.1 (for cadre report --plot): axes
 * with "nice" ticks and numbers, axis labels, a title, a legend, one
 * polyline (solid or dashed) with optional markers and an optional
 * shaded band per series. No C
 * plotting library that is kept up and packaged fits (docs/report.md).
 * Text is escaped for XML and made valid UTF-8; points that are not
 * finite are left out.
 */
#ifndef CADRE_SVG_H
#define CADRE_SVG_H

#include <stddef.h>

#define SVG_MAX_SERIES	64	/* legend entries beyond are summed up */

struct svg_series {
	const char	*label;
	const double	*x, *y;
	size_t		 n;
	int		 dashed;	/* e.g. an ideal line */
	int		 markers;	/* a dot at each point */
	/* a band from ylo to yhi under the line (the spread of repeats),
	 * shaded in its colour; NULL: none */
	const double	*ylo, *yhi;
};

struct svg_chart {
	const char	*title;
	const char	*xlabel, *ylabel;
	int		 y_from_zero;	/* the y axis starts at 0 */
	int		 x_integers;	/* ticks only at whole numbers */
	int		 width, height;	/* pixels; 0: 900 x 500 */
};

struct cbuf;
/* Appends the document to b: 0, or CADRE_ERR_TOO_LARGE. */
int svg_chart_render(struct cbuf *b, const struct svg_chart *c,
    const struct svg_series *s, size_t ns);
/* Renders into path (a temporary file renamed into place): 0, or
 * CADRE_ERR_SYSTEM with errno. */
int svg_chart_write(const char *path, const struct svg_chart *c,
    const struct svg_series *s, size_t ns);
/* Appends text escaped for XML character data and attributes. */
void svg_escape(struct cbuf *b, const char *text);

#endif
