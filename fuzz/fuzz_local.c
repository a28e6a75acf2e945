/*
 * libFuzzer target for the local backend's parsers: job ids
 * ("local-PID-TICKS", from cadred's database) and /proc/PID/stat lines.
 * The first byte picks the parser, the rest is its input. Built by
 * ./configure CC=clang --enable-fuzzing.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "scheduler.h"
#include "xmalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned long long	 ticks;
	long			 n;
	int			 z;
	char			*text;

	if (size < 1)
		return 0;
	text = xstrndup((const char *)data + 1, size - 1);
	if (data[0] % 2 == 0)
		(void)local_parse_id(text, &n, &ticks);
	else
		(void)local_parse_stat(text, &n, &ticks, &z);
	free(text);
	return 0;
}
