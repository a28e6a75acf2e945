/*
 * The cadre command line: each subcommand is a table entry with its
 * options, from which both its --help text and its option parser are made,
 * so that the two cannot disagree.
 */
#ifndef CADRE_CLI_H
#define CADRE_CLI_H

#include <stdio.h>

#define CLI_EXIT_OK	0
#define CLI_EXIT_FAIL	1	/* something went wrong on our side */
#define CLI_EXIT_USAGE	2	/* bad command line, or an invalid spec */

struct cli_option {
	const char	*name;		/* long name, without "--" */
	int		 short_name;	/* 0: none */
	const char	*arg;		/* name of its argument; NULL: none */
	const char	*help;		/* one line */
};

struct cli_command;
typedef int (*cli_run_fn)(const struct cli_command *cmd, int argc,
    char **argv);

struct cli_command {
	const char		*name;
	const char		*operands;	/* "FILE...", or "" */
	const char		*summary;	/* one line, for cadre --help */
	const char		*description;	/* paragraphs for CMD --help */
	const struct cli_option	*options;	/* ends with { NULL }; --help is implied */
	cli_run_fn		 run;		/* argv[0] is the command's name */
};

/* The spec commands (cli/cmd_spec.c). */
extern const struct cli_command cli_cmd_validate;
extern const struct cli_command cli_cmd_plan;
extern const struct cli_command cli_cmd_keys;
/* The commands that talk to cadred, and run (cli/cmd_run.c). */
extern const struct cli_command cli_cmd_submit;
extern const struct cli_command cli_cmd_status;
extern const struct cli_command cli_cmd_watch;
extern const struct cli_command cli_cmd_logs;
extern const struct cli_command cli_cmd_cancel;
extern const struct cli_command cli_cmd_run;
extern const struct cli_command cli_cmd_rerun;

/* cadre script and cadre import: runs submitted by hand
 * (cli/cmd_script.c, cli/cmd_import.c). */
extern const struct cli_command cli_cmd_script;
extern const struct cli_command cli_cmd_import;
/* cadre export (cli/cmd_export.c). */
extern const struct cli_command cli_cmd_export;
/* cadre report (cli/cmd_report.c). */
struct state;
/* Opens the database of the state dir (state_dir, else the default; see
 * common/paths.h) for a command that reads it without cadred; a missing
 * one is an error, not created. Messages start with prog. */
int cli_open_state(const char *prog, const char *state_dir,
    struct state **st);
extern const struct cli_command cli_cmd_report;
/* The Markdown report of experiment exp_id (an id, prefix or name) from
 * the database at db, as `cadre report` prints it (for cadre run): 0, or a
 * negative enum cadre_err after a message on stderr. */
int cli_report_print(const char *db, const char *exp_id, FILE *fp);

/*
 * Parses cmd's options in argv (argv[0] is the command name). For each
 * option given, calls opt(ctx, long name, its argument or NULL), which
 * returns 0 or a negative enum cadre_err (CADRE_ERR_INVALID after printing
 * a usage error); a failure stops with that value. Returns the index of the
 * first operand (options and operands may be mixed), CADRE_ERR_INVALID
 * after printing a usage error, or CADRE_ERR_CANCELLED after printing
 * --help: the caller exits 2 or 0.
 */
int cli_parse(const struct cli_command *cmd, int argc, char **argv,
    int (*opt)(void *ctx, const char *name, const char *arg), void *ctx);
/* Prints "cadre CMD: MESSAGE" and a pointer to --help on stderr. */
void cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void cli_help(const struct cli_command *cmd, FILE *fp);

struct diags;
struct report;
struct state;
/* An experiment's report from the database (cli/report_load.c):
 * report_new() + report_add_run() per recorded run + report_finish(). */
int load_report(struct state *st, const char *exp_id, struct diags *d,
    struct report **out);

#endif
