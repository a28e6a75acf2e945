/*
 * What validate, submit and run check beyond the spec itself, where the
 * submit host can see it: the shards of trainer.data and eval.data (their
 * first shard's header against the run's seq_len, task and vocabulary),
 * and the Slurm partition (scontrol): that it exists and that the time
 * limit fits its MaxTime, which Slurm would otherwise answer by leaving
 * the jobs pending for ever. What cannot be seen here (a directory only
 * the nodes have, a path behind $VAR, no scontrol) is left to the run.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "diag.h"
#include "duration.h"
#include "error.h"
#include "preflight.h"
#include "scheduler.h"
#include "shard.h"
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

/* A diagnostic at key k where the spec wrote it, else at alt's place. */
static void
located(struct diags *d, const struct spec *s, enum spec_key k,
    enum spec_key alt, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void
located(struct diags *d, const struct spec *s, enum spec_key k,
    enum spec_key alt, const char *fmt, ...)
{
	va_list	ap;
	char	*msg;
	size_t	l, c;

	spec_key_at(s, k, &l, &c);
	if (l == 0)
		spec_key_at(s, alt, &l, &c);
	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	diag_error(d, spec_file(s), l, c, "%s", msg);
	free(msg);
}

/*
 * The header of DIR/shard-00000.bin (mapped: only the header and the
 * label block are read, whatever the shard's size) into info: 0, 1 when
 * DIR is not here (nothing to say), or -1 with why in err.
 */
static int
first_shard(const char *dir, const char *shown, struct shard_info *info,
    char *err, size_t errlen)
{
	struct stat	 sb;
	void		*map;
	char		*path, *name;
	int		 fd, rc;

	memset(info, 0, sizeof *info);
	if (stat(dir, &sb) != 0 && (errno == ENOENT || errno == ENOTDIR))
		return 1;
	xasprintf(&path, "%s/shard-00000.bin", dir);
	/* messages name it as the spec does */
	xasprintf(&name, "%s/shard-00000.bin", shown);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(fd, &sb) != 0) {
		snprintf(err, errlen, "%s: %s (make shards with cadre-train "
		    "prep, or name their directory)", name, strerror(errno));
		if (fd != -1)
			close(fd);
		free(path);
		free(name);
		return -1;
	}
	map = sb.st_size > 0 ? mmap(NULL, (size_t)sb.st_size, PROT_READ,
	    MAP_PRIVATE, fd, 0) : MAP_FAILED;
	close(fd);
	if (map == MAP_FAILED) {
		snprintf(err, errlen, "%s: %s", name, sb.st_size > 0 ?
		    strerror(errno) : "empty: not a shard");
		free(path);
		free(name);
		return -1;
	}
	rc = shard_parse_checks(name, map, (size_t)sb.st_size, 0, info, err,
	    errlen) == 0 ? 0 : -1;
	munmap(map, (size_t)sb.st_size);
	free(path);
	free(name);
	return rc;
}

/* One data directory of run r (key k: trainer.data or eval.data) against
 * what the run trains with. */
static void
check_shards(const struct spec *s, const struct spec_run *r, enum spec_key k,
    struct diags *d)
{
	struct shard_info	 in;
	struct spec_model_dims	 m;
	const char		*data = spec_run_string(r, k), *task;
	char			*dir, err[1024];
	int64_t			 seq;
	int			 rc, classify;

	if (data == NULL || data[0] == '$')
		return;
	dir = spec_resolve_path(s, data);
	if ((rc = first_shard(dir, data, &in, err, sizeof err)) != 0) {
		if (rc < 0)
			located(d, s, k, k, "%s: %s", spec_key_info(k)->path, err);
		free(dir);
		return;
	}
	seq = spec_run_int(r, SPEC_K_SEQ_LEN);
	task = spec_run_string(r, SPEC_K_TASK);
	classify = task != NULL && strcmp(task, "classify") == 0;
	spec_run_model(r, &m);
	if ((uint32_t)seq != in.seq_len)
		located(d, s, SPEC_K_SEQ_LEN, k, "trainer.seq_len %" PRId64 ": "
		    "the shards in %s (%s) hold sequences of %" PRIu32 " tokens: "
		    "use seq_len %" PRIu32 ", or make them again with cadre-train "
		    "prep --seq-len %" PRId64, seq, data, spec_key_info(k)->path,
		    in.seq_len, in.seq_len, seq);
	if (classify != (in.kind == SHARD_CLASSIFY))
		located(d, s, SPEC_K_TASK, k, "trainer.task %s: the shards in %s "
		    "(%s) are %s shards: %s", task != NULL ? task : "pretrain",
		    data, spec_key_info(k)->path, in.kind == SHARD_CLASSIFY ?
		    "classification" : "pretraining", in.kind == SHARD_CLASSIFY ?
		    "set task classify" : "make them with cadre-train prep "
		    "--task classify, or set task pretrain");
	if ((int64_t)in.vocab_size > m.vocab_size)
		located(d, s, SPEC_K_MODEL, k, "trainer.model: its vocabulary of "
		    "%" PRId64 " is smaller than the %" PRIu32 " ids of the "
		    "shards in %s: use a model with vocab_size >= %" PRIu32,
		    m.vocab_size, in.vocab_size, data, in.vocab_size);
	shard_info_free(&in);
	free(dir);
}

static int
str_same(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Whether runs a and b read the directory of key k alike. */
static int
same_use(const struct spec_run *a, const struct spec_run *b, enum spec_key k)
{
	struct spec_model_dims	ma, mb;

	spec_run_model(a, &ma);
	spec_run_model(b, &mb);
	return str_same(spec_run_string(a, k), spec_run_string(b, k)) &&
	    spec_run_int(a, SPEC_K_SEQ_LEN) == spec_run_int(b, SPEC_K_SEQ_LEN) &&
	    str_same(spec_run_string(a, SPEC_K_TASK),
	    spec_run_string(b, SPEC_K_TASK)) && ma.vocab_size == mb.vocab_size;
}

/* Every distinct data directory of the runs, once. */
static void
check_data(const struct spec *s, struct diags *d)
{
	static const enum spec_key keys[] = { SPEC_K_DATA,
	    SPEC_K_CKPT_EVAL_DATA };
	struct spec_plan	*p = NULL;
	struct diags		 dd;
	size_t			 i, j, k, before;

	if (spec_is_program(s))
		return;
	diags_init(&dd);
	if (spec_expand(s, &dd, &p) != 0) {
		diags_free(&dd);
		return;
	}
	for (k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		for (i = 0; i < spec_plan_nruns(p); i++) {
			/* a directory already looked at with the same
			 * seq_len, task and model: once */
			for (j = 0; j < i; j++) {
				if (same_use(spec_plan_run(p, i),
				    spec_plan_run(p, j), keys[k]))
					break;
			}
			if (j < i)
				continue;
			before = diags_errors(d);
			check_shards(s, spec_plan_run(p, i), keys[k], d);
			if (diags_errors(d) > before)
				break;	/* one report per key */
		}
	}
	spec_plan_free(p);
	diags_free(&dd);
}

int
cli_preflight(const struct spec *s, struct diags *d)
{
	size_t	errors = diags_errors(d);

	check_data(s, d);
	check_partition(s, d);
	return diags_errors(d) > errors ? CADRE_ERR_INVALID : 0;
}
