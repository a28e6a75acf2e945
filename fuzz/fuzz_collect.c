/* libFuzzer target: a meta.json and the lines of an eval.jsonl as cadred
 * reads them from a run directory (daemon/collect.c). */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collect.h"
#include "rundir_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct collect_meta	 m;
	const char		*p = (const char *)data, *end = p + size, *nl;
	struct rundir_eval	 e;
	char			 msg[512];

	(void)collect_parse_meta(p, size, &m, msg, sizeof msg);
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		if (rundir_parse_eval(p, (size_t)(nl - p), &e, msg,
		    sizeof msg) == 0)
			free(e.error);
		p = nl + 1;
	}
	return 0;
}
