/*
 * The slurm backend: sbatch, squeue and scancel, run as argv
 * arrays (sched_run_cmd(), no shell). Works without accounting storage:
 * states come from squeue, which forgets a job MinJobAge after it ends;
 * such a job is SCHED_UNKNOWN and the run dir's status.json decides.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "jobscript.h"
#include "log.h"
#include "rundir.h"
#include "scheduler.h"
#include "strutil.h"
#include "xmalloc.h"

#define SLURM_OUT_MAX		((size_t)64 << 20)	/* bytes of squeue output */
#define SLURM_POLL_BATCH	500	/* job ids per squeue call */
#define SLURM_SUBMIT_MAX	4096	/* bytes of sbatch's answer */

/* Slurm's job states by name, longest list first. */
static const struct {
	const char		*name;
	enum sched_state	 state;
} slurm_states[] = {
	{ "PENDING", SCHED_QUEUED },
	{ "REQUEUED", SCHED_QUEUED },
	{ "REQUEUE_FED", SCHED_QUEUED },
	{ "REQUEUE_HOLD", SCHED_QUEUED },
	{ "RESV_DEL_HOLD", SCHED_QUEUED },
	{ "CONFIGURING", SCHED_STARTING },
	{ "RUNNING", SCHED_RUNNING },
	{ "COMPLETING", SCHED_RUNNING },
	{ "SIGNALING", SCHED_RUNNING },
	{ "STAGE_OUT", SCHED_RUNNING },
	{ "STOPPED", SCHED_RUNNING },
	{ "SUSPENDED", SCHED_RUNNING },
	{ "RESIZING", SCHED_RUNNING },
	{ "COMPLETED", SCHED_DONE },
	{ "FAILED", SCHED_FAILED },
	{ "BOOT_FAIL", SCHED_FAILED },
	{ "DEADLINE", SCHED_FAILED },
	{ "OUT_OF_MEMORY", SCHED_FAILED },
	{ "SPECIAL_EXIT", SCHED_FAILED },
	{ "REVOKED", SCHED_FAILED },
	{ "CANCELLED", SCHED_CANCELLED },
	{ "TIMEOUT", SCHED_TIMEOUT },
	{ "PREEMPTED", SCHED_PREEMPTED },
	{ "NODE_FAIL", SCHED_NODE_FAIL },
};

enum sched_state
slurm_state_parse(const char *s, size_t len)
{
	size_t	i;

	for (i = 0; i < sizeof slurm_states / sizeof slurm_states[0]; i++) {
		if (strlen(slurm_states[i].name) == len &&
		    memcmp(slurm_states[i].name, s, len) == 0)
			return slurm_states[i].state;
	}
	return SCHED_UNKNOWN;
}

/* Copies field [p, p+len) into dst (size n) when it fits and is printable,
 * else leaves "". */
static void
copy_field(char *dst, size_t n, const char *p, size_t len)
{
	size_t	i;

	dst[0] = '\0';
	if (len >= n)
		return;
	for (i = 0; i < len; i++) {
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return;
	}
	memcpy(dst, p, len);
	dst[len] = '\0';
}

int
slurm_parse_squeue(const char *text, const char *const *ids, size_t n,
    struct sched_status *out, size_t *bad)
{
	const char	*line = text, *end;
	size_t		 nbad = 0;

	while (*line != '\0') {
		const char	*f[6];
		size_t		 fl[5], k, i;
		char		 id[SCHED_JOB_ID_MAX], num[24];
		int64_t		 ec;
		enum sched_state st;

		end = strchr(line, '\n');
		if (end == NULL)
			end = line + strlen(line);
		/* fields: id|state|reason|nodes|exit| */
		f[0] = line;
		for (k = 0; k < 5; k++) {
			const char *bar = memchr(f[k], '|', (size_t)(end - f[k]));

			if (bar == NULL)
				break;
			fl[k] = (size_t)(bar - f[k]);
			f[k + 1] = bar + 1;
		}
		if (end == line)
			goto next;	/* empty line */
		if (k != 5 || f[5] != end) {
			nbad++;
			goto next;
		}
		copy_field(id, sizeof id, f[0], fl[0]);
		copy_field(num, sizeof num, f[4], fl[4]);
		st = slurm_state_parse(f[1], fl[1]);
		if (!sched_job_id_ok(id) || str_to_int64(num, &ec) != 0 ||
		    ec < 0 || ec > 0xffff || st == SCHED_UNKNOWN) {
			nbad++;
			goto next;
		}
		for (i = 0; i < n; i++) {
			if (strcmp(ids[i], id) != 0)
				continue;
			out[i].state = st;
			if (sched_state_final(st)) {
				/* a wait status: exit code high, signal low */
				out[i].exit_signal = (int)(ec & 0x7f);
				out[i].exit_code = out[i].exit_signal != 0 ? -1 :
				    (int)((ec >> 8) & 0xff);
			}
			copy_field(out[i].reason, sizeof out[i].reason, f[2],
			    fl[2]);
			if (strcmp(out[i].reason, "None") == 0)
				out[i].reason[0] = '\0';
			copy_field(out[i].nodes, sizeof out[i].nodes, f[3],
			    fl[3]);
		}
next:
		line = *end == '\n' ? end + 1 : end;
	}
	if (bad != NULL)
		*bad = nbad;
	return 0;
}

int
slurm_parse_sbatch(const char *text, char **id)
{
	size_t	len = strcspn(text, ";\n");
	char	buf[SCHED_JOB_ID_MAX];

	*id = NULL;
	if (len == 0 || len >= sizeof buf)
		return CADRE_ERR_PROTOCOL;
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (strspn(buf, "0123456789") != len)
		return CADRE_ERR_PROTOCOL;
	*id = xstrdup(buf);
	return 0;
}

/* The first line of a command's stderr, for a log line. */
static const char *
first_line(char *err)
{
	if (err == NULL)
		return "";
	err[strcspn(err, "\n")] = '\0';
	return err;
}

/* Whether a failed command failed because slurmctld could not be
 * reached: worth retrying later. */
static int
transient(const char *err)
{
	return err != NULL && (strstr(err, "Unable to contact") != NULL ||
	    strstr(err, "Socket timed out") != NULL ||
	    strstr(err, "Connection refused") != NULL ||
	    strstr(err, "temporarily unavailable") != NULL ||
	    strstr(err, "Slurm controller not responding") != NULL);
}

/* --output wants Slurm's filename patterns escaped: % -> %%. */
static char *
slurm_pattern_escape(const char *s)
{
	size_t	 n = 0, i, j;
	char	*r;

	for (i = 0; s[i] != '\0'; i++)
		n += s[i] == '%' ? 2 : 1;
	r = xmalloc(n + 1);
	for (i = j = 0; s[i] != '\0'; i++) {
		r[j++] = s[i];
		if (s[i] == '%')
			r[j++] = '%';
	}
	r[j] = '\0';
	return r;
}

static int
slurm_submit(struct sched *s, const struct sched_job *job, char **job_id)
{
	char		  msg[JOBSCRIPT_ERR_MAX], *out = NULL, *err = NULL;
	char		 *opath = NULL, *o = NULL, *cwd = NULL, *name = NULL;
	char		**av;
	size_t		  nav = 0, i;
	int		  r, status;

	if ((r = jobscript_check_job(job, msg, sizeof msg)) != 0) {
		log_warn("run %s: %s", job->run_id != NULL ? job->run_id : "?",
		    msg);
		return r;
	}
	if (job->script == NULL)
		return CADRE_ERR_INVALID;
	av = xcalloc(job->nextra + 8, sizeof *av);
	opath = slurm_pattern_escape(job->run_dir);
	xasprintf(&o, "--output=%s/" RUNDIR_JOB_OUT, opath);
	xasprintf(&cwd, "--chdir=%s", job->run_dir);
	xasprintf(&name, "--job-name=%s", job->job_name);
	av[nav++] = (char *)"sbatch";
	av[nav++] = (char *)"--parsable";
	av[nav++] = o;
	av[nav++] = cwd;
	av[nav++] = name;
	for (i = 0; i < job->nextra; i++)
		av[nav++] = job->extra[i];
	av[nav++] = (char *)job->script;
	av[nav] = NULL;

	r = sched_run_cmd(&s->cfg, av, SLURM_SUBMIT_MAX, &status, &out, &err);
	if (r != 0)
		goto out;
	if (status != 0) {
		log_warn("run %s: sbatch failed: %s", job->run_id,
		    first_line(err));
		r = transient(err) ? CADRE_ERR_BUSY : CADRE_ERR_INVALID;
		goto out;
	}
	if ((r = slurm_parse_sbatch(out, job_id)) != 0)
		log_warn("run %s: sbatch printed no job id", job->run_id);
	else
		log_info("run %s: submitted as Slurm job %s", job->run_id,
		    *job_id);
out:
	free(out);
	free(err);
	free(opath);
	free(o);
	free(cwd);
	free(name);
	free(av);
	return r;
}

/* One squeue call for ids[0..n). */
static int
slurm_poll_batch(struct sched *s, const char *const *ids, size_t n,
    struct sched_status *out)
{
	char	*av[8], *list = NULL, *text = NULL, *err = NULL;
	size_t	 i, len = 0, bad = 0;
	int	 r, status;

	for (i = 0; i < n; i++) {
		if (!sched_job_id_ok(ids[i]))
			return CADRE_ERR_INVALID;
		len += strlen(ids[i]) + 1;
	}
	list = xmalloc(len + 1);
	list[0] = '\0';
	for (i = 0, len = 0; i < n; i++) {
		len += (size_t)sprintf(list + len, "%s%s", i ? "," : "",
		    ids[i]);
	}
	av[0] = (char *)"squeue";
	av[1] = (char *)"--noheader";
	av[2] = (char *)"--states=all";
	av[3] = (char *)"--jobs";
	av[4] = list;
	av[5] = (char *)"--Format=" SLURM_SQUEUE_FORMAT;
	av[6] = NULL;
	r = sched_run_cmd(&s->cfg, av, SLURM_OUT_MAX, &status, &text, &err);
	if (r != 0)
		goto out;
	if (status != 0) {
		/* Every id unknown (finished more than MinJobAge ago, or
		 * never there): squeue fails with this message. */
		if (err != NULL && strstr(err, "Invalid job id") != NULL) {
			r = 0;
			goto out;
		}
		log_warn("squeue failed: %s", first_line(err));
		r = transient(err) ? CADRE_ERR_BUSY : CADRE_ERR_SYSTEM;
		goto out;
	}
	r = slurm_parse_squeue(text, ids, n, out, &bad);
	if (bad > 0)
		log_warn("squeue: %zu lines not understood", bad);
out:
	free(list);
	free(text);
	free(err);
	return r;
}

static int
slurm_cancel(struct sched *s, const char *job_id)
{
	char	*av[] = { (char *)"scancel", (char *)job_id, NULL };
	char	*err = NULL;
	int	 r, status;

	r = sched_run_cmd(&s->cfg, av, SLURM_SUBMIT_MAX, &status, NULL, &err);
	if (r == 0 && status != 0) {
		if (err != NULL && strstr(err, "Invalid job id") != NULL)
			r = CADRE_ERR_NOT_FOUND;
		else {
			log_warn("scancel %s failed: %s", job_id,
			    first_line(err));
			r = transient(err) ? CADRE_ERR_BUSY : CADRE_ERR_INVALID;
		}
	}
	free(err);
	return r;
}

static int
slurm_find(struct sched *s, const char *job_name, char **job_id)
{
	char	*av[8], *name = NULL, *text = NULL, *err = NULL, *line, *end;
	int	 r, status;

	xasprintf(&name, "--name=%s", job_name);
	av[0] = (char *)"squeue";
	av[1] = (char *)"--noheader";
	av[2] = (char *)"--states=all";
	av[3] = name;
	av[4] = (char *)"--Format=JobID:|,State:|";
	av[5] = NULL;
	r = sched_run_cmd(&s->cfg, av, SLURM_OUT_MAX, &status, &text, &err);
	if (r != 0)
		goto out;
	if (status != 0) {
		log_warn("squeue failed: %s", first_line(err));
		r = transient(err) ? CADRE_ERR_BUSY : CADRE_ERR_SYSTEM;
		goto out;
	}
	/* "ID|STATE|" lines; the highest id that has not ended wins */
	for (line = text; *line != '\0'; line = *end != '\0' ? end + 1 : end) {
		char		*bar, *bar2;
		int64_t		 id, best;

		end = line + strcspn(line, "\n");
		bar = memchr(line, '|', (size_t)(end - line));
		if (bar == NULL)
			continue;
		bar2 = memchr(bar + 1, '|', (size_t)(end - bar - 1));
		if (bar2 == NULL || sched_state_final(slurm_state_parse(bar + 1,
		    (size_t)(bar2 - bar - 1))) ||
		    slurm_state_parse(bar + 1, (size_t)(bar2 - bar - 1)) ==
		    SCHED_UNKNOWN)
			continue;
		*bar = '\0';
		if (str_to_int64(line, &id) != 0 || id <= 0)
			continue;
		if (*job_id != NULL && str_to_int64(*job_id, &best) == 0 &&
		    best >= id)
			continue;
		free(*job_id);
		*job_id = xstrdup(line);
	}
out:
	free(name);
	free(text);
	free(err);
	return r;
}

const struct sched_ops sched_slurm_ops = {
	.name = "slurm",
	.init = NULL,
	.free = NULL,
	.submit = slurm_submit,
	.poll = slurm_poll_batch,
	.poll_batch = SLURM_POLL_BATCH,
	.cancel = slurm_cancel,
	.find = slurm_find,
};
