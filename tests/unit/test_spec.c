#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "diag.h"
#include "error.h"
#include "spec.h"
#include "xmalloc.h"
#include "unit.h"

#define HEAD	"version: 1\nname: t\n"
#define BASE	HEAD "trainer:\n  data: /scratch/shards\n"

/* ------------------------------------------------------------ helpers */

static char *
diags_text(struct diags *d)
{
	char	*buf = NULL;
	size_t	 len = 0;
	FILE	*fp = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(fp);
	diags_sort(d);
	diags_print(d, fp);
	fclose(fp);
	return buf;
}

/* Parses text that must be valid, without warnings. */
static struct spec *
parse_ok(const char *text)
{
	struct diags	 d;
	struct spec	*s = NULL;
	char		*msgs;
	int		 rc;

	diags_init(&d);
	rc = spec_parse("t.yaml", text, strlen(text), &d, &s);
	msgs = diags_text(&d);
	ck_assert_msg(rc == 0 && diags_errors(&d) == 0 &&
	    diags_warnings(&d) == 0, "spec refused: rc %d\n%s", rc, msgs);
	ck_assert_ptr_nonnull(s);
	free(msgs);
	diags_free(&d);
	return s;
}

/* Parses text that must be refused; returns every message, sorted. */
static char *
parse_bad(const char *text, size_t len)
{
	struct diags	 d;
	struct spec	*s = NULL;
	char		*msgs;
	int		 rc;

	diags_init(&d);
	rc = spec_parse("t.yaml", text, len, &d, &s);
	msgs = diags_text(&d);
	ck_assert_msg(rc < 0, "spec accepted:\n%s\n%s", text, msgs);
	ck_assert_ptr_null(s);
	ck_assert_uint_gt(diags_errors(&d), 0);
	diags_free(&d);
	return msgs;
}

static void
expect_error(const char *text, const char *message)
{
	char	*msgs = parse_bad(text, strlen(text));

	ck_assert_msg(strstr(msgs, message) != NULL, "expected\n  %s\ngot\n%s",
	    message, msgs);
	free(msgs);
}

static struct spec_plan *
expand(const struct spec *s)
{
	struct diags		 d;
	struct spec_plan	*p = NULL;

	diags_init(&d);
	ck_assert_int_eq(spec_expand(s, &d, &p), 0);
	ck_assert_uint_eq(diags_errors(&d), 0);
	diags_free(&d);
	return p;
}

/* The run ids of a spec, joined by spaces. */
static char *
ids_of(const char *text)
{
	struct spec		*s = parse_ok(text);
	struct spec_plan	*p = expand(s);
	struct cbuf		 b;
	size_t			 i;

	cbuf_init(&b, SIZE_MAX);
	for (i = 0; i < spec_plan_nruns(p); i++)
		cbuf_addf(&b, "%s/%s ", spec_run_config_id(spec_plan_run(p, i)),
		    spec_run_id(spec_plan_run(p, i)));
	spec_plan_free(p);
	spec_free(s);
	return cbuf_detach(&b, NULL);
}

/* ------------------------------------------------------------ key table */

START_TEST(test_key_table)
{
	const struct spec_key_info	*ki, *kj;
	char				*range;
	int				 k, j;

	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		ki = spec_key_info(k);
		ck_assert_ptr_nonnull(ki->path);
		ck_assert_msg(ki->doc != NULL && *ki->doc != '\0',
		    "%s has no doc", ki->path);
		ck_assert_int_eq(spec_key_lookup(ki->path), k);
		if (ki->type == SPEC_T_ENUM || ki->type == SPEC_T_ENUMS ||
		    ki->type == SPEC_T_MODEL)
			ck_assert_ptr_nonnull(ki->values);
		if (ki->flags & SPEC_F_MATRIX)
			ck_assert_msg(ki->type != SPEC_T_WORDS &&
			    ki->type != SPEC_T_PATHS && ki->type != SPEC_T_ENUMS &&
			    ki->type < SPEC_T_MATRIX, "%s varies but is not a "
			    "scalar", ki->path);
		/* A default and "required" exclude each other. */
		ck_assert(!(ki->def != NULL && (ki->flags & SPEC_F_REQUIRED)));
		range = spec_key_range_text(k);
		free(range);
		for (j = 0; j < k; j++) {
			kj = spec_key_info(j);
			ck_assert_str_ne(ki->path, kj->path);
		}
	}
	ck_assert_int_eq(spec_key_lookup("trainer.batchsize"), -1);
	ck_assert_int_eq(spec_key_lookup("trainer"), -1);
}
END_TEST

START_TEST(test_defaults)
{
	struct spec	*s = parse_ok(BASE);
	char *const	*list;
	size_t		 n;

	/* Every default went through the checks when the spec was made. */
	ck_assert_str_eq(spec_get_string(s, SPEC_K_SCHED_BACKEND), "local");
	ck_assert_int_eq(spec_get_int(s, SPEC_K_SCHED_TIME_LIMIT), 3600);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_SCHED_SIGNAL_GRACE), 120);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_CHECKPOINT_EVERY), 1200);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_RES_NODES), 1);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_BATCH_SIZE), 32);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_MEASURE_SKIP_STEPS), 100);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_REPEATS), 1);
	ck_assert_str_eq(spec_get_string(s, SPEC_K_PRECISION), "fp32");
	ck_assert_str_eq(spec_get_string(s, SPEC_K_MODEL), "bert-base");
	ck_assert_str_eq(spec_get_string(s, SPEC_K_SCHED_REST_TOKEN_ENV),
	    "SLURM_JWT");
	ck_assert(spec_get_double(s, SPEC_K_OPT_LR) == 1e-4);
	ck_assert_int_eq(spec_get_bool(s, SPEC_K_GRAD_CHECKPOINTING), 0);
	ck_assert(!spec_is_set(s, SPEC_K_SCHED_PARTITION));
	ck_assert_ptr_null(spec_get_string(s, SPEC_K_SCHED_PARTITION));
	ck_assert(!spec_is_set(s, SPEC_K_RES_MEMORY));
	list = spec_get_list(s, SPEC_K_RETRIES_ON, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(list[0], "timeout");
	ck_assert_str_eq(list[2], "node_fail");
	ck_assert_ptr_null(list[3]);
	list = spec_get_list(s, SPEC_K_SCHED_EXTRA, &n);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_null(list[0]);
	/* bert-base dimensions come from the preset. */
	ck_assert_int_eq(spec_get_int(s, SPEC_K_MODEL_LAYERS), 12);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_MODEL_HIDDEN), 768);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_MODEL_HEADS), 12);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_MODEL_INTERMEDIATE), 3072);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_MODEL_MAX_POSITION), 512);
	ck_assert_int_eq(spec_repeats(s), 1);
	ck_assert_uint_eq(spec_nconfigs(s), 1);
	ck_assert_uint_eq(spec_nvaried(s), 0);
	spec_free(s);
}
END_TEST

/* ------------------------------------------------------------ values */

START_TEST(test_typed_values)
{
	struct spec	*s;
	char *const	*list;
	size_t		 n;

	s = parse_ok("version: 1\n"
	    "name: typed.values-1\n"
	    "description: 'multi: colon'\n"
	    "scheduler:\n"
	    "  backend: slurm\n"
	    "  partition: '8'\n"
	    "  time_limit: \"01:30:00\"\n"
	    "  signal_grace: 0\n"
	    "  extra: [\"--exclusive\", \"--comment=two words\"]\n"
	    "resources: { nodes: 4, gpus_per_node: 8, memory: 1.5T }\n"
	    "stage: { to: \"${SLURM_TMPDIR}/x\" }\n"
	    "trainer:\n"
	    "  data: shards\n"
	    "  precision: \"bf16\"\n"
	    "  grad_checkpointing: True\n"
	    "  optimizer: { lr: 6e-3, warmup: 0, weight_decay: 1 }\n"
	    "  dropout: 0\n"
	    "  checkpoint_every: 1h30m\n"
	    "  seed: 4294967295\n"
	    "notify: { webhook: \"http://h:8080/x\", on: [cancelled] }\n");
	ck_assert_str_eq(spec_get_string(s, SPEC_K_NAME), "typed.values-1");
	ck_assert_str_eq(spec_get_string(s, SPEC_K_DESCRIPTION),
	    "multi: colon");
	ck_assert_str_eq(spec_get_string(s, SPEC_K_SCHED_PARTITION), "8");
	ck_assert_int_eq(spec_get_int(s, SPEC_K_SCHED_TIME_LIMIT), 5400);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_SCHED_SIGNAL_GRACE), 0);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_RES_MEMORY),
	    (int64_t)3 << 39);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_CHECKPOINT_EVERY), 5400);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_SEED), 4294967295LL);
	ck_assert_str_eq(spec_get_string(s, SPEC_K_PRECISION), "bf16");
	ck_assert_int_eq(spec_get_bool(s, SPEC_K_GRAD_CHECKPOINTING), 1);
	ck_assert(spec_get_double(s, SPEC_K_OPT_LR) == 6e-3);
	ck_assert(spec_get_double(s, SPEC_K_OPT_WEIGHT_DECAY) == 1.0);
	ck_assert(spec_get_double(s, SPEC_K_RES_NODES) == 4.0);
	list = spec_get_list(s, SPEC_K_SCHED_EXTRA, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(list[1], "--comment=two words");
	list = spec_get_list(s, SPEC_K_NOTIFY_ON, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(list[0], "cancelled");
	ck_assert_str_eq(spec_get_string(s, SPEC_K_STAGE_TO),
	    "${SLURM_TMPDIR}/x");
	spec_free(s);
}
END_TEST

START_TEST(test_value_errors)
{
	expect_error(BASE "resources: { nodes: 0 }\n",
	    "t.yaml:5:21: error: resources.nodes: expected an integer from 1 "
	    "to 4096, got 0\n");
	expect_error(BASE "resources: { nodes: 1.5 }\n",
	    "resources.nodes: expected an integer from 1 to 4096, got 1.5\n");
	expect_error(BASE "resources: { nodes: \"2\" }\n",
	    "got the quoted string \"2\" (remove the quotes)");
	expect_error(BASE "resources: { nodes: 99999999999999999999 }\n",
	    "got 99999999999999999999\n");
	expect_error(BASE "repeats: two\n",
	    "repeats: expected an integer from 1 to 1000, got 'two'");
	expect_error(HEAD "trainer: {data: /x, precision: fp64}\n",
	    "trainer.precision: expected one of fp32, bf16, fp16, got 'fp64'\n");
	expect_error(HEAD "trainer: {data: /x, precision: BF16}\n",
	    "got 'BF16' (did you mean 'bf16'?)");
	expect_error(HEAD "trainer: {data: /x, grad_checkpointing: no}\n",
	    "expected true or false, got 'no'");
	expect_error(HEAD "trainer: {data: /x, dropout: 1}\n",
	    "trainer.dropout: expected a number of at least 0 and less than 1, "
	    "got 1\n");
	expect_error(HEAD "trainer: {data: /x, optimizer: {lr: nan}}\n",
	    "got 'nan'");
	expect_error(BASE "scheduler: { time_limit: 90 }\n",
	    "scheduler.time_limit: expected a duration, got the bare number 90; "
	    "add a unit, e.g. 90s or 20m\n");
	expect_error(BASE "scheduler: { time_limit: \"90\" }\n",
	    "got the bare number 90");
	expect_error(BASE "scheduler: { time_limit: 400d }\n",
	    "scheduler.time_limit: expected a duration from 1m to 365d, got "
	    "400d\n");
	expect_error(BASE "resources: { memory: 64 }\n",
	    "add a unit, e.g. 64G or 512M");
	expect_error(BASE "resources: { memory: 512k }\n",
	    "resources.memory: expected a size from 1MiB to 1PiB, got 512k");
	expect_error("version: 1\nname: a b\ntrainer: {data: /x}\n",
	    "name: expected a name of 1 to 64 letters");
	expect_error("version: 1\nname: "
	    "a1234567890123456789012345678901234567890123456789012345678901234\n"
	    "trainer: {data: /x}\n", "name: expected a name");
	expect_error(BASE "stage: { to: \"/a\\nb\" }\n",
	    "stage.to: a path must not contain a line break");
	expect_error(BASE "stage: { to: \"$1/x\" }\n",
	    "a path may start with $NAME or ${NAME}");
	expect_error(BASE "scheduler: { extra: [\"\"] }\n",
	    "scheduler.extra: a scheduler word must not be empty");
	expect_error(BASE "scheduler: { qos: \"a\\u0001\" }\n",
	    "scheduler.qos: a scheduler word must be printable (found control "
	    "character 0x01)");
	expect_error(BASE "notify: { webhook: \"http:///x\" }\n",
	    "notify.webhook: expected an http://, https:// or unix:/// URL");
	expect_error(BASE "retries: { on: [failed, failed] }\n",
	    "retries.on: 'failed' is listed twice");
	expect_error(BASE "description: \"a\\0b\"\n",
	    "a NUL character (\\0) is not allowed in a string");
}
END_TEST

START_TEST(test_unknown_keys)
{
	expect_error(BASE "  batchsize: 4\n",
	    "t.yaml:5:3: error: unknown key 'batchsize' in trainer (did you "
	    "mean 'batch_size'?)\n");
	expect_error(BASE "tranier: {}\n",
	    "unknown key 'tranier' (did you mean 'trainer'?)");
	expect_error(BASE "  gpus_per_node: 4\n",
	    "unknown key 'gpus_per_node' in trainer (did you mean "
	    "'resources.gpus_per_node'?)");
	expect_error(BASE "  optimizer: { learning_rate: 1 }\n",
	    "unknown key 'learning_rate' in trainer.optimizer; 'cadre keys' "
	    "lists the keys");
	expect_error(BASE "resources.nodes: 2\n",
	    "dotted key 'resources.nodes': dotted paths are only for matrix");
	/* x- keys are free. */
	spec_free(parse_ok(BASE "x-anything: { a: [1, {b: c}] }\n"));
}
END_TEST

START_TEST(test_one_pass)
{
	const char	*text = BASE "  steps: x\n  precision: fp8\n"
	    "resources: { nodes: 0, gpus: 2 }\n"
	    "scheduler: { time_limit: 5 }\n";
	char		*msgs, *p;
	size_t		 lines = 0;

	msgs = parse_bad(text, strlen(text));
	for (p = msgs; *p != '\0'; p++)
		lines += *p == '\n';
	ck_assert_uint_eq(lines, 5);
	/* Sorted by position. */
	ck_assert_ptr_nonnull(strstr(msgs, "t.yaml:5:10: error: trainer.steps"));
	ck_assert(strstr(msgs, "5:10:") < strstr(msgs, "6:14:"));
	ck_assert(strstr(msgs, "6:14:") < strstr(msgs, "7:21:"));
	ck_assert(strstr(msgs, "7:21:") < strstr(msgs, "7:24:"));
	ck_assert(strstr(msgs, "7:24:") < strstr(msgs, "8:26:"));
	free(msgs);
}
END_TEST

START_TEST(test_required)
{
	expect_error("name: a\ntrainer: {data: /x}\n",
	    "t.yaml: error: missing required key 'version' (add 'version: 1' at "
	    "the top)\n");
	expect_error("version: 1\ntrainer: {data: /x}\n",
	    "t.yaml: error: missing required key 'name'");
	expect_error("version: 1\nname: a\ntrainer: {steps: 500}\n",
	    "t.yaml:3:1: error: missing required key 'trainer.data'");
	expect_error("version: 2\nname: a\nnew_key: 1\n",
	    "t.yaml:1:10: error: version: this cadre reads spec version 1, got "
	    "2\n");
	expect_error("version: \"1\"\nname: a\n", "version: this cadre reads");
}
END_TEST

/* ------------------------------------------------------------ YAML */

START_TEST(test_yaml_structure)
{
	char	*msgs;

	expect_error("", "t.yaml: error: the spec is empty");
	expect_error("# nothing\n\n", "the spec is empty");
	expect_error("---\n", "the spec is empty");
	expect_error("- a\n- b\n", "t.yaml:1:1: error: the top level must be a "
	    "mapping of keys (version: 1, name: ...), not a list");
	expect_error(BASE "---\nversion: 1\n", "t.yaml:5:1: error: only one "
	    "YAML document is allowed in a spec");
	expect_error("version: 1\nname: a\ntrainer:\n\tdata: /x\n",
	    "t.yaml:4:1: error: tabs are not allowed for indentation; indent "
	    "with spaces\n");
	expect_error(BASE "resources:\n  nodes: 1\n  nodes: 2\n",
	    "t.yaml:7:3: error: duplicate key 'nodes' (first at line 6)\n");
	expect_error(BASE "description: a: b\n", "t.yaml:5:15: error: "
	    "unexpected ':' here");
	expect_error(BASE "x: [1, 2\n", "expected ',' or ']'");
	expect_error(BASE "x: !foo 1\n", "unsupported YAML tag '!foo'");
	expect_error(BASE "? [a]\n: 1\n", "a key must be a string, not a list");
	expect_error(BASE "x: *nope\n", "unknown alias '*nope'");
	expect_error(BASE "x-a: &a [1, *a]\n", "t.yaml:5:13: error: alias '*a' "
	    "refers to a node that contains it");
	/* Bytes. */
	msgs = parse_bad("version: 1\0\n", sizeof "version: 1\0\n" - 1);
	ck_assert_ptr_nonnull(strstr(msgs, "t.yaml:1:11: error: NUL byte"));
	free(msgs);
	msgs = parse_bad("version: 1\nname: caf\xe9\n",
	    sizeof "version: 1\nname: caf\xe9\n" - 1);
	ck_assert_ptr_nonnull(strstr(msgs, "t.yaml:2:10: error: invalid UTF-8 "
	    "(byte 0xe9)"));
	free(msgs);
	expect_error("version: 1\nname: \xc3\xa9t\xc3\xa9\x1b\n",
	    "t.yaml:2:10: error: control character 0x1b");
	/* A valid UTF-8 name is still not a name; columns count characters. */
	expect_error("version: 1\nname: \xc3\xa9t\xc3\xa9\ntrainer: {data: "
	    "/x}\nfoo: 1\n", "t.yaml:4:1: error: unknown key 'foo'");
}
END_TEST

START_TEST(test_size_limit)
{
	char	*text, *msgs;
	size_t	 len = SPEC_MAX_BYTES + 1;

	text = xmalloc(len);
	memset(text, '#', len);
	msgs = parse_bad(text, len);
	ck_assert_str_eq(msgs, "t.yaml: error: file is 1048577 bytes; specs are "
	    "limited to 1 MiB\n");
	free(msgs);
	free(text);
}
END_TEST

START_TEST(test_alias_bomb)
{
	struct cbuf	 b;
	char		*msgs;
	clock_t		 t0 = clock();
	int		 i, j;

	cbuf_init(&b, SIZE_MAX);
	cbuf_adds(&b, BASE "x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, "
	    "lol, lol]\n");
	for (i = 1; i < 20; i++) {
		cbuf_addf(&b, "x%d: &a%d [", i, i);
		for (j = 0; j < 10; j++)
			cbuf_addf(&b, "%s*a%d", j > 0 ? ", " : "", i - 1);
		cbuf_adds(&b, "]\n");
	}
	msgs = parse_bad(b.data, b.len);
	ck_assert_msg(strstr(msgs, "this looks like an alias bomb") != NULL,
	    "%s", msgs);
	/* Refused on the way, not after expanding 10^20 nodes. */
	ck_assert_double_lt((double)(clock() - t0) / CLOCKS_PER_SEC, 5.0);
	free(msgs);
	cbuf_free(&b);

	/* Aliases within the bound are fine, and shared, not copied. */
	spec_free(parse_ok(BASE "x-a: &a [1, 2, 3]\nx-b: [*a, *a, *a]\n"));
}
END_TEST

static char *
nested(int depth)
{
	struct cbuf	b;
	int		i;

	/* The top mapping is one level; the rest are lists. */
	cbuf_init(&b, SIZE_MAX);
	cbuf_adds(&b, BASE "x-deep: ");
	for (i = 1; i < depth; i++)
		cbuf_addc(&b, '[');
	for (i = 1; i < depth; i++)
		cbuf_addc(&b, ']');
	cbuf_addc(&b, '\n');
	return cbuf_detach(&b, NULL);
}

START_TEST(test_depth_limit)
{
	struct cbuf	 b;
	char		*text;
	int		 i;

	text = nested(SPEC_MAX_DEPTH);
	spec_free(parse_ok(text));
	free(text);
	text = nested(SPEC_MAX_DEPTH + 1);
	expect_error(text, "t.yaml:5:40: error: nesting is deeper than 32 "
	    "levels of mappings and lists");
	free(text);
	/* An alias may not carry a deep node deeper: 30 lists under the top
	 * mapping are fine, but not under two more lists. */
	cbuf_init(&b, SIZE_MAX);
	cbuf_adds(&b, BASE "x-a: &a ");
	for (i = 0; i < 30; i++)
		cbuf_addc(&b, '[');
	for (i = 0; i < 30; i++)
		cbuf_addc(&b, ']');
	cbuf_adds(&b, "\nx-b: [[*a]]\n");
	expect_error(b.data, "t.yaml:6:8: error: alias '*a' makes the nesting "
	    "deeper than 32 levels");
	cbuf_free(&b);
}
END_TEST

/* Duplicate keys are found by sorting: a 50,000-key mapping is no burden. */
START_TEST(test_many_keys)
{
	struct cbuf	 b;
	char		*msgs;
	int		 i;

	cbuf_init(&b, SIZE_MAX);
	cbuf_adds(&b, BASE "x-many:\n");
	for (i = 0; i < 50000; i++)
		cbuf_addf(&b, "  k%d: %d\n", i, i);
	spec_free(parse_ok(b.data));
	cbuf_addf(&b, "  k%d: again\n", 123);
	msgs = parse_bad(b.data, b.len);
	ck_assert_str_eq(msgs, "t.yaml:50006:3: error: duplicate key 'k123' "
	    "(first at line 129)\n");
	free(msgs);
	cbuf_free(&b);
}
END_TEST

/* ------------------------------------------------------------ matrix */

START_TEST(test_matrix_product)
{
	struct spec		*s;
	struct spec_plan	*p;
	const struct spec_run	*r;

	s = parse_ok(BASE "resources: { gpus_per_node: 2 }\nrepeats: 2\n"
	    "matrix:\n  trainer.batch_size: [16, 32, 64]\n"
	    "  resources.nodes: [1, 4]\n");
	ck_assert_uint_eq(spec_nconfigs(s), 6);
	ck_assert_uint_eq(spec_nvaried(s), 2);
	ck_assert_int_eq(spec_varied(s, 0), SPEC_K_BATCH_SIZE);
	ck_assert_int_eq(spec_varied(s, 1), SPEC_K_RES_NODES);
	p = expand(s);
	ck_assert_uint_eq(spec_plan_nruns(p), 12);
	ck_assert_uint_eq(spec_plan_nconfigs(p), 6);
	/* The first key varies slowest, repeats innermost. */
	r = spec_plan_run(p, 0);
	ck_assert_int_eq(spec_run_int(r, SPEC_K_BATCH_SIZE), 16);
	ck_assert_int_eq(spec_run_int(r, SPEC_K_RES_NODES), 1);
	ck_assert_uint_eq(spec_run_repeat(r), 1);
	r = spec_plan_run(p, 1);
	ck_assert_uint_eq(spec_run_repeat(r), 2);
	ck_assert_str_eq(spec_run_config_id(r),
	    spec_run_config_id(spec_plan_run(p, 0)));
	ck_assert_str_ne(spec_run_id(r), spec_run_id(spec_plan_run(p, 0)));
	r = spec_plan_run(p, 2);
	ck_assert_int_eq(spec_run_int(r, SPEC_K_BATCH_SIZE), 16);
	ck_assert_int_eq(spec_run_int(r, SPEC_K_RES_NODES), 4);
	ck_assert_uint_eq(spec_run_config(r), 1);
	r = spec_plan_run(p, 11);
	ck_assert_int_eq(spec_run_int(r, SPEC_K_BATCH_SIZE), 64);
	ck_assert_int_eq(spec_run_int(r, SPEC_K_RES_NODES), 4);
	ck_assert_int_eq(spec_run_ranks(r), 8);
	ck_assert_int_eq(spec_run_total_gpus(r), 8);
	ck_assert_int_eq(spec_run_global_batch(r), 512);
	ck_assert_int_eq(spec_plan_gpu_seconds(p), 2 * 3600 * (2 + 8) * 3);
	ck_assert_uint_eq(strlen(spec_run_id(r)), SPEC_ID_LEN);
	spec_plan_free(p);
	spec_free(s);
}
END_TEST

START_TEST(test_matrix_errors)
{
	expect_error(BASE "matrix:\n  resources.nodes: []\n",
	    "t.yaml:6:20: error: matrix: resources.nodes: the list is empty");
	expect_error(BASE "matrix:\n  resources.nodes: 2\n",
	    "matrix: resources.nodes: expected a list of values");
	expect_error(BASE "matrix:\n  resources.node: [1]\n",
	    "matrix: unknown key 'resources.node' (did you mean "
	    "'resources.nodes'?)");
	expect_error(BASE "matrix:\n  name: [a, b]\n",
	    "matrix: name cannot vary in a matrix");
	expect_error(BASE "matrix:\n  trainer.steps: [10, x]\n",
	    "t.yaml:6:23: error: trainer.steps: expected an integer");
	expect_error(BASE "matrix:\n  trainer.steps: [10, 20, 10]\n",
	    "matrix: trainer.steps: '10' is the same value as '10' at line 6, "
	    "column 19");
	expect_error(BASE "matrix: [1]\n", "matrix: expected a mapping");
	expect_error(BASE "matrix:\n  trainer.model: [{layers: 1}]\n",
	    "only presets can vary here");
	/* A cross-key rule broken by some configurations only. */
	expect_error(BASE "measure: {skip_steps: 100}\n"
	    "matrix:\n  trainer.steps: [1000, 100]\n",
	    "t.yaml:7:25: error: measure.skip_steps (100) must be less than "
	    "trainer.steps (100), or no step is measured (in the configuration "
	    "with trainer.steps=100)");
}
END_TEST

START_TEST(test_run_bound)
{
	struct spec	*s;

	/* 100 x 100 = 10000 runs: the limit itself. */
	s = parse_ok(BASE "matrix:\n"
	    "  trainer.seed: [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,"
	    "20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,"
	    "42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,"
	    "64,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,84,85,"
	    "86,87,88,89,90,91,92,93,94,95,96,97,98,99]\n"
	    "repeats: 100\n");
	ck_assert_uint_eq(spec_nconfigs(s), 100);
	spec_free(s);
	expect_error(BASE "matrix:\n  resources.nodes: [1, 2]\n"
	    "  trainer.seed: [1, 2, 3, 4, 5]\ninclude:\n  - {trainer.seed: 9}\n"
	    "repeats: 1000\n",
	    "t.yaml:5:1: error: matrix: (2 x 5 + 1 included) configurations x "
	    "1000 repeats = 11000 runs, over the limit of 10000");
	/* Refused before expanding a product that would not fit in memory. */
	expect_error(BASE "x-v: &v [1,2,3,4,5,6,7,8,9,10]\nmatrix:\n"
	    "  trainer.seed: *v\n  trainer.steps: *v\n  trainer.seq_len: [8,9,10,11,12,13,14,15,16,17]\n"
	    "  trainer.batch_size: *v\n  trainer.grad_accum: *v\n"
	    "  resources.nodes: *v\n  resources.cpus_per_rank: *v\n",
	    "matrix: 10 x 10 x 10 x 10 x 10 x 10 x 10 configurations make more "
	    "than 10000 runs");
}
END_TEST

START_TEST(test_exclude_include)
{
	struct spec		*s;
	struct spec_plan	*p;
	struct diags		 d;
	char			*msgs;
	int			 rc;

	/* 3 x 2 = 6, minus 2 excluded, plus 2 included (1 a duplicate). */
	s = parse_ok(BASE "resources: { gpus_per_node: 8 }\n"
	    "matrix:\n  resources.nodes: [1, 2, 4]\n"
	    "  trainer.precision: [fp32, bf16]\n"
	    "exclude:\n  - { resources.nodes: 4 }\n"
	    "include:\n  - { resources.nodes: 8, trainer.grad_accum: 2 }\n"
	    "  - { resources.nodes: 2, trainer.precision: bf16 }\n");
	ck_assert_uint_eq(spec_nconfigs(s), 5);
	ck_assert_uint_eq(spec_nvaried(s), 3);
	ck_assert_int_eq(spec_varied(s, 2), SPEC_K_GRAD_ACCUM);
	p = expand(s);
	ck_assert_int_eq(spec_run_int(spec_plan_run(p, 3), SPEC_K_RES_NODES),
	    2);
	ck_assert_int_eq(spec_run_int(spec_plan_run(p, 4), SPEC_K_RES_NODES),
	    8);
	ck_assert_int_eq(spec_run_int(spec_plan_run(p, 4), SPEC_K_GRAD_ACCUM),
	    2);
	/* The include's precision is the base value, not the matrix's. */
	ck_assert_str_eq(spec_run_string(spec_plan_run(p, 4),
	    SPEC_K_PRECISION), "fp32");
	ck_assert_int_eq(spec_run_int(spec_plan_run(p, 0), SPEC_K_GRAD_ACCUM),
	    1);
	spec_plan_free(p);
	spec_free(s);

	/* An entry matching nothing is a warning only. */
	diags_init(&d);
	msgs = xstrdup(BASE "matrix:\n  resources.nodes: [1, 2]\n"
	    "exclude:\n  - { resources.nodes: 3 }\n");
	rc = spec_parse("t.yaml", msgs, strlen(msgs), &d, &s);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(diags_errors(&d), 0);
	ck_assert_uint_eq(diags_warnings(&d), 1);
	ck_assert_uint_eq(spec_nconfigs(s), 2);
	free(msgs);
	msgs = diags_text(&d);
	ck_assert_str_eq(msgs, "t.yaml:8:24: warning: exclude: this entry "
	    "matches no configuration: 3 is not one of the matrix values of "
	    "resources.nodes (1, 2)\n");
	free(msgs);
	spec_free(s);
	diags_free(&d);

	/* Without a matrix, the entries are the configurations. */
	s = parse_ok(BASE "include:\n  - { resources.nodes: 2 }\n"
	    "  - { resources.nodes: 3 }\n  - { resources.nodes: 2 }\n");
	ck_assert_uint_eq(spec_nconfigs(s), 2);
	spec_free(s);

	expect_error(BASE "matrix:\n  resources.nodes: [1, 2]\n"
	    "exclude:\n  - { resources.nodes: 1 }\n  - { resources.nodes: 2 }\n",
	    "exclude: every configuration of the matrix is excluded");
	expect_error(BASE "matrix:\n  resources.nodes: [1, 2]\n"
	    "exclude:\n  - { trainer.steps: 1 }\n",
	    "exclude: trainer.steps is not a matrix key");
	expect_error(BASE "matrix:\n  resources.nodes: [1, 2]\n"
	    "exclude:\n  - { resources.nodez: 1 }\n",
	    "exclude: unknown key 'resources.nodez' (did you mean "
	    "'resources.nodes'?)");
	expect_error(BASE "exclude:\n  - { resources.nodes: 1 }\n",
	    "exclude: there is no matrix to exclude from");
	expect_error(BASE "matrix:\n  resources.nodes: [1, 2]\n"
	    "exclude:\n  - { resources.nodes: zero }\n",
	    "resources.nodes: expected an integer from 1 to 4096, got 'zero'");
	expect_error(BASE "include:\n  - { trainer.data: /y }\n",
	    "include: trainer.data cannot vary between configurations");
	expect_error(BASE "include: { resources.nodes: 2 }\n",
	    "include: expected a list of entries");
}
END_TEST

/* Brute force against the enumeration of exclude matches. */
START_TEST(test_exclude_many)
{
	struct cbuf	 b;
	struct spec	*s;
	size_t		 expected = 0;
	int		 a, c, e, i, x, y, z, kind;
	unsigned char	 gone[10][10][10];

	memset(gone, 0, sizeof gone);
	cbuf_init(&b, SIZE_MAX);
	cbuf_adds(&b, BASE "matrix:\n"
	    "  trainer.seed: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n"
	    "  trainer.steps: [1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, "
	    "1008, 1009]\n"
	    "  trainer.batch_size: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
	    "repeats: 10\nexclude:\n");
	srand(7);
	for (i = 0; i < 20000; i++) {
		kind = rand() % 3;
		a = kind == 0 ? 0 : kind == 1 ? 1 + rand() % 2 : 3 + rand() % 7;
		c = rand() % 10;
		e = rand() % 5;
		if (kind == 0)
			cbuf_addf(&b, "  - {trainer.seed: %d}\n", a);
		else if (kind == 1)
			cbuf_addf(&b, "  - {trainer.seed: %d, trainer.steps: "
			    "%d}\n", a, 1000 + c);
		else
			cbuf_addf(&b, "  - {trainer.seed: %d, trainer.steps: %d, "
			    "trainer.batch_size: %d}\n", a, 1000 + c, e + 1);
		for (x = 0; x < 10; x++)
			for (y = 0; y < 10; y++)
				for (z = 0; z < 10; z++)
					if (x == a && (kind == 0 || (y == c &&
					    (kind == 1 || z == e))))
						gone[x][y][z] = 1;
	}
	for (x = 0; x < 10; x++)
		for (y = 0; y < 10; y++)
			for (z = 0; z < 10; z++)
				expected += !gone[x][y][z];
	ck_assert_uint_gt(expected, 0);
	s = parse_ok(b.data);
	ck_assert_uint_eq(spec_nconfigs(s), expected);
	spec_free(s);
	cbuf_free(&b);
}
END_TEST

START_TEST(test_ids_stable)
{
	char	*a, *b, *c;

	a = ids_of(BASE "resources: { nodes: 2 }\nrepeats: 2\n"
	    "scheduler: { time_limit: 1h }\n"
	    "matrix:\n  trainer.batch_size: [16, 32]\n");
	/* Reordered, commented, quoted, defaults written out, 60m for 1h,
	 * description and notify changed: the same runs. */
	b = ids_of("# a comment\nname: 't'\nversion: 1\n"
	    "matrix:\n  trainer.batch_size: [16, 32]  # sizes\n"
	    "repeats: 2\n"
	    "description: this does not change what runs do\n"
	    "notify: { webhook: https://example.org/h }\n"
	    "trainer:\n  steps: 1000\n  data: \"/scratch/shards\"\n"
	    "  optimizer: { lr: 0.0001 }\n"
	    "scheduler: { time_limit: 60m, backend: local }\n"
	    "resources:\n  nodes: 2\n");
	ck_assert_str_eq(a, b);
	free(b);
	ck_assert_ptr_nonnull(strchr(a, ' '));

	/* Changing a value changes every id. */
	b = ids_of(BASE "resources: { nodes: 2 }\nrepeats: 2\n"
	    "scheduler: { time_limit: 2h }\n"
	    "matrix:\n  trainer.batch_size: [16, 32]\n");
	ck_assert_str_ne(a, b);
	ck_assert_int_ne(strncmp(a, b, 12), 0);
	free(b);
	b = ids_of("version: 1\nname: t2\ntrainer:\n  data: /scratch/shards\n"
	    "resources: { nodes: 2 }\nrepeats: 2\n"
	    "matrix:\n  trainer.batch_size: [16, 32]\n");
	ck_assert_str_ne(a, b);
	free(b);
	/* The matrix order changes the run order, not the ids. */
	b = ids_of(BASE "resources: { nodes: 2 }\nrepeats: 2\n"
	    "matrix:\n  trainer.batch_size: [32, 16]\n");
	c = ids_of(BASE "resources: { nodes: 2 }\nrepeats: 2\n"
	    "include:\n  - {trainer.batch_size: 32}\n"
	    "  - {trainer.batch_size: 16}\n");
	ck_assert_str_eq(b, c);
	ck_assert_str_ne(a, b);
	ck_assert_uint_eq(strlen(a), strlen(b));
	free(b);
	free(c);
	free(a);

	/* Same spec, same ids, every time. */
	a = ids_of(BASE);
	b = ids_of(BASE);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
}
END_TEST

static void
check_format(const struct spec_run *r, enum spec_key k, const char *want)
{
	char	*t = spec_run_format(r, k);

	ck_assert_str_eq(t, want);
	free(t);
}

static void
check_resolved(const struct spec *s, const char *path, const char *want)
{
	char	*t = spec_resolve_path(s, path);

	ck_assert_str_eq(t, want);
	free(t);
}

START_TEST(test_accessors)
{
	struct spec		*s;
	struct spec_plan	*p;
	const struct spec_run	*r;
	struct spec_model_dims	 m;
	char *const		*list;
	size_t			 n;

	s = parse_ok("version: 1\nname: acc\n"
	    "scheduler: { backend: slurm, extra: [\"--exclusive\"] }\n"
	    "resources: { memory: 64G }\n"
	    "trainer:\n  data: rel/shards\n"
	    "  model: { layers: 6, hidden: 384, heads: 6 }\n"
	    "  optimizer: { lr: 2e-5 }\n"
	    "matrix:\n  trainer.optimizer.lr: [1e-4, 3e-4]\n"
	    "  scheduler.time_limit: [90m]\n"
	    "  trainer.grad_checkpointing: [true]\n");
	p = expand(s);
	ck_assert_ptr_eq(spec_plan_spec(p), s);
	r = spec_plan_run(p, 1);
	ck_assert(spec_run_double(r, SPEC_K_OPT_LR) == 3e-4);
	ck_assert(spec_get_double(s, SPEC_K_OPT_LR) == 2e-5);
	ck_assert_int_eq(spec_run_int(r, SPEC_K_SCHED_TIME_LIMIT), 5400);
	ck_assert_int_eq(spec_run_bool(r, SPEC_K_GRAD_CHECKPOINTING), 1);
	ck_assert_int_eq(spec_run_int(r, SPEC_K_RES_MEMORY), (int64_t)64 << 30);
	ck_assert_str_eq(spec_run_string(r, SPEC_K_MODEL), "custom");
	ck_assert_int_eq(spec_run_int(r, SPEC_K_MODEL_LAYERS), 6);
	ck_assert_int_eq(spec_run_int(r, SPEC_K_MODEL_INTERMEDIATE), 1536);
	ck_assert_int_eq(spec_run_int(r, SPEC_K_MODEL_VOCAB_SIZE), 30522);
	spec_run_model(r, &m);
	ck_assert_int_eq(m.hidden, 384);
	ck_assert_int_eq(m.heads, 6);
	ck_assert_int_eq(m.max_position, 512);
	list = spec_run_list(r, SPEC_K_SCHED_EXTRA, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(list[0], "--exclusive");
	ck_assert(spec_run_is_set(r, SPEC_K_RES_MEMORY));
	ck_assert(!spec_run_is_set(r, SPEC_K_RES_GPU_TYPE));
	ck_assert_int_eq(spec_run_ranks_per_node(r), 1);	/* CPU */
	check_format(r, SPEC_K_SCHED_TIME_LIMIT, "1h30m");
	check_format(r, SPEC_K_OPT_LR, "0.0003");
	check_format(r, SPEC_K_RES_MEMORY, "64GiB");
	check_format(r, SPEC_K_RES_GPU_TYPE, "");
	check_format(r, SPEC_K_MODEL_HEADS, "6");

	ck_assert_str_eq(spec_file(s), "t.yaml");
	ck_assert_str_eq(spec_dir(s), ".");
	check_resolved(s, spec_run_string(r, SPEC_K_DATA), "./rel/shards");
	check_resolved(s, "/abs", "/abs");
	check_resolved(s, "$TMPDIR/x", "$TMPDIR/x");
	spec_plan_free(p);
	spec_free(s);

	/* The model varying over presets: dimensions follow each run. */
	s = parse_ok(BASE "resources: { gpus_per_node: 4 }\n"
	    "matrix:\n  trainer.model: [bert-tiny, bert-large]\n");
	p = expand(s);
	ck_assert_int_eq(spec_run_int(spec_plan_run(p, 0), SPEC_K_MODEL_HIDDEN),
	    128);
	ck_assert_int_eq(spec_run_int(spec_plan_run(p, 1), SPEC_K_MODEL_LAYERS),
	    24);
	ck_assert_int_eq(spec_run_ranks_per_node(spec_plan_run(p, 1)), 4);
	spec_plan_free(p);
	spec_free(s);
}
END_TEST

START_TEST(test_cross_checks)
{
	expect_error(BASE "scheduler: { time_limit: 2m, signal_grace: 2m }\n",
	    "scheduler.signal_grace (2m) must be shorter than "
	    "scheduler.time_limit (2m)");
	expect_error(BASE "  model: {layers: 2, hidden: 100, heads: 3}\n",
	    "trainer.model.hidden (100) must be a multiple of "
	    "trainer.model.heads (3)");
	expect_error(BASE "  model: {layers: 2, hidden: 96}\n",
	    "missing required key 'trainer.model.heads'");
	expect_error(BASE "  seq_len: 513\n",
	    "trainer.seq_len (513) is longer than the model's max_position "
	    "(512)");
	expect_error(BASE "resources: {gpus_per_node: 2, ranks_per_node: 1}\n",
	    "resources.ranks_per_node (1) must equal resources.gpus_per_node "
	    "(2)");
	expect_error(BASE "  precision: fp16\n", "trainer.precision fp16 needs "
	    "GPUs");
	expect_error(BASE "launcher: srun\n", "launcher srun needs a Slurm "
	    "backend, but scheduler.backend is local");
	expect_error(BASE "container: {runtime: singularity}\n",
	    "container.image is required when container.runtime is "
	    "singularity");
	expect_error(BASE "scheduler: {backend: slurm-rest}\n",
	    "scheduler.rest.url is required");
	/* CPU ranks may be set freely. */
	spec_free(parse_ok(BASE "resources: {ranks_per_node: 4}\n"));
}
END_TEST

/* ------------------------------------------------------------ programs */

#define PROG	HEAD "program:\n  command: [sh, run.sh, \"{batch}\"]\n" \
	"  vars: { batch: 32 }\n"

START_TEST(test_program_accessors)
{
	struct spec		*s;
	struct spec_plan	*p;
	const struct spec_run	*r;
	char *const		*list;
	size_t			 n;

	/* Defaults, and no trainer needed. */
	s = parse_ok(PROG);
	ck_assert(spec_is_program(s));
	ck_assert_str_eq(spec_get_string(s, SPEC_K_PROG_LAUNCH), "per_rank");
	ck_assert_str_eq(spec_get_string(s, SPEC_K_PROG_SIGNAL), "SIGUSR1");
	ck_assert_str_eq(spec_get_string(s, SPEC_K_PROG_WORKDIR), ".");
	ck_assert_int_eq(spec_get_int(s, SPEC_K_PROG_CHECKPOINT_EVERY), 0);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_PROG_KEEP_CHECKPOINTS), 2);
	ck_assert(!spec_is_set(s, SPEC_K_PROG_METRICS_REGEX));
	/* The list form: no string. */
	ck_assert_ptr_null(spec_get_string(s, SPEC_K_PROG_COMMAND));
	list = spec_get_list(s, SPEC_K_PROG_COMMAND, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(list[0], "sh");
	ck_assert_str_eq(list[2], "{batch}");
	ck_assert_ptr_null(list[3]);
	p = expand(s);
	r = spec_plan_run(p, 0);
	list = spec_run_pairs(r, SPEC_K_PROG_ENV, &n);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_null(list[0]);
	ck_assert_str_eq(spec_run_var(r, "batch"), "32");
	ck_assert_ptr_null(spec_run_var(r, "lr"));
	ck_assert_uint_eq(spec_nvaried_vars(s), 0);
	spec_plan_free(p);
	spec_free(s);
	s = parse_ok(BASE);
	ck_assert(!spec_is_program(s));
	spec_free(s);

	/* Every key, the string form, and vars varied by the matrix. */
	s = parse_ok(HEAD "program:\n"
	    "  command: \"exec sh run.sh --lr {lr} --n {nnodes} '{{x}}'\"\n"
	    "  launch: once\n  workdir: /\n"
	    "  env: { OMP_NUM_THREADS: 4, A_B: true }\n"
	    "  vars: { lr: 1e-3, batch: 32 }\n"
	    "  signal: SIGTERM\n  checkpoint_every: 20m\n"
	    "  keep_checkpoints: 0\n"
	    "  metrics: { regex: 'step (?P<step>\\d+) loss (?<loss>\\S+)' }\n"
	    "  setup: [\"mkdir -p {run_dir}/x\", \"true\"]\n"
	    "matrix:\n  program.vars.batch: [16, 32]\n"
	    "  program.launch: [once, per_node]\n"
	    "  program.vars.extra: [a]\n");
	ck_assert_str_eq(spec_get_string(s, SPEC_K_PROG_COMMAND),
	    "exec sh run.sh --lr {lr} --n {nnodes} '{{x}}'");
	(void)spec_get_list(s, SPEC_K_PROG_COMMAND, &n);
	ck_assert_uint_eq(n, 0);
	ck_assert_str_eq(spec_get_string(s, SPEC_K_PROG_METRICS_REGEX),
	    "step (?P<step>\\d+) loss (?<loss>\\S+)");
	ck_assert_int_eq(spec_get_int(s, SPEC_K_PROG_CHECKPOINT_EVERY), 1200);
	ck_assert_int_eq(spec_get_int(s, SPEC_K_PROG_KEEP_CHECKPOINTS), 0);
	list = spec_get_list(s, SPEC_K_PROG_SETUP, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(list[0], "mkdir -p {run_dir}/x");
	ck_assert_uint_eq(spec_nvaried(s), 2);
	ck_assert_int_eq(spec_varied(s, 0), SPEC_K_PROG_VARS);
	ck_assert_int_eq(spec_varied(s, 1), SPEC_K_PROG_LAUNCH);
	ck_assert_uint_eq(spec_nvaried_vars(s), 2);
	ck_assert_str_eq(spec_varied_var(s, 0), "batch");
	ck_assert_str_eq(spec_varied_var(s, 1), "extra");
	p = expand(s);
	ck_assert_uint_eq(spec_plan_nruns(p), 4);
	r = spec_plan_run(p, 1);
	ck_assert_str_eq(spec_run_string(r, SPEC_K_PROG_LAUNCH), "per_node");
	ck_assert_str_eq(spec_run_var(r, "batch"), "16");
	ck_assert_str_eq(spec_run_var(r, "lr"), "1e-3");
	ck_assert_str_eq(spec_run_var(r, "extra"), "a");
	/* sorted by name, values as written */
	list = spec_run_pairs(r, SPEC_K_PROG_VARS, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(list[0], "batch");
	ck_assert_str_eq(list[2], "extra");
	ck_assert_str_eq(list[4], "lr");
	ck_assert_str_eq(list[5], "1e-3");
	check_format(r, SPEC_K_PROG_VARS, "batch=16, extra=a, lr=1e-3");
	list = spec_run_pairs(r, SPEC_K_PROG_ENV, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(list[0], "A_B");
	ck_assert_str_eq(list[1], "true");
	ck_assert_str_eq(list[3], "4");
	ck_assert_str_eq(spec_run_var(spec_plan_run(p, 3), "batch"), "32");
	spec_plan_free(p);
	spec_free(s);
}
END_TEST

START_TEST(test_program_errors)
{
	expect_error(HEAD "program:\n  command: [sh, \"{nodes}\"]\n",
	    "t.yaml:4:17: error: program.command: unknown placeholder {nodes}: "
	    "not a built-in name (nnodes, nproc_per_node, node_rank, ranks, "
	    "rdzv_endpoint, master_addr, master_port, hostfile, run_dir, "
	    "checkpoint_dir, resume_from, attempt, metrics) nor a var "
	    "(program.vars has none)");
	expect_error(HEAD "program:\n  command: [sh, x]\n"
	    "  setup: [\"ok {attempt}\", \"echo {b}\"]\n",
	    "t.yaml:5:27: error: program.setup: unknown placeholder {b}");
	expect_error(HEAD "program:\n  command: [\"\", x]\n",
	    "program.command: the first word, the program, is empty");
	expect_error(HEAD "program:\n  command: [sh, [x]]\n",
	    "program.command: expected a word (text), got a list");
	expect_error(HEAD "program:\n  command: {a: b}\n",
	    "program.command: expected a list of words such as [python3, "
	    "train.py], or a string for sh -c, got a mapping");
	expect_error(HEAD "program:\n  command: [sh]\n  vars: { a: [1] }\n",
	    "program.vars.a: expected a value (text, a number or true/false), "
	    "got a list");
	expect_error(HEAD "program:\n  command: [sh]\n  vars: { ranks: 1 }\n",
	    "program.vars: ranks is a built-in {ranks}");
	expect_error(HEAD "program:\n  command: [sh]\n  env: { CADRE_X: 1 }\n",
	    "program.env: CADRE_X: CADRE_* variables are cadre's own");
	expect_error(HEAD "program:\n  command: [sh]\n  setup: [\" \"]\n",
	    "program.setup: an empty string");
	expect_error(HEAD "program:\n  command: [sh]\n  workdir: $HOME/x\n",
	    "program.workdir: variables are not expanded here");
	expect_error(HEAD "program:\n  command: [sh]\n"
	    "  metrics: { regex: 'step (?<step>\\d+)(' }\n",
	    "program.metrics.regex: missing closing parenthesis, at column 19 "
	    "of the pattern");
	expect_error(HEAD "program:\n  command: [sh]\n  checkpoint_every: 5\n",
	    "program.checkpoint_every: expected a duration, got the bare "
	    "number 5");
	/* Both sections, neither, and each one's keys in the other. */
	expect_error(BASE "program: { command: [sh] }\n",
	    "t.yaml:5:1: error: program: a spec has a trainer section (line 3) "
	    "or a program section, not both; remove one");
	expect_error(HEAD "resources: { nodes: 2 }\n",
	    "t.yaml:1:1: error: the spec runs nothing");
	expect_error(PROG "matrix: { trainer.seed: [1, 2] }\n",
	    "matrix: trainer.seed is for cadre's trainer, and this spec runs a "
	    "program");
	expect_error(PROG "include: [ { trainer.seed: 1 } ]\n",
	    "include: trainer.seed is for cadre's trainer");
	expect_error(PROG "eval: { at: [20m] }\n",
	    "eval.at is for cadre's trainer");
	expect_error(BASE "include: [ { program.vars.x: 1 } ]\n",
	    "include: program.vars is for a program, and this spec runs "
	    "cadre's trainer");
	/* A var the matrix alone gives: include entries must give it too. */
	expect_error(PROG "matrix: { program.vars.lr: [1, 2] }\n"
	    "include: [ { program.vars.batch: 8 } ]\n",
	    "t.yaml:7:12: error: include: this entry gives no value to "
	    "program.vars.lr, which has no default");
	expect_error(PROG "matrix: { resources.nodes: [1, 2] }\n"
	    "include: [ { program.vars.lr: 8 } ]\n",
	    "include: program.vars.lr has no default under program.vars, and "
	    "the matrix's configurations do not set it");
	expect_error(PROG "matrix: { program.vars.batch: [1, 01, 1] }\n",
	    "matrix: program.vars.batch: '1' is the same value as '1'");
	expect_error(PROG "exclude: [ { program.vars.batch: 1 } ]\n"
	    "matrix: { resources.nodes: [1] }\n",
	    "exclude: program.vars.batch is not a matrix key");
	expect_error(PROG "report: { baseline: { program.vars.batch: 32 } }\n",
	    "report.baseline: program.vars.batch does not vary");
}
END_TEST

START_TEST(test_program_ids)
{
	static const char *const changed[] = {
		HEAD "program:\n  command: [sh, run.sh, \"{batch}\"]\n"
		    "  vars: { batch: 32, unused: 1 }\n",
		HEAD "program:\n  command: \"sh run.sh {batch}\"\n"
		    "  vars: { batch: 32 }\n",
		PROG "  launch: once\n",
		PROG "  workdir: /\n",
		PROG "  env: { A: 1 }\n",
		PROG "  signal: SIGUSR2\n",
		PROG "  checkpoint_every: 1h\n",
		PROG "  keep_checkpoints: 0\n",
		PROG "  metrics: { regex: '(?<step>\\d+)' }\n",
		PROG "  setup: [\"true\"]\n",
	};
	struct spec		*s;
	struct spec_plan	*p;
	char			*a, *b;
	size_t			 i;

	/* A trainer spec keeps the ids it had before programs (those of
	 * tests/data/specs/good/minimal.plan.json). */
	a = ids_of("version: 1\nname: minimal\ntrainer:\n"
	    "  data: /scratch/shards\n");
	ck_assert_str_eq(a, "5ef3616d244b/2cef612e0de2 ");
	free(a);

	/* Two values of a var: two ids; the same set of runs whether the
	 * matrix or include entries give them, and a default written out
	 * changes nothing. */
	a = ids_of(PROG "matrix: { program.vars.batch: [16, 32] }\n");
	ck_assert_uint_eq(strlen(a), 2 * 26);
	ck_assert_int_ne(strncmp(a, a + 26, 12), 0);
	b = ids_of(PROG "  launch: per_rank\n  workdir: .\n"
	    "include:\n  - { program.vars.batch: 16 }\n"
	    "  - { program.vars.batch: 32 }\n");
	ck_assert_str_eq(a, b);
	free(b);
	/* The run with batch 32 is the spec without a matrix. */
	b = ids_of(PROG);
	ck_assert_ptr_nonnull(strstr(a, b));
	free(b);
	/* Every program value changes the ids. */
	for (i = 0; i < sizeof changed / sizeof changed[0]; i++) {
		b = ids_of(changed[i]);
		ck_assert_msg(strstr(a, b) == NULL, "same ids: %s", changed[i]);
		free(b);
	}
	free(a);

	/* Exclude and report.baseline by a var's value. */
	s = parse_ok(PROG "matrix: { program.vars.batch: [16, 32, 64] }\n"
	    "exclude: [ { program.vars.batch: 32 } ]\n"
	    "report: { baseline: { program.vars.batch: 64 } }\n");
	p = expand(s);
	ck_assert_uint_eq(spec_plan_nruns(p), 2);
	ck_assert_str_eq(spec_run_var(spec_plan_run(p, 1), "batch"), "64");
	ck_assert(spec_has_baseline(s));
	ck_assert(!spec_baseline_matches(s, 0));
	ck_assert(spec_baseline_matches(s, 1));
	spec_plan_free(p);
	spec_free(s);
}
END_TEST

/* ------------------------------------------------------------ diagnostics */

START_TEST(test_diags)
{
	struct diags	 d;
	char		*text;
	int		 i;

	diags_init(&d);
	diag_error(&d, "a.yaml", 3, 4, "third");
	diag_warning(&d, "a.yaml", 1, 9, "first %d", 1);
	diag_error(&d, "a.yaml", 0, 0, "no position");
	diag_error(&d, "a.yaml", 3, 4, "fourth, same place");
	diag_error(&d, "a.yaml", 3, 4, "third");	/* a repeat: dropped */
	ck_assert_uint_eq(diags_errors(&d), 3);
	ck_assert_uint_eq(diags_warnings(&d), 1);
	text = diags_text(&d);
	ck_assert_str_eq(text,
	    "a.yaml: error: no position\n"
	    "a.yaml:1:9: warning: first 1\n"
	    "a.yaml:3:4: error: third\n"
	    "a.yaml:3:4: error: fourth, same place\n");
	free(text);
	ck_assert(!diags_full(&d));
	for (i = 0; i < 200; i++)
		diag_error(&d, "a.yaml", (size_t)i + 10, 1, "e%d", i);
	ck_assert(diags_full(&d));
	ck_assert_uint_eq(diags_errors(&d), 203);
	ck_assert_uint_eq(d.n, DIAG_MAX_KEPT);
	text = diags_text(&d);
	ck_assert_ptr_nonnull(strstr(text, "a.yaml: error: too many problems; "
	    "104 more not shown\n"));
	free(text);
	diags_free(&d);
}
END_TEST

/* A valid spec near 1 MiB: 40,000 exclude entries and a long list. */
START_TEST(test_big_valid)
{
	struct cbuf	 b;
	struct spec	*s;
	int		 i;

	cbuf_init(&b, SIZE_MAX);
	cbuf_adds(&b, BASE "matrix:\n  trainer.seed: [");
	for (i = 0; i < 5000; i++)
		cbuf_addf(&b, "%s%d", i > 0 ? ", " : "", i);
	cbuf_adds(&b, "]\n  resources.nodes: [1, 2]\nexclude:\n");
	for (i = 0; b.len < SPEC_MAX_BYTES - 100; i++)
		cbuf_addf(&b, "  - {trainer.seed: %d, resources.nodes: 2}\n",
		    i % 5000);
	s = parse_ok(b.data);
	ck_assert_uint_eq(spec_nconfigs(s), 5000);
	spec_free(s);
	cbuf_free(&b);
}
END_TEST

static Suite *
spec_suite(void)
{
	Suite	*s = suite_create("spec");
	TCase	*tc = tcase_create("spec");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_key_table);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_typed_values);
	tcase_add_test(tc, test_value_errors);
	tcase_add_test(tc, test_unknown_keys);
	tcase_add_test(tc, test_one_pass);
	tcase_add_test(tc, test_required);
	tcase_add_test(tc, test_yaml_structure);
	tcase_add_test(tc, test_size_limit);
	tcase_add_test(tc, test_alias_bomb);
	tcase_add_test(tc, test_depth_limit);
	tcase_add_test(tc, test_many_keys);
	tcase_add_test(tc, test_matrix_product);
	tcase_add_test(tc, test_matrix_errors);
	tcase_add_test(tc, test_run_bound);
	tcase_add_test(tc, test_exclude_include);
	tcase_add_test(tc, test_exclude_many);
	tcase_add_test(tc, test_ids_stable);
	tcase_add_test(tc, test_accessors);
	tcase_add_test(tc, test_cross_checks);
	tcase_add_test(tc, test_program_accessors);
	tcase_add_test(tc, test_program_errors);
	tcase_add_test(tc, test_program_ids);
	tcase_add_test(tc, test_diags);
	tcase_add_test(tc, test_big_valid);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(spec_suite());
}
