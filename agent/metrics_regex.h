/*
 * A program's metrics from its output (program.json "metrics_regex"):
 * each line of rank 0's output matched against a PCRE2 pattern with named
 * groups, a match made into one metrics.jsonl step event. No other header
 * of the agent is needed, so that the unit test and the fuzz target link
 * this file alone.
 */
#ifndef CADRE_AGENT_METRICS_REGEX_H
#define CADRE_AGENT_METRICS_REGEX_H

#include <stddef.h>

/* Bytes of one line of a command's output; `rank` splits longer ones, and
 * metrics_regex_line() refuses them. */
#define RANK_LINE_MAX		(64u << 10)
/* Bytes of one metrics line metrics_regex_line() writes. */
#define METRICS_REGEX_OUT_MAX	(RANK_LINE_MAX * 2 + 4096)

struct cbuf;
struct metrics_regex;

/*
 * Compiles pattern (no options: bytes, not UTF-8; case as written), with
 * limits on each match's backtracking. It must name a group "step" and
 * none "event". 0 and *mrp, or CADRE_ERR_INVALID with PCRE2's message and
 * offset, or the missing group, in msg.
 */
int metrics_regex_compile(const char *pattern, struct metrics_regex **mrp,
    char *msg, size_t msglen);
void metrics_regex_free(struct metrics_regex *mr);

/*
 * Searches line (len bytes, no newline) for a match of mr. On one, sets
 * out (reset first, its max at least METRICS_REGEX_OUT_MAX) to one
 * metrics.jsonl line ending in '\n': {"event":"step","step":N,...} with
 * every named group that took part, "step" and "samples" as non-negative
 * integers, every other as a number, and "elapsed_s": elapsed when no
 * group of that name took part. Returns 1 on a match, 0 when the line
 * does not match (or "step" did not take part), or, with why in msg:
 * CADRE_ERR_INVALID (a value that is not a number of its type, or out of
 * range: the line is to be skipped), CADRE_ERR_TOO_LARGE (len over
 * RANK_LINE_MAX), CADRE_ERR_RANGE (the match gave up at its limits).
 * Allocates nothing once out has grown.
 */
int metrics_regex_line(struct metrics_regex *mr, const char *line,
    size_t len, double elapsed, struct cbuf *out, char *msg, size_t msglen);

#endif
