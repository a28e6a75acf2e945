/* `cadre-train vocab` (build a WordPiece vocab from text) and `cadre-train
 * tokenize` (text lines to ids or tokens, for tests, benchmarks and users). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cmd_tokenize.h"
#include "error.h"
#include "strutil.h"
#include "tokenizer.h"
#include "vocab_build.h"
#include "xmalloc.h"

/* The most text `tokenize` holds at once. */
#define TOKENIZE_MAX_INPUT	(4ull << 30)
#define TOKENIZE_MAX_THREADS	256

static double
clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A whole positive number within [min, max] from an option. */
static int
opt_uint(const char *cmd, const char *opt, const char *s, int64_t min,
    int64_t max, int64_t *out)
{
	if (str_to_int64(s, out) != 0 || *out < min || *out > max) {
		fprintf(stderr, "cadre-train %s: %s wants a whole number from %lld to %lld, not \"%s\"\n",
		    cmd, opt, (long long)min, (long long)max, s);
		return CADRE_ERR_INVALID;
	}
	return 0;
}

/* ----------------------------------------------------------------- vocab */

static void
vocab_usage(FILE *f)
{
	fprintf(f,
"usage: cadre-train vocab --size N -o VOCAB.txt [options] FILE...\n"
"Builds a WordPiece vocabulary of N tokens from text files (\"-\": stdin):\n"
"[PAD] [UNK] [CLS] [SEP] [MASK], the characters seen, then the most frequent\n"
"merged subwords (\"##\" marks a continuation). See docs/tokenizer.md.\n"
"\n"
"  --size N              tokens in the vocab, specials included (default 30522)\n"
"  --min-frequency N     merge only pairs seen at least N times (default 2)\n"
"  --cased               keep case and accents (default: lower-case, strip accents)\n"
"  -o, --output FILE     where the vocab goes (one token per line)\n"
"  --threads N           count words with N threads (files of 4 MiB and more;\n"
"                        the vocab is the same whatever N; default 1)\n"
"  --quiet               no progress or summary on stderr\n"
"  -h, --help            this text\n");
}

/* Writes the tokens to path through a temporary file renamed into place. */
static int
write_vocab(const char *path, const char *const *tokens, size_t n)
{
	char *tmp;
	FILE *f;
	size_t i;
	int rc = 0;

	xasprintf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	if ((f = fopen(tmp, "w")) == NULL) {
		fprintf(stderr, "cadre-train vocab: %s: %s\n", tmp, strerror(errno));
		free(tmp);
		return CADRE_ERR_SYSTEM;
	}
	for (i = 0; i < n; i++)
		fprintf(f, "%s\n", tokens[i]);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0 || ferror(f))
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -1;
	if (rc != 0) {
		fprintf(stderr, "cadre-train vocab: writing %s: %s\n", path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	return rc;
}

int
cmd_vocab(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "min-frequency", required_argument, NULL, 'm' },
		{ "cased", no_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "threads", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct vocab_opts vo = { 30522, 2, TOK_OPTS_DEFAULT, 0, 1 };
	struct vocab_builder *vb = NULL;
	struct tokenizer *t = NULL;
	const char *out = NULL;
	const char *const *tokens;
	char err[512], hex[2 * SHA256_DIGEST_LEN + 1];
	size_t n, distinct;
	uint32_t seen, kept;
	uint64_t total;
	int64_t v;
	int c, quiet = 0, rc = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (opt_uint("vocab", "--size", optarg, TOK_NSPECIAL + 1,
			    TOK_VOCAB_MAX_TOKENS, &v) != 0)
				return 2;
			vo.size = (uint32_t)v;
			break;
		case 'm':
			if (opt_uint("vocab", "--min-frequency", optarg, 1, INT64_MAX, &v) != 0)
				return 2;
			vo.min_frequency = (uint64_t)v;
			break;
		case 'c':
			vo.tok.lower_case = 0;
			break;
		case 'o':
			out = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'j':
			if (opt_uint("vocab", "--threads", optarg, 1,
			    TOKENIZE_MAX_THREADS, &v) != 0)
				return 2;
			vo.threads = (int)v;
			break;
		case 'h':
			vocab_usage(stdout);
			return 0;
		default:
			vocab_usage(stderr);
			return 2;
		}
	}
	if (out == NULL || optind >= argc) {
		fprintf(stderr, "cadre-train vocab: %s\n", out == NULL ?
		    "-o FILE is required" : "no input files (\"-\" reads stdin)");
		vocab_usage(stderr);
		return 2;
	}
	vo.progress = !quiet && isatty(STDERR_FILENO);
	vb = vb_new(&vo);
	for (; optind < argc; optind++) {
		if (vb_add_file(vb, argv[optind], err, sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			goto out;
		}
	}
	n = vb_build(vb, &tokens);
	vb_alphabet(vb, &seen, &kept);
	if (kept < seen)
		fprintf(stderr, "cadre-train vocab: warning: %u of the %u characters seen do not "
		    "fit in %u tokens; words with them will be [UNK] (a larger --size?)\n",
		    seen - kept, seen, vo.size);
	if (write_vocab(out, tokens, n) != 0)
		goto out;
	/* Read back through the loader: what was written is a valid vocab. */
	if (tok_load(out, &vo.tok, &t, err, sizeof(err)) != 0) {
		fprintf(stderr, "cadre-train vocab: the vocab written does not load: %s\n", err);
		goto out;
	}
	if (!quiet) {
		vb_word_counts(vb, &distinct, &total);
		sha256_hex(tok_vocab_hash(t), SHA256_DIGEST_LEN, hex);
		fprintf(stderr, "cadre-train vocab: %s: %zu tokens from %llu words (%zu distinct), sha256 %s\n",
		    out, n, (unsigned long long)total, distinct, hex);
		if (n < vo.size)
			fprintf(stderr, "cadre-train vocab: fewer than the %u asked for: the text has no more "
			    "pairs seen %llu times (more text, or a lower --min-frequency)\n",
			    vo.size, (unsigned long long)vo.min_frequency);
	}
	rc = 0;
out:
	tok_free(t);
	vb_free(vb);
	return rc;
}

/* -------------------------------------------------------------- tokenize */

static void
tokenize_usage(FILE *f)
{
	fprintf(f,
"usage: cadre-train tokenize --vocab VOCAB.txt [options] [FILE...]\n"
"Tokenizes each line of the files (default: stdin) as BERT does and prints\n"
"one line of ids (or tokens) per input line.\n"
"\n"
"  --vocab FILE          the vocab.txt (one token per line)\n"
"  --tokens              print tokens instead of ids\n"
"  --cased               keep case and accents (default: lower-case, strip accents)\n"
"  --threads N           tokenize with N threads (default 1); output order is kept\n"
"  --stats               lines, tokens and tokens per second on stderr\n"
"  --quiet               print nothing per line (with --stats: a benchmark)\n"
"  --hash                print the vocab's SHA-256 (what shards record) and exit\n"
"  -h, --help            this text\n");
}

struct tok_job {
	const struct tokenizer *t;
	const char	*text;
	const size_t	*starts;	/* line i is [starts[i], starts[i + 1] - 1) */
	size_t		 first, last;	/* lines [first, last) */
	int		 tokens, quiet, started;
	struct cbuf	 out;
	uint64_t	 ntokens;
};

static void
put_u32(struct cbuf *b, uint32_t v)
{
	char tmp[12];
	int i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	cbuf_add(b, tmp + i, sizeof(tmp) - i);
}

static void *
tok_job_run(void *arg)
{
	struct tok_job *j = arg;
	struct tok_state *st = tok_state_new();
	const int32_t *ids;
	size_t i, k, n;
	uint64_t ntokens = 0;	/* local: jobs[] share cache lines */

	for (i = j->first; i < j->last; i++) {
		size_t b = j->starts[i], e = j->starts[i + 1] - 1;

		n = tok_encode(j->t, st, j->text + b, e - b, &ids);
		ntokens += n;
		if (j->quiet)
			continue;
		for (k = 0; k < n; k++) {
			if (k > 0)
				cbuf_addc(&j->out, ' ');
			if (j->tokens)
				cbuf_adds(&j->out, tok_token(j->t, (uint32_t)ids[k]));
			else
				put_u32(&j->out, (uint32_t)ids[k]);
		}
		cbuf_addc(&j->out, '\n');
	}
	j->ntokens = ntokens;
	tok_state_free(st);
	return NULL;
}

int
cmd_tokenize(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "vocab", required_argument, NULL, 'v' },
		{ "tokens", no_argument, NULL, 't' },
		{ "cased", no_argument, NULL, 'c' },
		{ "threads", required_argument, NULL, 'j' },
		{ "stats", no_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "hash", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct tok_opts to = TOK_OPTS_DEFAULT;
	struct tokenizer *t = NULL;
	struct tok_job *jobs = NULL;
	pthread_t *tids = NULL;
	struct cbuf in;
	const char *vocab = NULL;
	char err[512], hex[2 * SHA256_DIGEST_LEN + 1];
	size_t *starts = NULL, nlines = 0, i, cap;
	uint64_t ntokens = 0;
	int64_t v;
	int c, tokens = 0, stats = 0, quiet = 0, hash = 0, threads = 1, rc = 1;
	double t0, c0, secs, cpu;

	cbuf_init(&in, TOKENIZE_MAX_INPUT);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'v':
			vocab = optarg;
			break;
		case 't':
			tokens = 1;
			break;
		case 'c':
			to.lower_case = 0;
			break;
		case 's':
			stats = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'H':
			hash = 1;
			break;
		case 'j':
			if (opt_uint("tokenize", "--threads", optarg, 1,
			    TOKENIZE_MAX_THREADS, &v) != 0)
				return 2;
			threads = (int)v;
			break;
		case 'h':
			tokenize_usage(stdout);
			return 0;
		default:
			tokenize_usage(stderr);
			return 2;
		}
	}
	if (vocab == NULL) {
		fprintf(stderr, "cadre-train tokenize: --vocab FILE is required\n");
		tokenize_usage(stderr);
		return 2;
	}
	if (tok_load(vocab, &to, &t, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	if (hash) {
		sha256_hex(tok_vocab_hash(t), SHA256_DIGEST_LEN, hex);
		printf("%s\n", hex);
		rc = 0;
		goto out;
	}
	do {
		const char *path = optind < argc ? argv[optind] : "-";
		int r = cbuf_read_file(&in, path);

		if (r != 0) {
			fprintf(stderr, "cadre-train tokenize: %s: %s\n", path,
			    r == CADRE_ERR_TOO_LARGE ? "input over 4 GiB in all: split it" :
			    strerror(errno));
			goto out;
		}
	} while (++optind < argc);
	/* Line starts, with a sentinel one past the end of the last line. */
	cap = 1024;
	starts = xreallocarray(NULL, cap, sizeof(*starts));
	for (i = 0; i < in.len; ) {
		const char *nl = memchr(in.data + i, '\n', in.len - i);
		size_t e = nl != NULL ? (size_t)(nl - in.data) : in.len;

		if (nlines + 2 > cap) {
			cap *= 2;
			starts = xreallocarray(starts, cap, sizeof(*starts));
		}
		starts[nlines++] = i;
		i = e + 1;
	}
	starts[nlines] = in.len + (in.len > 0 && in.data[in.len - 1] != '\n');

	jobs = xcalloc((size_t)threads, sizeof(*jobs));
	tids = xcalloc((size_t)threads, sizeof(*tids));
	t0 = clock_s(CLOCK_MONOTONIC);
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	for (c = 0; c < threads; c++) {
		struct tok_job *j = &jobs[c];

		j->t = t;
		j->text = in.data;
		j->starts = starts;
		j->first = nlines * (size_t)c / (size_t)threads;
		j->last = nlines * ((size_t)c + 1) / (size_t)threads;
		j->tokens = tokens;
		j->quiet = quiet;
		cbuf_init(&j->out, SIZE_MAX);
		/* A thread that cannot start is run here instead. */
		j->started = threads > 1 &&
		    pthread_create(&tids[c], NULL, tok_job_run, j) == 0;
		if (!j->started)
			tok_job_run(j);
	}
	for (c = 0; c < threads; c++)
		if (jobs[c].started)
			pthread_join(tids[c], NULL);
	secs = clock_s(CLOCK_MONOTONIC) - t0;
	cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	for (c = 0; c < threads; c++) {
		if (jobs[c].out.len > 0)
			fwrite(jobs[c].out.data, 1, jobs[c].out.len, stdout);
		ntokens += jobs[c].ntokens;
	}
	if (fflush(stdout) != 0) {
		fprintf(stderr, "cadre-train tokenize: writing: %s\n", strerror(errno));
		goto out;
	}
	if (stats)
		fprintf(stderr, "tokenize: %zu lines, %zu bytes, %llu tokens, %.3f s, %.0f tokens/s, "
		    "%d threads, %.3f cpu-s, %.0f tokens/cpu-s\n",
		    nlines, in.len, (unsigned long long)ntokens, secs,
		    secs > 0 ? (double)ntokens / secs : 0.0, threads, cpu,
		    cpu > 0 ? (double)ntokens / cpu : 0.0);
	rc = 0;
out:
	for (c = 0; jobs != NULL && c < threads; c++)
		cbuf_free(&jobs[c].out);
	free(jobs);
	free(tids);
	free(starts);
	cbuf_free(&in);
	tok_free(t);
	return rc;
}
