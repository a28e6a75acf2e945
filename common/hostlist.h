/* Slurm hostlists: "node[01-04,7],gpu[1-2]" <-> node01 node02 ... gpu2.
 * Several bracket groups in one name expand as a product
 * ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2); zero padding is kept. */
#ifndef CADRE_HOSTLIST_H
#define CADRE_HOSTLIST_H

#include <stddef.h>

struct hostlist {
	char	**hosts;
	size_t	  n;
};

/* Expands expr into hl (free with hostlist_free). Refuses more than max
 * hosts with CADRE_ERR_TOO_LARGE before allocating them; bad syntax gives
 * CADRE_ERR_INVALID. *errpos, when not NULL, gets the byte offset of the
 * problem. */
int hostlist_expand(const char *expr, size_t max, struct hostlist *hl,
    size_t *errpos);
/* The shortest Slurm form of hosts, in first-seen order of prefixes:
 * node01 node02 node03 node07 -> "node[01-03,07]". Caller frees. */
char *hostlist_compress(char *const *hosts, size_t n);
void hostlist_free(struct hostlist *hl);

#endif
