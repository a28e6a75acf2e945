#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "metrics.h"
#include "rundir.h"
#include "tjson.h"
#include "xmalloc.h"

/* A line is a few hundred bytes; the bound only catches a runaway. */
#define METRICS_LINE_MAX	(64 * 1024)

struct metrics_writer {
	int		fd;
	struct cbuf	line;
	int		first;	/* no member yet at this level */
};

int
metrics_open(const char *out, struct metrics_writer **mp, char *err,
    size_t errlen)
{
	char	*path;
	int	 rc;

	xasprintf(&path, "%s/" RUNDIR_METRICS, out);
	rc = metrics_open_file(path, mp, err, errlen);
	free(path);
	return rc;
}

int
metrics_open_file(const char *path, struct metrics_writer **mp, char *err,
    size_t errlen)
{
	struct metrics_writer	*m;
	struct stat		 st;
	char			 c;
	int			 fd;

	*mp = NULL;
	if ((fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return CADRE_ERR_SYSTEM;
	}
	/* A line cut by a kill would glue to the next attempt's first. */
	if (fstat(fd, &st) == 0 && st.st_size > 0 &&
	    pread(fd, &c, 1, st.st_size - 1) == 1 && c != '\n' &&
	    write(fd, "\n", 1) != 1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return CADRE_ERR_SYSTEM;
	}
	m = xcalloc(1, sizeof *m);
	m->fd = fd;
	cbuf_init(&m->line, METRICS_LINE_MAX);
	*mp = m;
	return 0;
}

void
metrics_close(struct metrics_writer *m)
{
	if (m == NULL)
		return;
	close(m->fd);
	cbuf_free(&m->line);
	free(m);
}

static void
key(struct metrics_writer *m, const char *k)
{
	if (!m->first)
		cbuf_addc(&m->line, ',');
	m->first = 0;
	tj_quote(&m->line, k);
	cbuf_addc(&m->line, ':');
}

void
mx_begin(struct metrics_writer *m, const char *event)
{
	cbuf_reset(&m->line);
	cbuf_addc(&m->line, '{');
	m->first = 1;
	if (event != NULL)
		mx_str(m, MX_EVENT, event);
}

void
mx_int(struct metrics_writer *m, const char *k, int64_t v)
{
	key(m, k);
	cbuf_addf(&m->line, "%lld", (long long)v);
}

void
mx_num(struct metrics_writer *m, const char *k, double v)
{
	key(m, k);
	if (isfinite(v))
		cbuf_addf(&m->line, "%.17g", v);
	else
		cbuf_adds(&m->line, "null");
}

void
mx_null(struct metrics_writer *m, const char *k)
{
	key(m, k);
	cbuf_adds(&m->line, "null");
}

void
mx_bool(struct metrics_writer *m, const char *k, int v)
{
	key(m, k);
	cbuf_adds(&m->line, v ? "true" : "false");
}

void
mx_str(struct metrics_writer *m, const char *k, const char *v)
{
	key(m, k);
	if (v == NULL)
		cbuf_adds(&m->line, "null");
	else
		tj_quote(&m->line, v);
}

void
mx_obj_begin(struct metrics_writer *m, const char *k)
{
	key(m, k);
	cbuf_addc(&m->line, '{');
	m->first = 1;
}

void
mx_obj_end(struct metrics_writer *m)
{
	cbuf_addc(&m->line, '}');
	m->first = 0;
}

int
mx_end(struct metrics_writer *m)
{
	size_t	off = 0;
	ssize_t	n;

	cbuf_adds(&m->line, "}\n");
	while (off < m->line.len) {
		if ((n = write(m->fd, m->line.data + off, m->line.len - off)) == -1) {
			if (errno == EINTR)
				continue;
			return CADRE_ERR_SYSTEM;
		}
		off += (size_t)n;
	}
	return 0;
}
