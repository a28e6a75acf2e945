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
#include "diag.h"
#include "duration.h"
#include "error.h"
#include "log.h"
#include "monitor.h"
#include "notify.h"
#include "paths.h"
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
};

static int
run_opt(void *ctx, const char *name, const char *arg)
{
	struct run_opts	*o = ctx;

	if (strcmp(name, "json") == 0)
		o->json = 1;
	else if (strcmp(name, "follow") == 0)
		o->follow = 1;
	else if (strcmp(name, "config") == 0)
		o->config = arg;
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

static const char *
jstr(const json_t *o, const char *key)
{
	const char	*s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "";
}

static int64_t
jint(const json_t *o, const char *key)
{
	return (int64_t)json_integer_value(json_object_get(o, key));
}

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

/* Exit status for a finished experiment: 0 when every run is done. */
static int
all_done(const json_t *st)
{
	const json_t	*r;
	size_t		 i;

	json_array_foreach(json_object_get(st, "runs"), i, r) {
		if (strcmp(jstr(r, "state"), run_state_name(RUN_DONE)) != 0)
			return 0;
	}
	return 1;
}

static int
every_final(const json_t *st)
{
	const json_t	*r;
	size_t		 i;

	json_array_foreach(json_object_get(st, "runs"), i, r) {
		if (!final_state(jstr(r, "state")))
			return 0;
	}
	return 1;
}

/* status TARGET (NULL: all) from cadred */
static int
get_status(const char *target, const char *format, json_t **st, char *err,
    size_t errlen)
{
	json_t	*req = proto_request(PROTO_OP_STATUS);
	int	 rc;

	json_object_set_new(req, "target", target != NULL ?
	    json_string(target) : json_null());
	json_object_set_new(req, "format", json_string(format));
	rc = client_request(req, st, err, errlen);
	json_decref(req);
	return rc;
}

static void
strip_envelope(json_t *o)
{
	json_object_del(o, "v");
	json_object_del(o, "ok");
}

/* ---------------------------------------------------------------- submit */

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
	printf("%s\n", jstr(rep, "experiment"));
	fprintf(stderr, "cadre submit: experiment %s (%s): %" PRId64 " run%s, "
	    "%" PRId64 " new\n", jstr(rep, "experiment"), jstr(rep, "name"),
	    jint(rep, "runs"), jint(rep, "runs") == 1 ? "" : "s",
	    jint(rep, "new"));
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
		fputs(jstr(st, "table"), stdout);
	json_decref(st);
	return CLI_EXIT_OK;
}

/* ---------------------------------------------------------------- watch */

static void
watch_line(const json_t *r, int tty, char *buf, size_t len)
{
	int64_t	 step = jint(r, "step"), steps = jint(r, "steps");
	double	 sps = json_number_value(json_object_get(r, "samples_per_s"));
	double	 gb = (double)jint(r, "global_batch");
	char	 bar[32], eta[32] = "";
	int	 i, fill;

	if (step < 0)
		step = 0;
	if (sps > 0 && gb > 0 && steps > step &&
	    !final_state(jstr(r, "state"))) {
		double	s = (double)(steps - step) * gb / sps;

		snprintf(eta, sizeof eta, " ETA %dh%02dm%02ds", (int)(s / 3600),
		    (int)(s / 60) % 60, (int)s % 60);
	}
	if (tty) {
		fill = steps > 0 ? (int)(20 * step / steps) : 0;
		for (i = 0; i < 20; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[20] = '\0';
		snprintf(buf, len, "%-12s %-9s [%s] %" PRId64 "/%" PRId64
		    " %.1f samples/s%s %s", jstr(r, "id"), jstr(r, "state"),
		    bar, step, steps, sps, eta, jstr(r, "reason"));
	} else
		snprintf(buf, len, "%s %s step %" PRId64 "/%" PRId64
		    " samples/s %.1f%s%s%s", jstr(r, "id"), jstr(r, "state"),
		    step, steps, sps, eta, *jstr(r, "reason") != '\0' ? " " :
		    "", jstr(r, "reason"));
}

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
			watch_line(r, tty, line, sizeof line);
			/* plain output: a line when something changed */
			if (!tty && strcmp(jstr(seen, jstr(r, "id")), line) == 0)
				continue;
			printf("%s\n", line);
			if (!tty)
				json_object_set_new(seen, jstr(r, "id"),
				    json_string(line));
		}
		fflush(stdout);
		if (every_final(st)) {
			rc = all_done(st) ? CLI_EXIT_OK : CLI_EXIT_FAIL;
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
	if (json_array_size(json_object_get(st, "runs")) != 1 ||
	    strcmp(jstr(r, "id"), argv[first]) != 0) {
		fprintf(stderr, "cadre logs: '%s' is not a run id (cadre status "
		    "EXP lists the runs)\n", argv[first]);
		goto out;
	}
	if (o.rank >= 0)
		xasprintf(&path, "%s/log/rank-%" PRId64 ".log", jstr(r, "run_dir"),
		    o.rank);
	else
		xasprintf(&path, "%s/" RUNDIR_JOB_OUT, jstr(r, "run_dir"));
	fin = final_state(jstr(r, "state"));
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
				fin = final_state(jstr(json_array_get(
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
	rc = client_request(req, &rep, err, sizeof err);
	json_decref(req);
	if (rc != 0) {
		fprintf(stderr, "cadre cancel: %s\n", err);
		return CLI_EXIT_FAIL;
	}
	printf("cancelled %" PRId64 " run%s\n", jint(rep, "cancelled"),
	    jint(rep, "cancelled") == 1 ? "" : "s");
	json_decref(rep);
	return CLI_EXIT_OK;
}

/* ---------------------------------------------------------------- run */

static int
run_run(const struct cli_command *cmd, int argc, char **argv)
{
	static const int	 sigs[] = { SIGINT, SIGTERM };
	struct run_opts		 o = { 0 };
	struct monitor_config	 cfg;
	struct cbuf		 text = { 0 };
	struct state		*st = NULL;
	struct monitor		*m = NULL;
	struct notifier		*nt = NULL;
	struct pollfd		 pfd;
	json_t			*rep = NULL, *status = NULL;
	const char		*exp;
	char			*abs = NULL, *db = NULL, *dir = NULL, *cpath = NULL;
	char			*table = NULL;
	char			 err[ERRLEN];
	unsigned char		 sig;
	int64_t			 n;
	int			 first, rc, sigfd = -1, cancelled = 0;

	monitor_config_init(&cfg);
	if ((first = cli_parse(cmd, argc, argv, run_opt, &o)) < 0) {
		monitor_config_free(&cfg);
		return first == CADRE_ERR_CANCELLED ? CLI_EXIT_OK :
		    CLI_EXIT_USAGE;
	}
	if (argc - first != 1) {
		cli_usage_error(cmd, "expected one spec file");
		monitor_config_free(&cfg);
		return CLI_EXIT_USAGE;
	}
	if ((rc = check_spec(argv[first], &abs, &text)) != 0)
		goto out;
	rc = CLI_EXIT_FAIL;
	if (o.config != NULL)
		cpath = xstrdup(o.config);
	else if (getenv("XDG_CONFIG_HOME") != NULL &&
	    getenv("XDG_CONFIG_HOME")[0] == '/')
		xasprintf(&cpath, "%s/cadre/cadred.conf",
		    getenv("XDG_CONFIG_HOME"));
	else if (getenv("HOME") != NULL)
		xasprintf(&cpath, "%s/.config/cadre/cadred.conf",
		    getenv("HOME"));
	if (cpath != NULL && monitor_config_load(cpath, o.config == NULL,
	    &cfg, err, sizeof err) != 0) {
		fprintf(stderr, "cadre run: %s\n", err);
		goto out;
	}
	if (paths_state_dir(&dir) != 0 || paths_mkdir(dir, 0700, 1) != 0 ||
	    paths_db(&db) != 0) {
		fprintf(stderr, "cadre run: no usable state directory (set "
		    "CADRE_STATE_DIR or XDG_STATE_HOME)\n");
		goto out;
	}
	{
		char	*runs;

		xasprintf(&runs, "%s/runs", dir);
		(void)paths_mkdir(runs, 0700, 0);
		free(runs);
	}
	if ((rc = state_open(db, &st)) != 0) {
		fprintf(stderr, "cadre run: %s: %s\n", db, cadre_strerror(rc));
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	rc = CLI_EXIT_FAIL;
	if (monitor_open(st, &cfg, 0, &m) != 0)
		goto out;
	if ((nt = notify_new()) != NULL)
		monitor_set_notifier(m, nt);
	if (monitor_submit(m, abs, text.data, text.len, &rep, err,
	    sizeof err) != 0) {
		fprintf(stderr, "cadre run: %s\n", err);
		goto out;
	}
	exp = jstr(rep, "experiment");
	fprintf(stderr, "cadre run: experiment %s (%s): %" PRId64 " run%s; "
	    "Ctrl-C cancels them\n", exp, jstr(rep, "name"), jint(rep, "runs"),
	    jint(rep, "runs") == 1 ? "" : "s");
	if ((sigfd = sigpipe_open(sigs, 2)) < 0) {
		fprintf(stderr, "cadre run: signals: %s\n", strerror(errno));
		goto out;
	}
	while (!monitor_all_final(m, exp)) {
		monitor_tick(m, wall_now());
		pfd.fd = sigfd;
		pfd.events = POLLIN;
		if (nt != NULL && notify_pending(nt) > 0)
			notify_poll(nt, 0);
		if (poll(&pfd, 1, nt != NULL && notify_pending(nt) > 0 ? 200 :
		    monitor_timeout_ms(m, wall_now())) > 0 &&
		    read(sigfd, &sig, 1) == 1 && !cancelled) {
			fprintf(stderr, "cadre run: cancelling the runs\n");
			cancelled = 1;
			if (monitor_cancel(m, exp, &n, err, sizeof err) != 0)
				fprintf(stderr, "cadre run: %s\n", err);
		}
	}
	if (monitor_status(m, exp, &status, err, sizeof err) == 0 &&
	    monitor_status_table(m, exp, &table, err, sizeof err) == 0) {
		fputs(table, stdout);
		rc = all_done(status) ? CLI_EXIT_OK : CLI_EXIT_FAIL;
		/* Then the experiment's report, as `cadre report EXP` prints
		 * it, failed runs included. */
		if (!cancelled) {
			fputc('\n', stdout);
			fflush(stdout);
			if (cli_report_print(db, exp, stdout) != 0)
				rc = CLI_EXIT_FAIL;
		}
	}
out:
	if (sigfd != -1)
		sigpipe_close();
	json_decref(status);
	json_decref(rep);
	if (nt != NULL && notify_pending(nt) > 0)
		notify_poll(nt, 2000);
	notify_free(nt);
	monitor_free(m);
	state_close(st);
	monitor_config_free(&cfg);
	cbuf_free(&text);
	free(abs);
	free(db);
	free(dir);
	free(cpath);
	free(table);
	return rc;
}

/* ---------------------------------------------------------------- table */

static const struct cli_option no_options[] = { { NULL, 0, NULL, NULL } };
static const struct cli_option status_options[] = {
	{ "json", 0, NULL, "Print the status as JSON" },
	{ NULL, 0, NULL, NULL }
};
static const struct cli_option logs_options[] = {
	{ "follow", 'f', NULL, "Keep printing what is written until the run "
	    "ends" },
	{ "rank", 0, "N", "Print rank N's log (log/rank-N.log) instead of "
	    "the job's output" },
	{ NULL, 0, NULL, NULL }
};
static const struct cli_option run_options[] = {
	{ "config", 0, "FILE", "Daemon config file (default: "
	    "$XDG_CONFIG_HOME/cadre/cadred.conf)" },
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
	no_options, run_watch
};

const struct cli_command cli_cmd_logs = {
	"logs", "RUN", "Print a run's job output or a rank's log",
	"Prints RUN_DIR/job.out, or RUN_DIR/log/rank-N.log with --rank N.\n",
	logs_options, run_logs
};

const struct cli_command cli_cmd_cancel = {
	"cancel", "EXP|RUN", "Cancel an experiment's or a run's jobs",
	"Cancels every live job of EXP (or RUN) with the scheduler and marks "
	"the\nunfinished runs cancelled.\n",
	no_options, run_cancel
};

const struct cli_command cli_cmd_run = {
	"run", "SPEC", "Run an experiment in the foreground, without cadred",
	"Embeds the monitor: submits SPEC's runs (local backend unless the "
	"spec names\nanother), waits for all of them and prints the status "
	"table and the report\n(cadre report). Ctrl-C cancels the runs. Exit "
	"status 0 when every run is\ndone, 1 otherwise, 2 invalid spec.\n",
	run_options, run_run
};
