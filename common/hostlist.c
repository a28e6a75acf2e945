#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "hostlist.h"
#include "xmalloc.h"

/* Longest host name an expression may produce (DNS allows 253). */
#define HL_NAME_MAX	255
/* Numbers in brackets; 10^18 - 1 keeps every count within 64 bits. */
#define HL_NUM_DIGITS	18

/*
 * An expression is parsed into items (the top-level comma-separated names),
 * each a sequence of segments: literal text, or a bracket group with its
 * ranges. Everything is checked and the hosts counted before any host name
 * is allocated.
 */
struct hl_range {
	uint64_t	lo, hi;
	int		width;	/* digits of the lower bound: zero padding */
};

struct hl_seg {
	const char	*lit;		/* literal text, or NULL for a group */
	size_t		 litlen;
	size_t		 first;		/* the group's ranges in hl_parse.ranges */
	size_t		 nranges;
};

struct hl_item {
	size_t	firstseg;
	size_t	nsegs;
	size_t	offset;		/* in the expression, for errpos */
};

struct hl_parse {
	struct hl_range	*ranges;
	size_t		 nranges, rcap;
	struct hl_seg	*segs;
	size_t		 nsegs, scap;
	struct hl_item	*items;
	size_t		 nitems, icap;
};

/* Odometer position in one group while expanding. */
struct hl_pos {
	size_t		ri;
	uint64_t	v;
};

static int
hl_isdigit(char c)
{
	return c >= '0' && c <= '9';
}

static int
hl_isnamechar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    hl_isdigit(c) || c == '.' || c == '_' || c == '-';
}

static int
hl_ndigits(uint64_t v)
{
	int	n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

static void
hl_parse_free(struct hl_parse *p)
{
	free(p->ranges);
	free(p->segs);
	free(p->items);
	memset(p, 0, sizeof *p);
}

static struct hl_range *
hl_new_range(struct hl_parse *p)
{
	if (p->nranges == p->rcap) {
		p->rcap = p->rcap == 0 ? 16 : p->rcap * 2;
		p->ranges = xreallocarray(p->ranges, p->rcap,
		    sizeof *p->ranges);
	}
	return &p->ranges[p->nranges++];
}

static struct hl_seg *
hl_new_seg(struct hl_parse *p)
{
	if (p->nsegs == p->scap) {
		p->scap = p->scap == 0 ? 16 : p->scap * 2;
		p->segs = xreallocarray(p->segs, p->scap, sizeof *p->segs);
	}
	memset(&p->segs[p->nsegs], 0, sizeof p->segs[p->nsegs]);
	return &p->segs[p->nsegs++];
}

static struct hl_item *
hl_new_item(struct hl_parse *p)
{
	if (p->nitems == p->icap) {
		p->icap = p->icap == 0 ? 16 : p->icap * 2;
		p->items = xreallocarray(p->items, p->icap, sizeof *p->items);
	}
	return &p->items[p->nitems++];
}

/* A number inside brackets: 1 to HL_NUM_DIGITS digits. */
static int
hl_number(const char **sp, uint64_t *v, int *width)
{
	const char	*s = *sp;
	uint64_t	 x = 0;
	int		 n = 0;

	while (hl_isdigit(*s)) {
		if (++n > HL_NUM_DIGITS)
			return CADRE_ERR_INVALID;
		x = x * 10 + (uint64_t)(*s - '0');
		s++;
	}
	if (n == 0)
		return CADRE_ERR_INVALID;
	*v = x;
	*width = n;
	*sp = s;
	return 0;
}

/* Parses the group at *sp (just past its '['), up to and past the ']'. */
static int
hl_parse_group(const char *expr, const char **sp, struct hl_parse *p,
    size_t *errpos)
{
	const char	*open = *sp - 1, *s = *sp, *start;
	struct hl_seg	*seg;
	struct hl_range	*r;
	uint64_t	 lo, hi;
	int		 width, hiwidth;

	seg = hl_new_seg(p);
	seg->first = p->nranges;
	for (;;) {
		start = s;
		if (*s == '\0') {
			*errpos = (size_t)(open - expr);
			return CADRE_ERR_INVALID;	/* no closing bracket */
		}
		if (hl_number(&s, &lo, &width) != 0)
			goto bad;
		hi = lo;
		if (*s == '-') {
			s++;
			if (hl_number(&s, &hi, &hiwidth) != 0)
				goto bad;
			if (hi < lo) {
				s = start;
				goto bad;
			}
		}
		r = hl_new_range(p);
		r->lo = lo;
		r->hi = hi;
		r->width = width;
		seg->nranges++;

		if (*s == ',') {
			s++;
			continue;
		}
		if (*s == ']') {
			s++;
			break;
		}
		if (*s == '\0') {
			*errpos = (size_t)(open - expr);
			return CADRE_ERR_INVALID;
		}
		goto bad;
	}
	*sp = s;
	return 0;

 bad:
	*errpos = (size_t)(s - expr);
	return CADRE_ERR_INVALID;
}

static int
hl_parse_expr(const char *expr, struct hl_parse *p, size_t *errpos)
{
	const char	*s = expr, *start;
	struct hl_seg	*seg;
	struct hl_item	*item;
	size_t		 firstseg;
	int		 error;

	for (;;) {
		firstseg = p->nsegs;
		start = s;
		while (*s != '\0' && *s != ',') {
			if (*s == '[') {
				s++;
				error = hl_parse_group(expr, &s, p, errpos);
				if (error != 0)
					return error;
			} else if (hl_isnamechar(*s)) {
				seg = hl_new_seg(p);
				seg->lit = s;
				while (hl_isnamechar(*s))
					s++;
				seg->litlen = (size_t)(s - seg->lit);
			} else {
				/* A stray ']', a space or any other character. */
				*errpos = (size_t)(s - expr);
				return CADRE_ERR_INVALID;
			}
		}
		if (p->nsegs == firstseg) {
			*errpos = (size_t)(s - expr);
			return CADRE_ERR_INVALID;	/* empty name */
		}
		item = hl_new_item(p);
		item->firstseg = firstseg;
		item->nsegs = p->nsegs - firstseg;
		item->offset = (size_t)(start - expr);
		if (*s == '\0')
			break;
		s++;
	}
	return 0;
}

/* Saturating arithmetic for counting hosts; cap is max + 1. */
static uint64_t
hl_add(uint64_t a, uint64_t b, uint64_t cap)
{
	if (a >= cap || b >= cap - a)
		return cap;
	return a + b;
}

static uint64_t
hl_mul(uint64_t a, uint64_t b, uint64_t cap)
{
	if (a != 0 && b > cap / a)
		return cap;
	if (a * b > cap)
		return cap;
	return a * b;
}

/* Counts the hosts (at most cap) and checks every name's length. */
static int
hl_count(const struct hl_parse *p, uint64_t cap, uint64_t *countp,
    size_t *errpos)
{
	const struct hl_item	*item;
	const struct hl_seg	*seg;
	const struct hl_range	*r;
	uint64_t		 total = 0, n, sum;
	size_t			 i, j, k, namelen;
	int			 w, wmax;

	for (i = 0; i < p->nitems; i++) {
		item = &p->items[i];
		n = 1;
		namelen = 0;
		for (j = item->firstseg; j < item->firstseg + item->nsegs; j++) {
			seg = &p->segs[j];
			if (seg->lit != NULL) {
				namelen += seg->litlen;
				continue;
			}
			sum = 0;
			wmax = 0;
			for (k = seg->first; k < seg->first + seg->nranges; k++) {
				r = &p->ranges[k];
				sum = hl_add(sum, r->hi - r->lo + 1, cap);
				w = hl_ndigits(r->hi);
				if (w < r->width)
					w = r->width;
				if (w > wmax)
					wmax = w;
			}
			n = hl_mul(n, sum, cap);
			namelen += (size_t)wmax;
		}
		if (namelen > HL_NAME_MAX) {
			*errpos = item->offset;
			return CADRE_ERR_INVALID;
		}
		total = hl_add(total, n, cap);
		if (total >= cap) {
			*errpos = item->offset;
			return CADRE_ERR_TOO_LARGE;
		}
	}
	*countp = total;
	return 0;
}

/* Moves to the next host of an item, last group fastest; 0 when done. */
static int
hl_advance(const struct hl_parse *p, const struct hl_item *item,
    struct hl_pos *pos)
{
	const struct hl_seg	*seg;
	size_t			 j;

	for (j = item->nsegs; j-- > 0;) {
		seg = &p->segs[item->firstseg + j];
		if (seg->lit != NULL)
			continue;
		if (pos[j].v < p->ranges[seg->first + pos[j].ri].hi) {
			pos[j].v++;
			return 1;
		}
		if (pos[j].ri + 1 < seg->nranges) {
			pos[j].ri++;
			pos[j].v = p->ranges[seg->first + pos[j].ri].lo;
			return 1;
		}
		/* This group wraps around and carries into the one before. */
		pos[j].ri = 0;
		pos[j].v = p->ranges[seg->first].lo;
	}
	return 0;
}

static void
hl_generate(const struct hl_parse *p, const struct hl_item *item,
    struct hl_pos *pos, struct hostlist *hl)
{
	const struct hl_seg	*seg;
	char			 name[HL_NAME_MAX + 1];
	size_t			 j, off;

	for (j = 0; j < item->nsegs; j++) {
		seg = &p->segs[item->firstseg + j];
		if (seg->lit == NULL) {
			pos[j].ri = 0;
			pos[j].v = p->ranges[seg->first].lo;
		}
	}
	do {
		off = 0;
		for (j = 0; j < item->nsegs; j++) {
			seg = &p->segs[item->firstseg + j];
			/* hl_count made sure every name fits. */
			if (seg->lit != NULL) {
				memcpy(name + off, seg->lit, seg->litlen);
				off += seg->litlen;
			} else {
				off += (size_t)snprintf(name + off,
				    sizeof name - off, "%0*" PRIu64,
				    p->ranges[seg->first + pos[j].ri].width,
				    pos[j].v);
			}
		}
		name[off] = '\0';
		hl->hosts[hl->n++] = xstrdup(name);
	} while (hl_advance(p, item, pos));
}

int
hostlist_expand(const char *expr, size_t max, struct hostlist *hl,
    size_t *errpos)
{
	struct hl_parse	 p;
	struct hl_pos	*pos = NULL;
	uint64_t	 cap, count;
	size_t		 i, dummy;
	int		 error;

	hl->hosts = NULL;
	hl->n = 0;
	if (errpos == NULL)
		errpos = &dummy;
	*errpos = 0;
	memset(&p, 0, sizeof p);

	if ((error = hl_parse_expr(expr, &p, errpos)) != 0)
		goto out;
	cap = (uint64_t)max < UINT64_MAX ? (uint64_t)max + 1 : UINT64_MAX;
	if ((error = hl_count(&p, cap, &count, errpos)) != 0)
		goto out;

	hl->hosts = xreallocarray(NULL, (size_t)count, sizeof *hl->hosts);
	pos = xreallocarray(NULL, p.nsegs, sizeof *pos);
	for (i = 0; i < p.nitems; i++)
		hl_generate(&p, &p.items[i], pos + p.items[i].firstseg, hl);
	error = 0;

 out:
	free(pos);
	hl_parse_free(&p);
	return error;
}

void
hostlist_free(struct hostlist *hl)
{
	size_t	i;

	for (i = 0; i < hl->n; i++)
		free(hl->hosts[i]);
	free(hl->hosts);
	hl->hosts = NULL;
	hl->n = 0;
}

/*
 * Compression: each host is split into a prefix and the number at its end.
 * Sorting by (prefix, number) puts every group together and its numbers in
 * order; the groups are then put back in the order their first host came.
 */
struct hl_ent {
	const char	*name;
	size_t		 plen;		/* the whole name when not numbered */
	size_t		 idx;		/* position in the input */
	uint64_t	 num;
	int		 dlen;		/* digits of the number, 0 for none */
};

struct hl_group {
	size_t	 first;
	char	*text;
};

static int
hl_ent_cmp(const void *va, const void *vb)
{
	const struct hl_ent	*a = va, *b = vb;
	size_t			 n = a->plen < b->plen ? a->plen : b->plen;
	int			 c;

	if ((c = memcmp(a->name, b->name, n)) != 0)
		return c;
	if (a->plen != b->plen)
		return a->plen < b->plen ? -1 : 1;
	if ((a->dlen == 0) != (b->dlen == 0))
		return a->dlen == 0 ? -1 : 1;
	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	if (a->dlen != b->dlen)
		return a->dlen < b->dlen ? -1 : 1;
	if (a->idx != b->idx)
		return a->idx < b->idx ? -1 : 1;
	return 0;
}

static int
hl_group_cmp(const void *va, const void *vb)
{
	const struct hl_group	*a = va, *b = vb;

	if (a->first != b->first)
		return a->first < b->first ? -1 : 1;
	return 0;
}

static void
hl_split(const char *name, size_t idx, struct hl_ent *e)
{
	size_t	len = strlen(name), p = len;
	int	n;

	while (p > 0 && hl_isdigit(name[p - 1]))
		p--;
	e->name = name;
	e->idx = idx;
	e->num = 0;
	e->dlen = 0;
	e->plen = len;
	n = (int)(len - p);
	/* A number too long to hold is left as part of the name. */
	if (n == 0 || n > HL_NUM_DIGITS)
		return;
	e->plen = p;
	e->dlen = n;
	for (; p < len; p++)
		e->num = e->num * 10 + (uint64_t)(name[p] - '0');
}

/* Whether e continues the range that starts with width w and ends at last. */
static int
hl_continues(const struct hl_ent *last, const struct hl_ent *e, int w)
{
	int	nd = hl_ndigits(e->num);

	return e->num == last->num + 1 && e->dlen == (nd > w ? nd : w);
}

static void
hl_put_range(struct cbuf *b, const struct hl_ent *lo, const struct hl_ent *hi)
{
	if (lo == hi)
		cbuf_addf(b, "%0*" PRIu64, lo->dlen, lo->num);
	else {
		cbuf_addf(b, "%0*" PRIu64 "-%0*" PRIu64, lo->dlen, lo->num,
		    lo->dlen, hi->num);
	}
}

/* The text of one group: ents[0..n) share a prefix and are sorted. */
static char *
hl_group_text(const struct hl_ent *ents, size_t n)
{
	struct cbuf		 b;
	const struct hl_ent	*lo, *last;
	size_t			 i, distinct = 1;

	cbuf_init(&b, SIZE_MAX - 1);
	cbuf_add(&b, ents[0].name, ents[0].plen);
	if (ents[0].dlen == 0)
		return cbuf_detach(&b, NULL);

	for (i = 1; i < n; i++) {
		if (ents[i].num != ents[i - 1].num ||
		    ents[i].dlen != ents[i - 1].dlen)
			distinct++;
	}
	if (distinct == 1) {
		hl_put_range(&b, &ents[0], &ents[0]);
		return cbuf_detach(&b, NULL);
	}

	cbuf_addc(&b, '[');
	lo = last = &ents[0];
	for (i = 1; i < n; i++) {
		if (ents[i].num == last->num && ents[i].dlen == last->dlen)
			continue;	/* a duplicate */
		if (hl_continues(last, &ents[i], lo->dlen)) {
			last = &ents[i];
			continue;
		}
		hl_put_range(&b, lo, last);
		cbuf_addc(&b, ',');
		lo = last = &ents[i];
	}
	hl_put_range(&b, lo, last);
	cbuf_addc(&b, ']');
	return cbuf_detach(&b, NULL);
}

char *
hostlist_compress(char *const *hosts, size_t n)
{
	struct hl_ent	*ents = NULL;
	struct hl_group	*groups = NULL;
	struct cbuf	 b;
	size_t		 i, j, ngroups = 0, first;
	char		*out;

	if (n == 0)
		return xstrdup("");

	ents = xreallocarray(NULL, n, sizeof *ents);
	for (i = 0; i < n; i++)
		hl_split(hosts[i], i, &ents[i]);
	qsort(ents, n, sizeof *ents, hl_ent_cmp);

	groups = xreallocarray(NULL, n, sizeof *groups);
	for (i = 0; i < n; i = j) {
		first = ents[i].idx;
		for (j = i + 1; j < n; j++) {
			if (ents[j].plen != ents[i].plen ||
			    memcmp(ents[j].name, ents[i].name, ents[i].plen) != 0 ||
			    (ents[j].dlen == 0) != (ents[i].dlen == 0))
				break;
			if (ents[j].idx < first)
				first = ents[j].idx;
		}
		groups[ngroups].first = first;
		groups[ngroups].text = hl_group_text(&ents[i], j - i);
		ngroups++;
	}
	qsort(groups, ngroups, sizeof *groups, hl_group_cmp);

	cbuf_init(&b, SIZE_MAX - 1);
	for (i = 0; i < ngroups; i++) {
		if (i > 0)
			cbuf_addc(&b, ',');
		cbuf_adds(&b, groups[i].text);
		free(groups[i].text);
	}
	out = cbuf_detach(&b, NULL);
	free(groups);
	free(ents);
	return out;
}
