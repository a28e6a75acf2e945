#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "jobscript.h"
#include "json.h"
#include "spec.h"
#include "strutil.h"
#include "xmalloc.h"
#include "unit.h"

/* Values a spec or a path could carry into a script. */
static const char *const hostile[] = {
	"",
	"plain",
	"it's",
	"'",
	"''",
	"a b  c",
	"$HOME",
	"${HOME}",
	"$(id)",
	"`id`",
	"\"double\"",
	"back\\slash",
	"semi;colon && echo pwned | cat > /tmp/x",
	"glob * ? [a]",
	"-n",
	"tab\there",
	"\xc3\xa9t\xc3\xa9 unicode",
	"!history",
	"#not a comment",
	"~tilde",
};

static char *
quoted(const char *s)
{
	struct cbuf	b;

	cbuf_init(&b, 1 << 16);
	ck_assert_int_eq(cbuf_add_shell_word(&b, s), 0);
	return cbuf_detach(&b, NULL);
}

/* the directive words' rule, with the bound the job script uses */
static int
word_ok(const char *s)
{
	return s != NULL && str_is_sched_word(s, SPEC_MAX_WORD, NULL);
}

START_TEST(test_quote_forms)
{
	static const char *const cases[][2] = {
		{ "", "''" },
		{ "abc", "abc" },
		{ "a=b", "'a=b'" },
		{ "it's", "'it'\\''s'" },
	};
	char	*q;
	size_t	 i;

	for (i = 0; i < UNIT_NITEMS(cases); i++) {
		q = quoted(cases[i][0]);
		ck_assert_str_eq(q, cases[i][1]);
		free(q);
	}
}
END_TEST

/* What /bin/sh makes of a quoted word is the value itself. */
START_TEST(test_quote_round_trip)
{
	char	*q = quoted(hostile[_i]), *cmd = NULL, got[4096];
	FILE	*fp;
	size_t	 n;

	xasprintf(&cmd, "printf '%%s' %s", q);
	fp = popen(cmd, "r");
	ck_assert_ptr_nonnull(fp);
	n = fread(got, 1, sizeof got - 1, fp);
	got[n] = '\0';
	ck_assert_int_eq(pclose(fp), 0);
	ck_assert_str_eq(got, hostile[_i]);
	free(cmd);
	free(q);
}
END_TEST

START_TEST(test_word_ok)
{
	static const char *const good[] = { "gpu", "a100", "proj-42",
	    "gpu,debug", "normal_qos", "x.y", "a:b=c+d/e@f%g^h~i!j[1-2]{k}" };
	static const char *const bad[] = { "", "a b", "a\tb", "it's", "\"q\"",
	    "back\\slash", "#x", "$HOME", "`id`", "a;b", "a&b", "a|b", "(x)",
	    "a<b", "a>b", "caf\xc3\xa9", "new\nline" };
	char	long_word[300];
	size_t	i;

	for (i = 0; i < sizeof good / sizeof good[0]; i++)
		ck_assert_msg(word_ok(good[i]), "%s", good[i]);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(!word_ok(bad[i]), "%s", bad[i]);
	ck_assert(!word_ok(NULL));
	/* a Slurm constraint takes its operators too, still no shell */
	ck_assert(str_is_sched_word("gpu&(a100|h100)*2", SPEC_MAX_WORD,
	    STR_SCHED_CONSTRAINT_CHARS));
	ck_assert(!str_is_sched_word("a;b", SPEC_MAX_WORD,
	    STR_SCHED_CONSTRAINT_CHARS));
	memset(long_word, 'a', sizeof long_word - 1);
	long_word[sizeof long_word - 1] = '\0';
	ck_assert(!word_ok(long_word));
	long_word[256] = '\0';
	ck_assert(word_ok(long_word));
}
END_TEST

static void
sample(struct jobscript *js)
{
	memset(js, 0, sizeof *js);
	js->job.run_id = "0123456789ab";
	js->job.run_dir = "/scratch/runs/0123456789ab";
	js->job.job_name = "cadre-exp-0123456789ab";
	js->job.nodes = 2;
	js->job.tasks_per_node = 8;
	js->job.gpus_per_node = 8;
	js->job.gpu_type = "a100";
	js->job.cpus_per_task = 6;
	js->job.memory = (int64_t)64 << 30;
	js->job.time_limit = 3600;
	js->job.signal_grace = 120;
	js->job.partition = "gpu";
	js->job.account = "proj42";
	js->job.script = "/scratch/runs/0123456789ab/job.sh";
	js->agent = "/usr/bin/cadre-agent";
	js->trainer = "/usr/bin/cadre-train";
	js->launcher = "mpirun";
	js->startup_timeout = 180;
	js->container_runtime = "none";
}

START_TEST(test_check_job)
{
	static char *const bad_env[] = { (char *)"1X=a" };
	static char *const bad_env2[] = { (char *)"NOEQUALS" };
	static char *const ctl_env[] = { (char *)"X=a\nb" };
	static char *const ctl_extra[] = { (char *)"--x=\n" };
	struct jobscript	js;
	char			err[JOBSCRIPT_ERR_MAX];

	sample(&js);
	ck_assert_int_eq(jobscript_check_job(&js.job, err, sizeof err), 0);
#define BAD(field, value) do {						\
	sample(&js);							\
	js.job.field = value;						\
	ck_assert_int_eq(jobscript_check_job(&js.job, err, sizeof err),	\
	    CADRE_ERR_INVALID);						\
} while (0)
	BAD(run_id, "0123456789AB");
	BAD(run_id, "0123");
	BAD(run_id, NULL);
	BAD(run_dir, "relative/dir");
	BAD(run_dir, "/a\nb");
	BAD(job_name, "has space");
	BAD(job_name, "a'b");
	BAD(nodes, 0);
	BAD(tasks_per_node, 0);
	BAD(time_limit, 59);
	BAD(signal_grace, 3600);
	BAD(signal_grace, 70000);
	BAD(partition, "gpu debug");
	BAD(account, "a#b");
	BAD(qos, "$(id)");
	BAD(gpu_type, "a100'");
	BAD(script, "job.sh");
#undef BAD
	ck_assert(strstr(err, "scheduler") == NULL);	/* last: the script */
	sample(&js);
	js.job.partition = "gpu debug";
	jobscript_check_job(&js.job, err, sizeof err);
	ck_assert_msg(strstr(err, "scheduler.partition") != NULL, "%s", err);

	sample(&js);
	js.job.env = bad_env;
	js.job.nenv = 1;
	ck_assert_int_ne(jobscript_check_job(&js.job, err, sizeof err), 0);
	js.job.env = bad_env2;
	ck_assert_int_ne(jobscript_check_job(&js.job, err, sizeof err), 0);
	js.job.env = ctl_env;
	ck_assert_int_ne(jobscript_check_job(&js.job, err, sizeof err), 0);
	sample(&js);
	js.job.extra = ctl_extra;
	js.job.nextra = 1;
	ck_assert_int_ne(jobscript_check_job(&js.job, err, sizeof err), 0);
}
END_TEST

static char *
render(enum jobscript_kind kind, const char *tmpl, const struct jobscript *js,
    int expect)
{
	char	*out = NULL, err[JOBSCRIPT_ERR_MAX] = "";
	int	 r;

	r = jobscript_render(kind, tmpl, strlen(tmpl), js, &out, err,
	    sizeof err);
	ck_assert_msg(r == expect, "render: %d (%s)", r, err);
	if (r != 0)
		ck_assert_ptr_null(out);
	return out;
}

START_TEST(test_render_directives)
{
	struct jobscript	 js;
	char			*out;

	sample(&js);
	out = render(JOBSCRIPT_SLURM, "#!/bin/bash\n@DIRECTIVES@\necho x\n",
	    &js, 0);
	ck_assert_str_eq(out, "#!/bin/bash\n"
	    "#SBATCH --job-name=cadre-exp-0123456789ab\n"
	    "#SBATCH --nodes=2\n"
	    "#SBATCH --ntasks-per-node=8\n"
	    "#SBATCH --cpus-per-task=6\n"
	    "#SBATCH --gpus-per-node=a100:8\n"
	    "#SBATCH --mem=65536M\n"
	    "#SBATCH --time=01:00:00\n"
	    "#SBATCH --signal=B:USR1@120\n"
	    "#SBATCH --partition=gpu\n"
	    "#SBATCH --account=proj42\n"
	    "#SBATCH --requeue\n"
	    "echo x\n");
	free(out);
	js.job.time_limit = 2 * 86400 + 3600;
	out = render(JOBSCRIPT_PBS, "@DIRECTIVES@\n", &js, 0);
	ck_assert_str_eq(out,
	    "#PBS -N cadre-exp-0123456789ab\n"
	    "#PBS -l select=2:ncpus=48:mpiprocs=8:ngpus=8:gpu_model=a100:mem=65536mb\n"
	    "#PBS -l place=scatter\n"
	    "#PBS -l walltime=49:00:00\n"
	    "#PBS -q gpu\n"
	    "#PBS -A proj42\n"
	    "#PBS -j oe\n#PBS -r y\n");
	free(out);
}
END_TEST

START_TEST(test_render_template_errors)
{
	struct jobscript	 js;
	char			*out;

	sample(&js);
	render(JOBSCRIPT_SLURM, "x=@NOPE@\n", &js, CADRE_ERR_INVALID);
	render(JOBSCRIPT_SLURM, "# @DIRECTIVES@\n", &js, CADRE_ERR_INVALID);
	render(JOBSCRIPT_SLURM, "x=@ENV@\n", &js, CADRE_ERR_INVALID);
	/* '@' that is not a placeholder stays */
	out = render(JOBSCRIPT_SLURM, "a@b @ x@ @lower@ @\n", &js, 0);
	ck_assert_str_eq(out, "a@b @ x@ @lower@ @\n");
	free(out);
	out = render(JOBSCRIPT_SLURM, "n=@NODES@ d=@RUN_DIR@", &js, 0);
	ck_assert_str_eq(out, "n=2 d=/scratch/runs/0123456789ab");
	free(out);
	js.agent = "relative";
	render(JOBSCRIPT_SLURM, "x\n", &js, CADRE_ERR_INVALID);
}
END_TEST

/* stage.to: launch gets --stage DATA:STAGE_TO (one word), nothing
 * without it; a ':' in either path is refused (launch splits at it). */
START_TEST(test_render_stage)
{
	struct jobscript	 js;
	char			*out;

	sample(&js);
	out = render(JOBSCRIPT_SLURM, "launch @STAGE@ --", &js, 0);
	ck_assert_str_eq(out, "launch  --");
	free(out);
	js.stage_src = "/lustre/shards";
	js.stage_dst = "/local/it's";
	out = render(JOBSCRIPT_SLURM, "launch @STAGE@ --", &js, 0);
	ck_assert_str_eq(out, "launch --stage '/lustre/shards:/local/it'\\''s' --");
	free(out);
	js.stage_src = "/a:b";
	render(JOBSCRIPT_SLURM, "launch @STAGE@ --", &js, CADRE_ERR_INVALID);
	/* enroot is refused with the alternatives, not rendered broken */
	js.stage_src = NULL;
	js.container_runtime = "enroot";
	js.container_image = "/img.sqsh";
	render(JOBSCRIPT_SLURM, "@WRAP@ x\n", &js, CADRE_ERR_INVALID);
}
END_TEST

/* eval: the placeholders are one word each, empty without eval.data;
 * eval.at goes as decimal seconds joined by commas. */
START_TEST(test_render_eval)
{
	static const char	 tmpl[] = "d=@EVAL_DATA@ b=@EVAL_BATCH@ a=@EVAL_AT@";
	struct jobscript	 js;
	char			*out;
	char *const		 at[] = { (char *)"60", (char *)"120" };

	sample(&js);
	out = render(JOBSCRIPT_LOCAL, tmpl, &js, 0);
	ck_assert_str_eq(out, "d='' b=32 a=''");
	free(out);
	js.eval_data = "/held out";
	js.eval_batch = 16;
	js.eval_at = at;
	js.neval_at = 2;
	out = render(JOBSCRIPT_LOCAL, tmpl, &js, 0);
	ck_assert_str_eq(out, "d='/held out' b=16 a=60,120");
	free(out);
}
END_TEST

/* What launch runs: fixed words naming the script's variables; the
 * experiment and configuration as quoted words. */
START_TEST(test_render_program)
{
	static const char	 tmpl[] = "launch @STAGE@ @PROGRAM@ &\n"
				    "e=@EXPERIMENT@ c=@CONFIG_ID@";
	struct jobscript	 js;
	char			*out;

	sample(&js);
	out = render(JOBSCRIPT_SLURM, tmpl, &js, 0);
	ck_assert_str_eq(out, "launch  -- \"$trainer\" train --config "
	    "\"$run_dir/train.json\" &\ne='' c=''");
	free(out);
	js.program = 1;
	js.experiment = "it's";
	js.config_id = "0123456789ab";
	out = render(JOBSCRIPT_PBS, tmpl, &js, 0);
	ck_assert_str_eq(out, "launch  --program \"$run_dir/program.json\" &\n"
	    "e='it'\\''s' c=0123456789ab");
	free(out);
}
END_TEST

/* Hostile values through a rendered script and bash: bash -n accepts it,
 * and running it prints every value back unchanged. */
START_TEST(test_render_hostile)
{
	static const char tmpl[] = "#!/bin/bash\n@DIRECTIVES@\n@ENV@\n"
	    "printf '%s\\n' @RUN_DIR@ @AGENT@ @TRAINER@ \"$HOSTILE\"\n"
	    "printf '<%s>\\n' @WRAP@\n";
	struct jobscript	 js;
	char			*out, path[4096];
	char			*cmd = NULL, *env = NULL, got[16384], *expect;
	char			*envs[1], *binds[2];
	const char		*v = hostile[_i];
	struct cbuf		 e;
	FILE			*fp;
	size_t			 n;
	int			 fd;

	if (strchr(v, '\t') != NULL)	/* control characters are refused */
		return;
	sample(&js);
	xasprintf(&env, "HOSTILE=%s", v);
	envs[0] = env;
	js.job.env = envs;
	js.job.nenv = 1;
	xasprintf((char **)&js.job.run_dir, "/tmp/run %s", v);
	xasprintf((char **)&js.agent, "/opt/%s/cadre-agent", v);
	xasprintf((char **)&js.trainer, "/opt/%s/cadre-train", v);
	js.container_runtime = "apptainer";
	js.container_image = v;
	binds[0] = (char *)v;
	binds[1] = (char *)"/scratch";
	js.binds = binds;
	js.nbinds = 2;
	out = render(JOBSCRIPT_SLURM, tmpl, &js, 0);

	fd = unit_mkstemp(path, sizeof path, "test_jobscript");
	ck_assert_int_eq(write(fd, out, strlen(out)), (ssize_t)strlen(out));
	close(fd);
	xasprintf(&cmd, "bash -n %s", path);
	ck_assert_msg(system(cmd) == 0, "bash -n failed for '%s':\n%s", v, out);
	free(cmd);
	xasprintf(&cmd, "bash %s", path);
	fp = popen(cmd, "r");
	n = fread(got, 1, sizeof got - 1, fp);
	got[n] = '\0';
	ck_assert_int_eq(pclose(fp), 0);
	unlink(path);

	cbuf_init(&e, 1 << 16);
	cbuf_addf(&e, "%s\n%s\n%s\n%s\n", js.job.run_dir, js.agent,
	    js.trainer, v);
	cbuf_addf(&e, "<%s>\n<wrap>\n<--container>\n<apptainer>\n<--image>\n"
	    "<%s>\n<--bind>\n<%s>\n<--bind>\n</scratch>\n<--nv>\n"
	    "<--run-dir>\n<%s>\n<-->\n", js.agent, v, v, js.job.run_dir);
	expect = cbuf_detach(&e, NULL);
	ck_assert_str_eq(got, expect);
	free(expect);
	free(cmd);
	free(env);
	free((char *)js.job.run_dir);
	free((char *)js.agent);
	free((char *)js.trainer);
	free(out);
}
END_TEST

/* ---------------------------------------------------------------- train.json */

/* The plan of spec text, parsed as the file /exp/t.yaml; *sp gets the
 * spec. */
static struct spec_plan *
plan_of(const char *text, struct spec **sp)
{
	struct diags		 d;
	struct spec_plan	*p = NULL;

	diags_init(&d);
	ck_assert_int_eq(spec_parse("/exp/t.yaml", text, strlen(text), &d, sp),
	    0);
	ck_assert_int_eq(spec_expand(*sp, &d, &p), 0);
	diags_free(&d);
	return p;
}

/* Parses spec text (as the file /exp/t.yaml) and writes run idx's
 * train.json into a fresh directory; returns the parsed JSON. */
static json_t *
train_json(const char *text, size_t idx, const char *run_dir)
{
	struct spec		*s = NULL;
	struct spec_plan	*p = plan_of(text, &s);
	char			 dir[4096], *path = NULL,
				 err[JOBSCRIPT_ERR_MAX];
	json_t			*j = NULL;
	struct stat		 st;

	ck_assert_uint_gt(spec_plan_nruns(p), idx);
	unit_mkdtemp(dir, sizeof dir, "test_jobscript");
	xasprintf(&path, "%s/train.json", dir);
	ck_assert_int_eq(jobscript_write_train_json(s, spec_plan_run(p, idx),
	    run_dir, path, err, sizeof err), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(cjson_load_file(path, 1 << 20, &j, NULL), 0);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);
	free(path);
	spec_plan_free(p);
	spec_free(s);
	return j;
}

static const char *
jstr(const json_t *o, const char *key)
{
	const json_t	*v = json_object_get(o, key);

	ck_assert_msg(json_is_string(v), "%s: not a string", key);
	return json_string_value(v);
}

static json_int_t
jint(const json_t *o, const char *key)
{
	const json_t	*v = json_object_get(o, key);

	ck_assert_msg(json_is_integer(v), "%s: not an integer", key);
	return json_integer_value(v);
}

static double
jreal(const json_t *o, const char *key)
{
	const json_t	*v = json_object_get(o, key);

	ck_assert_msg(json_is_real(v), "%s: not a real", key);
	return json_real_value(v);
}

/* A spec with nothing but the required keys: every default resolved. */
START_TEST(test_train_json_defaults)
{
	json_t		*j = train_json("version: 1\nname: t\n"
			    "trainer: { data: shards }\n", 0, "/runs/abc");
	const json_t	*opt = json_object_get(j, "optimizer");

	ck_assert_uint_eq(json_object_size(j), 24);
	ck_assert_int_eq(jint(j, "version"), 1);
	/* trainer.keep_timed all: the trainer keeps the timed ones */
	ck_assert(json_is_true(json_object_get(j, "keep_timed")));
	ck_assert_str_eq(jstr(j, "model"), "bert-base");
	ck_assert_str_eq(jstr(j, "task"), "pretrain");
	/* relative paths resolve against the spec's directory */
	ck_assert_str_eq(jstr(j, "data"), "/exp/shards");
	ck_assert(json_is_null(json_object_get(j, "eval_data")));
	ck_assert(json_is_null(json_object_get(j, "vocab")));
	ck_assert(json_is_null(json_object_get(j, "init")));
	ck_assert_int_eq(jint(j, "seq_len"), 128);
	ck_assert_int_eq(jint(j, "batch_size"), 32);
	ck_assert_int_eq(jint(j, "grad_accum"), 1);
	ck_assert_int_eq(jint(j, "steps"), 1000);
	ck_assert_str_eq(jstr(j, "precision"), "fp32");
	ck_assert_uint_eq(json_object_size(opt), 9);
	ck_assert_str_eq(jstr(opt, "name"), "adamw");
	ck_assert(jreal(opt, "lr") == 1e-4);
	ck_assert(jreal(opt, "weight_decay") == 0.01);
	ck_assert(jreal(opt, "beta1") == 0.9);
	ck_assert(jreal(opt, "beta2") == 0.999);
	ck_assert(jreal(opt, "eps") == 1e-6);
	ck_assert(jreal(opt, "warmup") == 0.01);
	ck_assert_str_eq(jstr(opt, "schedule"), "linear");
	ck_assert(jreal(opt, "power") == 1);
	ck_assert(jreal(j, "grad_clip") == 1);
	ck_assert(json_is_false(json_object_get(j, "grad_checkpointing")));
	ck_assert(jreal(j, "dropout") == 0.1);
	ck_assert_int_eq(jint(j, "checkpoint_every"), 1200);
	ck_assert_int_eq(jint(j, "keep_checkpoints"), 2);
	ck_assert_int_eq(jint(j, "log_every"), 10);
	ck_assert_int_eq(jint(j, "seed"), 42);
	ck_assert_int_eq(jint(j, "skip_steps"), 100);
	ck_assert_str_eq(jstr(j, "out"), "/runs/abc");
	ck_assert_str_eq(jstr(j, "resume"), "auto");
	json_decref(j);
}
END_TEST

/* An explicit model goes over as resolved dimensions; matrix values are
 * the run's own; the classify task and set paths pass through. */
START_TEST(test_train_json_explicit)
{
	static const char	 text[] =
	    "version: 1\nname: t\n"
	    "resources: { gpus_per_node: 1 }\n"
	    "trainer:\n"
	    "  model: { layers: 3, hidden: 96, heads: 4 }\n"
	    "  task: classify\n"
	    "  data: /d/train\n  eval_data: ../eval\n"
	    "  vocab: /v/vocab.txt\n  init: /ckpt/hf\n"
	    "  precision: bf16\n  grad_checkpointing: true\n"
	    "  checkpoint_every: 90s\n  seed: 4294967295\n"
	    "  optimizer: { name: lamb, lr: 6e-3, schedule: poly, power: 0.5 }\n"
	    "measure: { skip_steps: 0 }\n"
	    "matrix:\n  trainer.batch_size: [8, 16]\n";
	json_t			*j = train_json(text, 1, "/r/it's here");
	const json_t		*m = json_object_get(j, "model");
	const json_t		*opt = json_object_get(j, "optimizer");

	ck_assert(json_is_object(m));
	ck_assert_uint_eq(json_object_size(m), 6);
	ck_assert_int_eq(jint(m, "layers"), 3);
	ck_assert_int_eq(jint(m, "hidden"), 96);
	ck_assert_int_eq(jint(m, "heads"), 4);
	ck_assert_int_eq(jint(m, "intermediate"), 384);
	ck_assert_int_eq(jint(m, "vocab_size"), 30522);
	ck_assert_int_eq(jint(m, "max_position"), 512);
	ck_assert_str_eq(jstr(j, "task"), "classify");
	ck_assert_str_eq(jstr(j, "data"), "/d/train");
	ck_assert_str_eq(jstr(j, "eval_data"), "/exp/../eval");
	ck_assert_str_eq(jstr(j, "vocab"), "/v/vocab.txt");
	ck_assert_str_eq(jstr(j, "init"), "/ckpt/hf");
	ck_assert_int_eq(jint(j, "batch_size"), 16);
	ck_assert_str_eq(jstr(j, "precision"), "bf16");
	ck_assert(json_is_true(json_object_get(j, "grad_checkpointing")));
	ck_assert_int_eq(jint(j, "checkpoint_every"), 90);
	ck_assert_int_eq(jint(j, "seed"), 4294967295LL);
	ck_assert_int_eq(jint(j, "skip_steps"), 0);
	ck_assert_str_eq(jstr(opt, "name"), "lamb");
	ck_assert(jreal(opt, "lr") == 6e-3);
	ck_assert_str_eq(jstr(opt, "schedule"), "poly");
	ck_assert(jreal(opt, "power") == 0.5);
	ck_assert_str_eq(jstr(j, "out"), "/r/it's here");
	json_decref(j);
}
END_TEST

/* With stage.to the trainer reads the node-local copy. */
START_TEST(test_train_json_stage)
{
	json_t	*j = train_json("version: 1\nname: t\n"
		    "trainer: { data: /lustre/shards }\n"
		    "stage: { to: /local/shards }\n", 0, "/runs/abc");

	ck_assert_str_eq(jstr(j, "data"), "/local/shards");
	json_decref(j);
}
END_TEST

START_TEST(test_train_json_bad)
{
	struct diags		 d;
	struct spec		*s = NULL;
	struct spec_plan	*p = NULL;
	static const char	 text[] = "version: 1\nname: t\n"
				    "trainer: { data: /d }\n";
	char			 err[JOBSCRIPT_ERR_MAX];

	diags_init(&d);
	ck_assert_int_eq(spec_parse("/exp/t.yaml", text, strlen(text), &d, &s),
	    0);
	ck_assert_int_eq(spec_expand(s, &d, &p), 0);
	err[0] = '\0';
	ck_assert_int_eq(jobscript_write_train_json(s, spec_plan_run(p, 0),
	    "relative", "/nonexistent/train.json", err, sizeof err),
	    CADRE_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(err, "run dir"));
	ck_assert_int_eq(jobscript_write_train_json(s, spec_plan_run(p, 0),
	    "/r/\xff\xfe", "/nonexistent/train.json", err, sizeof err),
	    CADRE_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(err, "UTF-8"));
	ck_assert_int_eq(jobscript_write_train_json(s, spec_plan_run(p, 0),
	    "/r", "/nonexistent/dir/train.json", err, sizeof err),
	    CADRE_ERR_SYSTEM);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/dir/train.json"));
	spec_plan_free(p);
	spec_free(s);
	diags_free(&d);
}
END_TEST

/* ---------------------------------------------------------------- program.json */

/* Writes run idx's run json of spec text (the file /exp/t.yaml) into a
 * fresh directory with jobscript_write_run_json(): the program's
 * program.json, or train.json; returns it parsed. */
static json_t *
run_json(const char *text, size_t idx, const char *want_file)
{
	struct spec		*s = NULL;
	struct spec_plan	*p = plan_of(text, &s);
	char			 dir[4096], *path = NULL,
				 err[JOBSCRIPT_ERR_MAX];
	json_t			*j = NULL;

	unit_mkdtemp(dir, sizeof dir, "test_jobscript");
	ck_assert_msg(jobscript_write_run_json(s, spec_plan_run(p, idx), dir,
	    err, sizeof err) == 0, "%s", err);
	xasprintf(&path, "%s/%s", dir, want_file);
	ck_assert_int_eq(cjson_load_file(path, 1 << 20, &j, NULL), 0);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);	/* nothing else written */
	free(path);
	spec_plan_free(p);
	spec_free(s);
	return j;
}

START_TEST(test_program_json)
{
	json_t	*j;
	char	*text;

	/* Defaults: the string form, no env, vars or setup, no regex. */
	j = run_json("version: 1\nname: p\nprogram:\n"
	    "  command: \"sh run.sh {nnodes}\"\n", 0, "program.json");
	text = cjson_dumps_sorted(j);
	ck_assert_str_eq(text, "{\"checkpoint_every\":0,\"command\":"
	    "\"sh run.sh {nnodes}\",\"config_id\":\"f0e336ebe6bf\","
	    "\"env\":{},\"experiment\":\"p\",\"keep_checkpoints\":2,"
	    "\"launch\":\"per_rank\",\"run_id\":\"aa97d9830a5b\","
	    "\"setup\":[],\"signal\":\"SIGUSR1\",\"vars\":{},"
	    "\"version\":1,\"workdir\":\"/exp\"}");
	free(text);
	json_decref(j);
	/* The matrix's values, a relative workdir. */
	j = run_json("version: 1\nname: p\nprogram:\n"
	    "  command: [sh, \"{b}\"]\n  workdir: ./sub//x\n"
	    "  metrics: { regex: '(?<step>\\d+)' }\n"
	    "matrix: { program.vars.b: [1, 2] }\n", 1, "program.json");
	ck_assert_str_eq(jstr(j, "workdir"), "/exp/sub//x");
	ck_assert_str_eq(jstr(j, "metrics_regex"), "(?<step>\\d+)");
	ck_assert_str_eq(jstr(json_object_get(j, "vars"), "b"), "2");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j,
	    "command"), 1)), "{b}");
	json_decref(j);
	/* A trainer spec gets its train.json. */
	j = run_json("version: 1\nname: t\ntrainer: { data: /d }\n", 0,
	    "train.json");
	ck_assert_str_eq(jstr(j, "data"), "/d");
	json_decref(j);
}
END_TEST

static Suite *
jobscript_suite(void)
{
	Suite	*s = suite_create("jobscript");
	TCase	*tc = tcase_create("core");
	int	 nh = (int)(sizeof hostile / sizeof hostile[0]);

	tcase_add_test(tc, test_quote_forms);
	tcase_add_loop_test(tc, test_quote_round_trip, 0, nh);
	tcase_add_test(tc, test_word_ok);
	tcase_add_test(tc, test_check_job);
	tcase_add_test(tc, test_render_directives);
	tcase_add_test(tc, test_render_template_errors);
	tcase_add_test(tc, test_render_stage);
	tcase_add_test(tc, test_render_eval);
	tcase_add_test(tc, test_render_program);
	tcase_add_test(tc, test_program_json);
	tcase_add_loop_test(tc, test_render_hostile, 0, nh);
	tcase_add_test(tc, test_train_json_defaults);
	tcase_add_test(tc, test_train_json_explicit);
	tcase_add_test(tc, test_train_json_bad);
	tcase_add_test(tc, test_train_json_stage);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(jobscript_suite());
}
