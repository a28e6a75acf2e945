/* daemon/proto.c: framing, the incremental reader and message checks. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "proto.h"
#include "xmalloc.h"
#include "unit.h"

static int
parse(const char *body, enum proto_op *op, char *err, size_t errlen)
{
	json_t	*m = NULL;
	int	 rc;

	rc = proto_parse(body, strlen(body), PROTO_MAX_REQUEST, &m, op, err,
	    errlen);
	if (rc == 0)
		ck_assert_ptr_nonnull(m);
	else
		ck_assert_ptr_null(m);
	json_decref(m);
	return rc;
}

START_TEST(test_ops)
{
	enum proto_op	op;
	int		i;

	for (i = 0; i < PROTO_OP_COUNT; i++) {
		ck_assert_ptr_nonnull(proto_op_name((enum proto_op)i));
		ck_assert_int_eq(proto_op_parse(proto_op_name((enum proto_op)i),
		    &op), 0);
		ck_assert_int_eq(op, i);
	}
	ck_assert_ptr_null(proto_op_name(PROTO_OP_COUNT));
	ck_assert_int_eq(proto_op_parse("launch", &op), CADRE_ERR_NOT_FOUND);
}
END_TEST

START_TEST(test_round_trip)
{
	struct proto_reader	 rd;
	json_t			*req, *m;
	enum proto_op		 op;
	char			*f, *body, err[256];
	size_t			 len, used, blen, i, off;
	int			 rc = 0;

	req = proto_request(PROTO_OP_STATUS);
	json_object_set_new(req, "target", json_string("abc"));
	ck_assert_int_eq(proto_frame(req, PROTO_MAX_REQUEST, &f, &len), 0);
	ck_assert_uint_eq(((unsigned char)f[3] | (unsigned char)f[2] << 8) +
	    PROTO_HDR_LEN, len);
	/* one byte at a time: the header and the body arrive in pieces */
	proto_reader_init(&rd, PROTO_MAX_REQUEST);
	for (i = 0; i < len; i++) {
		rc = proto_reader_feed(&rd, f + i, 1, &used);
		ck_assert_uint_eq(used, 1);
		ck_assert_int_eq(rc, i + 1 == len ? 1 : 0);
	}
	body = proto_reader_take(&rd, &blen);
	ck_assert_int_eq(proto_parse(body, blen, PROTO_MAX_REQUEST, &m, &op,
	    err, sizeof err), 0);
	ck_assert_int_eq(op, PROTO_OP_STATUS);
	ck_assert_str_eq(json_string_value(json_object_get(m, "target")),
	    "abc");
	json_decref(m);
	free(body);
	/* two frames in one read: the reader stops after the first */
	f = xreallocarray(f, 2 * len, 1);
	memcpy(f + len, f, len);
	ck_assert_int_eq(proto_reader_feed(&rd, f, 2 * len, &used), 1);
	ck_assert_uint_eq(used, len);
	free(proto_reader_take(&rd, NULL));
	off = used;
	ck_assert_int_eq(proto_reader_feed(&rd, f + off, len, &used), 1);
	free(proto_reader_take(&rd, NULL));
	proto_reader_free(&rd);
	free(f);
	json_decref(req);
}
END_TEST

START_TEST(test_bounds)
{
	struct proto_reader	rd;
	unsigned char		big[4] = { 0x7f, 0xff, 0xff, 0xff };
	unsigned char		zero[4] = { 0, 0, 0, 0 };
	unsigned char		half[6] = { 0, 0, 0, 100, '{', '"' };
	size_t			used;
	json_t			*m;
	char			*f;
	size_t			 len;

	proto_reader_init(&rd, 1024);
	ck_assert_int_eq(proto_reader_feed(&rd, big, 4, &used),
	    CADRE_ERR_TOO_LARGE);
	proto_reader_free(&rd);
	proto_reader_init(&rd, 1024);
	ck_assert_int_eq(proto_reader_feed(&rd, zero, 4, &used),
	    CADRE_ERR_PROTOCOL);
	proto_reader_free(&rd);
	/* a frame announced and not finished: waits, holding what came */
	proto_reader_init(&rd, 1024);
	ck_assert_int_eq(proto_reader_feed(&rd, half, 6, &used), 0);
	ck_assert_uint_eq(used, 6);
	ck_assert_uint_eq(rd.have, 2);
	proto_reader_free(&rd);
	/* a reply over the bound is refused by the writer too */
	m = json_pack("{s:i, s:s}", "v", 1, "x", "0123456789");
	ck_assert_int_eq(proto_frame(m, 10, &f, &len), CADRE_ERR_TOO_LARGE);
	ck_assert_ptr_null(f);
	json_decref(m);
}
END_TEST

START_TEST(test_bad_messages)
{
	enum proto_op	op;
	char		err[256];

	ck_assert_int_eq(parse("{\"v\":1,\"op\":\"ping\"}", &op, err,
	    sizeof err), 0);
	ck_assert_int_eq(op, PROTO_OP_PING);
	ck_assert_int_eq(parse("not json", &op, err, sizeof err),
	    CADRE_ERR_PARSE);
	ck_assert_ptr_nonnull(strstr(err, "not JSON"));
	ck_assert_int_eq(parse("[1]", &op, err, sizeof err),
	    CADRE_ERR_PROTOCOL);
	ck_assert_int_eq(parse("{\"op\":\"ping\"}", &op, err, sizeof err),
	    CADRE_ERR_PROTOCOL);
	ck_assert_int_eq(parse("{\"v\":\"1\",\"op\":\"ping\"}", &op, err,
	    sizeof err), CADRE_ERR_PROTOCOL);
	ck_assert_int_eq(parse("{\"v\":2,\"op\":\"ping\"}", &op, err,
	    sizeof err), CADRE_ERR_VERSION);
	ck_assert_ptr_nonnull(strstr(err, "version 2 is not supported"));
	ck_assert_int_eq(parse("{\"v\":1}", &op, err, sizeof err),
	    CADRE_ERR_PROTOCOL);
	ck_assert_int_eq(parse("{\"v\":1,\"op\":7}", &op, err, sizeof err),
	    CADRE_ERR_PROTOCOL);
	ck_assert_int_eq(parse("{\"v\":1,\"op\":\"rm -rf\"}", &op, err,
	    sizeof err), CADRE_ERR_PROTOCOL);
	ck_assert_ptr_nonnull(strstr(err, "unknown operation"));
	/* a reply needs no op */
	ck_assert_int_eq(parse("{\"v\":1,\"ok\":true}", NULL, err, sizeof err),
	    0);
}
END_TEST

START_TEST(test_replies)
{
	json_t	*r;

	r = proto_reply_error("bad %s \x01\xff", "thing");
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(json_string_value(json_object_get(r, "error")),
	    "bad thing ??");
	ck_assert(json_is_false(json_object_get(r, "ok")));
	json_decref(r);
	r = proto_reply_ok();
	ck_assert(json_is_true(json_object_get(r, "ok")));
	ck_assert_int_eq(json_integer_value(json_object_get(r, "v")),
	    PROTO_VERSION);
	json_decref(r);
}
END_TEST

static Suite *
proto_suite(void)
{
	Suite	*s = suite_create("proto");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_ops);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_bounds);
	tcase_add_test(tc, test_bad_messages);
	tcase_add_test(tc, test_replies);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	log_init("test_proto", LOG_LEVEL_ERROR, LOG_TARGET_STDERR);
	return unit_run(proto_suite());
}
