/*
 * The control protocol between cadre (the CLI) and cadred, in one place:
 * its version, framing, operations and their payloads.
 *
 * A frame is a 4-byte big-endian length followed by that many bytes of
 * one JSON object (UTF-8). Every object carries "v": PROTO_VERSION; a
 * request also carries "op". A peer that sends a frame over the bound,
 * bytes that are not a JSON object, or another version gets one error
 * reply (when it is still reading) and is dropped.
 *
 * Requests (members beyond "v" and "op"):
 *   ping                          -> "pid", "version" (the package's)
 *   submit  "spec": TEXT, "path": ABS  -> "experiment", "name", "runs", "new"
 *   status  "target": EXP|RUN|null, "format": "json"|"table"
 *           json (the default)    -> "experiments": [...], "runs": [...],
 *                                    "unreachable_since": T|null
 *           table                 -> "table": TEXT (what `cadre status`
 *                                    prints: cheap at 10,000 runs)
 *   cancel  "target": EXP|RUN     -> "cancelled": N
 *   rerun   "target": EXP|RUN, "runs": [RUN...], "which": ["failed",
 *           "cancelled", "all", "fresh"], optional "spec": TEXT and
 *           "path": ABS           -> "experiment", "name", "rerun": N,
 *                                    "runs", "changed", "moved"
 * Replies: {"v": 1, "ok": true, ...} or {"v": 1, "ok": false,
 * "error": "MESSAGE"}. docs/daemon.md lists every member.
 */
#ifndef CADRE_PROTO_H
#define CADRE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define PROTO_VERSION		1
#define PROTO_HDR_LEN		4
/* A request holds a spec (SPEC_MAX_BYTES, 1 MiB) as a JSON string; the
 * escapes of a spec near the bound need room beyond it. */
#define PROTO_MAX_REQUEST	((size_t)4 << 20)
/* A status reply of SPEC_MAX_RUNS runs (about 300 bytes each) fits. */
#define PROTO_MAX_REPLY		((size_t)64 << 20)
#define PROTO_ERR_MAX		512	/* bytes of an error message */
#define PROTO_TABLE_MAX		((size_t)32 << 20)	/* bytes of a status table */

enum proto_op {
	PROTO_OP_PING = 0,
	PROTO_OP_SUBMIT,
	PROTO_OP_STATUS,
	PROTO_OP_CANCEL,
	PROTO_OP_RERUN,
	PROTO_OP_COUNT
};

/* "ping", ...; NULL for a value out of range. */
const char *proto_op_name(enum proto_op op);
/* 0 and *op, or CADRE_ERR_NOT_FOUND. */
int proto_op_parse(const char *name, enum proto_op *op);

/*
 * Incremental frame reader: bytes go in as they arrive, a whole body
 * comes out. max bounds the body (PROTO_MAX_REQUEST in the daemon,
 * PROTO_MAX_REPLY in the client).
 */
struct proto_reader {
	unsigned char	 hdr[PROTO_HDR_LEN];
	size_t		 hlen;		/* header bytes so far */
	size_t		 need;		/* body length, once the header is in */
	size_t		 have;
	char		*body;		/* need + 1 bytes, NUL-terminated */
	size_t		 max;
};

void proto_reader_init(struct proto_reader *r, size_t max);
void proto_reader_free(struct proto_reader *r);
/*
 * Takes up to len bytes of p; *used gets how many were taken. Returns 1
 * when a whole body is in (r->body, r->need bytes: take it with
 * proto_reader_take()), 0 when more is needed, CADRE_ERR_TOO_LARGE for a
 * length over the bound, CADRE_ERR_PROTOCOL for a length of 0.
 */
int proto_reader_feed(struct proto_reader *r, const void *p, size_t len,
    size_t *used);
/* Hands the complete body over (caller frees) and readies r for the next. */
char *proto_reader_take(struct proto_reader *r, size_t *len);

/*
 * Checks one body: a JSON object (at most max bytes) with "v" equal to
 * PROTO_VERSION. When op is not NULL it must be a request: "op" names a
 * known operation. 0 and *msg (caller decrefs); CADRE_ERR_PARSE (not
 * JSON), CADRE_ERR_PROTOCOL (not an object, no "v", no or an unknown
 * "op") or CADRE_ERR_VERSION, with a message in err.
 */
int proto_parse(const char *body, size_t len, size_t max, json_t **msg,
    enum proto_op *op, char *err, size_t errlen);

/* Appends msg as one frame (header and compact JSON) to a buffer: 0, or
 * CADRE_ERR_TOO_LARGE when it exceeds max. *out (caller frees) and *len. */
int proto_frame(const json_t *msg, size_t max, char **out, size_t *len);

/* {"v": 1, "op": op} for the client to add members to. */
json_t *proto_request(enum proto_op op);
/* {"v": 1, "ok": true} */
json_t *proto_reply_ok(void);
/* {"v": 1, "ok": false, "error": message} */
json_t *proto_reply_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

#endif
