/*
 * `cadre-train prep`: text, TSV or JSON lines to a shard set. Files are
 * tokenized in chunks of whole lines by --threads threads, each with its
 * own tok_state, and the results are put together in file order; pairs
 * for NSP are then made from random streams keyed by (seed, dupe, document)
 * alone, so the shard bytes do not depend on --threads. docs/data.md.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "fsutil.h"
#include "loader.h"
#include "prep.h"
#include "prep_int.h"
#include "shard.h"
#include "strutil.h"
#include "tokenizer.h"
#include "xmalloc.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
prep_usage(FILE *f)
{
	fprintf(f,
"usage: cadre-train prep --vocab VOCAB.txt --format text|tsv|jsonl --task pretrain|classify\n"
"                        --seq-len N --out DIR [options] FILE...\n"
"       cadre-train prep --info DIR\n"
"Tokenizes text into a shard set (DIR/shard-NNNNN.bin, vocab.txt, labels.txt)\n"
"for cadre-train train; see docs/data.md.\n"
"\n"
"  --format text         pretrain: one sentence per line, blank lines between documents\n"
"  --format tsv          classify: TEXT<TAB>LABEL or TEXT<TAB>TEXT_B<TAB>LABEL\n"
"                        (a first line whose label column is \"label\" is a header)\n"
"  --format jsonl        one JSON object per line: pretrain, a document in the text\n"
"                        field (sentences on lines); classify, the three fields\n"
"  --seq-len N           tokens per sequence, [CLS] and [SEP]s included (8 to 65536)\n"
"  --threads N           tokenizing threads (default: the CPUs; output is the same)\n"
"  --short-seq-prob X    pretrain: chance of a shorter target length (default 0.1)\n"
"  --dupe-factor N       pretrain: passes over the documents, each pairing\n"
"                        differently (default 1)\n"
"  --seed N              pairing seed (default 12345)\n"
"  --shard-size N        sequences per shard file (default 100000)\n"
"  --text-field NAME --text-b-field NAME --label-field NAME\n"
"                        jsonl fields (default text, text_b, label)\n"
"  --quiet               no progress or summary line\n"
"  --info DIR            check a shard set as training would (against --vocab\n"
"                        when given) and print its header\n"
"  --verify meta|full    with --info: meta (default) trusts the set's\n"
"                        verification record for unchanged shards, as training\n"
"                        does; full checks every shard and rewrites the record\n"
"  -h, --help            this text\n"
"Exit status: 0 done, 1 error writing, 2 usage or bad input (nothing is left in DIR).\n");
}

/* ------------------------------------------------------------------ info */

/* The header of a shard set, checked as the loader checks it (against
 * vocab too when given). */
static int
prep_info(const char *dir, const char *vocab, int verify_full)
{
	struct loader_config lc;
	struct loader *l = NULL;
	const struct shard_info *in;
	char err[1024], hex[65];
	double t0 = now_s(), opened;
	uint32_t i;

	memset(&lc, 0, sizeof lc);
	lc.dir = dir;
	lc.vocab = vocab;
	lc.batch = 1;
	lc.nranks = 1;
	lc.verify_full = verify_full;
	if (loader_open(&lc, &l, err, sizeof err) != 0) {
		fprintf(stderr, "cadre-train prep: %s\n", err);
		return 2;
	}
	opened = now_s() - t0;
	in = loader_info(l);
	sha256_hex(in->vocab_sha256, 32, hex);
	printf("shard set: %s\n", dir);
	printf("kind: %s\n", in->kind == SHARD_PRETRAIN ? "pretrain" : "classify");
	printf("seq_len: %" PRIu32 "\n", in->seq_len);
	printf("sequences: %" PRIu64 "\n", in->sequences);
	printf("shards: %" PRIu32 "\n", in->shards);
	printf("vocab_size: %" PRIu32 "\n", in->vocab_size);
	printf("vocab_sha256: %s%s\n", hex, vocab != NULL ? " (matches --vocab)" : "");
	printf("id_bytes: %" PRIu32 "\n", in->id_bytes);
	printf("special: [PAD] %d [UNK] %d [CLS] %d [SEP] %d [MASK] %d\n",
	    in->special[0], in->special[1], in->special[2], in->special[3],
	    in->special[4]);
	printf("num_labels: %" PRIu32 "\n", in->num_labels);
	for (i = 0; in->label_names != NULL && i < in->num_labels; i++)
		printf("label %" PRIu32 ": %s\n", i, in->label_names[i]);
	printf("opened in: %.3f s\n", opened);
	loader_close(l);
	return 0;
}

/* ------------------------------------------------------------------- main */

static int
opt_num(const char *opt, const char *s, int64_t min, int64_t max, int64_t *out)
{
	if (str_to_int64(s, out) != 0 || *out < min || *out > max) {
		fprintf(stderr, "cadre-train prep: %s wants a whole number from %lld to %lld, not \"%s\"\n",
		    opt, (long long)min, (long long)max, s);
		return CADRE_ERR_INVALID;
	}
	return 0;
}

/* Tokenizes one file into its chunks (appended to *chunks); 0, or 2 after
 * printing the first error of the file. */
static int
run_file(const struct prep_opts *o, const struct tokenizer *tok,
    const char *name, const char *data, size_t len, struct chunk **chunks,
    size_t *nchunks, double t0, uint64_t total_bytes)
{
	pthread_t tids[PREP_MAX_THREADS];
	int started[PREP_MAX_THREADS];
	struct chunk *c;
	size_t n = (size_t)o->threads, i, pos = 0, base = *nchunks;
	uint64_t line0 = 0;
	int tty = !o->quiet && isatty(STDERR_FILENO), rc = 0;

	if (data == NULL)
		data = "";	/* an empty file, not mapped */
	if (len < n * 4096)
		n = len / 4096 + 1;
	*chunks = xreallocarray(*chunks, base + n, sizeof **chunks);
	c = *chunks + base;
	memset(c, 0, n * sizeof *c);
	for (i = 0; i < n; i++) {
		size_t end = i == n - 1 ? len : len / n * (i + 1);
		const char *nl;

		if (end < pos)
			end = pos;
		if (end < len && (nl = memchr(data + end, '\n', len - end)) != NULL)
			end = (size_t)(nl - data) + 1;
		else if (end < len)
			end = len;
		c[i].o = o;
		c[i].tok = tok;
		c[i].name = name;
		c[i].p = data + pos;
		c[i].len = end - pos;
		c[i].first = i == 0;
		pos = end;
	}
	*nchunks = base + n;
	/* One piece runs in a thread too when there is progress to show. */
	for (i = 0; i < n; i++)
		started[i] = (n > 1 || tty) &&
		    pthread_create(&tids[i], NULL, prep_chunk_run, &c[i]) == 0;
	for (i = 0; i < n; i++)
		if (!started[i])
			prep_chunk_run(&c[i]);
	if (tty) {
		/* Joins as they finish, with a progress line meanwhile. */
		for (i = 0; i < n; i++) {
			while (started[i] && pthread_tryjoin_np(tids[i], NULL) == EBUSY) {
				double dt = now_s() - t0;

				fprintf(stderr, "\rprep: %.1f / %.1f MiB read, %.0f tokens/s   ",
				    (double)atomic_load(&prep_progress_bytes) / 1048576.0,
				    (double)total_bytes / 1048576.0,
				    dt > 0 ? (double)atomic_load(&prep_progress_tokens) / dt : 0.0);
				usleep(200000);
			}
			started[i] = 0;
		}
		fprintf(stderr, "\r%60s\r", "");
	}
	for (i = 0; i < n; i++)
		if (started[i])
			pthread_join(tids[i], NULL);
	for (i = 0; i < n; i++) {
		if (c[i].failed) {
			if (c[i].err_col > 0)
				fprintf(stderr, "%s:%" PRIu64 ":%zu: error: %s\n", name,
				    line0 + c[i].err_line, c[i].err_col, c[i].err);
			else
				fprintf(stderr, "%s:%" PRIu64 ": error: %s\n", name,
				    line0 + c[i].err_line, c[i].err);
			rc = 2;
			break;
		}
		line0 += c[i].lines;
	}
	return rc;
}

/* The options into *o (*info_dir: --info's): -1 to go on, else the exit
 * status (--help, a usage error). */
static int
prep_args(int argc, char **argv, struct prep_opts *o, const char **info_dir)
{
	static const struct option longopts[] = {
		{ "vocab", required_argument, NULL, 'v' },
		{ "format", required_argument, NULL, 'f' },
		{ "task", required_argument, NULL, 'T' },
		{ "seq-len", required_argument, NULL, 's' },
		{ "out", required_argument, NULL, 'o' },
		{ "threads", required_argument, NULL, 'j' },
		{ "short-seq-prob", required_argument, NULL, 'p' },
		{ "dupe-factor", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 'S' },
		{ "shard-size", required_argument, NULL, 'z' },
		{ "text-field", required_argument, NULL, 'a' },
		{ "text-b-field", required_argument, NULL, 'b' },
		{ "label-field", required_argument, NULL, 'l' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "info", required_argument, NULL, 'i' },
		{ "verify", required_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int64_t v;
	long ncpu;
	double d;
	int ch, have_format = 0, have_task = 0;

	memset(o, 0, sizeof *o);
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	o->threads = ncpu < 1 ? 1 : ncpu > 64 ? 64 : (int)ncpu;
	o->short_seq_prob = 0.1;
	o->dupe = 1;
	o->seed = 12345;
	o->shard_size = PREP_DEFAULT_SHARD;
	o->text_field = "text";
	o->text_b_field = "text_b";
	o->label_field = "label";
	optind = 1;
	while ((ch = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'v': o->vocab = optarg; break;
		case 'o': o->out = optarg; break;
		case 'a': o->text_field = optarg; break;
		case 'b': o->text_b_field = optarg; break;
		case 'l': o->label_field = optarg; break;
		case 'q': o->quiet = 1; break;
		case 'i': *info_dir = optarg; break;
		case 'V':
			if (strcmp(optarg, "full") != 0 && strcmp(optarg, "meta") != 0) {
				fprintf(stderr, "cadre-train prep: --verify wants meta or full, not \"%s\"\n",
				    optarg);
				return 2;
			}
			o->verify_full = strcmp(optarg, "full") == 0;
			break;
		case 'f':
			have_format = 1;
			if (strcmp(optarg, "text") == 0)
				o->format = FMT_TEXT;
			else if (strcmp(optarg, "tsv") == 0)
				o->format = FMT_TSV;
			else if (strcmp(optarg, "jsonl") == 0)
				o->format = FMT_JSONL;
			else {
				fprintf(stderr, "cadre-train prep: --format is text, tsv or jsonl, not \"%s\"\n", optarg);
				return 2;
			}
			break;
		case 'T':
			have_task = 1;
			if (strcmp(optarg, "pretrain") == 0)
				o->task = SHARD_PRETRAIN;
			else if (strcmp(optarg, "classify") == 0)
				o->task = SHARD_CLASSIFY;
			else {
				fprintf(stderr, "cadre-train prep: --task is pretrain or classify, not \"%s\"\n", optarg);
				return 2;
			}
			break;
		case 's':
			if (opt_num("--seq-len", optarg, 8, SHARD_MAX_SEQ_LEN, &v) != 0)
				return 2;
			o->seq_len = (uint32_t)v;
			break;
		case 'j':
			if (opt_num("--threads", optarg, 1, PREP_MAX_THREADS, &v) != 0)
				return 2;
			o->threads = (int)v;
			break;
		case 'd':
			if (opt_num("--dupe-factor", optarg, 1, 1000, &v) != 0)
				return 2;
			o->dupe = (int)v;
			break;
		case 'S':
			if (opt_num("--seed", optarg, 0, INT64_MAX, &v) != 0)
				return 2;
			o->seed = (uint64_t)v;
			break;
		case 'z':
			if (opt_num("--shard-size", optarg, 1, INT64_C(1) << 32, &v) != 0)
				return 2;
			o->shard_size = (uint64_t)v;
			break;
		case 'p':
			if (str_to_double(optarg, &d) != 0 || d < 0 || d > 1) {
				fprintf(stderr, "cadre-train prep: --short-seq-prob wants a number from 0 to 1, not \"%s\"\n", optarg);
				return 2;
			}
			o->short_seq_prob = d;
			break;
		case 'h':
			prep_usage(stdout);
			return 0;
		default:
			prep_usage(stderr);
			return 2;
		}
	}
	if (*info_dir != NULL)
		return -1;
	if (o->vocab == NULL || o->out == NULL || !have_format || !have_task ||
	    o->seq_len == 0 || optind >= argc) {
		fprintf(stderr, "cadre-train prep: --vocab, --format, --task, --seq-len, --out and at least one FILE are required (see cadre-train prep --help)\n");
		return 2;
	}
	if ((o->format == FMT_TEXT && o->task != SHARD_PRETRAIN) ||
	    (o->format == FMT_TSV && o->task != SHARD_CLASSIFY)) {
		fprintf(stderr, "cadre-train prep: --format %s is for --task %s\n",
		    o->format == FMT_TEXT ? "text" : "tsv",
		    o->format == FMT_TEXT ? "pretrain" : "classify");
		return 2;
	}
	return -1;
}

int
cmd_prep(int argc, char **argv)
{
	struct prep_opts o;
	struct tok_opts to = TOK_OPTS_DEFAULT;
	struct tokenizer *tok = NULL;
	struct chunk *chunks = NULL;
	struct out_seqs os;
	struct sent *sents = NULL;
	struct doc *docs = NULL;
	char **label_names = NULL, **ex_labels = NULL, *tmpdir = NULL, err[1024];
	const char *info_dir = NULL;
	int32_t special[SHARD_NSPECIAL];
	size_t nchunks = 0, nsents = 0, ndocs = 0, nex = 0, i, nfiles;
	size_t capsents = 0, capdocs = 0, capex = 0;
	uint64_t total_bytes = 0, tokens = 0;
	uint32_t nlabels = 0, nshards = 0;
	double t0 = now_s();
	int rc = 2, parsed;
	struct { char *data; size_t len; int mapped; } *files = NULL;

	memset(&os, 0, sizeof os);
	if ((parsed = prep_args(argc, argv, &o, &info_dir)) >= 0)
		return parsed;
	if (info_dir != NULL)
		return prep_info(info_dir, o.vocab, o.verify_full);
	{
		struct stat st;
		size_t l = strlen(o.out);

		while (l > 1 && o.out[l - 1] == '/')
			l--;
		o.out = xstrndup(o.out, l);
		if (lstat(o.out, &st) == 0) {
			fprintf(stderr, "cadre-train prep: %s exists: remove it or choose another --out\n", o.out);
			free((char *)o.out);
			return 2;
		}
		/* Made now, so that an --out that cannot be made fails
		 * before the work. */
		xasprintf(&tmpdir, "%s.tmp-%ld", o.out, (long)getpid());
		if (mkdir(tmpdir, 0755) != 0) {
			fprintf(stderr, "cadre-train prep: cannot make %s: %s\n", tmpdir, strerror(errno));
			free(tmpdir);
			free((char *)o.out);
			return 2;
		}
	}
	if (tok_load(o.vocab, &to, &tok, err, sizeof err) != 0) {
		fprintf(stderr, "cadre-train prep: %s\n", err);
		goto out;
	}
	for (i = 0; i < SHARD_NSPECIAL; i++)
		special[i] = tok_special_id(tok, (enum tok_special)i);
	if (special[SHARD_CLS] < 0 || special[SHARD_SEP] < 0 ||
	    (o.task == SHARD_PRETRAIN && special[SHARD_MASK] < 0)) {
		fprintf(stderr, "cadre-train prep: %s: no [CLS], [SEP] or [MASK]: not a BERT vocab\n", o.vocab);
		goto out;
	}

	/* Map the files first: a missing one fails before any work. */
	nfiles = (size_t)(argc - optind);
	files = xcalloc(nfiles, sizeof *files);
	for (i = 0; i < nfiles; i++) {
		const char *name = argv[optind + (int)i];
		struct stat st;
		int fd = open(name, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
			fprintf(stderr, "cadre-train prep: %s: %s\n", name,
			    fd < 0 ? strerror(errno) : "not a regular file");
			if (fd >= 0)
				close(fd);
			goto out;
		}
		files[i].len = (size_t)st.st_size;
		if (files[i].len > 0) {
			void *m = mmap(NULL, files[i].len, PROT_READ, MAP_PRIVATE, fd, 0);

			if (m == MAP_FAILED) {
				fprintf(stderr, "cadre-train prep: %s: mmap: %s\n", name, strerror(errno));
				close(fd);
				goto out;
			}
			files[i].data = m;
			files[i].mapped = 1;
		}
		close(fd);
		total_bytes += files[i].len;
	}
	atomic_store(&prep_progress_bytes, 0);
	atomic_store(&prep_progress_tokens, 0);
	for (i = 0; i < nfiles; i++) {
		size_t before = nchunks, k;

		if (run_file(&o, tok, argv[optind + (int)i], files[i].data, files[i].len,
		    &chunks, &nchunks, t0, total_bytes) != 0)
			goto out;
		/* A new document at each file and each break; the last
		 * document is never left empty but at the end. */
		if (ndocs == 0 || docs[ndocs - 1].n > 0) {
			GROW(docs, ndocs, capdocs);
			docs[ndocs].first = nsents;
			docs[ndocs].n = 0;
			ndocs++;
		}
		for (k = before; k < nchunks; k++) {
			struct chunk *c = &chunks[k];
			size_t m;

			tokens += c->tokens;
			for (m = 0; m < c->nitems; m++) {
				struct item *it = &c->items[m];

				if (it->kind == ITEM_BREAK) {
					if (docs[ndocs - 1].n == 0)
						continue;
					GROW(docs, ndocs, capdocs);
					docs[ndocs].first = nsents;
					docs[ndocs].n = 0;
					ndocs++;
				} else if (it->kind == ITEM_SENT) {
					if (it->a_len == 0)
						continue;
					GROW(sents, nsents, capsents);
					sents[nsents].ids = c->ids + it->a_off;
					sents[nsents].len = it->a_len;
					nsents++;
					docs[ndocs - 1].n++;
				} else {
					GROW(ex_labels, nex, capex);
					ex_labels[nex++] = c->labels + it->label_off;
				}
			}
		}
	}
	if (ndocs > 0 && docs[ndocs - 1].n == 0)
		ndocs--;

	if (o.task == SHARD_PRETRAIN)
		prep_pretrain_seqs(&o, sents, docs, ndocs, special, &os);
	else if (nex > 0 && prep_classify_seqs(&o, chunks, nchunks, ex_labels, nex,
	    special, &os, &label_names, &nlabels) != 0)
		goto out;
	if (os.nseqs == 0) {
		fprintf(stderr, "cadre-train prep: no sequences: %s\n", o.task == SHARD_PRETRAIN ?
		    "the text has no document with a token (documents are separated by blank lines)" :
		    "the input has no example");
		goto out;
	}
	rc = prep_write_set(&o, tok, &os, label_names, nlabels, tmpdir, &nshards);
	if (rc == 0 && !o.quiet)
		fprintf(stderr, "prep: %zu %s, %zu sequences, %" PRIu64 " tokens, %.3f s -> %s (%" PRIu32 " shard%s)\n",
		    o.task == SHARD_PRETRAIN ? ndocs : nex,
		    o.task == SHARD_PRETRAIN ? "documents" : "examples",
		    os.nseqs, tokens, now_s() - t0, o.out, nshards, nshards == 1 ? "" : "s");
out:
	if (rc != 0 && tmpdir != NULL)
		(void)fs_remove_flat_dir(tmpdir);
	free(tmpdir);
	for (i = 0; i < nchunks; i++)
		prep_chunk_free(&chunks[i]);
	free(chunks);
	for (i = 0; files != NULL && i < (size_t)(argc - optind); i++)
		if (files[i].mapped)
			munmap(files[i].data, files[i].len);
	free(files);
	free(sents);
	free(docs);
	free(ex_labels);
	free(label_names);
	free(os.ids);
	free(os.seqs);
	free(os.offs);
	tok_free(tok);
	free((char *)o.out);
	return rc;
}
