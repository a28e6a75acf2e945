/* Philox known answers (Random123's kat_vectors), the JSON reader and the
 * safetensors header checks on good and bad input, and a write/read round
 * trip. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "philox.h"
#include "safetensors.h"
#include "tjson.h"
#include "xmalloc.h"
#include "expect.h"


static void
test_philox(void)
{
	static const uint32_t kat[3][10] = {
		{ 0, 0, 0, 0, 0, 0,
		  0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 },
		{ 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
		  0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd },
		{ 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
		  0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 },
	};
	int i;

	for (i = 0; i < 3; i++) {
		uint32_t out[4];

		philox4x32_10(kat[i], kat[i] + 4, out);
		EXPECT(memcmp(out, kat[i] + 6, sizeof out) == 0,
		    "philox4x32_10 known answer %d: %08x %08x %08x %08x", i,
		    out[0], out[1], out[2], out[3]);
	}
}

static void
test_json(void)
{
	static const char *good[] = {
		"{}", "[]", "0", "-1.5e3", "\"a\\u00e9\\ud83d\\ude00\"",
		"{\"a\": [1, 2, {\"b\": null}], \"c\": true, \"d\": false}",
	};
	static const char *bad[] = {
		"", "{", "[1,]", "{\"a\" 1}", "\"abc", "01x", "{\"a\":1} x",
		"\"\\ud800\"", "\"\\u0000\"", "\"a\nb\"", "tru", "-", "1.", "1e",
	};
	struct tj_node *n;
	char err[128];
	size_t i;
	char deep[200];

	for (i = 0; i < sizeof good / sizeof good[0]; i++) {
		EXPECT(tj_parse(good[i], strlen(good[i]), &n, err, sizeof err) == 0,
		    "json good %zu: %s", i, err);
		tj_free(n);
	}
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		n = NULL;
		EXPECT(tj_parse(bad[i], strlen(bad[i]), &n, err, sizeof err) == CADRE_ERR_PARSE,
		    "json bad %zu accepted", i);
		tj_free(n);
	}
	memset(deep, '[', sizeof deep);
	EXPECT(tj_parse(deep, sizeof deep, &n, err, sizeof err) == CADRE_ERR_PARSE &&
	    strstr(err, "deeply") != NULL, "deep nesting: %s", err);
}

/* Each bad header with the words its error must contain. */
static const struct {
	const char	*hdr;
	uint64_t	 data;
	const char	*words;
} bad_headers[] = {
	{ "[]", 0, "not a JSON object" },
	{ "{\"w\": {\"dtype\": \"F33\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4, "'w': field 'dtype'" },
	{ "{\"w\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 4, "'w': field 'dtype'" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 4]}}", 4, "'w': field 'data_offsets' spans 4 bytes" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 8]}}", 4, "'w': field 'data_offsets' [0, 8] outside" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}", 4, "'w': field 'shape'" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": 1, \"data_offsets\": [0, 4]}}", 4, "'w': field 'shape'" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4]}}", 4, "'w': field 'data_offsets'" },
	{ "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
	  " \"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}", 8, "overlap" },
	{ "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
	  " \"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}", 8, "'a': named twice" },
	{ "{\"__metadata__\": 3}", 0, "__metadata__" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [65536, 65536, 65536, 65536], \"data_offsets\": [0, 4]}}", 4, "too many elements" },
	{ "{\"w\": ", 0, "header: offset" },
};

static void
test_headers(void)
{
	struct st_file f;
	char err[512];
	size_t i;
	const char *ok = "{\"__metadata__\": {\"format\": \"pt\"}, "
	    "\"w\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 24]}, "
	    "\"s\": {\"dtype\": \"I64\", \"shape\": [], \"data_offsets\": [24, 32]}}";

	memset(&f, 0, sizeof f);
	EXPECT(st_parse_header(ok, strlen(ok), 32, &f, err, sizeof err) == 0 &&
	    f.n == 2 && f.t[0].ndim == 2 && f.t[1].ndim == 0, "good header: %s", err);
	f.fd = -1;
	if (f.t != NULL) {
		size_t k;

		for (k = 0; k < f.n; k++)
			free(f.t[k].name);
		free(f.t);
	}
	for (i = 0; i < sizeof bad_headers / sizeof bad_headers[0]; i++) {
		memset(&f, 0, sizeof f);
		err[0] = '\0';
		EXPECT(st_parse_header(bad_headers[i].hdr, strlen(bad_headers[i].hdr),
		    bad_headers[i].data, &f, err, sizeof err) != 0 &&
		    strstr(err, bad_headers[i].words) != NULL,
		    "bad header %zu: got \"%s\", want \"%s\"", i, err, bad_headers[i].words);
	}
}

static void
test_roundtrip(void)
{
	char dir[4096], *path;
	float a[6] = { 1, 2, 3, 4, 5, 6 }, back[6];
	int64_t b[2] = { -7, 1LL << 40 }, sa[2] = { 2, 3 }, sb[1] = { 2 };
	struct st_writer *w;
	struct st_file *f;
	const struct st_tensor *t;
	char err[256];

	if (expect_mkdtemp(dir, sizeof dir, "test_io") != 0)
		return;
	xasprintf(&path, "%s/x.safetensors", dir);
	w = st_writer_new();
	st_writer_add(w, "a\"quoted", ST_F32, 2, sa, a);
	st_writer_add(w, "b", ST_I64, 1, sb, b);
	st_writer_meta(w, "format", "pt");
	EXPECT(st_writer_write(w, path) == 0, "write");
	st_writer_free(w);
	EXPECT(st_open(path, &f, err, sizeof err) == 0, "open: %s", err);
	if (f != NULL) {
		EXPECT(f->data_start % 8 == 0, "data not aligned");
		t = st_find(f, "a\"quoted");
		EXPECT(t != NULL && t->dtype == ST_F32 && t->shape[1] == 3, "find a");
		if (t != NULL) {
			st_read(f, t, back, err, sizeof err);
			EXPECT(memcmp(a, back, sizeof a) == 0, "data of a");
		}
		st_close(f);
	}
	expect_rmtree(dir);
	free(path);
}

int
main(void)
{
	test_philox();
	test_json();
	test_headers();
	test_roundtrip();
	return expect_summary("test_io");
}
