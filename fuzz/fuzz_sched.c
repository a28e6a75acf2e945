/*
 * libFuzzer target for the parsers of scheduler output: squeue lines,
 * sbatch's job id, slurmrestd's job replies and qstat -F json replies. The first byte picks the
 * parser, the rest is its input. Built by ./configure CC=clang
 * --enable-fuzzing.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json.h"
#include "scheduler.h"
#include "xmalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const ids[] = { "1", "2", "123", "4294967295" };
	struct sched_status	 st[4];
	json_t			*j = NULL;
	char			*text, *id = NULL;
	size_t			 bad;

	if (size < 1)
		return 0;
	text = xstrndup((const char *)data + 1, size - 1);
	memset(st, 0, sizeof st);
	switch (data[0] % 4) {
	case 0:
		(void)slurm_parse_squeue(text, ids, 4, st, &bad);
		break;
	case 1:
		(void)slurm_parse_sbatch(text, &id);
		free(id);
		break;
	case 2:
		if (cjson_loadb((const char *)data + 1, size - 1, 1 << 20, &j,
		    NULL) == 0)
			(void)slurmrest_parse_job((const struct json_t *)j, "123",
			    &st[0]);
		json_decref(j);
		break;
	default:
		if (cjson_loadb((const char *)data + 1, size - 1, 1 << 20, &j,
		    NULL) == 0)
			(void)pbs_parse_qstat((const struct json_t *)j, ids, 4,
			    st);
		json_decref(j);
		break;
	}
	free(text);
	return 0;
}
