/*
 * The slurm-rest backend: slurmrestd's API v0.0.38 through libcurl, over
 * a unix socket (unix:///PATH) or http(s)://HOST:PORT. A JWT, when the
 * variable named by token_env holds one, goes in X-SLURM-USER-TOKEN and is
 * never logged; without one (rest_auth/local) slurmrestd trusts the
 * socket's peer, which must then run as slurmrestd's user.
 *
 * Extra sbatch words have no place in API v0.0.38's job properties and are
 * refused.
 */
#include "config.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "buf.h"
#include "error.h"
#include "jobscript.h"
#include "json.h"
#include "log.h"
#include "rundir.h"
#include "scheduler.h"
#include "xmalloc.h"

#define REST_API		"/slurm/v0.0.38"
#define REST_REPLY_MAX		((size_t)16 << 20)	/* bytes of a reply */
#define REST_URL_MAX		4096
#define REST_ERR_INVALID_JOB	2017	/* ESLURM_INVALID_JOB_ID */

struct rest {
	CURL	*curl;
	char	*base;		/* "http://localhost" for a socket */
	char	*socket;	/* unix socket path, or NULL */
};

static int
rest_init(struct sched *s)
{
	struct rest	*r;
	const char	*url = s->cfg.rest_url;

	if (url == NULL || strlen(url) >= REST_URL_MAX) {
		log_error("slurm-rest: no scheduler.rest.url");
		return CADRE_ERR_INVALID;
	}
	r = xcalloc(1, sizeof *r);
	if (strncmp(url, "unix://", 7) == 0 && url[7] == '/') {
		r->socket = xstrdup(url + 7);
		r->base = xstrdup("http://localhost");
	} else if (strncmp(url, "http://", 7) == 0 ||
	    strncmp(url, "https://", 8) == 0) {
		r->base = xstrdup(url);
		while (strlen(r->base) > 8 && r->base[strlen(r->base) - 1] == '/')
			r->base[strlen(r->base) - 1] = '\0';
	} else {
		log_error("slurm-rest: %s: expected unix:///PATH or "
		    "http(s)://HOST:PORT", url);
		free(r);
		return CADRE_ERR_INVALID;
	}
	if ((r->curl = curl_easy_init()) == NULL) {
		free(r->base);
		free(r->socket);
		free(r);
		return CADRE_ERR_NOMEM;
	}
	s->priv = r;
	return 0;
}

static void
rest_free(struct sched *s)
{
	struct rest	*r = s->priv;

	if (r == NULL)
		return;
	curl_easy_cleanup(r->curl);
	free(r->base);
	free(r->socket);
	free(r);
	s->priv = NULL;
}

static size_t
rest_write(char *p, size_t size, size_t n, void *ctx)
{
	struct cbuf	*b = ctx;

	/* past the bound: a short count makes curl fail the transfer */
	if (cbuf_add(b, p, size * n) != 0)
		return 0;
	return size * n;
}

/*
 * One request: method, path under REST_API, body (JSON text or NULL).
 * 0 with *reply (parsed JSON, caller frees) and *status (the HTTP code);
 * slurmrestd answers errors with a JSON body too.
 */
static int
rest_request(struct sched *s, const char *method, const char *path,
    const char *body, long *status, json_t **reply)
{
	struct rest		*r = s->priv;
	struct curl_slist	*hdr = NULL;
	struct cbuf		 b;
	json_error_t		 jerr;
	char			*url = NULL, *h = NULL;
	const char		*token = NULL;
	CURLcode		 cc;
	int			 ret;

	*reply = NULL;
	*status = 0;
	cbuf_init(&b, REST_REPLY_MAX);
	xasprintf(&url, "%s%s%s", r->base, REST_API, path);
	curl_easy_reset(r->curl);
	curl_easy_setopt(r->curl, CURLOPT_URL, url);
	curl_easy_setopt(r->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->curl, CURLOPT_TIMEOUT, (long)s->cfg.cmd_timeout);
	curl_easy_setopt(r->curl, CURLOPT_CONNECTTIMEOUT, 10L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(r->curl, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(r->curl, CURLOPT_PROTOCOLS,
	    (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	if (r->socket != NULL)
		curl_easy_setopt(r->curl, CURLOPT_UNIX_SOCKET_PATH, r->socket);
	curl_easy_setopt(r->curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, rest_write);
	curl_easy_setopt(r->curl, CURLOPT_WRITEDATA, &b);
	hdr = curl_slist_append(hdr, "Accept: application/json");
	if (body != NULL) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(r->curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE,
		    (long)strlen(body));
	}
	if (s->cfg.token_env != NULL)
		token = getenv(s->cfg.token_env);
	if (token != NULL && *token != '\0') {
		struct passwd	*pw = getpwuid(geteuid());

		if (strchr(token, '\n') != NULL || strchr(token, '\r') != NULL) {
			log_error("slurm-rest: $%s holds a line break: not a "
			    "token", s->cfg.token_env);
			ret = CADRE_ERR_AUTH;
			goto out;
		}
		/* the token is in the headers only, never in a message */
		xasprintf(&h, "X-SLURM-USER-TOKEN: %s", token);
		hdr = curl_slist_append(hdr, h);
		explicit_bzero(h, strlen(h));
		free(h);
		h = NULL;
		if (pw != NULL) {
			xasprintf(&h, "X-SLURM-USER-NAME: %s", pw->pw_name);
			hdr = curl_slist_append(hdr, h);
		}
	}
	curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, hdr);
	cc = curl_easy_perform(r->curl);
	if (cc != CURLE_OK) {
		log_warn("slurm-rest: %s %s: %s", method, path,
		    curl_easy_strerror(cc));
		ret = cc == CURLE_WRITE_ERROR ? CADRE_ERR_TOO_LARGE :
		    CADRE_ERR_BUSY;
		goto out;
	}
	curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, status);
	if (*status == 401 || *status == 403) {
		log_warn("slurm-rest: %s %s: HTTP %ld: authentication refused",
		    method, path, *status);
		ret = CADRE_ERR_AUTH;
		goto out;
	}
	if (cjson_loadb(b.data != NULL ? b.data : "", b.len, REST_REPLY_MAX,
	    reply, &jerr) != 0 || !json_is_object(*reply)) {
		log_warn("slurm-rest: %s %s: HTTP %ld without a JSON object",
		    method, path, *status);
		json_decref(*reply);
		*reply = NULL;
		ret = CADRE_ERR_PROTOCOL;
		goto out;
	}
	ret = 0;
out:
	/* the header list held the token: wipe it before freeing */
	curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, NULL);
	for (struct curl_slist *l = hdr; l != NULL; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(hdr);
	free(h);
	free(url);
	cbuf_free(&b);
	return ret;
}

/* The first of a reply's "errors": 0 when there is none, else its
 * error_number (or -1), with its text in msg. */
static int
rest_error(const json_t *reply, char *msg, size_t len)
{
	const json_t	*errs = json_object_get(reply, "errors"), *e;
	const char	*t = NULL;
	int64_t		 num = -1;

	msg[0] = '\0';
	if (!json_is_array(errs) || json_array_size(errs) == 0)
		return 0;
	e = json_array_get(errs, 0);
	if (!json_is_object(e))
		return -1;
	(void)cjson_get_int(e, "error_number", &num);
	if (cjson_get_string(e, "error", &t) != 0 || t == NULL)
		(void)cjson_get_string(e, "description", &t);
	snprintf(msg, len, "%s", t != NULL ? t : "an error");
	return num > 0 && num < 1000000 ? (int)num : -1;
}

int
slurmrest_parse_job(const json_t *reply, const char *job_id,
    struct sched_status *out)
{
	const json_t	*jobs = json_object_get(reply, "jobs"), *j;
	const char	*state = NULL, *s;
	char		 msg[SCHED_REASON_MAX];
	int64_t		 id, ec;
	size_t		 i;

	if (rest_error(reply, msg, sizeof msg) == REST_ERR_INVALID_JOB)
		return CADRE_ERR_NOT_FOUND;
	if (!json_is_array(jobs))
		return CADRE_ERR_PROTOCOL;
	json_array_foreach(jobs, i, j) {
		char	idtext[24];

		if (!json_is_object(j) || cjson_get_int(j, "job_id", &id) != 0)
			return CADRE_ERR_PROTOCOL;
		snprintf(idtext, sizeof idtext, "%lld", (long long)id);
		if (strcmp(idtext, job_id) != 0)
			continue;
		if (cjson_get_string(j, "job_state", &state) != 0 ||
		    state == NULL)
			return CADRE_ERR_PROTOCOL;
		out->state = slurm_state_parse(state, strlen(state));
		if (out->state == SCHED_UNKNOWN)
			return CADRE_ERR_PROTOCOL;
		if (sched_state_final(out->state) &&
		    cjson_get_int(j, "exit_code", &ec) == 0 && ec >= 0 &&
		    ec <= 0xffff) {
			out->exit_signal = (int)(ec & 0x7f);
			out->exit_code = out->exit_signal != 0 ? -1 :
			    (int)((ec >> 8) & 0xff);
		}
		s = NULL;
		if (cjson_get_string(j, "state_reason", &s) == 0 && s != NULL &&
		    strcmp(s, "None") != 0 && strlen(s) < sizeof out->reason)
			snprintf(out->reason, sizeof out->reason, "%s", s);
		s = NULL;
		if (cjson_get_string(j, "nodes", &s) == 0 && s != NULL &&
		    strlen(s) < sizeof out->nodes)
			snprintf(out->nodes, sizeof out->nodes, "%s", s);
		return 0;
	}
	return CADRE_ERR_NOT_FOUND;
}

/* The job properties of v0.0.38 for job (checked beforehand). */
static json_t *
rest_job_properties(const struct sched_job *job)
{
	json_t		*p = json_object(), *env = json_object();
	char		*t = NULL, *esc;
	const char	*path = getenv("PATH");
	size_t		 i, k;

	json_object_set_new(p, "name", json_string(job->job_name));
	json_object_set_new(p, "nodes", json_pack("[II]",
	    (json_int_t)job->nodes, (json_int_t)job->nodes));
	json_object_set_new(p, "tasks_per_node",
	    json_integer(job->tasks_per_node));
	/* slurmrestd 22.05 gave a job with "nodes": [2, 2] one node; the
	 * task count makes the controller place tasks_per_node on each. */
	json_object_set_new(p, "tasks",
	    json_integer(job->nodes * job->tasks_per_node));
	if (job->cpus_per_task > 0)
		json_object_set_new(p, "cpus_per_task",
		    json_integer(job->cpus_per_task));
	if (job->memory > 0)
		json_object_set_new(p, "memory_per_node",
		    json_integer((job->memory + (1 << 20) - 1) >> 20));
	if (job->gpus_per_node > 0) {
		if (job->gpu_type != NULL)
			xasprintf(&t, "%s:%lld", job->gpu_type,
			    (long long)job->gpus_per_node);
		else
			xasprintf(&t, "%lld", (long long)job->gpus_per_node);
		json_object_set_new(p, "gpus_per_node", json_string(t));
		free(t);
		t = NULL;
	}
	/* minutes, rounded up: never shorter than asked */
	json_object_set_new(p, "time_limit",
	    json_integer((job->time_limit + 59) / 60));
	/* No "signal": slurmrestd 22.05 refuses "B:" (the batch shell), and
	 * the script rendered as JOBSCRIPT_SLURMREST signals itself. */
	if (job->partition != NULL)
		json_object_set_new(p, "partition", json_string(job->partition));
	if (job->account != NULL)
		json_object_set_new(p, "account", json_string(job->account));
	if (job->qos != NULL)
		json_object_set_new(p, "qos", json_string(job->qos));
	if (job->constraint != NULL)
		json_object_set_new(p, "constraints",
		    json_string(job->constraint));
	if (job->reservation != NULL)
		json_object_set_new(p, "reservation",
		    json_string(job->reservation));
	if (job->exclusive)
		json_object_set_new(p, "exclusive", json_string("true"));
	json_object_set_new(p, "requeue", json_true());
	json_object_set_new(p, "current_working_directory",
	    json_string(job->run_dir));
	/* Slurm's filename patterns: % -> %% */
	esc = xmalloc(strlen(job->run_dir) * 2 + sizeof "/" RUNDIR_JOB_OUT);
	for (i = k = 0; job->run_dir[i] != '\0'; i++) {
		esc[k++] = job->run_dir[i];
		if (job->run_dir[i] == '%')
			esc[k++] = '%';
	}
	strcpy(esc + k, "/" RUNDIR_JOB_OUT);
	json_object_set_new(p, "standard_output", json_string(esc));
	json_object_set_new(p, "standard_error", json_string(esc));
	free(esc);
	/* slurmrestd refuses a job without an environment */
	json_object_set_new(env, "PATH", json_string(path != NULL ? path :
	    "/usr/local/bin:/usr/bin:/bin"));
	for (i = 0; i < job->nenv; i++) {
		const char	*eq = strchr(job->env[i], '=');
		char		*name = xstrndup(job->env[i],
				    (size_t)(eq - job->env[i]));

		json_object_set_new(env, name, json_string(eq + 1));
		free(name);
	}
	json_object_set_new(p, "environment", env);
	return p;
}

static int
rest_submit(struct sched *s, const struct sched_job *job, char **job_id)
{
	struct cbuf	 script;
	json_t		*body = NULL, *reply = NULL;
	char		 msg[JOBSCRIPT_ERR_MAX], *text = NULL;
	int64_t		 id;
	long		 status;
	int		 r;

	cbuf_init(&script, JOBSCRIPT_MAX);
	if ((r = jobscript_check_job(job, msg, sizeof msg)) != 0) {
		log_warn("run %s: %s", job->run_id != NULL ? job->run_id : "?",
		    msg);
		goto out;
	}
	if (job->nextra > 0) {
		log_warn("run %s: scheduler.extra cannot be passed to "
		    "slurmrestd: use the slurm backend", job->run_id);
		r = CADRE_ERR_UNSUPPORTED;
		goto out;
	}
	if (job->script == NULL ||
	    (r = cbuf_read_file(&script, job->script)) != 0) {
		log_warn("run %s: job script %s: %s", job->run_id,
		    job->script != NULL ? job->script : "(none)",
		    r == CADRE_ERR_SYSTEM ? strerror(errno) :
		    cadre_strerror(r != 0 ? r : CADRE_ERR_INVALID));
		r = r != 0 ? r : CADRE_ERR_INVALID;
		goto out;
	}
	body = json_object();
	json_object_set_new(body, "script", json_stringn(script.data,
	    script.len));
	json_object_set_new(body, "job", rest_job_properties(job));
	text = cjson_dumps_sorted(body);
	if ((r = rest_request(s, "POST", "/job/submit", text, &status,
	    &reply)) != 0)
		goto out;
	if (rest_error(reply, msg, sizeof msg) != 0 ||
	    cjson_get_int(reply, "job_id", &id) != 0 || id <= 0) {
		log_warn("run %s: slurmrestd refused the job (HTTP %ld): %s",
		    job->run_id, status, msg[0] != '\0' ? msg : "no job id");
		r = status >= 500 && msg[0] == '\0' ? CADRE_ERR_BUSY :
		    CADRE_ERR_INVALID;
		goto out;
	}
	xasprintf(job_id, "%lld", (long long)id);
	log_info("run %s: submitted as Slurm job %s (slurmrestd)", job->run_id,
	    *job_id);
	r = 0;
out:
	free(text);
	json_decref(body);
	json_decref(reply);
	cbuf_free(&script);
	return r;
}

static int
rest_poll(struct sched *s, const char *const *ids, size_t n,
    struct sched_status *out)
{
	json_t	*reply = NULL;
	char	*path = NULL;
	long	 status;
	size_t	 i;
	int	 r = 0;

	/* One GET per job: /jobs would bring every job of the cluster. */
	for (i = 0; i < n && r == 0; i++) {
		if (!sched_job_id_ok(ids[i]))
			return CADRE_ERR_INVALID;
		xasprintf(&path, "/job/%s", ids[i]);
		r = rest_request(s, "GET", path, NULL, &status, &reply);
		free(path);
		if (r != 0)
			break;
		r = slurmrest_parse_job(reply, ids[i], &out[i]);
		if (r == CADRE_ERR_NOT_FOUND) {
			out[i].state = SCHED_UNKNOWN;
			r = 0;
		} else if (r != 0)
			log_warn("slurm-rest: job %s: reply not understood",
			    ids[i]);
		json_decref(reply);
		reply = NULL;
	}
	return r;
}

static int
rest_cancel(struct sched *s, const char *job_id)
{
	json_t	*reply = NULL;
	char	*path = NULL, msg[SCHED_REASON_MAX];
	long	 status;
	int	 r, e;

	xasprintf(&path, "/job/%s", job_id);
	r = rest_request(s, "DELETE", path, NULL, &status, &reply);
	free(path);
	if (r != 0)
		return r;
	e = rest_error(reply, msg, sizeof msg);
	if (e == REST_ERR_INVALID_JOB)
		r = CADRE_ERR_NOT_FOUND;
	else if (e != 0 || status != 200) {
		log_warn("slurm-rest: cancel %s: HTTP %ld: %s", job_id, status,
		    msg);
		r = CADRE_ERR_INVALID;
	}
	json_decref(reply);
	return r;
}

const struct sched_ops sched_slurmrest_ops = {
	.name = "slurm-rest",
	.init = rest_init,
	.free = rest_free,
	.submit = rest_submit,
	.poll = rest_poll,
	.cancel = rest_cancel,
};
