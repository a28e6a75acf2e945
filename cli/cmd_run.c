/*
 * cadre submit, status, watch, logs, cancel and run: the commands that
 * talk to cadred over its socket (client.c), and `run`, which embeds the
 * monitor instead of talking to a daemon.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cli.h"
#include "cadred_client.h"
#include "local.h"
#include "diag.h"
#include "duration.h"
#include "error.h"
#include "log.h"
#include "monitor.h"
#include "notify.h"
#include "paths.h"
#include "preflight.h"
#include "proto.h"
#include "rundir.h"
#include "sigpipe.h"
#include "spec.h"
#include "state.h"
#include "strutil.h"
#include "xmalloc.h"

#define ERRLEN	8192

struct run_opts {
	int		 json;
	int		 follow;
	int64_t		 rank;
	const char	*config;
	double		 progress_every;	/* < 0: no progress lines */
	const char	*spec;			/* rerun --spec */
	json_t		*which;			/* rerun's flags */
};

/* --state-dir: that state directory, read and driven here; cadred (whose
 * state directory is its own) is not asked. */
static int	local_only;

static int
use_state_dir(const char *dir)
{
	char	cwd[4096], *abs;

	if (*dir == '\0') {
		fprintf(stderr, "cadre: --state-dir: an empty path\n");
		return CADRE_ERR_INVALID;
	}
	if (dir[0] == '/')
		abs = xstrdup(dir);
	else if (getcwd(cwd, sizeof cwd) != NULL)
		xasprintf(&abs, "%s/%s", cwd, dir);
	else {
		fprintf(stderr, "cadre: getcwd: %s\n", strerror(errno));
		return CADRE_ERR_SYSTEM;
	}
	setenv("CADRE_STATE_DIR", abs, 1);
	free(abs);
	local_only = 1;
	return 0;
}

static int
run_opt(void *ctx, const char *name, const char *arg)
{
	struct run_opts	*o = ctx;

	if (strcmp(name, "state-dir") == 0)
		return use_state_dir(arg);
	if (strcmp(name, "json") == 0)
		o->json = 1;
	else if (strcmp(name, "follow") == 0)
		o->follow = 1;
	else if (strcmp(name, "config") == 0)
		o->config = arg;
	else if (strcmp(name, "spec") == 0)
		o->spec = arg;
	else if (strcmp(name, "quiet") == 0)
		o->progress_every = -1;
	else if (strcmp(name, "progress-every") == 0) {
		int64_t	s;

		if (duration_parse(arg, &s) != 0 || s < 0) {
			fprintf(stderr, "cadre: --progress-every: expected a "
			    "duration such as 30s, 5m or 0 (changes only), got "
			    "'%s'\n", arg);
			return CADRE_ERR_INVALID;
		}
		o->progress_every = (double)s;
	} else if (strcmp(name, "failed") == 0 ||
	    strcmp(name, "cancelled") == 0 || strcmp(name, "all") == 0 ||
	    strcmp(name, "fresh") == 0) {
		if (o->which == NULL)
			o->which = json_array();
		json_array_append_new(o->which, json_string(name));
	}
	else if (strcmp(name, "rank") == 0) {
		if (str_to_int64(arg, &o->rank) != 0 || o->rank < 0 ||
		    o->rank > 1000000) {
			fprintf(stderr, "cadre logs: --rank: expected a rank "
			    "number, got '%s'\n", arg);
			return CADRE_ERR_INVALID;
		}
	}
	return 0;
}

/* Validates the spec as `cadre validate` does (diagnostics on stderr);
 * on success *abs gets its absolute path and *text its bytes. */
static int
check_spec(const char *path, char **abs, struct cbuf *text)
{
	struct diags	 d;
	struct spec	*s = NULL;
	int		 rc;

	*abs = NULL;
	if (strcmp(path, "-") == 0) {
		fprintf(stderr, "cadre: the spec must be a file (its directory "
		    "resolves relative paths), not stdin\n");
		return CLI_EXIT_USAGE;
	}
	diags_init(&d);
	rc = spec_load(path, &d, &s);
	if (rc == 0)
		rc = cli_preflight(s, &d);
	diags_sort(&d);
	diags_print(&d, stderr);
	diags_free(&d);
	spec_free(s);
	if (rc != 0)
		return CLI_EXIT_USAGE;
	if ((*abs = realpath(path, NULL)) == NULL) {
		fprintf(stderr, "cadre: %s: %s\n", path, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	cbuf_init(text, SPEC_MAX_BYTES);
	if (cbuf_read_file(text, *abs) != 0) {
		fprintf(stderr, "cadre: %s: %s\n", *abs, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	return 0;
}

/* ---------------------------------------------------------------- table */

static void
hhmm(double t, char *buf, size_t len)
{
	time_t		tt = (time_t)t;
	struct tm	tm;

	localtime_r(&tt, &tm);
	strftime(buf, len, "%H:%M", &tm);
}

static void
print_unreachable(const json_t *st, FILE *fp)
{
	char	when[16];
	json_t	*u = json_object_get(st, "unreachable_since");

	if (json_is_number(u)) {
		hhmm(json_number_value(u), when, sizeof when);
		fprintf(fp, "scheduler unreachable since %s: retrying; no run "
		    "is lost\n", when);
	}
}

static int
final_state(const char *s)
{
	enum run_state	st;

	return run_state_parse(s, &st) == 0 && run_state_final(st);
}

static int
every_final(const json_t *st)
{
	const json_t	*r;
	size_t		 i;

	json_array_foreach(json_object_get(st, "runs"), i, r) {
		if (!final_state(cli_jstr(r, "state")))
			return 0;
	}
	return 1;
}

/* The status from the state directory, read-only: what cadred would
 * answer, as last recorded (nothing is polled). */
static int
local_status(const char *target, const char *format, json_t **st, char *err,
    size_t errlen)
{
	static int		 said;
	struct cli_local	 l;
	char			*table = NULL;
	int			 rc;

	if (cli_local_open("status", NULL, 1, &l) != 0)
		return CADRE_ERR_NOT_FOUND;
	if (!said && !local_only) {
		fprintf(stderr, "cadre: cadred is not running: the state as "
		    "recorded in %s (read-only; nothing is polled)\n", l.db);
		said = 1;
	}
	if (strcmp(format, "table") == 0) {
		rc = monitor_status_table(l.m, target, &table, err, errlen);
		if (rc == 0)
			*st = json_pack("{s:s}", "table", table);
		free(table);
	} else
		rc = monitor_status(l.m, target, st, err, errlen);
	cli_local_close(&l);
	return rc;
}

/* status TARGET (NULL: all) from cadred, or from the state directory when
 * no cadred runs (after `cadre run`, or while it is down) */
static int
get_status(const char *target, const char *format, json_t **st, char *err,
    size_t errlen)
{
	json_t	*req;
	int	 rc;

	if (local_only)
		return local_status(target, format, st, err, errlen);
	req = proto_request(PROTO_OP_STATUS);
	json_object_set_new(req, "target", target != NULL ?
	    json_string(target) : json_null());
	json_object_set_new(req, "format", json_string(format));
	rc = client_request(req, st, err, errlen);
	json_decref(req);
	if (rc == CADRE_ERR_NOT_FOUND && local_status(target, format, st, err,
	    errlen) == 0)
		return 0;
	return rc;
}

static void
strip_envelope(json_t *o)
{
	json_object_del(o, "v");
	json_object_del(o, "ok");
}

/* ---------------------------------------------------------------- submit */

/* What a spec submitted again changes (the reply's "changed"): applied
 * by rerun; submit and run (spec: its path) say how to apply it. */
static void
print_changes(const char *who, const json_t *rep, const char *spec)
{
	const json_t	*changed = json_object_get(rep, "changed"), *v;
	size_t		 i;

	if (json_array_size(changed) == 0)
		return;
	fprintf(stderr, "cadre %s: experiment %s: the spec %s:\n", who,
	    cli_jstr(rep, "experiment"), spec != NULL ? "differs from the one "
	    "recorded (its runs are the same)" : "changes, applied to the "
	    "attempts to come");
	json_array_foreach(changed, i, v)
		fprintf(stderr, "  %s\n", json_string_value(v));
	if (spec != NULL)
		fprintf(stderr, "cadre %s: not applied: cadre rerun %s --spec "
		    "%s applies it (and gives the failed and cancelled runs new "
		    "attempts)\n", who, cli_jstr(rep, "experiment"), spec);
}

static int
run_submit(const struct cli_command *cmd, int argc, char **argv)
{
	struct run_opts	 o = { 0 };
	struct cbuf	 text = { 0 };
	json_t		*req = NULL, *rep = NULL;
	char		*abs = NULL, err[ERRLEN];
	int		 first, rc;

	if ((first = cli_parse(cmd, argc, argv, run_opt, &o)) < 0)
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	if (argc - first != 1) {
		cli_usage_error(cmd, "expected one spec file");
		return CLI_EXIT_USAGE;
	}
	if ((rc = check_spec(argv[first], &abs, &text)) != 0)
		goto out;
	req = proto_request(PROTO_OP_SUBMIT);
	json_object_set_new(req, "path", json_string(abs));
	json_object_set_new(req, "spec", json_stringn(text.data, text.len));
	if (client_request(req, &rep, err, sizeof err) != 0) {
		fprintf(stderr, "cadre submit: %s\n", err);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	printf("%s\n", cli_jstr(rep, "experiment"));
	print_changes("submit", rep, abs);
	fprintf(stderr, "cadre submit: experiment %s (%s): %" PRId64 " run%s, "
	    "%" PRId64 " new\n", cli_jstr(rep, "experiment"), cli_jstr(rep, "name"),
	    cli_jint(rep, "runs"), cli_jint(rep, "runs") == 1 ? "" : "s",
	    cli_jint(rep, "new"));
	rc = CLI_EXIT_OK;
out:
	json_decref(req);
	json_decref(rep);
	cbuf_free(&text);
	free(abs);
	return rc;
}

/* ---------------------------------------------------------------- status */

static int
run_status(const struct cli_command *cmd, int argc, char **argv)
{
	struct run_opts	 o = { 0 };
	json_t		*st = NULL;
	char		 err[ERRLEN], *s;
	int		 first;

	if ((first = cli_parse(cmd, argc, argv, run_opt, &o)) < 0)
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	if (argc - first > 1) {
		cli_usage_error(cmd, "expected at most one experiment or run");
		return CLI_EXIT_USAGE;
	}
	/* the table is rendered by the daemon: at 10,000 runs, parsing the
	 * JSON of every run costs more than the whole answer should */
	if (get_status(first < argc ? argv[first] : NULL, o.json ? "json" :
	    "table", &st, err, sizeof err) != 0) {
		fprintf(stderr, "cadre status: %s\n", err);
		return CLI_EXIT_FAIL;
	}
	if (o.json) {
		strip_envelope(st);
		s = json_dumps(st, JSON_INDENT(2) | JSON_SORT_KEYS);
		printf("%s\n", s != NULL ? s : "{}");
		free(s);
	} else
		fputs(cli_jstr(st, "table"), stdout);
	json_decref(st);
	return CLI_EXIT_OK;
}

/* ---------------------------------------------------------------- watch */

static int
run_watch(const struct cli_command *cmd, int argc, char **argv)
{
	struct run_opts	 o = { 0 };
	json_t		*st = NULL, *seen, *r;
	char		 err[ERRLEN], line[512];
	size_t		 i;
	int		 first, tty = isatty(STDOUT_FILENO), rc;

	if ((first = cli_parse(cmd, argc, argv, run_opt, &o)) < 0)
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	if (argc - first != 1) {
		cli_usage_error(cmd, "expected one experiment or run");
		return CLI_EXIT_USAGE;
	}
	seen = json_object();
	for (;;) {
		if (get_status(argv[first], "json", &st, err,
		    sizeof err) != 0) {
			fprintf(stderr, "cadre watch: %s\n", err);
			rc = CLI_EXIT_FAIL;
			break;
		}
		if (tty)
			printf("\033[H\033[J");
		if (tty)
			print_unreachable(st, stdout);
		json_array_foreach(json_object_get(st, "runs"), i, r) {
			cli_progress_line(r, tty, line, sizeof line);
			/* plain output: a line when something changed */
			if (!tty && strcmp(cli_jstr(seen, cli_jstr(r, "id")), line) == 0)
				continue;
			printf("%s\n", line);
			if (!tty)
				json_object_set_new(seen, cli_jstr(r, "id"),
				    json_string(line));
		}
		fflush(stdout);
		if (every_final(st)) {
			rc = cli_all_done(st) ? CLI_EXIT_OK : CLI_EXIT_FAIL;
			break;
		}
		json_decref(st);
		st = NULL;
		sleep(1);
	}
	json_decref(st);
	json_decref(seen);
	return rc;
}

/* ---------------------------------------------------------------- logs */

/* Copies what fd holds from *off on to stdout. */
static void
copy_out(int fd, off_t *off)
{
	char	buf[65536];
	ssize_t	n;

	while ((n = pread(fd, buf, sizeof buf, *off)) > 0) {
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			break;
		*off += n;
	}
	fflush(stdout);
}

static int
run_logs(const struct cli_command *cmd, int argc, char **argv)
{
	struct run_opts	 o = { .rank = -1 };
	json_t		*st = NULL, *r;
	char		 err[ERRLEN], *path = NULL;
	off_t		 off = 0;
	int		 first, fd = -1, rc = CLI_EXIT_FAIL, ticks = 0, fin;

	if ((first = cli_parse(cmd, argc, argv, run_opt, &o)) < 0)
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	if (argc - first != 1) {
		cli_usage_error(cmd, "expected one run id");
		return CLI_EXIT_USAGE;
	}
	if (get_status(argv[first], "json", &st, err,
		    sizeof err) != 0) {
		fprintf(stderr, "cadre logs: %s\n", err);
		return CLI_EXIT_FAIL;
	}
	r = json_array_get(json_object_get(st, "runs"), 0);
	/* a run id, whole or a unique start of one */
	if (json_array_size(json_object_get(st, "runs")) != 1 ||
	    strncmp(cli_jstr(r, "id"), argv[first], strlen(argv[first])) != 0) {
		fprintf(stderr, "cadre logs: '%s' is not a run id (cadre status "
		    "EXP lists the runs)\n", argv[first]);
		goto out;
	}
	if (o.rank >= 0)
		xasprintf(&path, "%s/log/rank-%" PRId64 ".log", cli_jstr(r, "run_dir"),
		    o.rank);
	else
		xasprintf(&path, "%s/" RUNDIR_JOB_OUT, cli_jstr(r, "run_dir"));
	fin = final_state(cli_jstr(r, "state"));
	for (;;) {
		if (fd == -1)
			fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd == -1 && (!o.follow || fin)) {
			fprintf(stderr, "cadre logs: %s: %s%s\n", path,
			    strerror(errno), errno == ENOENT ? " (the job has "
			    "not written it yet)" : "");
			goto out;
		}
		if (fd != -1)
			copy_out(fd, &off);
		if (!o.follow || fin)
			break;
		usleep(500000);
		/* ask every few seconds whether the run has ended; once it
		 * has, what is left is printed and logs -f ends */
		if (++ticks % 4 == 0) {
			json_decref(st);
			st = NULL;
			if (get_status(argv[first], "json", &st, err,
		    sizeof err) == 0)
				fin = final_state(cli_jstr(json_array_get(
				    json_object_get(st, "runs"), 0), "state"));
		}
	}
	rc = CLI_EXIT_OK;
out:
	if (fd != -1)
		close(fd);
	free(path);
	json_decref(st);
	return rc;
}

/* ---------------------------------------------------------------- cancel */

static int
run_cancel(const struct cli_command *cmd, int argc, char **argv)
{
	struct run_opts	 o = { 0 };
	json_t		*req, *rep = NULL;
	char		 err[ERRLEN];
	int		 first, rc;

	if ((first = cli_parse(cmd, argc, argv, run_opt, &o)) < 0)
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	if (argc - first != 1) {
		cli_usage_error(cmd, "expected one experiment or run");
		return CLI_EXIT_USAGE;
	}
	req = proto_request(PROTO_OP_CANCEL);
	json_object_set_new(req, "target", json_string(argv[first]));
	rc = local_only ? CADRE_ERR_NOT_FOUND : client_request(req, &rep, err,
	    sizeof err);
	json_decref(req);
	if (rc == CADRE_ERR_NOT_FOUND) {
		/* no cadred (or --state-dir): the jobs are cancelled from
		 * here, with the scheduler, and recorded in the state */
		struct cli_local	l;
		char			id[SPEC_ID_LEN + 1];
		int64_t			n = 0;

		if (cli_local_open("cancel", o.config, 0, &l) != 0)
			return CLI_EXIT_FAIL;
		rc = monitor_load(l.m, argv[first], id, sizeof id, err,
		    sizeof err);
		if (rc == 0)
			rc = monitor_cancel(l.m, argv[first], &n, err,
			    sizeof err);
		cli_local_close(&l);
		if (rc != 0) {
			fprintf(stderr, "cadre cancel: %s\n", err);
			return CLI_EXIT_FAIL;
		}
		printf("cancelled %" PRId64 " run%s (%s)\n", n, n == 1 ? "" :
		    "s", local_only ? "--state-dir" : "cadred is not running");
		return CLI_EXIT_OK;
	}
	if (rc != 0) {
		fprintf(stderr, "cadre cancel: %s\n", err);
		return CLI_EXIT_FAIL;
	}
	printf("cancelled %" PRId64 " run%s\n", cli_jint(rep, "cancelled"),
	    cli_jint(rep, "cancelled") == 1 ? "" : "s");
	json_decref(rep);
	return CLI_EXIT_OK;
}

/* ---------------------------------------------------------------- run */

static int
run_run(const struct cli_command *cmd, int argc, char **argv)
{
	struct run_opts		 o = { .progress_every = 60 };
	struct cbuf		 text = { 0 };
	struct cli_local	 l;
	json_t			*rep = NULL;
	const char		*exp;
	char			*abs = NULL, err[ERRLEN];
	int			 first, rc;

	if ((first = cli_parse(cmd, argc, argv, run_opt, &o)) < 0)
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	if (argc - first != 1) {
		cli_usage_error(cmd, "expected one spec file");
		return CLI_EXIT_USAGE;
	}
	if ((rc = check_spec(argv[first], &abs, &text)) != 0)
		goto out_spec;
	if (cli_local_open("run", o.config, 0, &l) != 0) {
		rc = CLI_EXIT_FAIL;
		goto out_spec;
	}
	rc = CLI_EXIT_FAIL;
	if (monitor_submit(l.m, abs, text.data, text.len, &rep, err,
	    sizeof err) != 0) {
		fprintf(stderr, "cadre run: %s\n", err);
		goto out;
	}
	exp = cli_jstr(rep, "experiment");
	print_changes("run", rep, abs);
	if (cli_jint(rep, "new") == 0 && monitor_all_final(l.m, exp))
		fprintf(stderr, "cadre run: experiment %s (%s): every run has "
		    "ended already (cadre rerun %s gives the failed ones new "
		    "attempts)\n", exp, cli_jstr(rep, "name"), exp);
	else
		fprintf(stderr, "cadre run: experiment %s (%s): %" PRId64
		    " run%s; Ctrl-C cancels them\n", exp, cli_jstr(rep, "name"),
		    cli_jint(rep, "runs"), cli_jint(rep, "runs") == 1 ? "" : "s");
	rc = cli_local_drive("run", &l, exp, o.progress_every);
out:
	json_decref(rep);
	cli_local_close(&l);
out_spec:
	cbuf_free(&text);
	free(abs);
	return rc;
}

/* ---------------------------------------------------------------- rerun */

static void
print_rerun(const json_t *rep)
{
	const json_t	*v;
	size_t		 i, n = (size_t)cli_jint(rep, "rerun");

	if (n == 0) {
		fprintf(stderr, "cadre rerun: experiment %s: no run to rerun "
		    "(--failed and --cancelled pick ended runs that did not "
		    "finish; --all picks done ones too)\n",
		    cli_jstr(rep, "experiment"));
		return;
	}
	fprintf(stderr, "cadre rerun: experiment %s (%s): %zu run%s get a new "
	    "attempt:", cli_jstr(rep, "experiment"), cli_jstr(rep, "name"), n,
	    n == 1 ? "" : "s");
	json_array_foreach(json_object_get(rep, "runs"), i, v) {
		if (i == 8) {
			fprintf(stderr, " ...");
			break;
		}
		fprintf(stderr, " %s", json_string_value(v));
	}
	fputc('\n', stderr);
	json_array_foreach(json_object_get(rep, "moved"), i, v)
		fprintf(stderr, "cadre rerun: starting over; the earlier outputs "
		    "are in %s\n", json_string_value(v));
}

static int
run_rerun(const struct cli_command *cmd, int argc, char **argv)
{
	struct run_opts		 o = { .progress_every = 60 };
	struct cbuf		 text = { 0 };
	struct cli_local	 l;
	json_t			*req = NULL, *rep = NULL, *runs;
	char			*abs = NULL, err[ERRLEN], id[SPEC_ID_LEN + 1];
	int			 first, rc, i;

	if ((first = cli_parse(cmd, argc, argv, run_opt, &o)) < 0) {
		json_decref(o.which);
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	}
	if (argc - first < 1) {
		cli_usage_error(cmd, "expected an experiment (and run ids of it)");
		json_decref(o.which);
		return CLI_EXIT_USAGE;
	}
	if (o.spec != NULL && (rc = check_spec(o.spec, &abs, &text)) != 0)
		goto out_req;
	req = proto_request(PROTO_OP_RERUN);
	json_object_set_new(req, "target", json_string(argv[first]));
	runs = json_array();
	for (i = first + 1; i < argc; i++)
		json_array_append_new(runs, json_string(argv[i]));
	json_object_set_new(req, "runs", runs);
	json_object_set_new(req, "which", o.which != NULL ?
	    json_incref(o.which) : json_array());
	if (abs != NULL) {
		json_object_set_new(req, "path", json_string(abs));
		json_object_set_new(req, "spec", json_stringn(text.data,
		    text.len));
	}
	rc = local_only ? CADRE_ERR_NOT_FOUND : client_request(req, &rep, err,
	    sizeof err);
	if (rc == 0) {
		/* cadred runs them */
		print_changes("rerun", rep, NULL);
		print_rerun(rep);
		printf("%s\n", cli_jstr(rep, "experiment"));
		rc = CLI_EXIT_OK;
		goto out_req;
	}
	if (rc != CADRE_ERR_NOT_FOUND) {
		fprintf(stderr, "cadre rerun: %s\n", err);
		rc = CLI_EXIT_FAIL;
		goto out_req;
	}
	/* no cadred: the runs go again here, in the foreground */
	if (cli_local_open("rerun", o.config, 0, &l) != 0) {
		rc = CLI_EXIT_FAIL;
		goto out_req;
	}
	if (monitor_load(l.m, argv[first], id, sizeof id, err,
	    sizeof err) != 0 || monitor_rerun_json(l.m, req, &rep, err,
	    sizeof err) != 0) {
		fprintf(stderr, "cadre rerun: %s\n", err);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	print_changes("rerun", rep, NULL);
	print_rerun(rep);
	if (cli_jint(rep, "rerun") == 0) {
		rc = CLI_EXIT_OK;
		goto out;
	}
	fprintf(stderr, "cadre rerun: %s: the runs go in the foreground; "
	    "Ctrl-C cancels them\n", local_only ? "--state-dir" :
	    "cadred is not running");
	rc = cli_local_drive("rerun", &l, id, o.progress_every);
out:
	cli_local_close(&l);
out_req:
	json_decref(o.which);
	json_decref(req);
	json_decref(rep);
	cbuf_free(&text);
	free(abs);
	return rc;
}

/* ---------------------------------------------------------------- table */

static const struct cli_option no_options[] = { { NULL, 0, NULL, NULL } };
static const struct cli_option status_options[] = {
	{ "json", 0, NULL, "Print the status as JSON" },
	{ "state-dir", 0, "DIR", "Read this state directory here instead "
	    "of asking cadred" },
	{ NULL, 0, NULL, NULL }
};
static const struct cli_option cancel_options[] = {
	{ "state-dir", 0, "DIR", "Cancel from here, in this state directory, "
	    "instead of asking cadred" },
	{ "config", 0, "FILE", "Without cadred: the daemon config file "
	    "(default: $XDG_CONFIG_HOME/cadre/cadred.conf)" },
	{ NULL, 0, NULL, NULL }
};
static const struct cli_option watch_options[] = {
	{ "state-dir", 0, "DIR", "Read this state directory here instead "
	    "of asking cadred" },
	{ NULL, 0, NULL, NULL }
};
static const struct cli_option logs_options[] = {
	{ "follow", 'f', NULL, "Keep printing what is written until the run "
	    "ends" },
	{ "rank", 0, "N", "Print rank N's log (log/rank-N.log) instead of "
	    "the job's output" },
	{ "state-dir", 0, "DIR", "Read this state directory here instead "
	    "of asking cadred" },
	{ NULL, 0, NULL, NULL }
};
static const struct cli_option run_options[] = {
	{ "config", 0, "FILE", "Daemon config file (default: "
	    "$XDG_CONFIG_HOME/cadre/cadred.conf)" },
	{ "progress-every", 0, "DURATION", "Not on a terminal: a line per "
	    "running run this often (default 1m; 0: changes only)" },
	{ "quiet", 'q', NULL, "No progress on stderr" },
	{ "state-dir", 0, "DIR", "State directory (default: $CADRE_STATE_DIR, "
	    "...)" },
	{ NULL, 0, NULL, NULL }
};
static const struct cli_option rerun_options[] = {
	{ "failed", 0, NULL, "Rerun the failed runs (oom among them)" },
	{ "cancelled", 0, NULL, "Rerun the cancelled runs" },
	{ "all", 0, NULL, "Rerun every ended run, done ones too (they start "
	    "over)" },
	{ "fresh", 0, NULL, "Start the runs over instead of resuming from "
	    "their newest checkpoint" },
	{ "spec", 0, "SPEC", "Apply this changed spec first (same runs; "
	    "retries, notify, ... may differ)" },
	{ "config", 0, "FILE", "Without cadred: the daemon config file "
	    "(default: $XDG_CONFIG_HOME/cadre/cadred.conf)" },
	{ "progress-every", 0, "DURATION", "Without cadred, not on a "
	    "terminal: a line per running run this often (default 1m)" },
	{ "quiet", 'q', NULL, "No progress on stderr" },
	{ "state-dir", 0, "DIR", "Rerun the runs of this state directory "
	    "here, in the foreground, instead of asking cadred" },
	{ NULL, 0, NULL, NULL }
};

const struct cli_command cli_cmd_submit = {
	"submit", "SPEC", "Submit an experiment to cadred; prints its id",
	"Validates SPEC first (an invalid spec prints validate's messages and "
	"exits 2),\nthen hands it to cadred, which records its runs and "
	"submits them. Submitting\nthe same spec again adds nothing and prints "
	"the same id. Exit status: 0 done,\n1 cadred not running or refusing, "
	"2 invalid spec or usage.\n",
	no_options, run_submit
};

const struct cli_command cli_cmd_status = {
	"status", "[EXP|RUN]", "Show the state of experiments and runs",
	"A table per experiment: run, config, state, attempts, step of total, "
	"samples/s,\nreason. EXP is an experiment id or name, RUN a run id; "
	"none shows everything.\n",
	status_options, run_status
};

const struct cli_command cli_cmd_watch = {
	"watch", "EXP", "Follow an experiment until every run has ended",
	"On a terminal: a progress bar, samples/s and ETA per run, redrawn "
	"every second;\notherwise one line whenever a run changes. Exit "
	"status 0 when every run is\ndone, 1 otherwise.\n",
	watch_options, run_watch
};

const struct cli_command cli_cmd_logs = {
	"logs", "RUN", "Print a run's job output or a rank's log",
	"Prints RUN_DIR/job.out, or RUN_DIR/log/rank-N.log with --rank N.\n",
	logs_options, run_logs
};

const struct cli_command cli_cmd_cancel = {
	"cancel", "EXP|RUN", "Cancel an experiment's or a run's jobs",
	"Cancels every live job of EXP (or RUN) with the scheduler and marks "
	"the\nunfinished runs cancelled: through cadred, or from here when "
	"cadred is not\nrunning (or with --state-dir).\n",
	cancel_options, run_cancel
};

const struct cli_command cli_cmd_run = {
	"run", "SPEC", "Run an experiment in the foreground, without cadred",
	"Embeds the monitor: submits SPEC's runs (local backend unless the "
	"spec names\nanother), waits for all of them and prints the status "
	"table and the report\n(cadre report). Progress goes to stderr: a "
	"line per run redrawn on a terminal,\notherwise a line when a run "
	"changes state and every --progress-every per\nrunning run. Running "
	"the same spec again picks up its runs where they are.\nCtrl-C "
	"cancels the runs. Exit status 0 when every run is done, 1 "
	"otherwise,\n2 invalid spec.\n",
	run_options, run_run
};

const struct cli_command cli_cmd_rerun = {
	"rerun", "EXP [RUN]...", "Give ended runs of an experiment new attempts",
	"Puts runs that ended back in the queue, keeping their ids and history "
	"(the\nreport counts the latest attempt). Without RUN: the failed and "
	"cancelled runs\n(--failed, --cancelled or --all choose). A failed or "
	"cancelled run resumes from\nits newest checkpoint, as a requeued one "
	"does; a done run (--all) or any run\nwith --fresh starts over, its "
	"old directory moved aside to RUN_DIR.rerun-N.\nThe retry budget "
	"(retries.max) counts from the rerun. --spec applies a changed\nspec "
	"of the same runs first (what `cadre submit` says differs). With "
	"cadred\nrunning, it runs them; without, they run here in the "
	"foreground as with\n`cadre run`. Exit status 0 done (in the foreground: every run "
	"done), 1 a\nrun that cannot be rerun (unknown, not ended, done "
	"without --all) or, in the\nforeground, a run not done; 2 usage or "
	"an invalid spec.\n",
	rerun_options, run_rerun
};
