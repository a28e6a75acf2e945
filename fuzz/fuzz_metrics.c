/* libFuzzer target: lines of metrics.jsonl (report/report.c), one input
 * split at newlines as metrics_load() would, then the loss curve they
 * give drawn by the SVG writer (report/svg.c). */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "report.h"
#include "svg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct metrics		 m;
	struct svg_series	 s;
	struct svg_chart	 c = { "fuzz", "step", "loss", 0, 1, 0, 0 };
	struct cbuf		 b;
	const char		*p = (const char *)data, *end = p + size, *nl;
	char			 msg[512];

	metrics_init(&m, 2);
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		(void)metrics_parse_line(&m, p, (size_t)(nl - p), msg,
		    sizeof msg);
		p = nl + 1;
	}
	(void)metrics_throughput(&m);
	s = (struct svg_series){ "run", m.loss_step, m.loss, m.nloss, 0, 1,
	    NULL, NULL };
	cbuf_init(&b, (size_t)16 << 20);
	(void)svg_chart_render(&b, &c, &s, 1);
	cbuf_free(&b);
	metrics_free(&m);
	return 0;
}
