/* libFuzzer target for the safetensors header: the first 8 bytes are the
 * data size the header is checked against, the rest is the header. Built
 * with --enable-fuzzing (CC=clang). */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct st_file	f;
	uint64_t	data_size = 0;
	char		err[512];
	size_t		i;

	if (size < 8)
		return 0;
	memcpy(&data_size, data, 8);
	memset(&f, 0, sizeof f);
	f.fd = -1;
	if (st_parse_header((const char *)data + 8, size - 8, data_size, &f,
	    err, sizeof err) == 0) {
		for (i = 0; i < f.n; i++)
			free(f.t[i].name);
		free(f.t);
	}
	return 0;
}
