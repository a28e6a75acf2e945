/* `cadre-train prep` (trainer/prep.c): text, TSV or JSON lines to a shard
 * set (trainer/shard.h, docs/data.md). Takes the subcommand's argv
 * (argv[0] is "prep") and returns the exit status: 0, 1 on an error of the
 * system (a write failed), 2 on a usage error or bad input. */
#ifndef CADRE_PREP_H
#define CADRE_PREP_H

int cmd_prep(int argc, char **argv);

#endif
