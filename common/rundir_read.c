/* Reading a run directory's JSON-lines files: one splitter for files and
 * for text in memory, and the eval.jsonl line. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "json.h"
#include "rundir.h"
#include "rundir_read.h"
#include "xmalloc.h"

struct splitter {
	struct cbuf	 line;
	int		 toolong;
	int		 skip;		/* the first line is cut: drop it */
	size_t		 lineno, max_lines;
	rundir_line_fn	 fn;
	void		*ctx;
};

static int
emit(struct splitter *sp)
{
	int	rc = 0;

	if (sp->skip) {
		sp->skip = 0;
	} else {
		sp->lineno++;
		if (sp->toolong)
			rc = sp->fn(sp->ctx, RUNDIR_LINE_TOO_LONG, NULL, 0,
			    sp->lineno);
		else if (sp->line.len > 0)
			rc = sp->fn(sp->ctx, RUNDIR_LINE, sp->line.data,
			    sp->line.len, sp->lineno);
		if (rc == 0 && sp->max_lines > 0 && sp->lineno >= sp->max_lines)
			rc = CADRE_ERR_TOO_LARGE;
	}
	cbuf_reset(&sp->line);
	sp->toolong = 0;
	return rc;
}

static int
feed(struct splitter *sp, const char *buf, size_t n)
{
	size_t	start = 0, i;
	int	rc;

	for (i = 0; i < n; i++) {
		if (buf[i] != '\n')
			continue;
		if (!sp->toolong && !sp->skip &&
		    cbuf_add(&sp->line, buf + start, i - start) != 0)
			sp->toolong = 1;
		if ((rc = emit(sp)) != 0)
			return rc;
		start = i + 1;
	}
	if (!sp->toolong && !sp->skip &&
	    cbuf_add(&sp->line, buf + start, n - start) != 0)
		sp->toolong = 1;
	return 0;
}

/* The last line without its newline: handed over when it is whole. */
static int
finish(struct splitter *sp)
{
	if (sp->skip || sp->toolong || sp->line.len == 0)
		return 0;
	return sp->fn(sp->ctx, RUNDIR_LINE_LAST, sp->line.data, sp->line.len,
	    sp->lineno + 1);
}

static void
splitter_init(struct splitter *sp, size_t line_max, size_t max_lines,
    int skip, rundir_line_fn fn, void *ctx)
{
	memset(sp, 0, sizeof *sp);
	cbuf_init(&sp->line, line_max);
	sp->skip = skip;
	sp->max_lines = max_lines;
	sp->fn = fn;
	sp->ctx = ctx;
}

int
rundir_split_lines(const char *text, size_t len, int cut_first,
    size_t line_max, rundir_line_fn fn, void *ctx)
{
	struct splitter	sp;
	int		rc;

	splitter_init(&sp, line_max, 0, cut_first, fn, ctx);
	if ((rc = feed(&sp, text, len)) == 0)
		rc = finish(&sp);
	cbuf_free(&sp.line);
	return rc;
}

int
rundir_read_lines(const char *path, const struct rundir_lines *o,
    rundir_line_fn fn, void *ctx)
{
	struct splitter	 sp;
	struct stat	 sb;
	char		 buf[65536];
	ssize_t		 n;
	int		 fd, rc = 0, flags;

	/* O_NONBLOCK: a FIFO put there must not hang the reader */
	flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (o->nofollow ? O_NOFOLLOW : 0);
	if ((fd = open(path, flags)) == -1) {
		if (errno == ENOENT)
			return CADRE_ERR_NOT_FOUND;
		return errno == ELOOP ? CADRE_ERR_INVALID : CADRE_ERR_SYSTEM;
	}
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return CADRE_ERR_INVALID;
	}
	if (o->max_bytes > 0 && sb.st_size > o->from &&
	    (uint64_t)(sb.st_size - o->from) > o->max_bytes) {
		close(fd);
		return CADRE_ERR_TOO_LARGE;
	}
	if (o->from > 0 && lseek(fd, o->from, SEEK_SET) == (off_t)-1) {
		close(fd);
		return CADRE_ERR_SYSTEM;
	}
	splitter_init(&sp, o->line_max, o->max_lines, o->from > 0, fn, ctx);
	for (;;) {
		n = read(fd, buf, sizeof buf);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			rc = CADRE_ERR_SYSTEM;
			break;
		}
		if (n == 0 || (rc = feed(&sp, buf, (size_t)n)) != 0)
			break;
	}
	if (rc == 0)
		rc = finish(&sp);
	cbuf_free(&sp.line);
	close(fd);
	return rc;
}

int
rundir_metrics_event(enum rundir_line kind, const char *line, size_t len,
    size_t max, json_t **o, const char **event)
{
	*o = NULL;
	*event = NULL;
	if (kind == RUNDIR_LINE_TOO_LONG ||
	    cjson_loadb(line, len, max, o, NULL) != 0)
		return CADRE_ERR_INVALID;
	if (!json_is_object(*o) || cjson_get_string(*o, MX_EVENT, event) != 0) {
		json_decref(*o);
		*o = NULL;
		return CADRE_ERR_INVALID;
	}
	return 0;
}

int
rundir_parse_eval(const char *line, size_t len, struct rundir_eval *e,
    char *msg, size_t msglen)
{
	json_error_t	 je;
	json_t		*o = NULL;
	const char	*s;
	int		 rc;

	memset(e, 0, sizeof *e);
	if ((rc = cjson_loadb(line, len, RUNDIR_EVAL_LINE_MAX, &o, &je)) != 0) {
		if (rc == CADRE_ERR_TOO_LARGE)
			return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
			    "a line over %zu bytes", RUNDIR_EVAL_LINE_MAX);
		return cadre_errf(msg, msglen, CADRE_ERR_PARSE, "column %d: %s",
		    je.column, je.text);
	}
	rc = CADRE_ERR_INVALID;
	if (!json_is_object(o) || cjson_get_int(o, MX_STEP, &e->step) != 0 ||
	    e->step < 0) {
		cadre_errf(msg, msglen, rc, "not an object with a \"step\" >= 0");
		goto out;
	}
	if (cjson_get_string(o, MX_EV_ERROR, &s) == 0) {
		e->error = xstrdup(s);
		rc = 0;
		goto out;
	}
	if (cjson_get_real(o, MX_LOSS, &e->loss) != 0 || !isfinite(e->loss) ||
	    cjson_get_real(o, MX_ACCURACY, &e->accuracy) != 0 ||
	    !isfinite(e->accuracy) || e->accuracy < 0 || e->accuracy > 1) {
		cadre_errf(msg, msglen, rc, "needs a finite \"loss\" and an "
		    "\"accuracy\" in [0, 1], or an \"error\"");
		goto out;
	}
	rc = 0;
out:
	json_decref(o);
	return rc;
}

struct eval_read {
	void	*ctx;
	int	(*line_fn)(void *, const struct rundir_eval *);
	void	(*bad_fn)(void *, size_t, const char *);
};

static int
eval_line(void *ctx, enum rundir_line kind, const char *line, size_t len,
    size_t lineno)
{
	struct eval_read	*er = ctx;
	struct rundir_eval	 e;
	char			 msg[512];
	int			 rc;

	if (kind == RUNDIR_LINE_LAST)
		return 0;	/* being written: read next time */
	if (kind == RUNDIR_LINE_TOO_LONG) {
		snprintf(msg, sizeof msg, "a line over %zu bytes",
		    RUNDIR_EVAL_LINE_MAX);
		er->bad_fn(er->ctx, lineno, msg);
		return 0;
	}
	if (rundir_parse_eval(line, len, &e, msg, sizeof msg) != 0) {
		er->bad_fn(er->ctx, lineno, msg);
		return 0;
	}
	rc = er->line_fn(er->ctx, &e);
	free(e.error);
	return rc;
}

int
rundir_read_eval(const char *path, void *ctx,
    int (*line_fn)(void *ctx, const struct rundir_eval *e),
    void (*bad_fn)(void *ctx, size_t lineno, const char *msg))
{
	struct eval_read	er = { ctx, line_fn, bad_fn };
	struct rundir_lines	o = { 0, RUNDIR_EVAL_LINE_MAX + 1, 0,
	    RUNDIR_EVAL_MAX, 1 };

	return rundir_read_lines(path, &o, eval_line, &er);
}
