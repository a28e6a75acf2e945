/* cadre: the command line client. */
#include "config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "error.h"
#include "log.h"
#include "strutil.h"
#include "xmalloc.h"

static const struct cli_command *const commands[] = {
	&cli_cmd_validate,
	&cli_cmd_plan,
	&cli_cmd_keys,
	&cli_cmd_submit,
	&cli_cmd_status,
	&cli_cmd_watch,
	&cli_cmd_logs,
	&cli_cmd_cancel,
	&cli_cmd_run,
	&cli_cmd_rerun,
	&cli_cmd_report,
	&cli_cmd_export,
	&cli_cmd_script,
	&cli_cmd_import,
};
#define NCOMMANDS	(sizeof commands / sizeof commands[0])

static const struct cli_option help_option = {
	"help", 'h', NULL, "Show this help"
};

static void
main_help(FILE *fp)
{
	size_t	i, w = 0;

	fprintf(fp, "Usage: cadre COMMAND [OPTION]... [ARG]...\n"
	    "Run distributed BERT training experiments on Slurm, PBS or this "
	    "machine.\n\nCommands:\n");
	for (i = 0; i < NCOMMANDS; i++) {
		if (strlen(commands[i]->name) > w)
			w = strlen(commands[i]->name);
	}
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(fp, "  %-*s  %s\n", (int)w, commands[i]->name,
		    commands[i]->summary);
	fprintf(fp, "\nOptions:\n"
	    "  -h, --help     Show this help\n"
	    "  -V, --version  Show the version\n"
	    "\nRun 'cadre COMMAND --help' for a command's options and "
	    "arguments.\n");
}

static void
option_text(const struct cli_option *o, char *buf, size_t len)
{
	const char	*sep = o->arg != NULL ? " " : "";
	const char	*arg = o->arg != NULL ? o->arg : "";

	if (o->short_name)
		snprintf(buf, len, "-%c, --%s%s%s", o->short_name, o->name, sep,
		    arg);
	else
		snprintf(buf, len, "    --%s%s%s", o->name, sep, arg);
}

void
cli_help(const struct cli_command *cmd, FILE *fp)
{
	const struct cli_option	*o;
	char			 buf[128];
	size_t			 w = 0;

	fprintf(fp, "Usage: cadre %s [OPTION]...%s%s\n%s\n", cmd->name,
	    *cmd->operands != '\0' ? " " : "", cmd->operands, cmd->summary);
	if (cmd->description != NULL && *cmd->description != '\0')
		fprintf(fp, "\n%s", cmd->description);
	for (o = cmd->options; o->name != NULL; o++) {
		option_text(o, buf, sizeof buf);
		if (strlen(buf) > w)
			w = strlen(buf);
	}
	option_text(&help_option, buf, sizeof buf);
	if (strlen(buf) > w)
		w = strlen(buf);
	fprintf(fp, "\nOptions:\n");
	for (o = cmd->options; o->name != NULL; o++) {
		option_text(o, buf, sizeof buf);
		fprintf(fp, "  %-*s  %s\n", (int)w, buf, o->help);
	}
	option_text(&help_option, buf, sizeof buf);
	fprintf(fp, "  %-*s  %s\n", (int)w, buf, help_option.help);
}

void
cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
{
	va_list	ap;

	fprintf(stderr, "cadre %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nRun 'cadre %s --help' for its usage.\n", cmd->name);
}

int
cli_parse(const struct cli_command *cmd, int argc, char **argv,
    int (*opt)(void *ctx, const char *name, const char *arg), void *ctx)
{
	const struct cli_option	*o;
	struct option		*longopts;
	char			*shortopts, *p;
	size_t			 n = 0, i;
	int			 c, idx, rc = 0;

	for (o = cmd->options; o->name != NULL; o++)
		n++;
	longopts = xcalloc(n + 2, sizeof *longopts);
	shortopts = xcalloc(2 * n + 4, 1);
	p = shortopts;
	*p++ = ':';	/* report a missing argument as ':' */
	for (i = 0; i < n; i++) {
		o = &cmd->options[i];
		longopts[i].name = o->name;
		longopts[i].has_arg = o->arg != NULL ? required_argument :
		    no_argument;
		longopts[i].val = 256 + (int)i;
		if (o->short_name) {
			*p++ = (char)o->short_name;
			if (o->arg != NULL)
				*p++ = ':';
		}
	}
	longopts[n].name = "help";
	longopts[n].val = 'h';
	*p++ = 'h';

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, &idx)) != -1) {
		if (c == 'h') {
			cli_help(cmd, stdout);
			rc = CADRE_ERR_CANCELLED;
			goto out;
		}
		if (c == '?' || c == ':') {
			if (optopt != 0 && optopt < 256)
				cli_usage_error(cmd, c == '?' ? "unknown option "
				    "'-%c'" : "option '-%c' needs an argument",
				    optopt);
			else
				cli_usage_error(cmd, c == '?' ? "unknown option "
				    "'%s'" : "option '%s' needs an argument",
				    argv[optind - 1]);
			rc = CADRE_ERR_INVALID;
			goto out;
		}
		if (c >= 256)
			o = &cmd->options[c - 256];
		else {
			for (o = cmd->options; o->name != NULL; o++) {
				if (o->short_name == c)
					break;
			}
		}
		if (o->name == NULL)
			fatalx("cli_parse: option '%c' not in the table", c);
		if ((rc = opt(ctx, o->name, o->arg != NULL ? optarg : NULL)) !=
		    0) {
			/* a positive value would pass for an operand's index */
			if (rc > 0)
				fatalx("cli_parse: --%s: the option callback "
				    "returned %d", o->name, rc);
			goto out;
		}
	}
	rc = optind;

 out:
	free(longopts);
	free(shortopts);
	return rc;
}

static const struct cli_command *
find_command(const char *name)
{
	size_t	i;

	for (i = 0; i < NCOMMANDS; i++) {
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	}
	return NULL;
}

static void
unknown_command(const char *name)
{
	const char	*best = NULL;
	size_t		 i, d, bestd = 3;

	for (i = 0; i < NCOMMANDS; i++) {
		d = str_edit_distance(name, commands[i]->name, 2);
		if (d < bestd) {
			bestd = d;
			best = commands[i]->name;
		}
	}
	if (best != NULL)
		fprintf(stderr, "cadre: unknown command '%s' (did you mean "
		    "'%s'?)\n", name, best);
	else
		fprintf(stderr, "cadre: unknown command '%s'\n", name);
	fprintf(stderr, "Run 'cadre --help' for the list of commands.\n");
}

int
main(int argc, char **argv)
{
	const struct cli_command	*cmd;
	const char			*a;

	log_init("cadre", LOG_LEVEL_NOTICE, LOG_TARGET_STDERR);
	if (argc < 2) {
		main_help(stderr);
		return CLI_EXIT_USAGE;
	}
	a = argv[1];
	if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 ||
	    strcmp(a, "help") == 0) {
		if (argc > 2 && strcmp(a, "help") == 0) {
			if ((cmd = find_command(argv[2])) == NULL) {
				unknown_command(argv[2]);
				return CLI_EXIT_USAGE;
			}
			cli_help(cmd, stdout);
			return CLI_EXIT_OK;
		}
		main_help(stdout);
		return CLI_EXIT_OK;
	}
	if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
		printf("cadre %s\n", PACKAGE_VERSION);
		return CLI_EXIT_OK;
	}
	if (a[0] == '-') {
		fprintf(stderr, "cadre: unknown option '%s'\n"
		    "Run 'cadre --help' for the usage.\n", a);
		return CLI_EXIT_USAGE;
	}
	if ((cmd = find_command(a)) == NULL) {
		unknown_command(a);
		return CLI_EXIT_USAGE;
	}
	return cmd->run(cmd, argc - 1, argv + 1);
}
