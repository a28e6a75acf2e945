/*
 * A user's own program (docs/program.md): program.json (common/rundir.h,
 * PJ_*) read into a struct, and its command with the {name}s expanded.
 * launch reads it to decide how to start the program; `cadre-agent rank`
 * reads it to build each process's command and environment.
 */
#ifndef CADRE_AGENT_PROGRAM_H
#define CADRE_AGENT_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#define PROGRAM_JSON_MAX	((size_t)1 << 20)	/* bytes of program.json */
#define PROGRAM_LIST_MAX	4096	/* words, env entries, vars, setup commands */

enum program_launch {
	PROGRAM_PER_RANK = 0,
	PROGRAM_PER_NODE,
	PROGRAM_ONCE
};

struct program_pair {
	char	*name, *value;
};

struct program {
	char			**words;	/* the command as words; NULL: shell */
	size_t			  nwords;
	char			 *shell;	/* the command for sh -c; NULL: words */
	enum program_launch	  launch;
	char			 *workdir;	/* NULL: the run dir */
	struct program_pair	 *env, *vars;
	size_t			  nenv, nvars;
	int			  signal;	/* the checkpoint request */
	int64_t			  checkpoint_every;	/* seconds; 0: none */
	int64_t			  keep_checkpoints;	/* 0: all */
	char			 *metrics_regex;	/* NULL: none */
	char			**setup;
	size_t			  nsetup;
	char			 *experiment, *run_id, *config_id;	/* NULL: unset */
};

/* Parses len bytes of program.json into *p (zeroed first). 0, or
 * CADRE_ERR_PARSE/INVALID/TOO_LARGE with the member and the fix in msg. */
int program_parse(const char *text, size_t len, struct program *p,
    char *msg, size_t msglen);
/* Reads path under PROGRAM_JSON_MAX, then program_parse(). */
int program_load(const char *path, struct program *p, char *msg,
    size_t msglen);
void program_free(struct program *p);
/* Writes p as program.json (atomically, mode 0600). */
int program_write(const char *path, const struct program *p, char *msg,
    size_t msglen);

const char *program_launch_name(enum program_launch l);
int program_launch_parse(const char *name, enum program_launch *l);

/* The value of {name}: a var of p, else the variable of a built-in name
 * (rundir_placeholders) in the environment ("" when unset); NULL for an
 * unknown name. */
const char *program_lookup(const char *name, void *p);

/*
 * The argv to exec, NULL-terminated: the words with their {name}s
 * expanded, or "/bin/sh" "-c" and the string with each value one shell
 * word. Caller frees with program_argv_free(). 0, or CADRE_ERR_INVALID
 * with the word and why in msg.
 */
int program_argv(const struct program *p, char ***argvp, char *msg,
    size_t msglen);
/* One text (a setup command) expanded for sh -c. Caller frees. */
int program_expand_shell(const struct program *p, const char *text,
    char **outp, char *msg, size_t msglen);
void program_argv_free(char **argv);

#endif
