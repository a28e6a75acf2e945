/*
 * The checks between keys: once on the base values for the keys that
 * cannot vary, and on every configuration for those that can, so that a
 * spec that parses is valid in all its runs.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include <jansson.h>

#include "buf.h"
#include "duration.h"
#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "spec_check.h"
#include "strutil.h"
#include "xmalloc.h"

#define NKEYS(a)	(sizeof (a) / sizeof (a)[0])

/*
 * The scheduler's words, as submit would take them: a directive word
 * (#SBATCH, #PBS, a slurmrestd field) of the characters the job script
 * allows, and the keys a backend has no use for: an error where the
 * backend cannot do what the key asks (PBS), a warning where it is only
 * ignored (local).
 */
static void
check_sched(struct spec_cx *cx)
{
	static const struct {
		enum spec_key	 k;
		const char	*extra;
	} words[] = {
		{ SPEC_K_SCHED_PARTITION, NULL },
		{ SPEC_K_SCHED_ACCOUNT, NULL },
		{ SPEC_K_SCHED_QOS, NULL },
		{ SPEC_K_RES_GPU_TYPE, NULL },
		{ SPEC_K_SCHED_CONSTRAINT, STR_SCHED_CONSTRAINT_CHARS },
		{ SPEC_K_SCHED_RESERVATION, NULL },
	};
	static const enum spec_key slurm_only[] = { SPEC_K_SCHED_CONSTRAINT,
	    SPEC_K_SCHED_RESERVATION, SPEC_K_SCHED_SRUN_EXTRA };
	const struct spec	*s = cx->s;
	const struct spec_value	*v, *be = &s->v[SPEC_K_SCHED_BACKEND];
	const char		*backend = be->set ? be->s : "local";
	size_t			 i;
	int			 set;

	/* the base values here; a gpu_type the matrix varies is checked
	 * in each configuration (spec_check_config) */
	for (i = 0; i < NKEYS(words); i++) {
		v = &s->v[words[i].k];
		if (!v->set || v->bad || v->s == NULL ||
		    str_is_sched_word(v->s, SPEC_MAX_WORD, words[i].extra))
			continue;
		diag_error(cx->d, cx->file, v->line, v->col, "%s: '%s' cannot "
		    "go into a job's scheduler lines: use letters, digits and "
		    "%s%s only", spec_key_info(words[i].k)->path, v->s,
		    STR_SCHED_WORD_CHARS, words[i].extra != NULL ?
		    words[i].extra : "");
	}
	for (i = 0; i < NKEYS(slurm_only); i++) {
		v = &s->v[slurm_only[i]];
		set = v->set && (v->s != NULL || v->n > 0);
		if (!set || strncmp(backend, "slurm", 5) == 0)
			continue;
		if (strcmp(backend, "pbs") == 0)
			diag_error(cx->d, cx->file, v->line, v->col, "%s is for "
			    "Slurm; PBS has none (%s)",
			    spec_key_info(slurm_only[i])->path,
			    slurm_only[i] == SPEC_K_SCHED_RESERVATION ?
			    "a reservation's queue goes in scheduler.partition" :
			    slurm_only[i] == SPEC_K_SCHED_CONSTRAINT ?
			    "node features are resources of PBS's select: pass "
			    "them in scheduler.extra words" :
			    "scheduler.extra passes qsub words");
		else
			diag_warning(cx->d, cx->file, v->line, v->col, "%s has "
			    "no effect on the %s backend",
			    spec_key_info(slurm_only[i])->path, backend);
	}
	v = &s->v[SPEC_K_RES_EXCLUSIVE];
	if (v->set && v->i && strcmp(backend, "local") == 0)
		diag_warning(cx->d, cx->file, v->line, v->col, "resources."
		    "exclusive has no effect on the local backend");
}

/* trainer.init as a mapping: from names the experiment; config and at
 * only with it; at is final or a training time. */
static void
check_init_from(struct spec_cx *cx)
{
	const struct spec	*s = cx->s;
	const struct spec_value	*from = &s->v[SPEC_K_INIT_FROM];
	const struct spec_value	*cfg = &s->v[SPEC_K_INIT_CONFIG];
	const struct spec_value	*at = &s->v[SPEC_K_INIT_AT];
	int64_t			 secs;

	/* at has a default: written is what a line says */
	if (!from->set && (cfg->line != 0 || at->line != 0)) {
		diag_error(cx->d, cx->file, cfg->line != 0 ? cfg->line : at->line,
		    cfg->line != 0 ? cfg->col : at->col, "trainer.init: config and at "
		    "go with from (the experiment to start from)");
		return;
	}
	if (at->set && !at->bad && at->s != NULL &&
	    strcmp(at->s, "final") != 0 && (duration_parse(at->s, &secs) != 0 ||
	    secs <= 0))
		diag_error(cx->d, cx->file, at->line, at->col, "trainer.init.at: "
		    "'%s' is neither final nor a training time such as 20m",
		    at->s);
}

/* The program each runtime runs on a node. */
static const char *const runtime_programs[][2] = {
	{ "apptainer", "apptainer" }, { "singularity", "singularity" },
	{ "charliecloud", "ch-run" }, { "oci", "crun" },
};

/* Preflight of container.*: with the local backend, whose nodes are this
 * machine, the runtime's program on PATH, the image present and every
 * bind's host path present; with any backend, an image seen here of the
 * wrong kind. A cluster's nodes may see other file systems and modules
 * than the machine that validates: what is missing here is not an error
 * there. */
static void
check_container(struct spec_cx *cx)
{
	struct spec		*s = cx->s;
	const struct spec_value	*rt = &s->v[SPEC_K_CONTAINER_RUNTIME];
	const struct spec_value	*im = &s->v[SPEC_K_CONTAINER_IMAGE];
	const struct spec_value	*bi = &s->v[SPEC_K_CONTAINER_BINDS];
	const struct spec_value	*be = &s->v[SPEC_K_SCHED_BACKEND];
	struct stat		 st;
	char			*path;
	size_t			 i;
	int			 local = be->set && strcmp(be->s, "local") == 0;

	if (!rt->set || rt->bad || strcmp(rt->s, "none") == 0)
		return;
	for (i = 0; i < sizeof runtime_programs / sizeof runtime_programs[0];
	    i++) {
		if (strcmp(rt->s, runtime_programs[i][0]) != 0)
			continue;
		if (local && !fs_on_path(runtime_programs[i][1]) &&
		    (strcmp(rt->s, "oci") != 0 || !fs_on_path("runc")))
			diag_error(cx->d, cx->file, rt->line, rt->col,
			    "container.runtime %s: %s is not on PATH here",
			    rt->s, strcmp(rt->s, "oci") == 0 ? "crun or runc" :
			    runtime_programs[i][1]);
	}
	if (im->set && !im->bad && im->s[0] != '$' &&
	    strcmp(rt->s, "enroot") != 0 && strstr(im->s, "://") == NULL) {
		path = spec_resolve_path(s, im->s);
		if (stat(path, &st) != 0) {
			if (local)
				diag_error(cx->d, cx->file, im->line, im->col,
				    "container.image %s: %s", path,
				    strerror(errno));
		}
		else if (strcmp(rt->s, "charliecloud") == 0 &&
		    !S_ISDIR(st.st_mode) && !fs_is_squashfs(path))
			diag_error(cx->d, cx->file, im->line, im->col,
			    "container.image %s: charliecloud takes a directory "
			    "image or a SquashFS file; this is neither "
			    "(scripts/cadre-image makes a directory image)",
			    path);
		else if (strcmp(rt->s, "oci") == 0 && !S_ISDIR(st.st_mode))
			diag_error(cx->d, cx->file, im->line, im->col,
			    "container.image %s: oci takes a bundle or a root "
			    "file system directory, not a file", path);
		else if ((strcmp(rt->s, "apptainer") == 0 ||
		    strcmp(rt->s, "singularity") == 0) && S_ISDIR(st.st_mode))
			diag_error(cx->d, cx->file, im->line, im->col,
			    "container.image %s: %s takes an image file (.sif), "
			    "not a directory", path, rt->s);
		free(path);
	}
	for (i = 0; local && bi->set && !bi->bad && i < bi->n; i++) {
		if (bi->list[i][0] == '$' || stat(bi->list[i], &st) == 0)
			continue;
		diag_error(cx->d, cx->file, bi->line, bi->col,
		    "container.binds: %s: %s", bi->list[i], strerror(errno));
	}
}

/* Checks between keys that cannot vary in a matrix. */
void
spec_check_base(struct spec_cx *cx)
{
	struct spec		*s = cx->s;
	const struct spec_value	*rt = &s->v[SPEC_K_CONTAINER_RUNTIME];
	const struct spec_value	*be = &s->v[SPEC_K_SCHED_BACKEND];

	check_sched(cx);
	check_init_from(cx);
	if (rt->set && strcmp(rt->s, "none") != 0 &&
	    !s->v[SPEC_K_CONTAINER_IMAGE].set &&
	    !s->v[SPEC_K_CONTAINER_IMAGE].bad)
		diag_error(cx->d, cx->file, rt->line, rt->col, "container.image "
		    "is required when container.runtime is %s", rt->s);
	check_container(cx);
	if (be->set && strcmp(be->s, "slurm-rest") == 0 &&
	    !s->v[SPEC_K_SCHED_REST_URL].set &&
	    !s->v[SPEC_K_SCHED_REST_URL].bad)
		diag_error(cx->d, cx->file, be->line, be->col,
		    "scheduler.rest.url is required when scheduler.backend is "
		    "slurm-rest");
}

/* ------------------------------------------------------------ configurations */

/* One cross-key problem in a configuration: reported at the value that
 * varies when one does (naming the configuration), else at the first key. */
static void
cfg_error(struct spec_cx *cx, const struct spec_config *cfg,
    const enum spec_key *ks, size_t nk, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void
cfg_error(struct spec_cx *cx, const struct spec_config *cfg,
    const enum spec_key *ks, size_t nk, const char *fmt, ...)
{
	struct spec		*s = cx->s;
	const struct spec_value	*v, *at = NULL;
	struct cbuf		 b;
	va_list			 ap;
	size_t			 i, nvar = 0;
	char			*val, *msg;

	cbuf_init(&b, SIZE_MAX);
	va_start(ap, fmt);
	cbuf_vaddf(&b, fmt, ap);
	va_end(ap);
	for (i = 0; i < nk; i++) {
		v = spec_cfg_value(s, cfg, ks[i]);
		if (v == &s->v[ks[i]])
			continue;
		if (at == NULL)
			at = v;
		val = spec_value_format(ks[i], v);
		cbuf_addf(&b, "%s%s=%s", nvar++ == 0 ?
		    " (in the configuration with " : ", ",
		    spec_key_info(ks[i])->path, val);
		free(val);
	}
	if (nvar > 0)
		cbuf_addc(&b, ')');
	for (i = 0; i < nk && at == NULL; i++) {
		if (s->v[ks[i]].line != 0)
			at = &s->v[ks[i]];
	}
	msg = cbuf_detach(&b, NULL);
	diag_error(cx->d, cx->file, at != NULL ? at->line : 0,
	    at != NULL ? at->col : 0, "%s", msg);
	free(msg);
}

static int
all_good(const struct spec *s, const struct spec_config *cfg,
    const enum spec_key *ks, size_t nk)
{
	size_t	i;

	for (i = 0; i < nk; i++) {
		if (spec_cfg_value(s, cfg, ks[i])->bad)
			return 0;
	}
	return 1;
}

/* "L12 H768 A12 I3072 V30522 P512", as the trainer names a model. */
static void
dims_str(const struct spec_model_dims *m, char *buf, size_t len)
{
	snprintf(buf, len, "L%" PRId64 " H%" PRId64 " A%" PRId64 " I%" PRId64
	    " V%" PRId64 " P%" PRId64, m->layers, m->hidden, m->heads,
	    m->intermediate, m->vocab_size, m->max_position);
}

/*
 * trainer.init's config.json decides the model (cadre-train reads it); a
 * trainer.model written beside it must agree. The directory may exist
 * only on the cluster (or behind a variable): nothing is said when it is
 * not here.
 */
static void
check_init(struct spec_cx *cx, const struct spec_config *cfg)
{
	static const enum spec_key ks[] = { SPEC_K_MODEL, SPEC_K_INIT };
	static const struct {
		const char	*name;
		size_t		 off;
	} fields[] = {
		{ "num_hidden_layers", offsetof(struct spec_model_dims, layers) },
		{ "hidden_size", offsetof(struct spec_model_dims, hidden) },
		{ "num_attention_heads", offsetof(struct spec_model_dims, heads) },
		{ "intermediate_size", offsetof(struct spec_model_dims, intermediate) },
		{ "vocab_size", offsetof(struct spec_model_dims, vocab_size) },
		{ "max_position_embeddings", offsetof(struct spec_model_dims, max_position) },
	};
	const struct spec	*s = cx->s;
	const struct spec_value	*init = spec_cfg_value(s, cfg, SPEC_K_INIT);
	const struct spec_value	*model = spec_cfg_value(s, cfg, SPEC_K_MODEL);
	struct spec_model_dims	 want, got;
	struct stat		 st;
	json_t			*o = NULL;
	char			*dir, *path, a[96], b[96];
	size_t			 i;
	int			 rc;

	if (!init->set || init->bad || init->s[0] == '$' || !model->set ||
	    model->bad || model->line == 0)
		return;
	dir = init->s[0] == '/' ? xstrdup(init->s) :
	    spec_resolve_path(s, init->s);
	xasprintf(&path, "%s/config.json", dir);
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		goto out;
	if ((rc = cjson_load_file(path, (size_t)1 << 20, &o, NULL)) != 0) {
		cfg_error(cx, cfg, ks + 1, 1, "trainer.init: %s: %s: the "
		    "directory needs Hugging Face's config.json", path,
		    rc == CADRE_ERR_SYSTEM ? strerror(errno) :
		    cadre_strerror(rc));
		goto out;
	}
	/* a member config.json leaves out has BertConfig's default,
	 * which is bert-base */
	spec_model_preset("bert-base", &got);
	for (i = 0; i < sizeof fields / sizeof fields[0]; i++)
		(void)cjson_get_int(o, fields[i].name,
		    (int64_t *)(void *)((char *)&got + fields[i].off));
	spec_cfg_model(s, cfg, &want);
	if (memcmp(&want, &got, sizeof want) != 0) {
		dims_str(&want, a, sizeof a);
		dims_str(&got, b, sizeof b);
		cfg_error(cx, cfg, ks, NKEYS(ks), "trainer.model (%s: %s) "
		    "disagrees with trainer.init's config.json (%s): the "
		    "checkpoint decides the model; remove trainer.model or "
		    "make it match", model->s, a, b);
	}
out:
	json_decref(o);
	free(path);
	free(dir);
}

void
spec_check_config(struct spec_cx *cx, const struct spec_config *cfg)
{
	static const enum spec_key grace[] = { SPEC_K_SCHED_SIGNAL_GRACE,
	    SPEC_K_SCHED_TIME_LIMIT };
	static const enum spec_key startup[] = { SPEC_K_AGENT_STARTUP_TIMEOUT,
	    SPEC_K_SCHED_TIME_LIMIT };
	static const enum spec_key skip[] = { SPEC_K_MEASURE_SKIP_STEPS,
	    SPEC_K_STEPS };
	static const enum spec_key heads[] = { SPEC_K_MODEL_HIDDEN,
	    SPEC_K_MODEL_HEADS };
	static const enum spec_key seq[] = { SPEC_K_SEQ_LEN, SPEC_K_MODEL,
	    SPEC_K_MODEL_MAX_POSITION };
	static const enum spec_key ranks[] = { SPEC_K_RES_RANKS_PER_NODE,
	    SPEC_K_RES_GPUS_PER_NODE };
	static const enum spec_key prec[] = { SPEC_K_PRECISION,
	    SPEC_K_RES_GPUS_PER_NODE };
	static const enum spec_key launch[] = { SPEC_K_LAUNCHER,
	    SPEC_K_SCHED_BACKEND };
	static const enum spec_key gpu_type[] = { SPEC_K_RES_GPU_TYPE };
	static const enum spec_key at[] = { SPEC_K_CKPT_EVAL_AT,
	    SPEC_K_CHECKPOINT_EVERY };
	static const enum spec_key ev[] = { SPEC_K_CKPT_EVAL_AT,
	    SPEC_K_CKPT_EVAL_DATA };
	static const enum spec_key keep[] = { SPEC_K_KEEP_TIMED,
	    SPEC_K_CKPT_EVAL_AT };
	const struct spec_value	*v;
	size_t			 i;
	const struct spec	*s = cx->s;
	struct spec_model_dims	 m;
	char			 a[64], b[64];
	int64_t			 x, y;
	const char		*str;

	if (all_good(s, cfg, grace, NKEYS(grace))) {
		x = spec_cfg_int(s, cfg, SPEC_K_SCHED_SIGNAL_GRACE);
		y = spec_cfg_int(s, cfg, SPEC_K_SCHED_TIME_LIMIT);
		if (x >= y) {
			duration_format(x, a, sizeof a);
			duration_format(y, b, sizeof b);
			cfg_error(cx, cfg, grace, NKEYS(grace),
			    "scheduler.signal_grace (%s) must be shorter than "
			    "scheduler.time_limit (%s)", a, b);
		}
	}
	if (all_good(s, cfg, startup, NKEYS(startup))) {
		x = spec_cfg_int(s, cfg, SPEC_K_AGENT_STARTUP_TIMEOUT);
		y = spec_cfg_int(s, cfg, SPEC_K_SCHED_TIME_LIMIT);
		if (x >= y) {
			duration_format(x, a, sizeof a);
			duration_format(y, b, sizeof b);
			cfg_error(cx, cfg, startup, NKEYS(startup),
			    "agent.startup_timeout (%s) must be shorter than "
			    "scheduler.time_limit (%s)", a, b);
		}
	}
	if (all_good(s, cfg, ranks, NKEYS(ranks))) {
		x = spec_cfg_int(s, cfg, SPEC_K_RES_RANKS_PER_NODE);
		y = spec_cfg_int(s, cfg, SPEC_K_RES_GPUS_PER_NODE);
		if (x != 0 && y != 0 && x != y)
			cfg_error(cx, cfg, ranks, NKEYS(ranks),
			    "resources.ranks_per_node (%" PRId64 ") must equal "
			    "resources.gpus_per_node (%" PRId64 "); each rank "
			    "drives one GPU, which 0 chooses", x, y);
	}
	v = spec_cfg_value(s, cfg, SPEC_K_RES_GPU_TYPE);
	if (v != &s->v[SPEC_K_RES_GPU_TYPE] && v->set && !v->bad &&
	    v->s != NULL && !str_is_sched_word(v->s, SPEC_MAX_WORD, NULL))
		cfg_error(cx, cfg, gpu_type, NKEYS(gpu_type), "resources.gpu_type: "
		    "'%s' cannot go into a job's scheduler lines: use letters, "
		    "digits and %s only", v->s, STR_SCHED_WORD_CHARS);
	if (all_good(s, cfg, launch, NKEYS(launch))) {
		str = spec_cfg_string(s, cfg, SPEC_K_SCHED_BACKEND);
		if (strcmp(spec_cfg_string(s, cfg, SPEC_K_LAUNCHER), "srun") ==
		    0 && strcmp(str, "slurm") != 0 &&
		    strcmp(str, "slurm-rest") != 0)
			cfg_error(cx, cfg, launch, NKEYS(launch),
			    "launcher srun needs a Slurm backend, but "
			    "scheduler.backend is %s; use mpirun", str);
	}
	if (s->program)
		return;	/* the rest are the trainer's */
	if (all_good(s, cfg, skip, NKEYS(skip))) {
		x = spec_cfg_int(s, cfg, SPEC_K_MEASURE_SKIP_STEPS);
		y = spec_cfg_int(s, cfg, SPEC_K_STEPS);
		if (x >= y)
			cfg_error(cx, cfg, skip, NKEYS(skip),
			    "measure.skip_steps (%" PRId64 ") must be less than "
			    "trainer.steps (%" PRId64 "), or no step is "
			    "measured", x, y);
	}
	str = spec_cfg_string(s, cfg, SPEC_K_MODEL);
	if (all_good(s, cfg, seq, NKEYS(seq)) && str != NULL &&
	    (strcmp(str, "custom") != 0 || (s->v[SPEC_K_MODEL_LAYERS].set &&
	    s->v[SPEC_K_MODEL_HIDDEN].set && s->v[SPEC_K_MODEL_HEADS].set))) {
		spec_cfg_model(s, cfg, &m);
		if (strcmp(str, "custom") == 0 && !s->v[SPEC_K_MODEL_HEADS].bad &&
		    !s->v[SPEC_K_MODEL_HIDDEN].bad && m.hidden % m.heads != 0)
			cfg_error(cx, cfg, heads, NKEYS(heads),
			    "trainer.model.hidden (%" PRId64 ") must be a "
			    "multiple of trainer.model.heads (%" PRId64 ")",
			    m.hidden, m.heads);
		x = spec_cfg_int(s, cfg, SPEC_K_SEQ_LEN);
		if (x > m.max_position)
			cfg_error(cx, cfg, seq, NKEYS(seq), "trainer.seq_len "
			    "(%" PRId64 ") is longer than the model's "
			    "max_position (%" PRId64 ")", x, m.max_position);
	}
	check_init(cx, cfg);
	if (all_good(s, cfg, prec, NKEYS(prec))) {
		str = spec_cfg_string(s, cfg, SPEC_K_PRECISION);
		y = spec_cfg_int(s, cfg, SPEC_K_RES_GPUS_PER_NODE);
		if (strcmp(str, "fp32") != 0 && y == 0)
			cfg_error(cx, cfg, prec, NKEYS(prec),
			    "trainer.precision %s needs GPUs, but "
			    "resources.gpus_per_node is 0; CPU runs train in "
			    "fp32", str);
	}
	/* A checkpoint is "at T" when T is one of its timed marks, the
	 * multiples of checkpoint_every: another T would never match. */
	v = spec_cfg_value(s, cfg, SPEC_K_CKPT_EVAL_AT);
	if (all_good(s, cfg, at, NKEYS(at)) && v->set) {
		y = spec_cfg_int(s, cfg, SPEC_K_CHECKPOINT_EVERY);
		for (i = 0; i < v->n; i++) {
			x = strtoll(v->list[i], NULL, 10);
			if (y > 0 && x % y == 0)
				continue;
			duration_format(x, a, sizeof a);
			duration_format(y, b, sizeof b);
			cfg_error(cx, cfg, at, NKEYS(at), y == 0 ?
			    "eval.at %s: trainer.checkpoint_every is 0, so no "
			    "checkpoint is timed; set it (e.g. 20m)%s" :
			    "eval.at %s is not a multiple of "
			    "trainer.checkpoint_every (%s): timed checkpoints "
			    "are taken at its multiples only", a, y == 0 ? "" : b);
			break;
		}
	}
	if (all_good(s, cfg, ev, NKEYS(ev)) && v->set &&
	    !spec_cfg_value(s, cfg, SPEC_K_CKPT_EVAL_DATA)->set)
		cfg_error(cx, cfg, ev, NKEYS(ev), "eval.at is set but "
		    "eval.data is not: name the held-out shards to evaluate "
		    "the checkpoints on");
	if (all_good(s, cfg, keep, NKEYS(keep)) && !v->set &&
	    strcmp(spec_cfg_string(s, cfg, SPEC_K_KEEP_TIMED), "at") == 0)
		cfg_error(cx, cfg, keep, NKEYS(keep), "trainer.keep_timed: "
		    "at keeps the checkpoints at eval.at, which is not set; "
		    "set eval.at or keep all");
}
