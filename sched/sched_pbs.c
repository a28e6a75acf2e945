/*
 * The pbs backend: qsub, `qstat -x -f -F json` and qdel, run as
 * argv arrays (sched_run_cmd(), no shell). -x asks for finished jobs too
 * (job history); a server without history forgets them like Slurm does,
 * and such a job is SCHED_UNKNOWN: the run dir's status.json decides.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "duration.h"
#include "error.h"
#include "jobscript.h"
#include "json.h"
#include "log.h"
#include "rundir.h"
#include "scheduler.h"
#include "xmalloc.h"

#define PBS_OUT_MAX	((size_t)64 << 20)	/* bytes of qstat's answer */
#define PBS_SUBMIT_MAX	4096
#define PBS_POLL_BATCH	200	/* job ids per qstat call */

/* A job's nodes from exec_host ("n1/0*2+n2/0*2" -> "n1,n2"), into dst;
 * "" when it does not fit or holds odd bytes. */
static void
pbs_nodes(const char *exec_host, char *dst, size_t len)
{
	const char	*p = exec_host;
	size_t		 k = 0, n;

	dst[0] = '\0';
	while (*p != '\0') {
		n = strcspn(p, "/+");
		if (n == 0 || k + n + 2 > len)
			goto bad;
		if (k > 0)
			dst[k++] = ',';
		memcpy(dst + k, p, n);
		k += n;
		p += n;
		if (*p == '/')
			p += strcspn(p, "+");
		if (*p == '+')
			p++;
	}
	dst[k] = '\0';
	for (n = 0; n < k; n++) {
		if ((unsigned char)dst[n] <= 0x20 || dst[n] == 0x7f)
			goto bad;
	}
	return;
bad:
	dst[0] = '\0';
}

/* Whether a job used all of its walltime: resources_used.walltime at
 * least Resource_List.walltime. */
static int
pbs_walltime_reached(const json_t *j)
{
	const char	*used = NULL, *limit = NULL;
	int64_t		 u, l;

	if (cjson_get_string(json_object_get(j, "resources_used"), "walltime",
	    &used) != 0 || cjson_get_string(json_object_get(j,
	    "Resource_List"), "walltime", &limit) != 0)
		return 0;
	return duration_parse(used, &u) == 0 && duration_parse(limit, &l) == 0 &&
	    l > 0 && u >= l;
}

int
pbs_parse_qstat(const struct json_t *reply, const char *const *ids,
    size_t n, struct sched_status *out)
{
	const json_t	*jobs = json_object_get((const json_t *)reply, "Jobs");
	const json_t	*j;
	const char	*st, *comment, *eh;
	int64_t		 es;
	size_t		 i;
	int		 has_es;

	if (jobs == NULL)
		return 0;	/* no job known: qstat leaves "Jobs" out */
	if (!json_is_object(jobs))
		return CADRE_ERR_PROTOCOL;
	for (i = 0; i < n; i++) {
		j = json_object_get(jobs, ids[i]);
		if (j == NULL)
			continue;
		st = comment = eh = NULL;
		if (!json_is_object(j) ||
		    cjson_get_string(j, "job_state", &st) != 0 ||
		    strlen(st) != 1)
			return CADRE_ERR_PROTOCOL;
		has_es = cjson_get_int(j, "Exit_status", &es) == 0;
		(void)cjson_get_string(j, "comment", &comment);
		(void)cjson_get_string(j, "exec_host", &eh);
		switch (st[0]) {
		case 'Q': case 'H': case 'W': case 'T': case 'M':
			out[i].state = SCHED_QUEUED;
			break;
		case 'R': case 'E': case 'S': case 'U': case 'B':
			out[i].state = SCHED_RUNNING;
			break;
		case 'F': case 'X':
			if (!has_es) {
				/* ended without running: deleted */
				out[i].state = SCHED_CANCELLED;
			} else if (es == 0) {
				out[i].state = SCHED_DONE;
				out[i].exit_code = 0;
			} else if (es > 0 && es < 256) {
				out[i].state = SCHED_FAILED;
				out[i].exit_code = (int)es;
			} else if (es >= 256 && es < 256 + 128) {
				/* killed by a signal: by the walltime, or not */
				out[i].exit_signal = (int)(es - 256);
				out[i].state = pbs_walltime_reached(j) ||
				    (comment != NULL &&
				    strstr(comment, "walltime") != NULL) ?
				    SCHED_TIMEOUT : SCHED_FAILED;
			} else {
				/* PBS's own negative codes: it could not run */
				out[i].state = SCHED_FAILED;
			}
			break;
		default:
			return CADRE_ERR_PROTOCOL;
		}
		if (comment != NULL && strlen(comment) < sizeof out[i].reason &&
		    strcspn(comment, "\n\r\t") == strlen(comment))
			snprintf(out[i].reason, sizeof out[i].reason, "%s",
			    comment);
		if (eh != NULL)
			pbs_nodes(eh, out[i].nodes, sizeof out[i].nodes);
	}
	return 0;
}

static const char *
first_line(char *err)
{
	if (err == NULL)
		return "";
	err[strcspn(err, "\n")] = '\0';
	return err;
}

/* Whether every line of err says "Unknown Job Id". */
static int
only_unknown(const char *err)
{
	const char	*l = err;
	int		 any = 0;

	if (err == NULL)
		return 0;
	while (*l != '\0') {
		size_t	len = strcspn(l, "\n");

		if (len > 0) {
			char	*line = xstrndup(l, len);
			int	 ok = strstr(line, "Unknown Job Id") != NULL ||
				    strstr(line, "Job has finished") != NULL;

			free(line);
			if (!ok)
				return 0;
			any = 1;
		}
		l += len;
		if (*l == '\n')
			l++;
	}
	return any;
}

static int
pbs_submit(struct sched *s, const struct sched_job *job, char **job_id)
{
	char	  msg[JOBSCRIPT_ERR_MAX], *out = NULL, *err = NULL, *o = NULL;
	char	**av;
	size_t	  nav = 0, i;
	int	  r, status;

	if ((r = jobscript_check_job(job, msg, sizeof msg)) != 0) {
		log_warn("run %s: %s", job->run_id != NULL ? job->run_id : "?",
		    msg);
		return r;
	}
	if (job->script == NULL)
		return CADRE_ERR_INVALID;
	av = xcalloc(job->nextra + 10, sizeof *av);
	xasprintf(&o, "%s/" RUNDIR_JOB_OUT, job->run_dir);
	av[nav++] = (char *)"qsub";
	av[nav++] = (char *)"-N";
	av[nav++] = (char *)job->job_name;
	av[nav++] = (char *)"-o";
	av[nav++] = o;
	av[nav++] = (char *)"-j";
	av[nav++] = (char *)"oe";
	for (i = 0; i < job->nextra; i++)
		av[nav++] = job->extra[i];
	av[nav++] = (char *)job->script;
	av[nav] = NULL;
	r = sched_run_cmd(&s->cfg, av, PBS_SUBMIT_MAX, &status, &out, &err);
	if (r != 0)
		goto out;
	if (status != 0) {
		log_warn("run %s: qsub failed: %s", job->run_id,
		    first_line(err));
		r = CADRE_ERR_INVALID;
		goto out;
	}
	out[strcspn(out, "\n")] = '\0';
	if (!sched_job_id_ok(out)) {
		log_warn("run %s: qsub printed no job id", job->run_id);
		r = CADRE_ERR_PROTOCOL;
		goto out;
	}
	*job_id = out;
	out = NULL;
	log_info("run %s: submitted as PBS job %s", job->run_id, *job_id);
out:
	free(out);
	free(err);
	free(o);
	free(av);
	return r;
}

static int
pbs_poll_batch(struct sched *s, const char *const *ids, size_t n,
    struct sched_status *out)
{
	json_t	 *reply = NULL;
	char	**av, *text = NULL, *err = NULL;
	size_t	  i;
	int	  r, status;

	av = xcalloc(n + 6, sizeof *av);
	av[0] = (char *)"qstat";
	av[1] = (char *)"-x";
	av[2] = (char *)"-f";
	av[3] = (char *)"-F";
	av[4] = (char *)"json";
	for (i = 0; i < n; i++) {
		if (!sched_job_id_ok(ids[i])) {
			r = CADRE_ERR_INVALID;
			goto out;
		}
		av[5 + i] = (char *)ids[i];
	}
	r = sched_run_cmd(&s->cfg, av, PBS_OUT_MAX, &status, &text, &err);
	if (r != 0)
		goto out;
	/* Unknown ids make qstat fail, but it still prints the others. */
	if (status != 0 && !only_unknown(err)) {
		log_warn("qstat failed: %s", first_line(err));
		r = CADRE_ERR_BUSY;
		goto out;
	}
	if (text[strspn(text, " \t\r\n")] == '\0')
		goto out;	/* nothing known */
	if (cjson_loadb(text, strlen(text), PBS_OUT_MAX, &reply, NULL) != 0 ||
	    (r = pbs_parse_qstat((const struct json_t *)reply, ids, n,
	    out)) != 0) {
		log_warn("qstat: reply not understood");
		r = CADRE_ERR_PROTOCOL;
	}
out:
	json_decref(reply);
	free(text);
	free(err);
	free(av);
	return r;
}

static int
pbs_cancel(struct sched *s, const char *job_id)
{
	char	*av[] = { (char *)"qdel", (char *)job_id, NULL };
	char	*err = NULL;
	int	 r, status;

	r = sched_run_cmd(&s->cfg, av, PBS_SUBMIT_MAX, &status, NULL, &err);
	if (r == 0 && status != 0) {
		if (err != NULL && strstr(err, "Unknown Job Id") != NULL)
			r = CADRE_ERR_NOT_FOUND;
		else if (err != NULL && strstr(err, "Job has finished") != NULL)
			r = 0;
		else {
			log_warn("qdel %s failed: %s", job_id, first_line(err));
			r = CADRE_ERR_INVALID;
		}
	}
	free(err);
	return r;
}

const struct sched_ops sched_pbs_ops = {
	.name = "pbs",
	.submit = pbs_submit,
	.poll = pbs_poll_batch,
	.poll_batch = PBS_POLL_BATCH,
	.cancel = pbs_cancel,
};
