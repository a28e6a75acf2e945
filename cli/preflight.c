/*
 * What validate, submit and run check beyond the spec itself, where the
 * submit host can see it: today the Slurm partition (scontrol): that it
 * exists and that the time limit fits its MaxTime, which Slurm would
 * otherwise answer by leaving the jobs pending for ever. A check that
 * cannot be made here (no scontrol, no controller) is left to submit.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diag.h"
#include "duration.h"
#include "error.h"
#include "preflight.h"
#include "scheduler.h"
#include "spec.h"
#include "xmalloc.h"

#define PREFLIGHT_CMD_TIMEOUT	10	/* seconds for scontrol */
#define PREFLIGHT_OUT_MAX	((size_t)1 << 20)

/* The value of NAME= on a `scontrol --oneliner` line, into buf. */
static int
field(const char *line, const char *name, char *buf, size_t len)
{
	const char	*p = line;
	size_t		 n = strlen(name), m;

	while ((p = strstr(p, name)) != NULL) {
		if ((p == line || p[-1] == ' ') && p[n] == '=') {
			p += n + 1;
			m = strcspn(p, " \n");
			snprintf(buf, len, "%.*s", (int)m, p);
			return 0;
		}
		p += n;
	}
	return CADRE_ERR_NOT_FOUND;
}

/*
 * The partition's line of `scontrol show partition --oneliner` (its
 * name, or the default one when name is NULL) into line; 1 when scontrol
 * answered and has no such partition, -1 when it could not be asked.
 */
static int
partition_line(const char *name, char *line, size_t len)
{
	struct sched_config	 sc;
	char			*out = NULL, *err = NULL, *p, *nl, v[256];
	char			*av[] = { (char *)"scontrol", (char *)"show",
	    (char *)"partition", (char *)"--oneliner", NULL };
	int			 status, rc = -1;

	memset(&sc, 0, sizeof sc);
	sc.cmd_timeout = PREFLIGHT_CMD_TIMEOUT;
	if (sched_run_cmd(&sc, av, PREFLIGHT_OUT_MAX, &status, &out,
	    &err) != 0 || status != 0 || out == NULL)
		goto out;
	rc = 1;
	for (p = out; *p != '\0'; p = nl) {
		if ((nl = strchr(p, '\n')) != NULL)
			*nl++ = '\0';
		else
			nl = p + strlen(p);
		if (name != NULL ? field(p, "PartitionName", v, sizeof v) ==
		    0 && strcmp(v, name) == 0 : field(p, "Default", v,
		    sizeof v) == 0 && strcmp(v, "YES") == 0) {
			snprintf(line, len, "%s", p);
			rc = 0;
			break;
		}
	}
out:
	free(out);
	free(err);
	return rc;
}

/* The longest time limit of any run of s. */
static int64_t
longest_limit(const struct spec *s)
{
	struct spec_plan	*p = NULL;
	struct diags		 d;
	int64_t			 t, max = spec_get_int(s, SPEC_K_SCHED_TIME_LIMIT);
	size_t			 i;

	diags_init(&d);
	if (spec_expand(s, &d, &p) == 0) {
		for (i = 0; i < spec_plan_nruns(p); i++) {
			t = spec_run_int(spec_plan_run(p, i),
			    SPEC_K_SCHED_TIME_LIMIT);
			if (t > max)
				max = t;
		}
	}
	spec_plan_free(p);
	diags_free(&d);
	return max;
}

static void
check_partition(const struct spec *s, struct diags *d)
{
	const char	*backend = spec_get_string(s, SPEC_K_SCHED_BACKEND);
	const char	*part = spec_get_string(s, SPEC_K_SCHED_PARTITION);
	char		 line[4096], maxt[64], pname[256], a[64], b[64];
	size_t		 l, c;
	int64_t		 limit, most;
	int		 rc;

	if (backend == NULL || strncmp(backend, "slurm", 5) != 0)
		return;
	if ((rc = partition_line(part, line, sizeof line)) < 0)
		return;
	if (rc > 0) {
		if (part == NULL)
			return;	/* no default partition: sbatch says so */
		spec_key_at(s, SPEC_K_SCHED_PARTITION, &l, &c);
		diag_error(d, spec_file(s), l, c, "scheduler.partition: this "
		    "cluster has no partition '%s' (scontrol show partition "
		    "lists them)", part);
		return;
	}
	if (field(line, "MaxTime", maxt, sizeof maxt) != 0 ||
	    strcmp(maxt, "UNLIMITED") == 0 || strcmp(maxt, "INFINITE") == 0 ||
	    duration_parse(maxt, &limit) != 0)
		return;
	most = longest_limit(s);
	if (most <= limit)
		return;
	if (field(line, "PartitionName", pname, sizeof pname) != 0)
		snprintf(pname, sizeof pname, "?");
	duration_format(most, a, sizeof a);
	duration_format(limit, b, sizeof b);
	spec_key_at(s, SPEC_K_SCHED_TIME_LIMIT, &l, &c);
	diag_error(d, spec_file(s), l, c, "scheduler.time_limit %s is longer "
	    "than partition %s's MaxTime %s (%s): Slurm would keep the jobs "
	    "pending (PartitionTimeLimit); use %s or less, or another "
	    "partition", a, pname, b, maxt, b);
}

int
cli_preflight(const struct spec *s, struct diags *d)
{
	size_t	errors = diags_errors(d);

	check_partition(s, d);
	return diags_errors(d) > errors ? CADRE_ERR_INVALID : 0;
}
