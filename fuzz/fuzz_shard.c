/* libFuzzer target for shard files: the header, the label block and the
 * records of the input, parsed as shard_parse() does on open. The checksum
 * is checked only when the first byte is odd, so that most inputs reach
 * the field and record checks behind it. Built with --enable-fuzzing
 * (CC=clang). fuzz/corpus-shard holds small valid shards. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct shard_info info;
	char err[512];
	uint8_t *copy;
	int verify;

	if (size < 1)
		return 0;
	verify = data[0] & 1;
	/* The shard proper starts after the selector byte; a copy, so
	 * that the parser's reads past the end are caught. */
	copy = malloc(size - 1 > 0 ? size - 1 : 1);
	if (copy == NULL)
		return 0;
	memcpy(copy, data + 1, size - 1);
	if (shard_parse("fuzz.bin", copy, size - 1, verify, &info, err,
	    sizeof err) == 0)
		shard_info_free(&info);
	free(copy);
	return 0;
}
