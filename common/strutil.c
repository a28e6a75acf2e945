#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "strutil.h"
#include "xmalloc.h"

static int
su_isdigit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * The classic two-row dynamic programme. Each row's minimum never decreases
 * from one row to the next, so once it passes limit the answer will too.
 */
size_t
str_edit_distance(const char *a, const char *b, size_t limit)
{
	size_t	 la = strlen(a), lb = strlen(b), i, j, best, d, over;
	size_t	*rows = NULL, *prev, *cur, *tmp;

	over = limit == SIZE_MAX ? SIZE_MAX : limit + 1;
	if ((la > lb ? la - lb : lb - la) > limit)
		return over;

	rows = xreallocarray(NULL, 2 * (lb + 1), sizeof *rows);
	prev = rows;
	cur = rows + lb + 1;
	for (j = 0; j <= lb; j++)
		prev[j] = j;
	for (i = 1; i <= la; i++) {
		cur[0] = i;
		best = cur[0];
		for (j = 1; j <= lb; j++) {
			d = prev[j - 1] + (a[i - 1] != b[j - 1]);
			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			cur[j] = d;
			if (d < best)
				best = d;
		}
		if (best > limit) {
			d = over;
			goto out;
		}
		tmp = prev;
		prev = cur;
		cur = tmp;
	}
	d = prev[lb] > limit ? over : prev[lb];

 out:
	free(rows);
	return d;
}

int
str_valid_utf8(const char *s, size_t len, size_t *badpos)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i = 0, n, k;
	unsigned int		 c, lo, hi;

	while (i < len) {
		c = p[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		/*
		 * The second byte's range rules out overlong forms, surrogates
		 * and code points past U+10FFFF (RFC 3629, section 4).
		 */
		lo = 0x80;
		hi = 0xbf;
		if (c >= 0xc2 && c <= 0xdf)
			n = 1;
		else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			if (c == 0xe0)
				lo = 0xa0;
			else if (c == 0xed)
				hi = 0x9f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			if (c == 0xf0)
				lo = 0x90;
			else if (c == 0xf4)
				hi = 0x8f;
		} else
			goto bad;
		if (len - i - 1 < n)
			goto bad;
		if (p[i + 1] < lo || p[i + 1] > hi)
			goto bad;
		for (k = 2; k <= n; k++) {
			if (p[i + k] < 0x80 || p[i + k] > 0xbf)
				goto bad;
		}
		i += n + 1;
	}
	return 1;

 bad:
	if (badpos != NULL)
		*badpos = i;
	return 0;
}

void
str_line_col(const char *text, size_t len, size_t pos, size_t *line,
    size_t *col)
{
	size_t	i, l = 1, c = 1;

	if (pos > len)
		pos = len;
	for (i = 0; i < pos; i++) {
		if (text[i] == '\n') {
			l++;
			c = 1;
		} else if (((unsigned char)text[i] & 0xc0) != 0x80)
			c++;	/* continuation bytes are not characters */
	}
	*line = l;
	*col = c;
}

int
str_to_int64(const char *s, int64_t *out)
{
	const char	*p = s;
	uint64_t	 v = 0, limit;
	int		 neg = 0, d;

	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (!su_isdigit(*p))
		return CADRE_ERR_INVALID;
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; su_isdigit(*p); p++) {
		d = *p - '0';
		if (v > (limit - (uint64_t)d) / 10) {
			/* Keep checking the syntax: "9999999999999999999x" is invalid. */
			while (su_isdigit(*p))
				p++;
			return *p == '\0' ? CADRE_ERR_RANGE : CADRE_ERR_INVALID;
		}
		v = v * 10 + (uint64_t)d;
	}
	if (*p != '\0')
		return CADRE_ERR_INVALID;
	if (neg)
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	else
		*out = (int64_t)v;
	return 0;
}

/*
 * The grammar is checked by hand before strtod converts, because strtod
 * also takes leading spaces, hexadecimal, "inf" and "nan":
 * [+-]? ( digits ( '.' digits? )? | '.' digits ) ( [eE] [+-]? digits )?
 */
int
str_to_double(const char *s, double *out)
{
	const char	*p = s;
	char		*end;
	double		 v;
	int		 intdigits = 0, fracdigits = 0;

	if (*p == '+' || *p == '-')
		p++;
	for (; su_isdigit(*p); p++)
		intdigits++;
	if (*p == '.') {
		p++;
		for (; su_isdigit(*p); p++)
			fracdigits++;
	}
	if (intdigits == 0 && fracdigits == 0)
		return CADRE_ERR_INVALID;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!su_isdigit(*p))
			return CADRE_ERR_INVALID;
		while (su_isdigit(*p))
			p++;
	}
	if (*p != '\0')
		return CADRE_ERR_INVALID;

	errno = 0;
	v = strtod(s, &end);
	if (*end != '\0')
		return CADRE_ERR_INVALID;	/* a locale with another radix */
	if (errno == ERANGE || !isfinite(v))
		return CADRE_ERR_RANGE;
	*out = v;
	return 0;
}

int
str_no_control(const char *s, size_t max)
{
	size_t	i;

	for (i = 0; s[i] != '\0'; i++) {
		if (i >= max || (unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	}
	return 1;
}

/* Whether s is 1..max bytes of letters, digits and the characters of
 * set and of more (NULL: none). */
static int
word_of(const char *s, size_t max, const char *set, const char *more)
{
	size_t	n;
	char	c;

	for (n = 0; (c = s[n]) != '\0'; n++) {
		if (n >= max)
			return 0;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    su_isdigit(c) || strchr(set, c) != NULL ||
		    (more != NULL && strchr(more, c) != NULL)))
			return 0;
	}
	return n > 0;
}

int
str_is_sched_word(const char *s, size_t max, const char *extra)
{
	return word_of(s, max, STR_SCHED_WORD_CHARS, extra);
}

int
str_is_name(const char *s, size_t max)
{
	return word_of(s, max, "._-", NULL);
}

int
str_is_env_name_n(const char *s, size_t len)
{
	size_t	i;

	if (len == 0 || len > 256 || su_isdigit(s[0]))
		return 0;
	for (i = 0; i < len; i++) {
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' &&
		    s[i] <= 'z') || su_isdigit(s[i]) || s[i] == '_'))
			return 0;
	}
	return 1;
}

uint32_t
str_hash(const void *s, size_t len)
{
	const unsigned char	*p = s;
	uint32_t		 h = 2166136261u;
	size_t			 i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	return h;
}

int
path_expand_env(const char *in, char **out, char **var)
{
	const char	*name, *rest, *val;
	char		*nm;
	size_t		 len;

	*out = NULL;
	if (var != NULL)
		*var = NULL;
	if (in[0] != '$') {
		*out = xstrdup(in);
		return 0;
	}
	if (in[1] == '{') {
		name = in + 2;
		if ((rest = strchr(name, '}')) == NULL)
			return CADRE_ERR_INVALID;
		len = (size_t)(rest - name);
		rest++;
	} else {
		name = in + 1;
		for (len = 0; name[len] == '_' ||
		    (name[len] >= 'A' && name[len] <= 'Z') ||
		    (name[len] >= 'a' && name[len] <= 'z') ||
		    (len > 0 && su_isdigit(name[len])); len++)
			;
		rest = name + len;
	}
	if (len == 0 || (*rest != '/' && *rest != '\0'))
		return CADRE_ERR_INVALID;
	nm = xstrndup(name, len);
	val = getenv(nm);
	if (var != NULL)
		*var = nm;
	else
		free(nm);
	if (val == NULL || *val == '\0')
		return CADRE_ERR_NOT_FOUND;
	if (val[0] != '/')
		return CADRE_ERR_INVALID;
	xasprintf(out, "%s%s", val, rest);
	return 0;
}
