/* libFuzzer target for train.json (traincfg_parse): the whole input is the
 * file. Built with --enable-fuzzing (CC=clang). */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "traincfg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct train_config	c;
	char			err[1024];

	traincfg_defaults(&c);
	if (traincfg_parse(&c, (const char *)data, size, "train.json", err,
	    sizeof err) == 0)
		(void)traincfg_check(&c, err, sizeof err);
	traincfg_free(&c);
	return 0;
}
