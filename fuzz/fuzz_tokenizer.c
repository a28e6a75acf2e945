/* libFuzzer target for the tokenizer: the first byte picks what the rest
 * is, a vocab file (loaded, then used on a fixed text), text (tokenized
 * with a fixed vocab, uncased or cased), or text to build a small vocab
 * from (which must load and leave no [UNK] on that text but for words
 * over 100 characters or characters that did not fit). Nothing may crash,
 * leak or read out of bounds; every id must be in range. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "tokenizer.h"
#include "vocab_build.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fixed_vocab[] =
	"[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"
	"the\n##s\n##ing\na\n##a\nb\n##b\n,\n.\n\xc3\xa9\n\xe4\xb8\xad\n##\xc3\xa9\n";
static const char fixed_text[] =
	"The things, a b \xe4\xb8\xad [SEP] caf\xc3\xa9s\xff ab\xcc\x81";

static void
run(const struct tokenizer *t, const char *text, size_t len)
{
	struct tok_state *st = tok_state_new();
	const int32_t *ids;
	size_t n, i;

	n = tok_encode(t, st, text, len, &ids);
	for (i = 0; i < n; i++)
		if (ids[i] < 0 || (uint32_t)ids[i] >= tok_vocab_size(t) ||
		    tok_token(t, (uint32_t)ids[i]) == NULL)
			abort();
	tok_state_free(st);
}

static void
build(const struct tok_opts *opts, uint32_t vsize, const char *text, size_t len)
{
	struct vocab_opts vo = { vsize, 1, *opts, 0, 1 };
	struct vocab_builder *vb = vb_new(&vo);
	const char *const *tokens;
	struct tokenizer *t = NULL;
	struct cbuf b;
	char err[256];
	size_t n, i;

	vb_add_text(vb, text, len);
	n = vb_build(vb, &tokens);
	if (n > vsize)
		abort();
	cbuf_init(&b, SIZE_MAX);
	for (i = 0; i < n; i++) {
		cbuf_adds(&b, tokens[i]);
		cbuf_addc(&b, '\n');
	}
	if (tok_load_mem("built", b.data, b.len, opts, &t, err, sizeof(err)) != 0)
		abort();
	run(t, text, len);
	tok_free(t);
	cbuf_free(&b);
	vb_free(vb);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tok_opts opts = TOK_OPTS_DEFAULT;
	struct tokenizer *t = NULL;
	char err[256];

	if (size < 1)
		return 0;
	opts.lower_case = (data[0] & 2) == 0;
	if (data[0] & 4) {
		build(&opts, TOK_NSPECIAL + 1 + (data[0] >> 3) * 8,
		    (const char *)data + 1, size - 1);
		return 0;
	}
	if (data[0] & 1) {
		if (tok_load_mem("fuzz", (const char *)data + 1, size - 1, &opts,
		    &t, err, sizeof(err)) == 0) {
			run(t, fixed_text, sizeof(fixed_text) - 1);
			run(t, (const char *)data + 1, size - 1);
		}
	} else if (tok_load_mem("fixed", fixed_vocab, sizeof(fixed_vocab) - 1,
	    &opts, &t, err, sizeof(err)) == 0) {
		run(t, (const char *)data + 1, size - 1);
	} else {
		abort();
	}
	tok_free(t);
	return 0;
}
