#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xmalloc.h"

/*
 * A request for zero bytes is rounded up to one so that callers never see
 * NULL, whatever malloc(0) does on this libc.
 */

void *
xmalloc(size_t size)
{
	void	*p;

	if (size == 0)
		size = 1;
	if ((p = malloc(size)) == NULL)
		fatalx("xmalloc: out of memory (allocating %zu bytes)", size);
	return p;
}

void *
xcalloc(size_t nmemb, size_t size)
{
	void	*p;

	if (nmemb == 0 || size == 0)
		nmemb = size = 1;
	if (nmemb > SIZE_MAX / size)
		fatalx("xcalloc: %zu * %zu bytes overflows", nmemb, size);
	if ((p = calloc(nmemb, size)) == NULL)
		fatalx("xcalloc: out of memory (allocating %zu * %zu bytes)",
		    nmemb, size);
	return p;
}

void *
xreallocarray(void *ptr, size_t nmemb, size_t size)
{
	size_t	 total;
	void	*p;

	if (size != 0 && nmemb > SIZE_MAX / size)
		fatalx("xreallocarray: %zu * %zu bytes overflows", nmemb, size);
	total = nmemb * size;
	if (total == 0)
		total = 1;
	if ((p = realloc(ptr, total)) == NULL)
		fatalx("xreallocarray: out of memory (allocating %zu bytes)",
		    total);
	return p;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	char	*p;

	n = strnlen(s, n);
	if (n == SIZE_MAX)
		fatalx("xstrndup: string too long");
	p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = xvasprintf(ret, fmt, ap);
	va_end(ap);
	return n;
}

int
xvasprintf(char **ret, const char *fmt, va_list ap)
{
	int	n;

	*ret = NULL;
	n = vasprintf(ret, fmt, ap);
	if (n < 0 || *ret == NULL)
		fatalx("xvasprintf: out of memory or bad format");
	return n;
}
