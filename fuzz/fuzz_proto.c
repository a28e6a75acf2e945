/*
 * libFuzzer target for what cadred reads from outside: control-socket
 * frames (the incremental reader, then the message checks), the tail of
 * metrics.jsonl the monitor reads for progress, cadred.conf, and a rerun
 * request's members. The first byte picks the parser.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "monitor.h"
#include "proto.h"
#include "xmalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
frames(const uint8_t *p, size_t n)
{
	struct proto_reader	 rd;
	enum proto_op		 op;
	json_t			*m;
	char			*body, err[PROTO_ERR_MAX];
	size_t			 used, len, step;
	int			 rc;

	proto_reader_init(&rd, 4096);
	/* in uneven pieces, as a socket delivers them */
	while (n > 0) {
		step = 1 + (p[0] % 7);
		if (step > n)
			step = n;
		rc = proto_reader_feed(&rd, p, step, &used);
		if (rc < 0)
			break;
		if (rc == 1) {
			body = proto_reader_take(&rd, &len);
			if (proto_parse(body, len, 4096, &m, &op, err,
			    sizeof err) == 0)
				json_decref(m);
			free(body);
		}
		p += used;
		n -= used;
	}
	proto_reader_free(&rd);
}

/* A rerun request's members, as cadred takes them apart. */
static void
rerun_request(const uint8_t *p, size_t n)
{
	struct monitor_rerun	 q;
	json_t			*req = NULL;
	char			 err[512];

	if (cjson_loadb((const char *)p, n, PROTO_MAX_REQUEST, &req, NULL) != 0)
		return;
	if (monitor_rerun_parse(req, &q, err, sizeof err) == 0)
		free((void *)q.runs);
	json_decref(req);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct monitor_progress	 prog;
	struct monitor_config	 cfg;
	char			 err[512];

	log_init("fuzz_proto", LOG_LEVEL_ERROR, LOG_TARGET_STDERR);
	if (size < 1)
		return 0;
	switch (data[0] % 4) {
	case 0:
		frames(data + 1, size - 1);
		break;
	case 1:
		monitor_parse_metrics((const char *)data + 1, size - 1, &prog);
		break;
	case 3:
		rerun_request(data + 1, size - 1);
		break;
	default:
		monitor_config_init(&cfg);
		(void)monitor_config_parse("fuzz.conf", (const char *)data + 1,
		    size - 1, &cfg, err, sizeof err);
		monitor_config_free(&cfg);
		break;
	}
	return 0;
}
