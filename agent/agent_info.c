/* agents/NODE.json: what each agent publishes, and finding a host in it. */
#include "config.h"

#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent.h"
#include "buf.h"
#include "error.h"
#include "json.h"
#include "strutil.h"
#include "xmalloc.h"

/* Addresses and host names: letters, digits, '.', '-', ':' (IPv6), '_'. */
static int
addr_valid(const char *s)
{
	size_t	len = strlen(s);

	return len > 0 && len <= AGENT_ADDR_MAX && strspn(s,
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789.-:_") == len;
}

/* Copies member key of obj (a string of at most max bytes) into dst. */
static int
get_bounded_string(const json_t *obj, const char *key, char *dst, size_t max,
    char *msg, size_t msglen)
{
	const char	*s;
	int		 error;

	if ((error = cjson_get_string(obj, key, &s)) != 0) {
		snprintf(msg, msglen, "'%s' is %s", key,
		    error == CADRE_ERR_NOT_FOUND ? "missing" : "not a string");
		return CADRE_ERR_INVALID;
	}
	if (strlen(s) > max) {
		snprintf(msg, msglen, "'%s' is longer than %zu bytes", key,
		    max);
		return CADRE_ERR_INVALID;
	}
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

int
agent_info_parse(const char *text, size_t len, struct agent_info *ai,
    char *msg, size_t msglen)
{
	json_error_t	 jerr;
	json_t		*root = NULL;
	int64_t		 v;
	ssh_key		 key = NULL;
	int		 error;

	memset(ai, 0, sizeof *ai);
	if ((error = cjson_loadb(text, len, AGENT_INFO_MAX, &root, &jerr)) !=
	    0) {
		if (error == CADRE_ERR_TOO_LARGE)
			snprintf(msg, msglen, "larger than %u bytes",
			    AGENT_INFO_MAX);
		else
			snprintf(msg, msglen, "%d:%d: %s", jerr.line,
			    jerr.column, jerr.text);
		goto out;
	}
	error = CADRE_ERR_INVALID;
	if (!json_is_object(root)) {
		snprintf(msg, msglen, "not a JSON object");
		goto out;
	}
	if (cjson_get_int(root, "version", &v) != 0 ||
	    v != AGENT_INFO_VERSION) {
		snprintf(msg, msglen, "'version' must be %d",
		    AGENT_INFO_VERSION);
		error = CADRE_ERR_VERSION;
		goto out;
	}
	if (get_bounded_string(root, "node", ai->node, AGENT_NODE_MAX, msg,
	    msglen) != 0)
		goto out;
	if (!str_is_name(ai->node, AGENT_NODE_MAX)) {
		snprintf(msg, msglen, "'node' must match [A-Za-z0-9._-]{1,%d}",
		    AGENT_NODE_MAX);
		goto out;
	}
	if (get_bounded_string(root, "addr", ai->addr, AGENT_ADDR_MAX, msg,
	    msglen) != 0)
		goto out;
	if (!addr_valid(ai->addr)) {
		snprintf(msg, msglen, "'addr' is not an address or host name");
		goto out;
	}
	if (cjson_get_int(root, "port", &v) != 0 || v < 1 || v > 65535) {
		snprintf(msg, msglen, "'port' must be an integer in 1..65535");
		goto out;
	}
	ai->port = (int)v;
	if (get_bounded_string(root, "hostkey", ai->hostkey,
	    AGENT_HOSTKEY_MAX, msg, msglen) != 0)
		goto out;
	if (pubkey_parse_line(ai->hostkey, strlen(ai->hostkey), &key) != 0) {
		snprintf(msg, msglen, "'hostkey' is not an ssh-ed25519 key");
		goto out;
	}
	if (cjson_get_int(root, "pid", &v) != 0 || v < 1 || v > INT32_MAX) {
		snprintf(msg, msglen, "'pid' must be a positive integer");
		goto out;
	}
	ai->pid = (long)v;
	if (cjson_get_real(root, "started", &ai->started) != 0 ||
	    ai->started < 0) {
		snprintf(msg, msglen, "'started' must be a number of seconds");
		goto out;
	}
	error = 0;
 out:
	ssh_key_free(key);
	json_decref(root);
	return error;
}

/* Reads path into b (its bound set by the caller), with a message that
 * names the file on failure. */
static int
read_bounded(const char *path, struct cbuf *b, char *msg, size_t msglen)
{
	int	error;

	if ((error = cbuf_read_file(b, path)) == 0)
		return 0;
	if (error == CADRE_ERR_SYSTEM && errno == ENOENT)
		error = CADRE_ERR_NOT_FOUND;
	snprintf(msg, msglen, "%s: %s", path,
	    error == CADRE_ERR_TOO_LARGE ? "larger than the bound" :
	    error == CADRE_ERR_NOT_FOUND ? "no such file" : strerror(errno));
	return error;
}

int
agent_info_load(const char *path, struct agent_info *ai, char *msg,
    size_t msglen)
{
	struct cbuf	b;
	char		inner[256];
	int		error;

	memset(ai, 0, sizeof *ai);
	cbuf_init(&b, AGENT_INFO_MAX);
	if ((error = read_bounded(path, &b, msg, msglen)) != 0)
		goto out;
	if ((error = agent_info_parse(b.data, b.len, ai, inner,
	    sizeof inner)) != 0)
		snprintf(msg, msglen, "%s: %s", path, inner);
 out:
	cbuf_free(&b);
	return error;
}

int
agent_info_publish(const char *dir, const struct agent_info *ai)
{
	json_t	*root;
	char	*rel, *path;
	int	 error;

	root = json_pack("{s:i, s:s, s:s, s:i, s:s, s:I, s:f}",
	    "version", AGENT_INFO_VERSION, "node", ai->node, "addr", ai->addr,
	    "port", ai->port, "hostkey", ai->hostkey, "pid",
	    (json_int_t)ai->pid, "started", ai->started);
	if (root == NULL)
		return CADRE_ERR_NOMEM;
	xasprintf(&rel, "%s/%s.json", RUNDIR_AGENTS, ai->node);
	path = rundir_path(dir, rel);
	error = cjson_write_atomic(path, root, 0600);
	free(path);
	free(rel);
	json_decref(root);
	return error;
}

int
agent_info_find(const char *dir, const char *host, struct agent_info *ai,
    char *msg, size_t msglen)
{
	DIR		*d = NULL;
	struct dirent	*de;
	char		*rel, *path, *agents = NULL, inner[512];
	size_t		 seen = 0, len;
	int		 error;

	/* By node name first: one file, no scan. */
	if (str_is_name(host, AGENT_NODE_MAX)) {
		xasprintf(&rel, "%s/%s.json", RUNDIR_AGENTS, host);
		path = rundir_path(dir, rel);
		error = agent_info_load(path, ai, msg, msglen);
		free(path);
		free(rel);
		if (error != CADRE_ERR_NOT_FOUND)
			return error;
	}
	/* Then by address (mpirun passes what the hostfile holds). */
	agents = rundir_path(dir, RUNDIR_AGENTS);
	if ((d = opendir(agents)) == NULL) {
		snprintf(msg, msglen, "%s: %s", agents, strerror(errno));
		error = errno == ENOENT ? CADRE_ERR_NOT_FOUND :
		    CADRE_ERR_SYSTEM;
		goto out;
	}
	error = CADRE_ERR_NOT_FOUND;
	snprintf(msg, msglen, "no agent for host '%s' in %s", host, agents);
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0 ||
		    de->d_name[0] == '.')
			continue;
		if (++seen > AGENT_MAX_NODES) {
			snprintf(msg, msglen, "%s: more than %d agents", agents,
			    AGENT_MAX_NODES);
			error = CADRE_ERR_TOO_LARGE;
			goto out;
		}
		path = rundir_path(agents, de->d_name);
		if (agent_info_load(path, ai, inner, sizeof inner) == 0 &&
		    (strcmp(ai->addr, host) == 0 ||
		    strcmp(ai->node, host) == 0)) {
			free(path);
			error = 0;
			goto out;
		}
		free(path);
	}
 out:
	if (d != NULL)
		closedir(d);
	free(agents);
	if (error != 0 && error != CADRE_ERR_NOT_FOUND)
		memset(ai, 0, sizeof *ai);
	return error;
}

int
rank_status_parse(const char *text, size_t len, struct rank_status *rs,
    char *msg, size_t msglen)
{
	json_error_t	 jerr;
	json_t		*root = NULL, *v;
	const char	*str;
	int64_t		 n;
	int		 error;

	memset(rs, 0, sizeof *rs);
	if ((error = cjson_loadb(text, len, RANK_STATUS_MAX, &root, &jerr)) !=
	    0) {
		if (error == CADRE_ERR_TOO_LARGE)
			snprintf(msg, msglen, "larger than %u bytes",
			    RANK_STATUS_MAX);
		else
			snprintf(msg, msglen, "%d:%d: %s", jerr.line,
			    jerr.column, jerr.text);
		goto out;
	}
	error = CADRE_ERR_INVALID;
	if (!json_is_object(root)) {
		snprintf(msg, msglen, "not a JSON object");
		goto out;
	}
	if (cjson_get_int(root, "version", &n) != 0 || n != STATUS_VERSION) {
		snprintf(msg, msglen, "'version' must be %d", STATUS_VERSION);
		error = CADRE_ERR_VERSION;
		goto out;
	}
	if (cjson_get_int(root, "rank", &n) != 0 || n < 0 || n >= (1 << 24)) {
		snprintf(msg, msglen, "'rank' must be an integer in 0..%d",
		    (1 << 24) - 1);
		goto out;
	}
	rs->rank = (int)n;
	if (get_bounded_string(root, "node", rs->node, AGENT_NODE_MAX, msg,
	    msglen) != 0)
		goto out;
	if (!str_is_name(rs->node, AGENT_NODE_MAX)) {
		snprintf(msg, msglen, "'node' must match [A-Za-z0-9._-]{1,%d}",
		    AGENT_NODE_MAX);
		goto out;
	}
	if ((v = json_object_get(root, "exit")) != NULL && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 255) {
			snprintf(msg, msglen, "'exit' must be null or 0..255");
			goto out;
		}
		rs->exited = 1;
		rs->exit_code = (int)json_integer_value(v);
	}
	if ((v = json_object_get(root, "signal")) != NULL && !json_is_null(v)) {
		if (json_is_integer(v) && json_integer_value(v) > 0 &&
		    json_integer_value(v) < 128) {
			snprintf(rs->signal, sizeof rs->signal, "%d",
			    (int)json_integer_value(v));
		} else if (json_is_string(v) && (str = json_string_value(v),
		    strlen(str) > 0 && strlen(str) < sizeof rs->signal &&
		    strspn(str, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") ==
		    strlen(str))) {
			memcpy(rs->signal, str, strlen(str) + 1);
		} else {
			snprintf(msg, msglen, "'signal' must be null, a signal "
			    "name or a number");
			goto out;
		}
	}
	if (!rs->exited && rs->signal[0] == '\0') {
		snprintf(msg, msglen, "neither 'exit' nor 'signal'");
		goto out;
	}
	if ((v = json_object_get(root, "ended")) != NULL) {
		if (!json_is_number(v) || json_number_value(v) < 0 ||
		    json_number_value(v) > 1e11) {
			snprintf(msg, msglen, "'ended' must be a time in seconds "
			    "since 1970");
			goto out;
		}
		rs->ended = json_number_value(v);
	}
	rs->peak_rss_bytes = -1;
	if ((v = json_object_get(root, "peak_rss_bytes")) != NULL &&
	    !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			snprintf(msg, msglen, "'peak_rss_bytes' must be a "
			    "non-negative integer");
			goto out;
		}
		rs->peak_rss_bytes = json_integer_value(v);
	}
	if ((v = json_object_get(root, "oom")) != NULL) {
		if (!json_is_boolean(v)) {
			snprintf(msg, msglen, "'oom' must be true or false");
			goto out;
		}
		rs->oom = json_is_true(v);
	}
	if (json_object_get(root, "message") != NULL &&
	    get_bounded_string(root, "message", rs->message, RANK_MESSAGE_MAX,
	    msg, msglen) != 0)
		goto out;
	if (json_object_get(root, "last_error") != NULL &&
	    get_bounded_string(root, "last_error", rs->last_error,
	    RANK_MESSAGE_MAX, msg, msglen) != 0)
		goto out;
	error = 0;
 out:
	json_decref(root);
	return error;
}

int
rank_status_load(const char *path, struct rank_status *rs, char *msg,
    size_t msglen)
{
	struct cbuf	b;
	char		inner[256];
	int		error;

	memset(rs, 0, sizeof *rs);
	cbuf_init(&b, RANK_STATUS_MAX);
	if ((error = read_bounded(path, &b, msg, msglen)) != 0)
		goto out;
	if ((error = rank_status_parse(b.data, b.len, rs, inner,
	    sizeof inner)) != 0)
		snprintf(msg, msglen, "%s: %s", path, inner);
 out:
	cbuf_free(&b);
	return error;
}
