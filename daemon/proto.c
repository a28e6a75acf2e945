/* The control protocol: frames and message checks (daemon/proto.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json.h"
#include "proto.h"
#include "xmalloc.h"

static const char *const op_names[PROTO_OP_COUNT] = {
	[PROTO_OP_PING] = "ping",
	[PROTO_OP_SUBMIT] = "submit",
	[PROTO_OP_STATUS] = "status",
	[PROTO_OP_CANCEL] = "cancel",
	[PROTO_OP_RERUN] = "rerun",
};

const char *
proto_op_name(enum proto_op op)
{
	if ((unsigned)op >= PROTO_OP_COUNT)
		return NULL;
	return op_names[op];
}

int
proto_op_parse(const char *name, enum proto_op *op)
{
	int	i;

	for (i = 0; i < PROTO_OP_COUNT; i++) {
		if (strcmp(op_names[i], name) == 0) {
			*op = (enum proto_op)i;
			return 0;
		}
	}
	return CADRE_ERR_NOT_FOUND;
}

void
proto_reader_init(struct proto_reader *r, size_t max)
{
	memset(r, 0, sizeof *r);
	r->max = max;
}

void
proto_reader_free(struct proto_reader *r)
{
	free(r->body);
	r->body = NULL;
	r->hlen = r->need = r->have = 0;
}

int
proto_reader_feed(struct proto_reader *r, const void *p, size_t len,
    size_t *used)
{
	const unsigned char	*b = p;
	size_t			 n, take = 0;
	uint32_t		 blen;

	*used = 0;
	if (r->hlen < PROTO_HDR_LEN) {
		n = PROTO_HDR_LEN - r->hlen;
		if (n > len)
			n = len;
		memcpy(r->hdr + r->hlen, b, n);
		r->hlen += n;
		take = n;
		if (r->hlen < PROTO_HDR_LEN) {
			*used = take;
			return 0;
		}
		blen = (uint32_t)r->hdr[0] << 24 | (uint32_t)r->hdr[1] << 16 |
		    (uint32_t)r->hdr[2] << 8 | (uint32_t)r->hdr[3];
		*used = take;
		if (blen == 0)
			return CADRE_ERR_PROTOCOL;
		if (blen > r->max)
			return CADRE_ERR_TOO_LARGE;
		r->need = blen;
		r->have = 0;
		/* the body grows as it arrives: a peer announcing 4 MiB and
		 * sending nothing costs nothing */
		free(r->body);
		r->body = NULL;
	}
	if (r->have < r->need && take < len) {
		n = r->need - r->have;
		if (n > len - take)
			n = len - take;
		r->body = xreallocarray(r->body, r->have + n + 1, 1);
		memcpy(r->body + r->have, b + take, n);
		r->have += n;
		r->body[r->have] = '\0';
		take += n;
	}
	*used = take;
	return r->have == r->need && r->need > 0 ? 1 : 0;
}

char *
proto_reader_take(struct proto_reader *r, size_t *len)
{
	char	*b = r->body;

	if (len != NULL)
		*len = r->have;
	r->body = NULL;
	r->hlen = r->need = r->have = 0;
	return b;
}

int
proto_parse(const char *body, size_t len, size_t max, json_t **msg,
    enum proto_op *op, char *err, size_t errlen)
{
	json_error_t	 je;
	json_t		*o = NULL, *v, *jop;
	int		 rc;

	*msg = NULL;
	if ((rc = cjson_loadb(body, len, max, &o, &je)) != 0) {
		if (rc == CADRE_ERR_TOO_LARGE)
			return cadre_errf(err, errlen, rc, "message over %zu bytes",
			    max);
		return cadre_errf(err, errlen, CADRE_ERR_PARSE, "not JSON: %s "
		    "(column %d)", je.text, je.column);
	}
	if (!json_is_object(o)) {
		rc = cadre_errf(err, errlen, CADRE_ERR_PROTOCOL, "expected a JSON "
		    "object");
		goto out;
	}
	v = json_object_get(o, "v");
	if (!json_is_integer(v)) {
		rc = cadre_errf(err, errlen, CADRE_ERR_PROTOCOL, "no protocol "
		    "version (\"v\")");
		goto out;
	}
	if (json_integer_value(v) != PROTO_VERSION) {
		rc = cadre_errf(err, errlen, CADRE_ERR_VERSION, "protocol version "
		    "%lld is not supported (this side speaks %d): use cadre "
		    "and cadred of the same release", (long long)
		    json_integer_value(v), PROTO_VERSION);
		goto out;
	}
	if (op != NULL) {
		jop = json_object_get(o, "op");
		if (!json_is_string(jop)) {
			rc = cadre_errf(err, errlen, CADRE_ERR_PROTOCOL, "no "
			    "operation (\"op\")");
			goto out;
		}
		if (proto_op_parse(json_string_value(jop), op) != 0) {
			rc = cadre_errf(err, errlen, CADRE_ERR_PROTOCOL, "unknown "
			    "operation \"%.64s\"", json_string_value(jop));
			goto out;
		}
	}
	*msg = o;
	o = NULL;
	rc = 0;
out:
	json_decref(o);
	return rc;
}

int
proto_frame(const json_t *msg, size_t max, char **out, size_t *len)
{
	char	*s, *f;
	size_t	 n;

	*out = NULL;
	*len = 0;
	if ((s = json_dumps(msg, JSON_COMPACT)) == NULL)
		return CADRE_ERR_INVALID;
	n = strlen(s);
	if (n == 0 || n > max || n > UINT32_MAX) {
		free(s);
		return CADRE_ERR_TOO_LARGE;
	}
	f = xmalloc(n + PROTO_HDR_LEN);
	f[0] = (char)(n >> 24);
	f[1] = (char)(n >> 16);
	f[2] = (char)(n >> 8);
	f[3] = (char)n;
	memcpy(f + PROTO_HDR_LEN, s, n);
	free(s);
	*out = f;
	*len = n + PROTO_HDR_LEN;
	return 0;
}

json_t *
proto_request(enum proto_op op)
{
	return json_pack("{s:i, s:s}", "v", PROTO_VERSION, "op",
	    proto_op_name(op));
}

json_t *
proto_reply_ok(void)
{
	return json_pack("{s:i, s:b}", "v", PROTO_VERSION, "ok", 1);
}

json_t *
proto_reply_error(const char *fmt, ...)
{
	va_list	 ap;
	char	 buf[PROTO_ERR_MAX], *c;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	/* messages may quote what a peer sent: keep them valid UTF-8 */
	for (c = buf; *c != '\0'; c++) {
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
	}
	return json_pack("{s:i, s:b, s:s}", "v", PROTO_VERSION, "ok", 0,
	    "error", buf);
}
