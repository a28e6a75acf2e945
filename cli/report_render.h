/*
 * The output of cadre report, shared by cli/cmd_report.c (the command)
 * and the files that render a loaded report: report_table.c (Markdown and
 * CSV), report_compare.c (--compare), report_at.c (--at) and
 * report_plot.c (--plot). Not part of cli.h: only cadre report uses it.
 */
#ifndef CADRE_REPORT_RENDER_H
#define CADRE_REPORT_RENDER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "report.h"

/* Cells for the tables: newly allocated; "-" when there is no value. */
char *fmt_num(double v, int decimals);
char *fmt_int(int64_t v);

/* A Markdown table with aligned columns: cells[row * ncols + col]. */
struct table {
	size_t		  ncols, nrows;
	const char	**titles;
	int		 *right;
	char		**cells;
};

void table_init(struct table *t, size_t ncols);
void table_col(struct table *t, size_t c, const char *title, int right);
/* A new row of ncols cells for the caller to fill; the table frees them. */
char **table_row(struct table *t);
void table_print_md(const struct table *t, FILE *fp);
void table_free(struct table *t);

/* Whether varied key k has a fixed column of its own (nodes, GPUs per
 * node, batch, precision); the other varied keys get one each. */
int report_fixed_key(enum spec_key k);

/* CSV cells ending in ',', or in CRLF when last. */
void csv_cell(FILE *fp, const char *s, int last);
void csv_num(FILE *fp, double v);

/* The main report. b, m and nm: the --compare experiment and its matches
 * (report_compare()), or NULL, NULL, 0. */
void render_md(const struct report *r, const struct report *b,
    const struct report_match *m, size_t nm, FILE *fp);
void render_csv(const struct report *r, FILE *fp);

/* --compare: r is A, b is B. */
void render_md_compare(const struct report *a, const struct report *b,
    const struct report_match *m, size_t nm, FILE *fp);
json_t *render_compare_json(const struct report *a, const struct report *b,
    const struct report_match *m, size_t nm);

/* --at: at[0..nat) in seconds of training time. */
char *render_config_label(const struct report *r, size_t ci);
void render_md_at(const struct report *r, const double *at, size_t nat, FILE *fp);
void render_csv_at(const struct report *r, const double *at, size_t nat,
    FILE *fp);
json_t *render_at_json(const struct report *r, const double *at, size_t nat);

/* --plot: write the SVG files into dir (created if missing) and each
 * path on list; 0, or a negative enum cadre_err after a message on
 * stderr. */
int render_plots(const struct report *r, const char *dir, FILE *list);
int render_plots_at(const struct report *r, const char *dir, FILE *list);

#endif
