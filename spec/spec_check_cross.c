/*
 * The checks between keys: once on the base values for the keys that
 * cannot vary, and on every configuration for those that can, so that a
 * spec that parses is valid in all its runs.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "duration.h"
#include "error.h"
#include "json.h"
#include "spec_check.h"
#include "xmalloc.h"

/* Checks between keys that cannot vary in a matrix. */
void
spec_check_base(struct spec_cx *cx)
{
	struct spec		*s = cx->s;
	const struct spec_value	*rt = &s->v[SPEC_K_CONTAINER_RUNTIME];
	const struct spec_value	*be = &s->v[SPEC_K_SCHED_BACKEND];

	if (rt->set && strcmp(rt->s, "none") != 0 &&
	    !s->v[SPEC_K_CONTAINER_IMAGE].set &&
	    !s->v[SPEC_K_CONTAINER_IMAGE].bad)
		diag_error(cx->d, cx->file, rt->line, rt->col, "container.image "
		    "is required when container.runtime is %s", rt->s);
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

#define NKEYS(a)	(sizeof (a) / sizeof (a)[0])

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
