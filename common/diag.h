/* Diagnostics: compiler-like errors and warnings about one input file,
 * collected in one pass and printed sorted by position. */
#ifndef CADRE_DIAG_H
#define CADRE_DIAG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#define DIAG_MAX_KEPT	100	/* more are counted, not kept */

enum diag_severity {
	DIAG_ERROR = 0,
	DIAG_WARNING
};

struct diag {
	char			*file;
	size_t			 line;	/* 1-based; 0 when there is no position */
	size_t			 col;	/* 1-based, in characters */
	enum diag_severity	 severity;
	char			*message;
	size_t			 seq;	/* order of addition, for a stable sort */
};

struct diags {
	struct diag	*v;
	size_t		 n;
	size_t		 cap;
	size_t		 nerrors;	/* all errors added, kept or not */
	size_t		 nwarnings;
	size_t		 dropped;	/* added past DIAG_MAX_KEPT */
	size_t		 seq;
};

void diags_init(struct diags *d);
void diags_free(struct diags *d);
void diags_clear(struct diags *d);

/* Adds one diagnostic. line 0 means no position. An exact repeat of a kept
 * diagnostic (same file, position, severity and text) is ignored. */
void diag_vadd(struct diags *d, enum diag_severity sev, const char *file,
    size_t line, size_t col, const char *fmt, va_list ap)
	__attribute__((format(printf, 6, 0)));
void diag_error(struct diags *d, const char *file, size_t line, size_t col,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void diag_warning(struct diags *d, const char *file, size_t line, size_t col,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

size_t diags_errors(const struct diags *d);
size_t diags_warnings(const struct diags *d);
/* Whether no more diagnostics will be kept: callers may then skip building
 * expensive messages (suggestions) and add a short one to be counted. */
int diags_full(const struct diags *d);

/* Stable sort by (file, line, col); position-less ones first. */
void diags_sort(struct diags *d);
/* Prints each as "FILE:LINE:COL: error: MESSAGE" (or "FILE: error: ..."
 * without a position), then one line for those not kept. */
void diags_print(const struct diags *d, FILE *fp);

#endif
