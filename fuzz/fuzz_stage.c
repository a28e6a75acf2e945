/* libFuzzer target: what staging and launch --from-env read from outside:
 * the manifest RUN_DIR/stage/K.json, the verification records
 * (common/filerec.c, which the loader reads too), --stage SRC:DST and
 * SLURM_TASKS_PER_NODE. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "filerec.h"
#include "fromenv.h"
#include "stage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* main.c's helpers live beside main(): these stand in for them. */
const char *
agent_self_path(void)
{
	return "/nonexistent/cadre-agent";
}

double
now_mono(void)
{
	return 0;
}

const char *
rundir_default(const char *opt)
{
	return opt;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stage_manifest	m;
	struct stage_pair	p;
	struct filerec_set	fs;
	char			msg[256], *s;
	int			slots[64];

	if (stage_manifest_parse((const char *)data, size, &m, msg,
	    sizeof msg) == 0)
		stage_manifest_free(&m);
	if (filerec_parse((const char *)data, size, &fs, msg,
	    sizeof msg) == 0) {
		filerec_sort(&fs);
		(void)filerec_find(&fs, "a/b");
		filerec_free(&fs);
	}
	if (size > 8192)
		return 0;
	s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	if (stage_pair_parse(s, &p, msg, sizeof msg) == 0)
		stage_pair_free(&p);
	(void)fromenv_tasks_per_node(s, 64, slots);
	free(s);
	return 0;
}
