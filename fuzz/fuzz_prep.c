/* libFuzzer target for `cadre-train prep`'s input parsing: the input after
 * its first byte is written to a file and run through cmd_prep() as text
 * (pretrain), TSV (classify) or JSON lines (either task), chosen by the
 * first byte, with a small vocab; a shard set made is removed again. It
 * exercises the line splitting, the TSV columns and header, the JSON
 * lines fields and labels, the pairing and the shard writer. Error
 * messages go to stderr as usual. Built with --enable-fuzzing (CC=clang)
 * and utf8proc. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static char vocab[96], input[96], out[96];

static void
put(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL)
		abort();
	if (n > 0 && fwrite(p, 1, n, f) != n)
		abort();
	fclose(f);
}

static void
setup(void)
{
	static const char v[] =
	    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\n"
	    "a\ndog\n.\n,\n##s\n##ing\nx\ny\nz\n\xc3\xa9\n";

	snprintf(dir, sizeof dir, "/tmp/fuzz_prep.XXXXXX");
	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(vocab, sizeof vocab, "%s/vocab.txt", dir);
	snprintf(input, sizeof input, "%s/input", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	put(vocab, v, sizeof v - 1);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const formats[4][2] = {
		{ "text", "pretrain" }, { "tsv", "classify" },
		{ "jsonl", "classify" }, { "jsonl", "pretrain" },
	};
	char seq[16], threads[8], outfile[128];
	char *argv[20];
	int argc = 0, sel;

	if (dir[0] == '\0')
		setup();
	if (size < 1)
		return 0;
	sel = data[0];
	put(input, data + 1, size - 1);
	snprintf(seq, sizeof seq, "%d", 8 + (sel >> 4));
	snprintf(threads, sizeof threads, "%d", 1 + ((sel >> 2) & 1));
	argv[argc++] = (char *)"prep";
	argv[argc++] = (char *)"--quiet";
	argv[argc++] = (char *)"--vocab";
	argv[argc++] = vocab;
	argv[argc++] = (char *)"--format";
	argv[argc++] = (char *)formats[sel & 3][0];
	argv[argc++] = (char *)"--task";
	argv[argc++] = (char *)formats[sel & 3][1];
	argv[argc++] = (char *)"--seq-len";
	argv[argc++] = seq;
	argv[argc++] = (char *)"--threads";
	argv[argc++] = threads;
	argv[argc++] = (char *)"--shard-size";
	argv[argc++] = (char *)"3";
	argv[argc++] = (char *)"--out";
	argv[argc++] = out;
	argv[argc++] = input;
	argv[argc] = NULL;
	if (cmd_prep(argc, argv) == 0) {
		int k;

		for (k = 0; ; k++) {
			snprintf(outfile, sizeof outfile, "%s/shard-%05d.bin", out, k);
			if (unlink(outfile) != 0)
				break;
		}
		snprintf(outfile, sizeof outfile, "%s/vocab.txt", out);
		unlink(outfile);
		snprintf(outfile, sizeof outfile, "%s/labels.txt", out);
		unlink(outfile);
		if (rmdir(out) != 0)
			abort();
	}
	return 0;
}
