/* `cadre-train vocab` and `cadre-train tokenize` (trainer/cmd_tokenize.c).
 * Each takes its subcommand's argv (argv[0] is the subcommand's name) and
 * returns the exit status: 0, 1 on error, 2 on a usage error. */
#ifndef CADRE_CMD_TOKENIZE_H
#define CADRE_CMD_TOKENIZE_H

int cmd_vocab(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);

#endif
