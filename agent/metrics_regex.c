/* A program's output lines into metrics.jsonl step events through a PCRE2
 * pattern with named groups (metrics_regex.h). */
#include "config.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "log.h"
#include "metrics_regex.h"
#include "rundir.h"
#include "strutil.h"
#include "xmalloc.h"

/* Backtracking bounds of one match: a pattern that would take minutes on
 * a long line gives up instead (the line is skipped, with a warning). */
#define MATCH_LIMIT	1000000u
#define DEPTH_LIMIT	10000u
#define HEAP_LIMIT_KIB	(16u << 10)

struct metrics_regex {
	pcre2_code		*code;
	pcre2_match_data	*md;
	pcre2_match_context	*mctx;
	PCRE2_SPTR		 names;		/* the name table */
	uint32_t		 nnames, entry_size;
};

/* The group number and name of entry i of the name table. */
static const char *
name_entry(const struct metrics_regex *mr, uint32_t i, uint32_t *group)
{
	PCRE2_SPTR	e = mr->names + (size_t)i * mr->entry_size;

	*group = (uint32_t)e[0] << 8 | e[1];
	return (const char *)e + 2;
}

/* Whether the pattern names a group name. */
static int
has_name(const struct metrics_regex *mr, const char *name)
{
	uint32_t	i, g;

	for (i = 0; i < mr->nnames; i++)
		if (strcmp(name_entry(mr, i, &g), name) == 0)
			return 1;
	return 0;
}

int
metrics_regex_compile(const char *pattern, struct metrics_regex **mrp,
    char *msg, size_t msglen)
{
	struct metrics_regex	*mr;
	PCRE2_UCHAR		 why[256];
	PCRE2_SIZE		 off;
	int			 code, error = 0;

	*mrp = NULL;
	mr = xcalloc(1, sizeof *mr);
	if ((mr->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
	    0, &code, &off, NULL)) == NULL) {
		pcre2_get_error_message(code, why, sizeof why);
		error = cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "%s (at byte %zu)", (const char *)why, (size_t)off);
		goto out;
	}
	pcre2_pattern_info(mr->code, PCRE2_INFO_NAMECOUNT, &mr->nnames);
	pcre2_pattern_info(mr->code, PCRE2_INFO_NAMEENTRYSIZE, &mr->entry_size);
	pcre2_pattern_info(mr->code, PCRE2_INFO_NAMETABLE, &mr->names);
	if (!has_name(mr, MX_STEP)) {
		error = cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "no group named %s: write (?<%s>[0-9]+) where the step "
		    "number stands", MX_STEP, MX_STEP);
		goto out;
	}
	if (has_name(mr, MX_EVENT)) {
		error = cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "a group is named %s, which is the event's own member",
		    MX_EVENT);
		goto out;
	}
	/* JIT where the platform has it; the interpreter otherwise. */
	(void)pcre2_jit_compile(mr->code, PCRE2_JIT_COMPLETE);
	if ((mr->md = pcre2_match_data_create_from_pattern(mr->code,
	    NULL)) == NULL || (mr->mctx = pcre2_match_context_create(NULL)) ==
	    NULL)
		fatalx("pcre2: out of memory");
	pcre2_set_match_limit(mr->mctx, MATCH_LIMIT);
	pcre2_set_depth_limit(mr->mctx, DEPTH_LIMIT);
	pcre2_set_heap_limit(mr->mctx, HEAP_LIMIT_KIB);
	*mrp = mr;
	mr = NULL;
 out:
	metrics_regex_free(mr);
	return error;
}

void
metrics_regex_free(struct metrics_regex *mr)
{
	if (mr == NULL)
		return;
	pcre2_match_context_free(mr->mctx);
	pcre2_match_data_free(mr->md);
	pcre2_code_free(mr->code);
	free(mr);
}

/* v as the shortest decimal that reads back as v. */
static int
add_double(struct cbuf *out, double v)
{
	char	s[40];

	snprintf(s, sizeof s, "%.15g", v);
	if (strtod(s, NULL) != v)
		snprintf(s, sizeof s, "%.17g", v);
	return cbuf_adds(out, s);
}

/* One member "name":value from the captured text s (n bytes). */
static int
add_member(struct cbuf *out, const char *name, const char *s, size_t n,
    char *msg, size_t msglen)
{
	char	num[64];
	int64_t	iv;
	double	dv;
	int	isint = strcmp(name, MX_STEP) == 0 ||
		    strcmp(name, MX_SAMPLES) == 0;

	/* A number longer than this is no number cadre takes. */
	if (n >= sizeof num)
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "%s: a value of %zu bytes is not a number", name, n);
	memcpy(num, s, n);
	num[n] = '\0';
	if (isint) {
		if (str_to_int64(num, &iv) != 0 || iv < 0)
			return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
			    "%s: '%s' is not an integer in 0..%" PRId64, name,
			    num, INT64_MAX);
		if (cbuf_addf(out, ",\"%s\":%" PRId64, name, iv) != 0)
			return CADRE_ERR_TOO_LARGE;
		return 0;
	}
	if (str_to_double(num, &dv) != 0)
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "%s: '%s' is not a finite number", name, num);
	if (cbuf_addf(out, ",\"%s\":", name) != 0 || add_double(out, dv) != 0)
		return CADRE_ERR_TOO_LARGE;
	return 0;
}

int
metrics_regex_line(struct metrics_regex *mr, const char *line, size_t len,
    double elapsed, struct cbuf *out, char *msg, size_t msglen)
{
	PCRE2_SIZE	*ov;
	const char	*name, *prev = NULL;
	uint32_t	 i, g, step_group = 0;
	int		 rc, error = CADRE_ERR_TOO_LARGE, took_elapsed = 0;

	cbuf_reset(out);
	if (len > RANK_LINE_MAX)
		return cadre_errf(msg, msglen, CADRE_ERR_TOO_LARGE,
		    "a line of %zu bytes (at most %u are matched)", len,
		    RANK_LINE_MAX);
	rc = pcre2_match(mr->code, (PCRE2_SPTR)(len > 0 ? line : ""), len, 0,
	    0, mr->md, mr->mctx);
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	if (rc < 0) {
		PCRE2_UCHAR	why[256];

		pcre2_get_error_message(rc, why, sizeof why);
		return cadre_errf(msg, msglen, CADRE_ERR_RANGE,
		    "the match gave up: %s", (const char *)why);
	}
	ov = pcre2_get_ovector_pointer(mr->md);
	/* Groups after the last one set are unset; rc counts pairs. */
#define GROUP_SET(g)	((int)(g) < rc && ov[2 * (g)] != PCRE2_UNSET)
	for (i = 0; i < mr->nnames; i++) {
		name = name_entry(mr, i, &g);
		if (strcmp(name, MX_STEP) == 0 && GROUP_SET(g)) {
			step_group = g;
			break;
		}
	}
	if (step_group == 0)
		return 0;
	if (cbuf_addf(out, "{\"%s\":\"%s\"", MX_EVENT, MX_EV_STEP) != 0 ||
	    (error = add_member(out, MX_STEP, line + ov[2 * step_group],
	    ov[2 * step_group + 1] - ov[2 * step_group], msg, msglen)) != 0)
		goto fail;
	/* The table is sorted by name; a name repeated ((?J)) is written
	 * once, from its first group that took part. */
	for (i = 0; i < mr->nnames; i++) {
		name = name_entry(mr, i, &g);
		if (!GROUP_SET(g) || strcmp(name, MX_STEP) == 0 ||
		    (prev != NULL && strcmp(prev, name) == 0))
			continue;
		prev = name;
		if (strcmp(name, MX_ELAPSED_S) == 0)
			took_elapsed = 1;
		if ((error = add_member(out, name, line + ov[2 * g],
		    ov[2 * g + 1] - ov[2 * g], msg, msglen)) != 0)
			goto fail;
	}
#undef GROUP_SET
	if (!took_elapsed && (cbuf_addf(out, ",\"%s\":", MX_ELAPSED_S) != 0 ||
	    add_double(out, elapsed) != 0)) {
		error = CADRE_ERR_TOO_LARGE;
		goto fail;
	}
	if (cbuf_adds(out, "}\n") != 0) {
		error = CADRE_ERR_TOO_LARGE;
		goto fail;
	}
	return 1;
 fail:
	if (error == CADRE_ERR_TOO_LARGE)
		cadre_errf(msg, msglen, error, "the metrics line would exceed "
		    "%zu bytes", out->max);
	cbuf_reset(out);
	return error;
}
