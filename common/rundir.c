/* The run directory's words that need code: the end reasons a job may
 * write and the run states' names (the names themselves are in rundir.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "rundir.h"
#include "strutil.h"
#include "xmalloc.h"

long long
rundir_ckpt_step(const char *name)
{
	const size_t	 pre = sizeof CKPT_DIR_PREFIX - 1;
	char		*end;
	long long	 v;

	if (strncmp(name, CKPT_DIR_PREFIX, pre) != 0 || name[pre] < '0' ||
	    name[pre] > '9')
		return -1;
	errno = 0;
	v = strtoll(name + pre, &end, 10);
	if (errno != 0 || *end != '\0' || v < 0)
		return -1;
	return v;
}

const struct rundir_placeholder rundir_placeholders[] = {
	{ "nnodes", ENV_NNODES },
	{ "nproc_per_node", ENV_NPROC_PER_NODE },
	{ "node_rank", ENV_NODE_RANK },
	{ "ranks", ENV_RANKS },
	{ "rdzv_endpoint", ENV_RDZV_ENDPOINT },
	{ "master_addr", ENV_MASTER_ADDR },
	{ "master_port", ENV_MASTER_PORT },
	{ "hostfile", ENV_HOSTFILE },
	{ "run_dir", ENV_RUN_DIR },
	{ "checkpoint_dir", ENV_CHECKPOINT_DIR },
	{ "resume_from", ENV_RESUME_FROM },
	{ "attempt", ENV_ATTEMPT },
	{ "metrics", ENV_METRICS },
	{ NULL, NULL }
};

const char *
rundir_placeholder_env(const char *name)
{
	size_t	i;

	for (i = 0; rundir_placeholders[i].name != NULL; i++)
		if (strcmp(name, rundir_placeholders[i].name) == 0)
			return rundir_placeholders[i].env;
	return NULL;
}

int
rundir_expand(const char *text, rundir_lookup_fn lookup, void *ctx, int shell,
    struct cbuf *out, size_t *errpos, char *msg, size_t msglen)
{
	char		 name[RUNDIR_NAME_MAX + 1];
	const char	*p = text, *q, *v;
	size_t		 n;
	int		 error;

	*errpos = 0;
	while (*p != '\0') {
		if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
			if ((error = cbuf_addc(out, p[0])) != 0)
				return error;
			p += 2;
			continue;
		}
		/* the shell's ${VAR}, a JSON object, a brace group: as
		 * they are */
		for (q = p + 1; *p == '{' && ((*q >= 'a' && *q <= 'z') ||
		    (*q >= 'A' && *q <= 'Z') || *q == '_' || (q > p + 1 &&
		    *q >= '0' && *q <= '9')); q++)
			;
		if (*p != '{' || q == p + 1 || *q != '}' ||
		    (p > text && p[-1] == '$')) {
			n = 1 + strcspn(p + 1, "{}");
			if ((error = cbuf_add(out, p, n)) != 0)
				return error;
			p += n;
			continue;
		}
		*errpos = (size_t)(p - text);
		n = (size_t)(q - p - 1);
		if (n > RUNDIR_NAME_MAX)
			return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
			    "a {name} of more than %d bytes", RUNDIR_NAME_MAX);
		memcpy(name, p + 1, n);
		name[n] = '\0';
		if ((v = lookup(name, ctx)) == NULL)
			return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
			    "unknown {%s}", name);
		error = shell ? cbuf_add_shell_word(out, v) : cbuf_adds(out, v);
		if (error != 0)
			return error;
		p = q + 1;
	}
	*errpos = 0;
	return 0;
}

const char *const rundir_status_reasons[] = { REASON_DONE, REASON_FAILED,
    REASON_NODE_FAIL, REASON_PREEMPTED, REASON_STARTUP_TIMEOUT, REASON_OOM,
    REASON_IO, NULL };

int
rundir_status_reason_known(const char *reason)
{
	size_t	i;

	for (i = 0; rundir_status_reasons[i] != NULL; i++) {
		if (strcmp(reason, rundir_status_reasons[i]) == 0)
			return 1;
	}
	return 0;
}

static const char *const run_state_names[RUN_STATE_COUNT] = {
	"new", "queued", "starting", "running", REASON_DONE, REASON_FAILED,
	REASON_CANCELLED, "requeued",
};

const char *
run_state_name(enum run_state s)
{
	if ((unsigned)s >= RUN_STATE_COUNT)
		return "unknown";
	return run_state_names[s];
}

int
run_state_parse(const char *name, enum run_state *s)
{
	int	i;

	for (i = 0; i < RUN_STATE_COUNT; i++) {
		if (strcmp(run_state_names[i], name) == 0) {
			*s = (enum run_state)i;
			return 0;
		}
	}
	return CADRE_ERR_INVALID;
}

int
run_state_final(enum run_state s)
{
	return s == RUN_DONE || s == RUN_FAILED || s == RUN_CANCELLED;
}

int
rundir_latest_checkpoint(const char *run_dir, char **rel, int64_t *step)
{
	struct cbuf	b;
	char		*path;
	int		 rc = CADRE_ERR_NOT_FOUND;

	*rel = NULL;
	xasprintf(&path, "%s/" RUNDIR_CHECKPOINTS "/" CKPT_LATEST, run_dir);
	cbuf_init(&b, 256);
	if (cbuf_read_file(&b, path) == 0 && b.len > 0) {
		while (b.len > 0 && (b.data[b.len - 1] == '\n' ||
		    b.data[b.len - 1] == ' '))
			b.data[--b.len] = '\0';
		if (strncmp(b.data, CKPT_DIR_PREFIX, strlen(CKPT_DIR_PREFIX)) ==
		    0 && str_to_int64(b.data + strlen(CKPT_DIR_PREFIX),
		    step) == 0 && *step >= 0) {
			xasprintf(rel, RUNDIR_CHECKPOINTS "/%s", b.data);
			rc = 0;
		}
	}
	cbuf_free(&b);
	free(path);
	return rc;
}
