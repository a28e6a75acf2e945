/* metrics.jsonl: one JSON object per line, appended by rank 0 of every
 * attempt (docs/contracts.md, docs/trainer.md "Metrics"). A line is built with
 * mx_* calls and written with one write(2), so a killed trainer leaves
 * whole lines only. */
#ifndef CADRE_METRICS_H
#define CADRE_METRICS_H

#include <stdint.h>

struct metrics_writer;

/* Opens OUT/metrics.jsonl for appending (created when missing). A last
 * line left without its newline by a crash is ended first. */
int metrics_open(const char *out, struct metrics_writer **mp, char *err,
    size_t errlen);
/* The same for another file of lines (eval.jsonl). */
int metrics_open_file(const char *path, struct metrics_writer **mp, char *err,
    size_t errlen);
void metrics_close(struct metrics_writer *m);

/* A new line: {"event": event, ...; NULL: no event member. */
void mx_begin(struct metrics_writer *m, const char *event);
void mx_int(struct metrics_writer *m, const char *key, int64_t v);
/* Not finite: null. */
void mx_num(struct metrics_writer *m, const char *key, double v);
void mx_null(struct metrics_writer *m, const char *key);
void mx_bool(struct metrics_writer *m, const char *key, int v);
/* NULL: null; escaped as JSON. */
void mx_str(struct metrics_writer *m, const char *key, const char *v);
void mx_obj_begin(struct metrics_writer *m, const char *key);
void mx_obj_end(struct metrics_writer *m);
/* Ends the object and appends the line: 0 or CADRE_ERR_SYSTEM (errno). */
int mx_end(struct metrics_writer *m);

#endif
