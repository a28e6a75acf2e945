#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "xmalloc.h"

#define CBUF_MIN_CAP	64
#define CBUF_CHUNK	16384

void
cbuf_init(struct cbuf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void
cbuf_free(struct cbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void
cbuf_reset(struct cbuf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

/* Makes room for n more bytes and the terminating NUL. */
static int
cbuf_reserve(struct cbuf *b, size_t n)
{
	size_t	need, cap;

	if (b->len > b->max || n > b->max - b->len)
		return CADRE_ERR_TOO_LARGE;
	need = b->len + n;
	if (need == SIZE_MAX)
		return CADRE_ERR_TOO_LARGE;
	need++;
	if (b->data != NULL && need <= b->cap)
		return 0;

	cap = b->cap < CBUF_MIN_CAP ? CBUF_MIN_CAP : b->cap;
	while (cap < need) {
		if (cap > SIZE_MAX / 2) {
			cap = need;
			break;
		}
		cap *= 2;
	}
	/* Never more than the contents can ever use. */
	if (b->max < SIZE_MAX && cap > b->max + 1)
		cap = b->max + 1;
	b->data = xreallocarray(b->data, cap, 1);
	b->cap = cap;
	return 0;
}

int
cbuf_add(struct cbuf *b, const void *p, size_t n)
{
	int	error;

	if ((error = cbuf_reserve(b, n)) != 0)
		return error;
	if (n != 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int
cbuf_addc(struct cbuf *b, char c)
{
	return cbuf_add(b, &c, 1);
}

int
cbuf_adds(struct cbuf *b, const char *s)
{
	return cbuf_add(b, s, strlen(s));
}

int
cbuf_addf(struct cbuf *b, const char *fmt, ...)
{
	va_list	ap;
	int	error;

	va_start(ap, fmt);
	error = cbuf_vaddf(b, fmt, ap);
	va_end(ap);
	return error;
}

int
cbuf_vaddf(struct cbuf *b, const char *fmt, va_list ap)
{
	va_list	ap2;
	int	n, error;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return errno == EOVERFLOW ? CADRE_ERR_TOO_LARGE : CADRE_ERR_INVALID;
	if ((error = cbuf_reserve(b, (size_t)n)) != 0)
		return error;
	vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

char *
cbuf_detach(struct cbuf *b, size_t *lenp)
{
	char	*p;

	if (b->data == NULL)
		p = xcalloc(1, 1);
	else
		p = b->data;
	if (lenp != NULL)
		*lenp = b->len;
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}

int
cbuf_read_file(struct cbuf *b, const char *path)
{
	char		 chunk[CBUF_CHUNK];
	struct stat	 st;
	size_t		 orig = b->len;
	ssize_t		 n;
	int		 fd = -1, error, saved;
	int		 is_stdin = strcmp(path, "-") == 0;

	if (is_stdin)
		fd = STDIN_FILENO;
	else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		error = CADRE_ERR_SYSTEM;
		goto out;
	}

	/*
	 * A regular file's size refuses most oversized files without reading
	 * them; the loop below still enforces the bound for pipes and for files
	 * that grow while being read. stdin is skipped: it may not be at the
	 * start of the file.
	 */
	if (!is_stdin && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uintmax_t)st.st_size > b->max - b->len) {
		error = CADRE_ERR_TOO_LARGE;
		goto out;
	}

	for (;;) {
		n = read(fd, chunk, sizeof chunk);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			error = CADRE_ERR_SYSTEM;
			goto out;
		}
		if (n == 0)
			break;
		if ((error = cbuf_add(b, chunk, (size_t)n)) != 0)
			goto out;
	}
	/* An empty file still leaves a NUL-terminated buffer. */
	error = cbuf_add(b, "", 0);

 out:
	saved = errno;
	if (error != 0) {
		b->len = orig;
		if (b->data != NULL)
			b->data[orig] = '\0';
	}
	if (fd != -1 && !is_stdin)
		close(fd);
	errno = saved;
	return error;
}

int
cbuf_add_shell_word(struct cbuf *b, const char *s)
{
	static const char	 safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789@%+:,./_-";
	size_t			 len = strlen(s), old = b->len;
	const char		*p;

	if (len > 0 && strspn(s, safe) == len)
		return cbuf_add(b, s, len);
	/* '=' is not safe: a bare "a=b" first on a line is an assignment. */
	if (cbuf_addc(b, '\'') != 0)
		goto toolarge;
	for (p = s; *p != '\0'; p++) {
		if ((*p == '\'' ? cbuf_adds(b, "'\\''") : cbuf_addc(b, *p)) != 0)
			goto toolarge;
	}
	if (cbuf_addc(b, '\'') != 0)
		goto toolarge;
	return 0;
 toolarge:
	b->len = old;
	if (b->data != NULL)
		b->data[old] = '\0';
	return CADRE_ERR_TOO_LARGE;
}
