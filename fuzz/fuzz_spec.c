/*
 * libFuzzer target for the experiment spec: YAML parsing, validation and
 * matrix expansion of arbitrary bytes. Built by ./configure CC=clang
 * --enable-fuzzing; run by bench/fuzz-spec.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diags d;
	struct spec *s = NULL;
	struct spec_plan *p = NULL;

	diags_init(&d);
	if (spec_parse("fuzz.yaml", (const char *)data, size, &d, &s) == 0 &&
	    s != NULL)
		(void)spec_expand(s, &d, &p);
	spec_plan_free(p);
	spec_free(s);
	diags_free(&d);
	return 0;
}
