/* cadre export: one timed checkpoint of a run as a Hugging Face model
 * directory (config.json, model.safetensors, vocab.txt,
 * tokenizer_config.json) that transformers' from_pretrained() loads. It
 * reads the database and the run directory; it needs no daemon. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cli.h"
#include "collect.h"
#include "duration.h"
#include "error.h"
#include "json.h"
#include "rundir.h"
#include "state.h"
#include "strutil.h"
#include "xmalloc.h"

struct export_opts {
	int64_t		 at;		/* seconds; -1: not given */
	int64_t		 step;		/* -1: not given */
	int		 final;		/* the newest complete checkpoint */
	const char	*state_dir;
};

static int
export_opt(void *ctx, const char *name, const char *arg)
{
	struct export_opts	*o = ctx;

	if (strcmp(name, "at") == 0) {
		if (duration_parse(arg, &o->at) != 0 || o->at <= 0) {
			cli_usage_error(&cli_cmd_export, "--at '%s': expected a "
			    "training time such as 20m or 1h", arg);
			return CADRE_ERR_INVALID;
		}
	} else if (strcmp(name, "step") == 0) {
		if (str_to_int64(arg, &o->step) != 0 || o->step < 0) {
			cli_usage_error(&cli_cmd_export, "--step '%s': expected "
			    "a step number", arg);
			return CADRE_ERR_INVALID;
		}
	} else if (strcmp(name, "final") == 0)
		o->final = 1;
	else if (strcmp(name, "state-dir") == 0)
		o->state_dir = arg;
	return 0;
}

struct pick {
	const struct export_opts	*o;
	struct state_checkpoint		 c;	/* path NULL: none found */
	char				 avail[512];
};

static int
pick_one(void *ctx, const struct state_checkpoint *c)
{
	struct pick	*p = ctx;
	char		 d[32];
	size_t		 n = strlen(p->avail);

	if (!c->removed && n + 40 < sizeof p->avail) {
		duration_format((int64_t)llround(c->due_s), d, sizeof d);
		snprintf(p->avail + n, sizeof p->avail - n, "%s%s (step %" PRId64
		    ")", n > 0 ? ", " : "", d, c->step);
	}
	if (p->c.path != NULL || c->removed)
		return 0;
	if ((p->o->at >= 0 && fabs(c->due_s - (double)p->o->at) < 0.5) ||
	    (p->o->step >= 0 && c->step == p->o->step)) {
		p->c = *c;
		p->c.path = xstrdup(c->path);
		p->c.eval_error = NULL;
	}
	return 0;
}

/* Copies src to dst (created 0644). */
static int
copy_file(const char *src, const char *dst)
{
	char	buf[1 << 16];
	ssize_t	n, w, off;
	int	in, out, rc = 0;

	if ((in = open(src, O_RDONLY | O_CLOEXEC)) == -1)
		return CADRE_ERR_SYSTEM;
	if ((out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) == -1) {
		close(in);
		return CADRE_ERR_SYSTEM;
	}
	while (rc == 0 && (n = read(in, buf, sizeof buf)) != 0) {
		if (n == -1) {
			if (errno != EINTR)
				rc = CADRE_ERR_SYSTEM;
			continue;
		}
		for (off = 0; off < n && rc == 0; off += w) {
			if ((w = write(out, buf + off, (size_t)(n - off))) == -1) {
				if (errno == EINTR)
					w = 0;
				else
					rc = CADRE_ERR_SYSTEM;
			}
		}
	}
	if (rc == 0 && fsync(out) != 0)
		rc = CADRE_ERR_SYSTEM;
	close(in);
	if (close(out) != 0 && rc == 0)
		rc = CADRE_ERR_SYSTEM;
	return rc;
}

/* The vocabulary the run trained with: train.json's "vocab", else the
 * one prep stored with the shards (DATA/vocab.txt); NULL when neither. */
static char *
run_vocab(const char *run_dir)
{
	json_t		*o = NULL;
	const char	*v = NULL;
	char		*path, *out = NULL;

	xasprintf(&path, "%s/" RUNDIR_TRAIN_JSON, run_dir);
	if (cjson_load_file(path, (size_t)1 << 20, &o, NULL) == 0) {
		if (cjson_get_string(o, "vocab", &v) == 0)
			out = xstrdup(v);
		else if (cjson_get_string(o, "data", &v) == 0)
			xasprintf(&out, "%s/vocab.txt", v);
	}
	json_decref(o);
	free(path);
	if (out != NULL && access(out, R_OK) != 0) {
		free(out);
		out = NULL;
	}
	return out;
}

/* DIR must be new, or an empty directory. */
static int
target_ok(const char *dir)
{
	struct stat	sb;

	if (stat(dir, &sb) != 0)
		return errno == ENOENT;
	return S_ISDIR(sb.st_mode) && rmdir(dir) == 0;
}

static int
run_export(const struct cli_command *cmd, int argc, char **argv)
{
	struct export_opts	 o = { -1, -1, 0, NULL };
	struct state		*st = NULL;
	struct state_run	 sr;
	struct collect_meta	 meta;
	struct pick		 p;
	const char		*run, *dir;
	char			*src = NULL, *tmp = NULL;
	char			*path = NULL, *to = NULL, *vocab = NULL;
	struct cbuf		 mb = { NULL, 0, 0, 0 };
	char			 msg[512], d[32];
	static const char *const files[] = { "config.json", "model.safetensors" };
	size_t			 i;
	int			 first, rc, ret = CLI_EXIT_FAIL, have_run = 0;
	FILE			*fp;

	memset(&p, 0, sizeof p);
	if ((first = cli_parse(cmd, argc, argv, export_opt, &o)) < 0)
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	if (argc - first != 2) {
		cli_usage_error(cmd, "expected RUN and DIR");
		return CLI_EXIT_USAGE;
	}
	if ((o.at >= 0) + (o.step >= 0) + o.final != 1) {
		cli_usage_error(cmd, "name the checkpoint with --at TIME (e.g. "
		    "20m), --step N or --final, one of them");
		return CLI_EXIT_USAGE;
	}
	run = argv[first];
	dir = argv[first + 1];
	if (cli_open_state("cadre export", o.state_dir, &st) != 0)
		goto out;
	if (state_find_run(st, run, &sr, msg, sizeof msg) != 0) {
		fprintf(stderr, "cadre export: %s\n", msg);
		goto out;
	}
	run = sr.id;
	have_run = 1;
	p.o = &o;
	if (o.final) {
		memset(&p.c, 0, sizeof p.c);
		if (rundir_latest_checkpoint(sr.run_dir, &p.c.path,
		    &p.c.step) != 0) {
			fprintf(stderr, "cadre export: run %s has no final "
			    "checkpoint (%s/" RUNDIR_CHECKPOINTS "/" CKPT_LATEST
			    " names none): --at or --step names a timed one "
			    "(cadre status %s lists them)\n", run, sr.run_dir,
			    run);
			goto out;
		}
	} else if ((rc = state_list_checkpoints(st, run, pick_one, &p)) != 0) {
		fprintf(stderr, "cadre export: %s\n", cadre_strerror(rc));
		goto out;
	}
	if (p.c.path == NULL) {
		if (o.at >= 0)
			duration_format(o.at, d, sizeof d);
		else
			snprintf(d, sizeof d, "step %" PRId64, o.step);
		fprintf(stderr, "cadre export: run %s has no timed checkpoint at "
		    "%s; recorded: %s\n", run, d, p.avail[0] != '\0' ? p.avail :
		    "none (trainer.checkpoint_every of training each)");
		goto out;
	}
	xasprintf(&src, "%s/%s", sr.run_dir, p.c.path);
	xasprintf(&path, "%s/" CKPT_META, src);
	cbuf_init(&mb, COLLECT_META_MAX);
	if ((rc = cbuf_read_file(&mb, path)) != 0) {
		fprintf(stderr, "cadre export: %s: %s\n", path, rc ==
		    CADRE_ERR_TOO_LARGE ? "too large" : strerror(errno));
		goto out;
	}
	if (collect_parse_meta(mb.data != NULL ? mb.data : "", mb.len, &meta,
	    msg, sizeof msg) != 0) {
		fprintf(stderr, "cadre export: %s: %s\n", path, msg);
		goto out;
	}
	if (collect_verify(src, &meta, msg, sizeof msg) != 0) {
		fprintf(stderr, "cadre export: %s: the checkpoint does not match "
		    "its checksums: %s\n", src, msg);
		goto out;
	}
	if (!target_ok(dir)) {
		fprintf(stderr, "cadre export: %s exists and is not an empty "
		    "directory: name a new one\n", dir);
		goto out;
	}
	/* Written beside DIR and renamed: DIR is whole or absent. */
	xasprintf(&tmp, "%s.tmp-%ld", dir, (long)getpid());
	if (mkdir(tmp, 0755) != 0) {
		fprintf(stderr, "cadre export: %s: %s\n", tmp, strerror(errno));
		free(tmp);
		tmp = NULL;
		goto out;
	}
	for (i = 0; i < sizeof files / sizeof files[0]; i++) {
		free(path);
		free(to);
		xasprintf(&path, "%s/%s", src, files[i]);
		xasprintf(&to, "%s/%s", tmp, files[i]);
		if (copy_file(path, to) != 0) {
			fprintf(stderr, "cadre export: %s -> %s: %s\n", path, to,
			    strerror(errno));
			goto out;
		}
	}
	/* The checkpoint's tokenizer, written beside its weights; a
	 * checkpoint of an older cadre-train has none: the run's vocab. */
	free(path);
	xasprintf(&path, "%s/" HF_VOCAB, src);
	if (access(path, R_OK) == 0) {
		for (i = 0; i < 2; i++) {
			static const char *const tok[] = { HF_VOCAB,
			    HF_TOKENIZER_CONFIG_FILE };

			free(path);
			free(to);
			xasprintf(&path, "%s/%s", src, tok[i]);
			xasprintf(&to, "%s/%s", tmp, tok[i]);
			if (copy_file(path, to) != 0) {
				fprintf(stderr, "cadre export: %s -> %s: %s\n",
				    path, to, strerror(errno));
				goto out;
			}
		}
	} else if ((vocab = run_vocab(sr.run_dir)) != NULL) {
		free(to);
		xasprintf(&to, "%s/" HF_VOCAB, tmp);
		if (copy_file(vocab, to) != 0) {
			fprintf(stderr, "cadre export: %s: %s\n", vocab,
			    strerror(errno));
			goto out;
		}
		free(to);
		xasprintf(&to, "%s/" HF_TOKENIZER_CONFIG_FILE, tmp);
		if ((fp = fopen(to, "we")) == NULL ||
		    fputs(HF_TOKENIZER_CONFIG "\n", fp) < 0 || fclose(fp) != 0) {
			fprintf(stderr, "cadre export: %s: %s\n", to,
			    strerror(errno));
			goto out;
		}
	} else
		fprintf(stderr, "cadre export: warning: the run's vocab.txt is "
		    "not found (train.json's vocab or the shards'); the model "
		    "loads, a tokenizer does not\n");
	if (rename(tmp, dir) != 0) {
		fprintf(stderr, "cadre export: %s -> %s: %s\n", tmp, dir,
		    strerror(errno));
		goto out;
	}
	free(tmp);
	tmp = NULL;
	if (o.final)
		printf("run %s: checkpoint %s (the newest, step %" PRId64 ") "
		    "exported to %s\n", run, p.c.path, p.c.step, dir);
	else {
		duration_format((int64_t)llround(p.c.due_s), d, sizeof d);
		printf("run %s: checkpoint %s (at %s: step %" PRId64 ", %" PRId64
		    " samples, trained %.1f s) exported to %s\n", run, p.c.path,
		    d, p.c.step, p.c.samples, p.c.elapsed_s, dir);
	}
	ret = CLI_EXIT_OK;

 out:
	if (tmp != NULL) {
		/* a partial export goes */
		for (i = 0; i < 4; i++) {
			static const char *const all[] = { "config.json",
			    "model.safetensors", HF_VOCAB,
			    HF_TOKENIZER_CONFIG_FILE };

			free(to);
			xasprintf(&to, "%s/%s", tmp, all[i]);
			unlink(to);
		}
		rmdir(tmp);
		free(tmp);
	}
	if (have_run)
		state_run_free(&sr);
	free(p.c.path);
	free(vocab);
	free(to);
	free(path);
	cbuf_free(&mb);
	free(src);
	state_close(st);
	return ret;
}

static const struct cli_option export_options[] = {
	{ "at", 'a', "TIME", "The timed checkpoint at this training time "
	    "(20m, 1h; a multiple of trainer.checkpoint_every)" },
	{ "step", 's', "N", "Or the timed checkpoint of step N" },
	{ "final", 0, NULL, "Or the run's newest complete checkpoint (a done "
	    "run's final one)" },
	{ "state-dir", 0, "DIR", "State directory (default: $CADRE_STATE_DIR, "
	    "...)" },
	{ NULL, 0, NULL, NULL }
};

const struct cli_command cli_cmd_export = {
	.name = "export",
	.operands = "RUN DIR",
	.summary = "Copy a run's timed checkpoint out as a Hugging Face model",
	.description =
	    "Writes DIR (new, or an empty directory) with the checkpoint's\n"
	    "config.json and model.safetensors, checked against the SHA-256 sums\n"
	    "of its meta.json first, and its vocab.txt and tokenizer_config.json\n"
	    "(or the run's vocab.txt): transformers' AutoTokenizer and\n"
	    "AutoModelForPreTraining (or AutoModelForSequenceClassification,\n"
	    "labels named as in labels.txt) .from_pretrained(DIR) load it. The\n"
	    "checkpoint is one cadred recorded (cadre status RUN lists them):\n"
	    "--at TIME names it by its training time, --step N by its step;\n"
	    "--final takes the run's newest complete checkpoint (checkpoints/latest,\n"
	    "a done run's final one). DIR appears whole or not at all.",
	.options = export_options,
	.run = run_export,
};
