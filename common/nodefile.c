#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "nodefile.h"
#include "strutil.h"
#include "xmalloc.h"

/* Longest host name accepted (DNS allows 253). */
#define NODEFILE_NAME_MAX	255

/*
 * Host names are looked up in an open-addressing hash table of indices
 * into nf->hosts, so that a file of millions of slot lines stays linear.
 * Slot 0 of a bucket means empty; a host's bucket holds its index + 1.
 */
struct nf_table {
	size_t	*slots;
	size_t	 size;	/* a power of two, at least twice the hosts */
};

static int
nf_isspace(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static void
nf_table_insert(struct nf_table *t, const struct nodefile *nf, size_t idx)
{
	const char	*name = nf->hosts[idx].name;
	size_t		 b = (size_t)str_hash(name, strlen(name)) & (t->size - 1);

	while (t->slots[b] != 0)
		b = (b + 1) & (t->size - 1);
	t->slots[b] = idx + 1;
}

static void
nf_table_grow(struct nf_table *t, const struct nodefile *nf)
{
	size_t	i;

	free(t->slots);
	t->size = t->size == 0 ? 64 : t->size * 2;
	t->slots = xcalloc(t->size, sizeof *t->slots);
	for (i = 0; i < nf->n; i++)
		nf_table_insert(t, nf, i);
}

/* The index of the host named s (len bytes), or SIZE_MAX. */
static size_t
nf_table_find(const struct nf_table *t, const struct nodefile *nf,
    const char *s, size_t len)
{
	size_t		b = (size_t)str_hash(s, len) & (t->size - 1), i;
	const char	*name;

	while ((i = t->slots[b]) != 0) {
		name = nf->hosts[i - 1].name;
		if (strncmp(name, s, len) == 0 && name[len] == '\0')
			return i - 1;
		b = (b + 1) & (t->size - 1);
	}
	return SIZE_MAX;
}

void
nodefile_free(struct nodefile *nf)
{
	size_t	i;

	for (i = 0; i < nf->n; i++)
		free(nf->hosts[i].name);
	free(nf->hosts);
	nf->hosts = NULL;
	nf->n = 0;
	nf->total_slots = 0;
}

int
nodefile_parse(const char *text, size_t len, struct nodefile *nf,
    size_t *errline)
{
	struct nf_table	 table = { NULL, 0 };
	const char	*line, *next, *end, *nl, *s, *e, *hash;
	char		 name[NODEFILE_NAME_MAX + 1];
	size_t		 lineno = 0, cap = 0, idx, n, dummy;
	int		 error;

	nf->hosts = NULL;
	nf->n = 0;
	nf->total_slots = 0;
	if (errline == NULL)
		errline = &dummy;
	*errline = 0;
	if (len > NODEFILE_MAX_BYTES)
		return CADRE_ERR_TOO_LARGE;

	nf_table_grow(&table, nf);
	end = text + len;
	for (line = text; line < end; line = next) {
		lineno++;
		if ((nl = memchr(line, '\n', (size_t)(end - line))) == NULL)
			nl = next = end;
		else
			next = nl + 1;
		s = line;
		e = nl;
		if ((hash = memchr(s, '#', (size_t)(e - s))) != NULL)
			e = hash;
		while (s < e && nf_isspace(*s))
			s++;
		while (e > s && nf_isspace(e[-1]))
			e--;
		if (s == e)
			continue;

		n = (size_t)(e - s);
		if (n > NODEFILE_NAME_MAX) {
			error = CADRE_ERR_INVALID;
			goto fail;
		}
		/* The copy also stops at an embedded NUL, which then fails. */
		memcpy(name, s, n);
		name[n] = '\0';
		if (strlen(name) != n || !str_is_name(name, NODEFILE_NAME_MAX)) {
			error = CADRE_ERR_INVALID;
			goto fail;
		}

		/* PBS lists a host's slots together: try the last host first. */
		if (nf->n > 0 && strcmp(nf->hosts[nf->n - 1].name, name) == 0)
			idx = nf->n - 1;
		else
			idx = nf_table_find(&table, nf, name, n);
		if (idx == SIZE_MAX) {
			if (nf->n == NODEFILE_MAX_HOSTS) {
				error = CADRE_ERR_TOO_LARGE;
				goto fail;
			}
			if (nf->n == cap) {
				cap = cap == 0 ? 16 : cap * 2;
				nf->hosts = xreallocarray(nf->hosts, cap,
				    sizeof *nf->hosts);
			}
			idx = nf->n++;
			nf->hosts[idx].name = xstrdup(name);
			nf->hosts[idx].slots = 0;
			if (nf->n * 2 > table.size)
				nf_table_grow(&table, nf);
			else
				nf_table_insert(&table, nf, idx);
		}
		nf->hosts[idx].slots++;
		nf->total_slots++;
	}
	if (nf->n == 0) {
		/* No line names a host: *errline stays 0. */
		error = CADRE_ERR_INVALID;
		goto out;
	}
	error = 0;
	goto out;

 fail:
	*errline = lineno;
 out:
	if (error != 0)
		nodefile_free(nf);
	free(table.slots);
	return error;
}

int
nodefile_read(const char *path, struct nodefile *nf, size_t *errline)
{
	struct cbuf	b;
	int		error;

	nf->hosts = NULL;
	nf->n = 0;
	nf->total_slots = 0;
	if (errline != NULL)
		*errline = 0;

	cbuf_init(&b, NODEFILE_MAX_BYTES);
	if ((error = cbuf_read_file(&b, path)) == 0)
		error = nodefile_parse(b.data, b.len, nf, errline);
	cbuf_free(&b);
	return error;
}
