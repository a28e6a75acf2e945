/* PBS nodefiles ($PBS_NODEFILE): one host per line, a host repeated once
 * per slot. Order of first appearance is kept. */
#ifndef CADRE_NODEFILE_H
#define CADRE_NODEFILE_H

#include <stddef.h>

#define NODEFILE_MAX_BYTES	(4u << 20)
#define NODEFILE_MAX_HOSTS	65536

struct nodefile_host {
	char	*name;
	int	 slots;
};

struct nodefile {
	struct nodefile_host	*hosts;
	size_t			 n;
	int			 total_slots;
};

/* Parses text (len bytes). Blank lines and '#' comments are skipped.
 * On CADRE_ERR_INVALID, *errline gets the 1-based line (0 when no line
 * names a host at all). */
int nodefile_parse(const char *text, size_t len, struct nodefile *nf,
    size_t *errline);
int nodefile_read(const char *path, struct nodefile *nf, size_t *errline);
void nodefile_free(struct nodefile *nf);

#endif
