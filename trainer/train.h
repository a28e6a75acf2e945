/* `cadre-train train` (the step loop on shards, checkpoints, resume, data
 * parallelism, metrics) and `cadre-train eval`. */
#ifndef CADRE_TRAIN_H
#define CADRE_TRAIN_H

/* Exit codes: TRAIN_EXIT_* (docs/contracts.md "Exit codes"). */
#include "rundir.h"

struct bert_model;
struct dist;
struct loader;

int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);	/* trainer/eval.c */

/* Shared by the two (usage_fail and opt_int: trainer/train_args.c;
 * evaluate: trainer/train.c). */
/* A usage error: exit 2 with the message, on every rank. */
void usage_fail(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));
/* s as an integer of lo..hi, else a usage error naming opt. */
long long opt_int(const char *opt, const char *s, long long lo, long long hi);
/* Evaluates m over one epoch of l (every rank its share, no dropout):
 * out[0] MLM loss sum, [1] MLM correct, [2] labelled positions, [3]
 * sequence loss sum, [4] sequences correct, [5] sequences; summed over
 * the ranks. 0, or the loader's error. */
int evaluate(struct bert_model *m, struct loader *l, struct dist *d,
    int batch, double out[6]);

#endif
