/* Growable byte buffers with a maximum size fixed at creation. */
#ifndef CADRE_BUF_H
#define CADRE_BUF_H

#include <stddef.h>
#include <stdarg.h>

struct cbuf {
	char	*data;	/* always NUL-terminated when non-NULL */
	size_t	 len;
	size_t	 cap;
	size_t	 max;	/* len never exceeds this */
};

void cbuf_init(struct cbuf *b, size_t max);
void cbuf_free(struct cbuf *b);
void cbuf_reset(struct cbuf *b);	/* len = 0, keeps the memory */
/* Each returns 0, or CADRE_ERR_TOO_LARGE leaving the buffer unchanged. */
int cbuf_add(struct cbuf *b, const void *p, size_t n);
int cbuf_addc(struct cbuf *b, char c);
int cbuf_adds(struct cbuf *b, const char *s);
int cbuf_addf(struct cbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int cbuf_vaddf(struct cbuf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Appends s as one word for /bin/sh: as it is when it is not empty and
 * holds only A-Z a-z 0-9 @ % + : , . / _ -, else single-quoted
 * ('it'\''s'). The one way a value enters shell text. 0 or
 * CADRE_ERR_TOO_LARGE (b unchanged). */
int cbuf_add_shell_word(struct cbuf *b, const char *s);
/* Hands the NUL-terminated contents to the caller (never NULL) and resets b. */
char *cbuf_detach(struct cbuf *b, size_t *lenp);

/* Reads a whole file into b (initialised by the caller, b->max is the
 * bound): 0, CADRE_ERR_TOO_LARGE when the file exceeds b->max, or
 * CADRE_ERR_SYSTEM with errno set. path "-" reads stdin. The file is
 * appended to what b holds; on failure b is left as it was. */
int cbuf_read_file(struct cbuf *b, const char *path);

#endif
