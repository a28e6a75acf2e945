/* Allocation wrappers that never return NULL: out of memory is fatal. */
#ifndef CADRE_XMALLOC_H
#define CADRE_XMALLOC_H

#include <stddef.h>
#include <stdarg.h>

void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xreallocarray(void *ptr, size_t nmemb, size_t size);	/* overflow-checked */
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
int xasprintf(char **ret, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int xvasprintf(char **ret, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

#endif
