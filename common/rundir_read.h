/*
 * Reading a run directory's JSON-lines files (metrics.jsonl, eval.jsonl):
 * one streaming reader with bounds for the report, cadre status and watch
 * (through cadred's monitor) and cadred's checkpoint records. The files
 * come from jobs, that is from outside: a line is bounded, a file may be,
 * a FIFO in its place does not block, and a bad line is the caller's
 * warning, never a failure of the whole read.
 */
#ifndef CADRE_RUNDIR_READ_H
#define CADRE_RUNDIR_READ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RUNDIR_LINE_MAX		((size_t)1 << 20)	/* bytes of one metrics line */
#define RUNDIR_EVAL_LINE_MAX	((size_t)1 << 16)	/* bytes of one eval.jsonl line */
#define RUNDIR_EVAL_MAX		((size_t)16 << 20)	/* bytes of eval.jsonl read */

/* What the reader hands over. */
enum rundir_line {
	RUNDIR_LINE,		/* a whole line, without its newline */
	RUNDIR_LINE_LAST,	/* the last line, no newline yet: may be being written */
	RUNDIR_LINE_TOO_LONG	/* a line over the bound: line is NULL */
};

/* Called per non-empty line, lineno 1-based (counted from where reading
 * began). A non-zero return stops the reading and is returned. */
typedef int (*rundir_line_fn)(void *ctx, enum rundir_line kind,
    const char *line, size_t len, size_t lineno);

struct rundir_lines {
	off_t	 from;		/* byte offset to start at; > 0: the first, cut, line is skipped */
	size_t	 line_max;	/* bytes of one line */
	size_t	 max_lines;	/* 0: no bound */
	size_t	 max_bytes;	/* of the file past from; 0: no bound */
	int	 nofollow;	/* refuse a symbolic link */
};

/*
 * Streams the file at path through fn. 0 when it was read to its end;
 * CADRE_ERR_TOO_LARGE when it is over max_bytes (nothing read) or after
 * max_lines lines; CADRE_ERR_NOT_FOUND without a file, CADRE_ERR_INVALID
 * when it is not a regular file, CADRE_ERR_SYSTEM (errno) when it cannot
 * be read.
 */
int rundir_read_lines(const char *path, const struct rundir_lines *o,
    rundir_line_fn fn, void *ctx);
/* The same over len bytes of text already in memory (from: cut_first). */
int rundir_split_lines(const char *text, size_t len, int cut_first,
    size_t line_max, rundir_line_fn fn, void *ctx);

/* A line of metrics.jsonl handed over by the reader, as a JSON object
 * with its event: 0 with *o (the caller's to decref) and *event (inside
 * *o); CADRE_ERR_INVALID for a line too long (over max bytes), not JSON,
 * or not an object with an "event" string (*o NULL). */
struct json_t;
int rundir_metrics_event(enum rundir_line kind, const char *line,
    size_t len, size_t max, struct json_t **o, const char **event);

/* One eval.jsonl line, parsed: figures, or error (not NULL). */
struct rundir_eval {
	int64_t	 step;
	double	 loss, accuracy;
	char	*error;
};

/* One eval.jsonl line (no newline): 0 with e filled (e->error the
 * caller's to free), or CADRE_ERR_PARSE / CADRE_ERR_INVALID with the
 * reason in msg. */
int rundir_parse_eval(const char *line, size_t len, struct rundir_eval *e,
    char *msg, size_t msglen);

/*
 * Reads the eval.jsonl at path (up to RUNDIR_EVAL_MAX bytes): line_fn for
 * each line that parses (a non-zero return stops and is returned), bad_fn
 * with the 1-based line number and the reason for each that does not; a
 * last line without its newline is being written and is left for later.
 * Errors as rundir_read_lines().
 */
int rundir_read_eval(const char *path, void *ctx,
    int (*line_fn)(void *ctx, const struct rundir_eval *e),
    void (*bad_fn)(void *ctx, size_t lineno, const char *msg));

#endif
