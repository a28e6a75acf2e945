/* Checkpoints and train.json without the step loop: write, verify and load
 * round trips (synchronous and through the writer thread), retention, the
 * search with a corrupt, a partial and a missing newest checkpoint,
 * another model size, meta.json and train.json on good and bad input. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "error.h"
#include "log.h"
#include "model.h"
#include "optim.h"
#include "traincfg.h"
#include "xmalloc.h"
#include "expect.h"


static char workdir[4096];

static void
small_config(struct bert_config *c, int hidden)
{
	bert_config_preset("bert-tiny", c);
	c->layers = 1;
	c->hidden = hidden;
	c->heads = 2;
	c->intermediate = 16;
	c->vocab = 50;
	c->max_position = 16;
}

static void
fill(struct bert_model *m, struct optim *o, uint64_t seed)
{
	size_t i;

	bert_init_weights(m, seed, 0.5f, 1);
	for (i = 0; i < m->nparams; i++) {
		o->m[i] = (float)i * 1e-3f;
		o->v[i] = (float)(seed + i) * 1e-4f;
	}
}

static int
path_exists(const char *fmt, const char *a)
{
	char	*p;
	int	 r;

	xasprintf(&p, fmt, workdir, a);
	r = access(p, F_OK) == 0;
	free(p);
	return r;
}

static void
corrupt(const char *rel)
{
	char	*p;
	FILE	*f;

	xasprintf(&p, "%s/%s", workdir, rel);
	if ((f = fopen(p, "r+")) != NULL) {
		fseek(f, 100, SEEK_SET);
		fputc('Z', f);
		fclose(f);
	}
	free(p);
}

static int
ckpt_verify_dir(const char *name, const struct bert_config *c, char *err,
    size_t errlen)
{
	struct ckpt_state	 st;
	char			*p;
	int			 e;

	xasprintf(&p, "%s/checkpoints/%s", workdir, name);
	e = ckpt_verify(p, c, &st, err, errlen);
	free(p);
	return e;
}

static void
test_roundtrip(void)
{
	struct bert_config	 c, c2;
	struct bert_model	 m, m2;
	struct optim		 o, o2;
	struct ckpt_state	 st, got;
	struct ckpt_writer	*w;
	struct ckpt_result	 r;
	char			 err[1024], *dir = NULL;
	uint64_t		 bytes;
	double			 stall;
	int			 done, n;

	small_config(&c, 8);
	bert_model_init(&m, &c);
	memset(&o, 0, sizeof o);
	optim_init(&o, &m);
	fill(&m, &o, 3);
	memset(&st, 0, sizeof st);
	st.step = 5;
	st.samples = 40;
	st.elapsed_s = 1.25;
	st.epoch = 2;
	st.consumed = 24;
	st.seed = 9;
	st.loss_scale = 1.0f;
	st.wall_time = 1700000000.5;

	EXPECT(ckpt_find(workdir, &c, &dir, NULL, NULL, err, sizeof err) == 0 && dir == NULL,
	    "no checkpoints yet: start fresh (%s)", err);
	EXPECT(ckpt_write(workdir, 2, &m, m.params_mem, o.m, o.v, &st, &bytes, err,
	    sizeof err) == 0, "ckpt_write: %s", err);
	EXPECT(bytes > m.nparams * 12, "bytes %llu", (unsigned long long)bytes);

	/* through the thread, twice more: keep 2 leaves step-7 and step-9 */
	EXPECT(ckpt_writer_new(workdir, 2, 0, &w, err, sizeof err) == 0, "writer: %s", err);
	st.step = 7;
	ckpt_submit(w, &m, &o, &st, "timed", &stall, &done, &r);
	EXPECT(!done, "nothing finished before the first submit");
	/* the snapshot was taken: changing the model now changes nothing */
	m.params_mem[0] += 1.0f;
	st.step = 9;
	ckpt_submit(w, &m, &o, &st, "final", &stall, &done, &r);
	EXPECT(done && r.error == 0 && r.step == 7 && strcmp(r.reason, "timed") == 0,
	    "the first write's result on the second submit: done %d error %d (%s) step %lld",
	    done, r.error, r.message, (long long)r.step);
	n = ckpt_collect(w, 1, &r);
	EXPECT(n == 1 && r.error == 0 && r.step == 9 && r.bytes == bytes,
	    "collect: %d error %d step %lld bytes %llu", n, r.error, (long long)r.step,
	    (unsigned long long)r.bytes);
	EXPECT(ckpt_collect(w, 1, &r) == 0, "a result is collected once");
	ckpt_writer_free(w);
	EXPECT(!path_exists("%s/checkpoints/%s", "step-5") &&
	    path_exists("%s/checkpoints/%s", "step-7") &&
	    path_exists("%s/checkpoints/%s", "step-9"), "retention: step-7 and step-9 kept");

	/* The sums in meta.json are hashed from memory (step-7 after its
	 * write, step-9 from the headers the writer kept, while writing):
	 * the files read back agree. */
	EXPECT(ckpt_verify_dir("step-7", &c, err, sizeof err) == 0, "step-7 sums: %s", err);
	EXPECT(ckpt_verify_dir("step-9", &c, err, sizeof err) == 0, "step-9 sums: %s", err);

	/* load step-9 into a fresh model: the weights as submitted */
	EXPECT(ckpt_find(workdir, &c, &dir, NULL, NULL, err, sizeof err) == 0 && dir != NULL &&
	    strstr(dir, "step-9") != NULL, "find: %s %s", dir ? dir : "(none)", err);
	bert_model_init(&m2, &c);
	memset(&o2, 0, sizeof o2);
	optim_init(&o2, &m2);
	EXPECT(ckpt_load(dir, &m2, &o2, &got, err, sizeof err) == 0, "load: %s", err);
	EXPECT(memcmp(m2.params_mem, m.params_mem, m.nparams * sizeof(float)) == 0 &&
	    memcmp(o2.m, o.m, m.nparams * sizeof(float)) == 0 &&
	    memcmp(o2.v, o.v, m.nparams * sizeof(float)) == 0, "weights and moments equal");
	EXPECT(got.step == 9 && o2.t == 9 && got.samples == 40 && got.elapsed_s == 1.25 &&
	    got.epoch == 2 && got.consumed == 24 && got.seed == 9 && got.loss_scale == 1.0f,
	    "counters: step %lld samples %lld", (long long)got.step, (long long)got.samples);
	free(dir);
	dir = NULL;

	/* another model size: an error naming both, no fallback */
	small_config(&c2, 12);
	EXPECT(ckpt_find(workdir, &c2, &dir, NULL, NULL, err, sizeof err) == CADRE_ERR_INVALID &&
	    strstr(err, "L1 H8 A2 I16 V50 P16") != NULL &&
	    strstr(err, "L1 H12 A2 I16 V50 P16") != NULL, "another size: %s", err);
	free(dir);
	dir = NULL;

	/* latest corrupt: step-7 is used, step-9 set aside */
	corrupt("checkpoints/step-9/trainer_state.safetensors");
	EXPECT(ckpt_find(workdir, &c, &dir, NULL, NULL, err, sizeof err) == 0 && dir != NULL &&
	    strstr(dir, "step-7") != NULL, "fallback: %s", dir ? dir : err);
	EXPECT(path_exists("%s/checkpoints/%s", ".corrupt-step-9"), "step-9 set aside");
	free(dir);
	dir = NULL;

	/* a partial write (a .tmp dir) and a latest naming a missing dir */
	{
		char *p;

		xasprintf(&p, "%s/checkpoints/.tmp-step-11", workdir);
		mkdir(p, 0755);
		free(p);
		xasprintf(&p, "%s/checkpoints/latest", workdir);
		FILE *f = fopen(p, "w");
		fputs("step-11\n", f);
		fclose(f);
		free(p);
	}
	ckpt_cleanup(workdir);
	EXPECT(!path_exists("%s/checkpoints/%s", ".tmp-step-11"), "cleanup removes .tmp");
	EXPECT(ckpt_find(workdir, &c, &dir, NULL, NULL, err, sizeof err) == 0 && dir != NULL &&
	    strstr(dir, "step-7") != NULL, "latest missing: %s", dir ? dir : err);
	free(dir);
	dir = NULL;

	/* all corrupt: an error, nothing set aside */
	corrupt("checkpoints/step-7/model.safetensors");
	EXPECT(ckpt_find(workdir, &c, &dir, NULL, NULL, err, sizeof err) == CADRE_ERR_IO &&
	    dir == NULL && strstr(err, "none of the 1 checkpoints verifies") != NULL,
	    "all corrupt: %s", err);
	EXPECT(path_exists("%s/checkpoints/%s", "step-7"), "the bad one stays for a look");

	optim_free(&o2);
	bert_model_free(&m2);
	optim_free(&o);
	bert_model_free(&m);
}

/* The writer keeps the files' headers from one checkpoint to hash the next
 * while writing it; a model of another size has other headers: the sums
 * must come from the new files all the same. */
static void
test_header_change(void)
{
	struct bert_config	 c, c2;
	struct bert_model	 m, m2;
	struct optim		 o, o2;
	struct ckpt_state	 st, got;
	struct ckpt_writer	*w;
	struct ckpt_result	 r;
	char			 err[1024], *out, *p;
	double			 stall;
	int			 done, i;

	small_config(&c, 8);
	small_config(&c2, 12);
	bert_model_init(&m, &c);
	bert_model_init(&m2, &c2);
	memset(&o, 0, sizeof o);
	memset(&o2, 0, sizeof o2);
	optim_init(&o, &m);
	optim_init(&o2, &m2);
	fill(&m, &o, 4);
	fill(&m2, &o2, 5);
	memset(&st, 0, sizeof st);
	st.loss_scale = 1.0f;
	xasprintf(&out, "%s/hdr", workdir);
	mkdir(out, 0755);
	EXPECT(ckpt_writer_new(out, 5, m.nparams, &w, err, sizeof err) == 0, "writer: %s", err);
	for (i = 1; i <= 3; i++) {
		st.step = i;
		ckpt_submit(w, i == 2 ? &m2 : &m, i == 2 ? &o2 : &o, &st, "timed",
		    &stall, &done, &r);
		EXPECT(!done || r.error == 0, "write %d: %s", i - 1, r.message);
	}
	EXPECT(ckpt_collect(w, 1, &r) == 1 && r.error == 0, "write 3: %s", r.message);
	ckpt_writer_free(w);
	for (i = 1; i <= 3; i++) {
		xasprintf(&p, "%s/checkpoints/step-%d", out, i);
		EXPECT(ckpt_verify(p, i == 2 ? &c2 : &c, &got, err, sizeof err) == 0,
		    "step-%d after a change of headers: %s", i, err);
		free(p);
	}
	free(out);
	optim_free(&o2);
	optim_free(&o);
	bert_model_free(&m2);
	bert_model_free(&m);
}

static void
test_meta(void)
{
	static const char good[] = "{\"version\": 1, \"step\": 3, \"time\": 1.5, "
	    "\"elapsed_s\": 2.5, \"samples\": 12, \"data\": {\"epoch\": 0, \"consumed\": 12}, "
	    "\"files\": {\"model.safetensors\": \"%s\", \"config.json\": \"%s\", "
	    "\"trainer_state.safetensors\": \"%s\"}}";
	static const char *const bad[][2] = {
		{ "[]", "not a JSON object" },
		{ "{\"version\": 2}", "version 2 is newer" },
		{ "{\"version\": 1, \"step\": -1}", "field 'step'" },
		{ "{\"version\": 1, \"step\": 1, \"samples\": 1, \"elapsed_s\": 0, \"time\": 0}",
		  "field 'data'" },
		{ "{\"version\": 1, \"step\": 1, \"samples\": 1, \"elapsed_s\": 0, \"time\": 0, "
		  "\"data\": {\"epoch\": 0, \"consumed\": 0}, \"files\": {\"model.safetensors\": \"ab\"}}",
		  "files.model.safetensors" },
		{ "{\"version\": 1,", "offset" },
	};
	char		 text[1024], err[512], sums[3][65], h[65];
	struct ckpt_state st;
	size_t		 i;

	memset(h, 'a', 64);
	h[64] = '\0';
	snprintf(text, sizeof text, good, h, h, h);
	EXPECT(ckpt_meta_parse(text, strlen(text), "meta.json", &st, sums, err,
	    sizeof err) == 0 && st.step == 3 && st.samples == 12 && st.consumed == 12 &&
	    strcmp(sums[2], h) == 0, "good meta.json: %s", err);
	h[5] = 'G';
	snprintf(text, sizeof text, good, h, h, h);
	EXPECT(ckpt_meta_parse(text, strlen(text), "meta.json", &st, sums, err,
	    sizeof err) != 0 && strstr(err, "hex") != NULL, "upper-case hex: %s", err);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		EXPECT(ckpt_meta_parse(bad[i][0], strlen(bad[i][0]), "meta.json", &st, sums,
		    err, sizeof err) != 0 && strstr(err, bad[i][1]) != NULL,
		    "bad meta.json %zu: '%s' lacks '%s'", i, err, bad[i][1]);
	}
	{
		char *big = xmalloc(CKPT_META_MAX + 2);

		memset(big, ' ', CKPT_META_MAX + 1);
		big[CKPT_META_MAX + 1] = '\0';
		EXPECT(ckpt_meta_parse(big, CKPT_META_MAX + 1, "meta.json", &st, sums, err,
		    sizeof err) == CADRE_ERR_TOO_LARGE, "oversized meta.json");
		free(big);
	}
}

static void
test_traincfg(void)
{
	static const char full[] =
	    "{\"version\": 1, \"model\": {\"layers\": 2, \"hidden\": 128, \"heads\": 2, "
	    "\"intermediate\": 512, \"vocab_size\": 30522, \"max_position\": 512},"
	    " \"task\": \"mlm\", \"data\": \"/d\", \"eval_data\": null, \"vocab\": null,"
	    " \"init\": null, \"seq_len\": 64, \"batch_size\": 8, \"grad_accum\": 3,"
	    " \"steps\": 77, \"precision\": \"fp32\", \"optimizer\": {\"name\": \"lamb\","
	    " \"lr\": 0.001, \"weight_decay\": 0.02, \"beta1\": 0.8, \"beta2\": 0.99,"
	    " \"eps\": 1e-8, \"warmup\": 0.1, \"schedule\": \"poly\", \"power\": 0.5},"
	    " \"grad_clip\": 0, \"grad_checkpointing\": true, \"dropout\": 0,"
	    " \"checkpoint_every\": 60, \"keep_checkpoints\": 3, \"log_every\": 5,"
	    " \"seed\": 123456789012345, \"skip_steps\": 4, \"out\": \"/o\","
	    " \"resume\": \"none\"}";
	static const char *const bad[][2] = {
		{ "{\"versoin\": 1}", "unknown key 'versoin' (did you mean 'version'?)" },
		{ "{\"optimizer\": {\"lr\": -1}}", "key 'optimizer.lr': expected a number in 0..10" },
		{ "{\"optimizer\": {\"momentum\": 0.9}}", "unknown key 'optimizer.momentum'" },
		{ "{\"optimizer\": 3}", "key 'optimizer': expected an object" },
		{ "{\"model\": 3}", "key 'model': expected a preset name" },
		{ "{\"model\": {\"layers\": 2, \"hidden\": 4, \"heads\": 2, \"intermediate\": 4,"
		  " \"vocab_size\": 9, \"max_position\": 9, \"dropout\": 1}}",
		  "unknown key 'model.dropout'" },
		{ "{\"batch_size\": 0}", "key 'batch_size': expected an integer in 1..65536" },
		{ "{\"grad_checkpointing\": 1}", "key 'grad_checkpointing': expected true or false" },
		{ "{\"out\": \"\"}", "key 'out': expected a non-empty string" },
		{ "{\"init\": 5}", "key 'init': expected a non-empty string or null, got a number" },
		{ "{\"version\": 9}", "version 9 is newer" },
		{ "[1]", "expected a JSON object" },
		{ "{\n  \"steps\": 10,\n  \"seed\": x}", "t.json:3:11: error:" },
		{ "{\"task\": \"nsp\"}", "key 'task': expected one of \"pretrain\", \"mlm\", \"classify\"" },
		{ "{\"device\": \"gpu\"}", "key 'device': expected one of \"auto\", \"cpu\", \"cuda\"" },
	};
	struct train_config	c;
	char			err[1024];
	size_t			i;

	traincfg_defaults(&c);
	EXPECT(traincfg_parse(&c, full, strlen(full), "t.json", err, sizeof err) == 0,
	    "full train.json: %s", err);
	EXPECT(c.model == NULL && c.layers == 2 && c.hidden == 128 && c.vocab_size == 30522 &&
	    c.task == TASK_MLM && strcmp(c.data, "/d") == 0 && c.eval_data == NULL &&
	    c.seq_len == 64 && c.batch_size == 8 && c.grad_accum == 3 && c.steps == 77 &&
	    c.optimizer == OPTIM_LAMB && c.lr == 0.001 && c.beta2 == 0.99 &&
	    c.schedule == SCHED_POLY && c.grad_checkpointing == 1 && c.dropout == 0 &&
	    c.checkpoint_every == 60 && c.keep_checkpoints == 3 && c.log_every == 5 &&
	    c.seed == 123456789012345ULL && c.skip_steps == 4 && strcmp(c.resume, "none") == 0,
	    "full train.json: values");
	EXPECT(traincfg_check(&c, err, sizeof err) == 0, "check: %s", err);
	traincfg_free(&c);

	traincfg_defaults(&c);
	{
		static const char bf[] = "{\"precision\": \"bf16\", \"device\": \"cpu\", \"data\": \"/d\", \"out\": \"/o\"}";

		EXPECT(traincfg_parse(&c, bf, strlen(bf), "t.json", err, sizeof err) == 0 &&
		    traincfg_check(&c, err, sizeof err) != 0 && strstr(err, "fp32 only") != NULL,
		    "bf16 refused: %s", err);
	}
	traincfg_free(&c);

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		traincfg_defaults(&c);
		err[0] = '\0';
		EXPECT(traincfg_parse(&c, bad[i][0], strlen(bad[i][0]), "t.json", err,
		    sizeof err) != 0 && strstr(err, bad[i][1]) != NULL,
		    "bad train.json %zu: '%s' lacks '%s'", i, err, bad[i][1]);
		traincfg_free(&c);
	}
}

int
main(void)
{
	log_init("test_checkpoint", LOG_LEVEL_ERROR, LOG_TARGET_STDERR);
	if (expect_mkdtemp(workdir, sizeof workdir, "test_checkpoint") != 0)
		return 1;
	test_roundtrip();
	test_header_change();
	test_meta();
	test_traincfg();
	expect_rmtree(workdir);
	return expect_summary("test_checkpoint");
}
