#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "tjson.h"
#include "xmalloc.h"

struct tj_parser {
	const char	*s;
	size_t		 len;
	size_t		 pos;
	char		*err;
	size_t		 errlen;
};

static int
tj_fail(struct tj_parser *p, const char *what)
{
	if (p->err != NULL && p->errlen > 0)
		snprintf(p->err, p->errlen, "offset %zu: %s", p->pos, what);
	return CADRE_ERR_PARSE;
}

static void
tj_ws(struct tj_parser *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
	    p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
		p->pos++;
}

static int
tj_hex4(struct tj_parser *p, unsigned *out)
{
	unsigned v = 0;
	int i;

	if (p->len - p->pos < 4)
		return tj_fail(p, "expected four hex digits after \\u");
	for (i = 0; i < 4; i++) {
		char c = p->s[p->pos++];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return tj_fail(p, "expected a hex digit after \\u");
	}
	*out = v;
	return 0;
}

/* A string at p->pos (on the opening quote) into a new NUL-terminated copy. */
static int
tj_string(struct tj_parser *p, char **out)
{
	char	*buf;
	size_t	 n = 0;
	int	 error;

	*out = NULL;
	p->pos++;
	/* The decoded string is never longer than the rest of the input. */
	buf = xmalloc(p->len - p->pos + 1);
	for (;;) {
		unsigned char c;

		if (p->pos >= p->len) {
			error = tj_fail(p, "unterminated string");
			goto fail;
		}
		c = (unsigned char)p->s[p->pos++];
		if (c == '"')
			break;
		if (c < 0x20) {
			p->pos--;
			error = tj_fail(p, "control character in a string");
			goto fail;
		}
		if (c != '\\') {
			buf[n++] = (char)c;
			continue;
		}
		if (p->pos >= p->len) {
			error = tj_fail(p, "unterminated escape");
			goto fail;
		}
		c = (unsigned char)p->s[p->pos++];
		switch (c) {
		case '"': case '\\': case '/':
			buf[n++] = (char)c;
			break;
		case 'b': buf[n++] = '\b'; break;
		case 'f': buf[n++] = '\f'; break;
		case 'n': buf[n++] = '\n'; break;
		case 'r': buf[n++] = '\r'; break;
		case 't': buf[n++] = '\t'; break;
		case 'u': {
			unsigned cp, lo;

			if ((error = tj_hex4(p, &cp)) != 0)
				goto fail;
			if (cp >= 0xD800 && cp < 0xDC00) {
				if (p->len - p->pos < 6 || p->s[p->pos] != '\\' ||
				    p->s[p->pos + 1] != 'u') {
					error = tj_fail(p, "unpaired surrogate");
					goto fail;
				}
				p->pos += 2;
				if ((error = tj_hex4(p, &lo)) != 0)
					goto fail;
				if (lo < 0xDC00 || lo > 0xDFFF) {
					error = tj_fail(p, "unpaired surrogate");
					goto fail;
				}
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
				error = tj_fail(p, "unpaired surrogate");
				goto fail;
			}
			if (cp == 0) {
				error = tj_fail(p, "NUL in a string");
				goto fail;
			}
			/* \uXXXX is 6 input bytes, at most 4 output bytes. */
			if (cp < 0x80)
				buf[n++] = (char)cp;
			else if (cp < 0x800) {
				buf[n++] = (char)(0xC0 | (cp >> 6));
				buf[n++] = (char)(0x80 | (cp & 0x3F));
			} else if (cp < 0x10000) {
				buf[n++] = (char)(0xE0 | (cp >> 12));
				buf[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
				buf[n++] = (char)(0x80 | (cp & 0x3F));
			} else {
				buf[n++] = (char)(0xF0 | (cp >> 18));
				buf[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
				buf[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
				buf[n++] = (char)(0x80 | (cp & 0x3F));
			}
			break;
		}
		default:
			p->pos--;
			error = tj_fail(p, "unknown escape in a string");
			goto fail;
		}
	}
	buf[n] = '\0';
	*out = buf;
	return 0;
fail:
	free(buf);
	return error;
}

static int
tj_number(struct tj_parser *p, struct tj_node *n)
{
	size_t	 start = p->pos, digits = 0;
	int	 only_digits = 1;
	char	 tmp[64];
	char	*end;

	if (p->pos < p->len && p->s[p->pos] == '-') {
		only_digits = 0;
		p->pos++;
	}
	while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
		p->pos++;
		digits++;
	}
	if (digits == 0)
		return tj_fail(p, "expected a digit");
	if (p->pos < p->len && p->s[p->pos] == '.') {
		only_digits = 0;
		p->pos++;
		digits = 0;
		while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
			p->pos++;
			digits++;
		}
		if (digits == 0)
			return tj_fail(p, "expected a digit after '.'");
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		only_digits = 0;
		p->pos++;
		if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
			p->pos++;
		digits = 0;
		while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
			p->pos++;
			digits++;
		}
		if (digits == 0)
			return tj_fail(p, "expected a digit in the exponent");
	}
	if (p->pos - start >= sizeof tmp)
		return tj_fail(p, "number too long");
	memcpy(tmp, p->s + start, p->pos - start);
	tmp[p->pos - start] = '\0';
	n->type = TJ_NUMBER;
	n->num = strtod(tmp, NULL);
	if (only_digits && p->pos - start <= 19) {
		n->u = strtoull(tmp, &end, 10);
		n->is_uint = 1;
	}
	return 0;
}

static int tj_value(struct tj_parser *p, struct tj_node *n, int depth);

static int
tj_lit(struct tj_parser *p, const char *word)
{
	size_t l = strlen(word);

	if (p->len - p->pos < l || memcmp(p->s + p->pos, word, l) != 0)
		return tj_fail(p, "expected a value");
	p->pos += l;
	return 0;
}

static int
tj_container(struct tj_parser *p, struct tj_node *n, int depth)
{
	int		 is_obj = p->s[p->pos] == '{';
	char		 close = is_obj ? '}' : ']';
	struct tj_node	**tail = &n->child;
	int		 error;

	if (depth >= TJ_MAX_DEPTH)
		return tj_fail(p, "nested too deeply");
	n->type = is_obj ? TJ_OBJECT : TJ_ARRAY;
	p->pos++;
	tj_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		return 0;
	}
	for (;;) {
		struct tj_node *c = xcalloc(1, sizeof *c);

		*tail = c;
		tail = &c->next;
		n->n++;
		tj_ws(p);
		if (is_obj) {
			if (p->pos >= p->len || p->s[p->pos] != '"')
				return tj_fail(p, "expected a member name");
			if ((error = tj_string(p, &c->key)) != 0)
				return error;
			tj_ws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':')
				return tj_fail(p, "expected ':'");
			p->pos++;
		}
		if ((error = tj_value(p, c, depth + 1)) != 0)
			return error;
		tj_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == close) {
			p->pos++;
			return 0;
		}
		return tj_fail(p, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int
tj_value(struct tj_parser *p, struct tj_node *n, int depth)
{
	tj_ws(p);
	if (p->pos >= p->len)
		return tj_fail(p, "expected a value");
	switch (p->s[p->pos]) {
	case '{':
	case '[':
		return tj_container(p, n, depth);
	case '"':
		n->type = TJ_STRING;
		return tj_string(p, &n->str);
	case 't':
		n->type = TJ_BOOL;
		n->num = 1;
		return tj_lit(p, "true");
	case 'f':
		n->type = TJ_BOOL;
		return tj_lit(p, "false");
	case 'n':
		n->type = TJ_NULL;
		return tj_lit(p, "null");
	default:
		if (p->s[p->pos] != '-' && (p->s[p->pos] < '0' || p->s[p->pos] > '9'))
			return tj_fail(p, "expected a value");
		return tj_number(p, n);
	}
}

int
tj_parse(const char *text, size_t len, struct tj_node **out, char *err,
    size_t errlen)
{
	struct tj_parser	 p = { text, len, 0, err, errlen };
	struct tj_node		*root = xcalloc(1, sizeof *root);
	int			 error;

	*out = NULL;
	if ((error = tj_value(&p, root, 0)) != 0)
		goto out;
	tj_ws(&p);
	if (p.pos != p.len) {
		error = tj_fail(&p, "trailing characters after the value");
		goto out;
	}
	*out = root;
	root = NULL;
out:
	tj_free(root);
	return error;
}

void
tj_free(struct tj_node *n)
{
	/* Siblings iteratively, children recursively (depth is bounded). */
	while (n != NULL) {
		struct tj_node *next = n->next;

		tj_free(n->child);
		free(n->key);
		free(n->str);
		free(n);
		n = next;
	}
}

const struct tj_node *
tj_get(const struct tj_node *obj, const char *key)
{
	const struct tj_node *c;

	if (obj == NULL || obj->type != TJ_OBJECT)
		return NULL;
	for (c = obj->child; c != NULL; c = c->next)
		if (strcmp(c->key, key) == 0)
			return c;
	return NULL;
}

/* s as a JSON string. */
void
tj_quote(struct cbuf *b, const char *s)
{
	const unsigned char *p;

	cbuf_addc(b, '"');
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\') {
			cbuf_addc(b, '\\');
			cbuf_addc(b, (char)*p);
		} else if (*p == '\n')
			cbuf_adds(b, "\\n");
		else if (*p < 0x20 || *p == 0x7f)
			cbuf_addf(b, "\\u%04x", *p);
		else
			cbuf_addc(b, (char)*p);
	}
	cbuf_addc(b, '"');
}
