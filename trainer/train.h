/* `cadre-train train` (the step loop on shards, checkpoints, resume, data
 * parallelism, metrics) and `cadre-train eval`. */
#ifndef CADRE_TRAIN_H
#define CADRE_TRAIN_H

/* Exit codes (contract C4, docs/trainer.md "Exit codes"). */
#define TRAIN_EXIT_DONE		0
#define TRAIN_EXIT_ERROR	1
#define TRAIN_EXIT_USAGE	2
#define TRAIN_EXIT_OOM		3
#define TRAIN_EXIT_PREEMPTED	75

int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);

#endif
