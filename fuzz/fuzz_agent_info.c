/* libFuzzer target: agents/NODE.json, log/rank-R.json, program.json and
 * public key lines (what rsh, launch and rank read from the run
 * directory). */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include <libssh/libssh.h>

#include "agent.h"
#include "program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_info	ai;
	struct rank_status	rs;
	struct program		p;
	char			**av;
	ssh_key			key = NULL;
	char			msg[256];

	(void)agent_info_parse((const char *)data, size, &ai, msg, sizeof msg);
	(void)rank_status_parse((const char *)data, size, &rs, msg, sizeof msg);
	if (program_parse((const char *)data, size, &p, msg, sizeof msg) ==
	    0) {
		if (program_argv(&p, &av, msg, sizeof msg) == 0)
			program_argv_free(av);
		program_free(&p);
	}
	if (pubkey_parse_line((const char *)data, size, &key) == 0)
		ssh_key_free(key);
	return 0;
}
