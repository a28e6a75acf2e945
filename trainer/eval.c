/* `cadre-train eval`: one checkpoint, or a run's timed checkpoints
 * (--run-dir), over a held-out shard set across the ranks. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "checkpoint.h"
#include "dist.h"
#include "error.h"
#include "loader.h"
#include "log.h"
#include "metrics.h"
#include "model.h"
#include "modelio.h"
#include "ops.h"
#include "rundir.h"
#include "strutil.h"
#include "tjson.h"
#include "train.h"
#include "xmalloc.h"

/* The largest eval.jsonl `eval --run-dir` reads (a line per checkpoint). */
#define EVAL_FILE_MAX	(16 * 1024 * 1024)

static void
eval_usage(FILE *f)
{
	fprintf(f,
"usage: cadre-train eval --init CHECKPOINT_DIR --data SHARDS [--batch N] [--seed N]\n"
"                        [--threads N]\n"
"       cadre-train eval --run-dir DIR --data SHARDS [--at S[,S...]] [--out FILE]\n"
"                        [--batch N] [--seed N] [--threads N]\n"
"MLM loss and accuracy (pretraining shards; masking keyed by --seed, default 1)\n"
"or classification loss and accuracy, over every full batch of the shard set,\n"
"split over the ranks. --init: one checkpoint, one JSON line on stdout.\n"
"--run-dir: the timed checkpoints of DIR/checkpoints (those whose meta.json has\n"
"due_s; with --at only those due at these seconds), checksums verified first,\n"
"each not yet in FILE (default DIR/eval.jsonl) appended to it as a line.\n"
"Exit: 0 done, 1 a checkpoint failed (its line says why), 2 usage or bad input.\n");
}

/* The loader over data for evaluation: pretraining shards get MLM
 * masking (the kind decides the head). */
static void
eval_loader(const char *data, int batch, uint64_t seed, const struct dist *d,
    struct loader **l, const struct shard_info **si)
{
	struct loader_config	lc;
	char			err[1024];

	memset(&lc, 0, sizeof lc);
	lc.dir = data;
	lc.batch = batch;
	lc.rank = d->rank;
	lc.nranks = d->nranks;
	lc.seed = seed;
	lc.mask_prob = 0.15f;
	lc.prefetch = 1;
	lc.mlm = 0;
	if (loader_open(&lc, l, err, sizeof err) != 0)
		usage_fail("%s", err);
	*si = loader_info(*l);
	if ((*si)->kind == SHARD_PRETRAIN) {
		loader_close(*l);
		lc.mlm = 1;
		if (loader_open(&lc, l, err, sizeof err) != 0)
			usage_fail("%s", err);
		*si = loader_info(*l);
	}
}

/* The model of checkpoint dir for shards si: 0, or an error in err (the
 * model is then not initialised). st (when not NULL): the checkpoint's
 * counters, its checksums verified. */
static int
eval_model(const char *dir, const char *data, const struct shard_info *si,
    struct bert_model *m, struct ckpt_state *st, char *err, size_t errlen)
{
	struct bert_config	 c;
	char			*path;
	int			 rc;

	bert_config_preset("bert-tiny", &c);
	c.task = si->kind == SHARD_CLASSIFY ? BERT_CLASSIFY : BERT_PRETRAIN;
	c.num_labels = si->kind == SHARD_CLASSIFY ? (int)si->num_labels : 2;
	xasprintf(&path, "%s/config.json", dir);
	rc = model_load_config(path, &c, err, errlen);
	free(path);
	if (rc != 0)
		return rc;
	if ((rc = bert_config_check(&c, err, errlen)) != 0)
		return rc;
	if (si->seq_len > (uint32_t)c.max_position || si->vocab_size > (uint32_t)c.vocab) {
		snprintf(err, errlen, "%s: sequences of %u tokens from a vocab of %u do "
		    "not fit the model's %d positions and %d tokens", data, si->seq_len,
		    si->vocab_size, c.max_position, c.vocab);
		return CADRE_ERR_INVALID;
	}
	if (st != NULL && (rc = ckpt_verify(dir, &c, st, err, errlen)) != 0)
		return rc;
	bert_model_init(m, &c);
	xasprintf(&path, "%s/model.safetensors", dir);
	rc = model_load_weights(m, path, st != NULL ? MODEL_LOAD_STRICT : 0, err,
	    errlen);
	free(path);
	if (rc != 0)
		bert_model_free(m);
	return rc;
}

/* The figures of ev (evaluate()'s) as members of the current line. */
static void
mx_eval_figures(struct metrics_writer *mx, int pretrain, const double ev[6])
{
	double	mlm_loss = ev[2] > 0 ? ev[0] / ev[2] : 0.0;
	double	mlm_acc = ev[2] > 0 ? ev[1] / ev[2] : 0.0;
	double	seq_loss = ev[5] > 0 ? ev[3] / ev[5] : 0.0;
	double	seq_acc = ev[5] > 0 ? ev[4] / ev[5] : 0.0;

	mx_str(mx, "task", pretrain ? "pretrain" : "classify");
	mx_num(mx, MX_LOSS, pretrain ? mlm_loss : seq_loss);
	mx_num(mx, MX_ACCURACY, pretrain ? mlm_acc : seq_acc);
	mx_num(mx, "sequences", ev[5]);
	if (pretrain) {
		mx_num(mx, "mlm_loss", mlm_loss);
		mx_num(mx, "mlm_acc", mlm_acc);
		mx_num(mx, "nsp_loss", seq_loss);
		mx_num(mx, "nsp_acc", seq_acc);
		mx_num(mx, "masked", ev[2]);
	}
}

/* A timed checkpoint of a run dir, as its meta.json says. */
struct timed {
	int64_t	step;
	double	due_s;
};

static int
timed_cmp(const void *a, const void *b)
{
	const struct timed *x = a, *y = b;

	return x->step < y->step ? -1 : x->step > y->step;
}

/* The timed checkpoints under run_dir/checkpoints, by step; those whose
 * meta.json does not parse are left out with a warning. */
static size_t
list_timed(const char *run_dir, struct timed **out)
{
	struct ckpt_state	 st;
	struct dirent		*de;
	struct timed		*t = NULL;
	size_t			 n = 0, cap = 0;
	char			*cdir, *path, sums[3][65], err[512];
	DIR			*dp;
	int64_t			 step;

	xasprintf(&cdir, "%s/" RUNDIR_CHECKPOINTS, run_dir);
	if ((dp = opendir(cdir)) == NULL)
		usage_fail("%s: %s", cdir, strerror(errno));
	while ((de = readdir(dp)) != NULL) {
		if ((step = rundir_ckpt_step(de->d_name)) < 0)
			continue;
		xasprintf(&path, "%s/%s", cdir, de->d_name);
		if (ckpt_read_meta(path, &st, sums, err, sizeof err) != 0)
			log_warn("%s: skipped", err);
		else if (st.due_s > 0) {
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				t = xreallocarray(t, cap, sizeof *t);
			}
			t[n].step = step;
			t[n].due_s = st.due_s;
			n++;
		}
		free(path);
	}
	closedir(dp);
	free(cdir);
	if (n > 0)
		qsort(t, n, sizeof *t, timed_cmp);
	*out = t;
	return n;
}

/* Whether step has a line in the eval.jsonl at path (read whole, bounded);
 * a line that is not an object with a "step" is a usage error naming
 * path:line. */
static unsigned char *
done_steps(const char *path, const struct timed *t, size_t n)
{
	unsigned char		*done = xcalloc(n > 0 ? n : 1, 1);
	struct tj_node		*o;
	const struct tj_node	*st;
	struct cbuf		 b;
	char			*line, *nl, err[256] = "";
	size_t			 lineno = 0, i;
	int			 rc;

	cbuf_init(&b, EVAL_FILE_MAX);
	if ((rc = cbuf_read_file(&b, path)) != 0) {
		if (rc == CADRE_ERR_TOO_LARGE)
			usage_fail("%s: over %d bytes: move it aside", path,
			    EVAL_FILE_MAX);
		if (errno != ENOENT)
			usage_fail("%s: %s", path, strerror(errno));
		cbuf_free(&b);
		return done;
	}
	for (line = b.data; line != NULL && *line != '\0'; line = nl + 1) {
		lineno++;
		if ((nl = strchr(line, '\n')) == NULL)
			break;	/* a line cut by a kill: redone */
		if (nl == line)
			continue;
		if (tj_parse(line, (size_t)(nl - line), &o, err, sizeof err) != 0 ||
		    o->type != TJ_OBJECT || (st = tj_get(o, "step")) == NULL ||
		    st->type != TJ_NUMBER)
			usage_fail("%s:%zu: not an eval line (an object with a \"step\")%s%s",
			    path, lineno, *err != '\0' ? ": " : "", err);
		for (i = 0; i < n; i++) {
			if ((double)t[i].step == st->num)
				done[i] = 1;
		}
		tj_free(o);
	}
	cbuf_free(&b);
	return done;
}

/* --at S[,S...]: seconds; 0 and *at, or a usage error. */
static size_t
parse_at(const char *s, double **at)
{
	char	*copy = xstrdup(s), *tok, *save = NULL;
	size_t	 n = 0;
	int64_t	 v;

	*at = xcalloc(strlen(s) / 2 + 1, sizeof **at);
	for (tok = strtok_r(copy, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		if (str_to_int64(tok, &v) != 0 || v <= 0)
			usage_fail("--at: '%s' is not a number of seconds > 0", tok);
		(*at)[n++] = (double)v;
	}
	free(copy);
	if (n == 0)
		usage_fail("--at: no seconds given");
	return n;
}

/* eval --run-dir: every timed checkpoint not yet evaluated. */
static int
eval_run_dir(const char *run_dir, const char *data, const char *out,
    const char *at_list, int batch, uint64_t seed, struct dist *d)
{
	const struct shard_info	*si;
	struct loader		*l;
	struct metrics_writer	*mx = NULL;
	struct timed		*t;
	struct bert_model	 m;
	struct ckpt_state	 st;
	unsigned char		*done;
	double			*at = NULL, ev[6], bad;
	char			*path = NULL, *dir, err[1024];
	size_t			 n, nat = 0, i, j;
	int			 rc = 0, ok, evaluated = 0, pretrain;

	if (at_list != NULL)
		nat = parse_at(at_list, &at);
	if (out == NULL)
		xasprintf(&path, "%s/" RUNDIR_EVAL, run_dir);
	n = list_timed(run_dir, &t);
	done = done_steps(out != NULL ? out : path, t, n);
	/* the shards open (and fit) before any checkpoint is tried */
	eval_loader(data, batch, seed, d, &l, &si);
	pretrain = si->kind == SHARD_PRETRAIN;
	loader_close(l);
	if (d->rank == 0 && metrics_open_file(out != NULL ? out : path, &mx, err,
	    sizeof err) != 0)
		usage_fail("%s", err);
	for (i = 0; i < n; i++) {
		for (j = 0; j < nat && fabs(at[j] - t[i].due_s) >= 0.5; j++)
			;
		if (done[i] || (nat > 0 && j == nat))
			continue;
		xasprintf(&dir, "%s/" RUNDIR_CHECKPOINTS "/" CKPT_DIR_PREFIX "%" PRId64,
		    run_dir, t[i].step);
		err[0] = '\0';
		eval_loader(data, batch, seed, d, &l, &si);
		ok = eval_model(dir, data, si, &m, &st, err, sizeof err) == 0;
		/* every rank evaluates, or none: one bad copy stops them all */
		bad = ok ? 0 : 1;
		dist_sum_f64(d, &bad, 1);
		if (ok && bad == 0 && evaluate(&m, l, d, batch, ev) != 0) {
			snprintf(err, sizeof err, "%s: reading the shards failed", data);
			bad = 1;
		}
		if (ok)
			bert_model_free(&m);
		loader_close(l);
		if (bad != 0 && *err == '\0')
			snprintf(err, sizeof err, "another rank could not load it");
		if (mx != NULL) {
			mx_begin(mx, NULL);
			mx_int(mx, MX_STEP, t[i].step);
			mx_num(mx, MX_DUE_S, t[i].due_s);
			if (bad == 0) {
				mx_num(mx, MX_ELAPSED_S, st.elapsed_s);
				mx_int(mx, MX_SAMPLES, st.samples);
			}
			mx_str(mx, MX_PATH, dir + strlen(run_dir) + 1);
			if (bad == 0)
				mx_eval_figures(mx, pretrain, ev);
			else
				mx_str(mx, "error", err);
			if (mx_end(mx) != 0)
				fatalx("%s: %s", out != NULL ? out : path, strerror(errno));
		}
		if (bad != 0) {
			log_warn("%s: not evaluated: %s", dir, err);
			rc = 1;
		} else
			evaluated++;
		free(dir);
	}
	if (d->rank == 0)
		log_info("%s: %d timed checkpoint%s evaluated", run_dir, evaluated,
		    evaluated == 1 ? "" : "s");
	metrics_close(mx);
	free(done);
	free(t);
	free(at);
	free(path);
	return rc;
}

int
cmd_eval(int argc, char **argv)
{
	static const struct option eval_opts[] = {
		{ "init", required_argument, NULL, 'i' },
		{ "run-dir", required_argument, NULL, 'r' },
		{ "data", required_argument, NULL, 'd' },
		{ "at", required_argument, NULL, 'a' },
		{ "out", required_argument, NULL, 'o' },
		{ "batch", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct loader		*l = NULL;
	const struct shard_info	*si;
	struct bert_model	 m;
	struct dist		 d;
	const char		*init = NULL, *data = NULL, *run_dir = NULL;
	const char		*at = NULL, *out = NULL;
	char			 err[1024];
	double			 ev[6];
	int			 ch, batch = 32, threads = 0, rc;
	uint64_t		 seed = 1;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", eval_opts, NULL)) != -1) {
		switch (ch) {
		case 'i': init = optarg; break;
		case 'r': run_dir = optarg; break;
		case 'd': data = optarg; break;
		case 'a': at = optarg; break;
		case 'o': out = optarg; break;
		case 'b': batch = (int)opt_int("--batch", optarg, 1, 65536); break;
		case 's': seed = (uint64_t)opt_int("--seed", optarg, 0, 0x7fffffffffffffffLL); break;
		case 't': threads = (int)opt_int("--threads", optarg, 1, 4096); break;
		case 'h': eval_usage(stdout); return 0;
		default: eval_usage(stderr); return TRAIN_EXIT_USAGE;
		}
	}
	if (optind != argc || data == NULL || (init == NULL) == (run_dir == NULL) ||
	    (init != NULL && (at != NULL || out != NULL))) {
		eval_usage(stderr);
		return TRAIN_EXIT_USAGE;
	}
	if (dist_init(&d, &argc, &argv, err, sizeof err) != 0)
		fatalx("%s", err);
	ops_set_threads(threads);
	if (run_dir != NULL) {
		rc = eval_run_dir(run_dir, data, out, at, batch, seed, &d);
		dist_finalize(&d);
		return rc;
	}
	eval_loader(data, batch, seed, &d, &l, &si);
	if (eval_model(init, data, si, &m, NULL, err, sizeof err) != 0)
		usage_fail("%s", err);
	if (evaluate(&m, l, &d, batch, ev) != 0)
		usage_fail("%s: reading the shards failed", data);
	if (d.rank == 0) {
		if (m.cfg.task == BERT_PRETRAIN)
			printf("{\"task\":\"pretrain\",\"mlm_loss\":%.9g,\"mlm_acc\":%.9g,"
			    "\"masked\":%.0f,\"nsp_loss\":%.9g,\"nsp_acc\":%.9g,\"sequences\":%.0f}\n",
			    ev[2] > 0 ? ev[0] / ev[2] : 0.0, ev[2] > 0 ? ev[1] / ev[2] : 0.0,
			    ev[2], ev[5] > 0 ? ev[3] / ev[5] : 0.0,
			    ev[5] > 0 ? ev[4] / ev[5] : 0.0, ev[5]);
		else
			printf("{\"task\":\"classify\",\"loss\":%.9g,\"accuracy\":%.9g,"
			    "\"sequences\":%.0f}\n", ev[5] > 0 ? ev[3] / ev[5] : 0.0,
			    ev[5] > 0 ? ev[4] / ev[5] : 0.0, ev[5]);
	}
	loader_close(l);
	bert_model_free(&m);
	dist_finalize(&d);
	return 0;
}
