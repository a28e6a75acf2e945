#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "xmalloc.h"

void
diags_init(struct diags *d)
{
	memset(d, 0, sizeof *d);
}

void
diags_clear(struct diags *d)
{
	size_t	i;

	for (i = 0; i < d->n; i++) {
		free(d->v[i].file);
		free(d->v[i].message);
	}
	d->n = 0;
	d->nerrors = 0;
	d->nwarnings = 0;
	d->dropped = 0;
	d->seq = 0;
}

void
diags_free(struct diags *d)
{
	diags_clear(d);
	free(d->v);
	diags_init(d);
}

static int
diag_same(const struct diag *a, const char *file, size_t line, size_t col,
    enum diag_severity sev, const char *msg)
{
	return a->line == line && a->col == col && a->severity == sev &&
	    strcmp(a->message, msg) == 0 && strcmp(a->file, file) == 0;
}

void
diag_vadd(struct diags *d, enum diag_severity sev, const char *file,
    size_t line, size_t col, const char *fmt, va_list ap)
{
	struct diag	*g;
	char		*msg;
	size_t		 i;

	if (file == NULL)
		file = "-";
	if (line == 0)
		col = 0;
	xvasprintf(&msg, fmt, ap);
	/* Aliased YAML nodes and per-configuration checks repeat messages. */
	for (i = 0; i < d->n; i++) {
		if (diag_same(&d->v[i], file, line, col, sev, msg)) {
			free(msg);
			return;
		}
	}
	if (sev == DIAG_ERROR)
		d->nerrors++;
	else
		d->nwarnings++;
	if (d->n >= DIAG_MAX_KEPT) {
		d->dropped++;
		free(msg);
		return;
	}
	if (d->n == d->cap) {
		d->cap = d->cap == 0 ? 16 : d->cap * 2;
		d->v = xreallocarray(d->v, d->cap, sizeof *d->v);
	}
	g = &d->v[d->n++];
	g->file = xstrdup(file);
	g->line = line;
	g->col = col;
	g->severity = sev;
	g->message = msg;
	g->seq = d->seq++;
}

void
diag_error(struct diags *d, const char *file, size_t line, size_t col,
    const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	diag_vadd(d, DIAG_ERROR, file, line, col, fmt, ap);
	va_end(ap);
}

void
diag_warning(struct diags *d, const char *file, size_t line, size_t col,
    const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	diag_vadd(d, DIAG_WARNING, file, line, col, fmt, ap);
	va_end(ap);
}

size_t
diags_errors(const struct diags *d)
{
	return d->nerrors;
}

size_t
diags_warnings(const struct diags *d)
{
	return d->nwarnings;
}

int
diags_full(const struct diags *d)
{
	return d->n >= DIAG_MAX_KEPT;
}

static int
diag_cmp(const void *pa, const void *pb)
{
	const struct diag	*a = pa, *b = pb;
	int			 c;

	if ((c = strcmp(a->file, b->file)) != 0)
		return c;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	if (a->col != b->col)
		return a->col < b->col ? -1 : 1;
	/* seq makes qsort stable. */
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return 0;
}

void
diags_sort(struct diags *d)
{
	if (d->n > 1)
		qsort(d->v, d->n, sizeof *d->v, diag_cmp);
}

void
diags_print(const struct diags *d, FILE *fp)
{
	const struct diag	*g;
	const char		*sev;
	size_t			 i;

	for (i = 0; i < d->n; i++) {
		g = &d->v[i];
		sev = g->severity == DIAG_ERROR ? "error" : "warning";
		if (g->line != 0)
			fprintf(fp, "%s:%zu:%zu: %s: %s\n", g->file, g->line,
			    g->col, sev, g->message);
		else
			fprintf(fp, "%s: %s: %s\n", g->file, sev, g->message);
	}
	if (d->dropped != 0 && d->n != 0) {
		fprintf(fp, "%s: %s: too many problems; %zu more not shown\n",
		    d->v[d->n - 1].file, d->nerrors != 0 ? "error" : "warning",
		    d->dropped);
	}
}
