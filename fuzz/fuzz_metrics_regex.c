/* libFuzzer target: program.json's metrics_regex and the program's output
 * lines it reads (agent/metrics_regex.c). The input's first line is the
 * pattern, every further line one line of output. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "metrics_regex.h"
#include "xmalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct metrics_regex	*mr;
	struct cbuf		 out;
	const char		*p = (const char *)data, *end = p + size, *nl;
	char			*pattern, msg[512];

	if ((nl = memchr(p, '\n', size)) == NULL)
		nl = end;
	/* A pattern is one line of program.json: no NUL in it. */
	pattern = xstrndup(p, (size_t)(nl - p));
	if (metrics_regex_compile(pattern, &mr, msg, sizeof msg) != 0) {
		free(pattern);
		return 0;
	}
	free(pattern);
	cbuf_init(&out, METRICS_REGEX_OUT_MAX);
	for (p = nl < end ? nl + 1 : end; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if (metrics_regex_line(mr, p, (size_t)(nl - p), 1.5, &out, msg,
		    sizeof msg) == 1 && (out.len == 0 ||
		    out.data[out.len - 1] != '\n'))
			abort();
		if (nl == end)
			break;
	}
	cbuf_free(&out);
	metrics_regex_free(mr);
	return 0;
}
