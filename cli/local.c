/*
 * The monitor in this process, for the commands that work without cadred:
 * `cadre run` and `cadre rerun` drive runs in the foreground (with live
 * progress), and status and logs read the state directory read-only when
 * no cadred answers.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "local.h"
#include "error.h"
#include "log.h"
#include "monitor.h"
#include "notify.h"
#include "paths.h"
#include "sigpipe.h"
#include "state.h"
#include "strutil.h"
#include "xmalloc.h"

#define LOCAL_ERRLEN		8192
/* On a terminal the progress block shows at most this many runs (then a
 * count of the rest by state). */
#define LOCAL_TTY_ROWS		20

/* The config `cadre run` uses: --config FILE, else cadred's own file
 * when it exists. */
static int
load_config(const char *who, const char *config, struct monitor_config *cfg)
{
	char	*cpath = NULL, err[LOCAL_ERRLEN];
	int	 rc = 0;

	if (config != NULL)
		cpath = xstrdup(config);
	else if (getenv("XDG_CONFIG_HOME") != NULL &&
	    getenv("XDG_CONFIG_HOME")[0] == '/')
		xasprintf(&cpath, "%s/cadre/cadred.conf",
		    getenv("XDG_CONFIG_HOME"));
	else if (getenv("HOME") != NULL)
		xasprintf(&cpath, "%s/.config/cadre/cadred.conf",
		    getenv("HOME"));
	if (cpath != NULL && monitor_config_load(cpath, config == NULL, cfg,
	    err, sizeof err) != 0) {
		fprintf(stderr, "cadre %s: %s\n", who, err);
		rc = CADRE_ERR_INVALID;
	}
	free(cpath);
	return rc;
}

int
cli_local_open(const char *who, const char *config, int readonly,
    struct cli_local *l)
{
	char	*dir = NULL, *runs;
	int	 rc;

	memset(l, 0, sizeof *l);
	monitor_config_init(&l->cfg);
	if (!readonly && load_config(who, config, &l->cfg) != 0)
		goto fail;
	if (paths_state_dir(&dir) != 0 || paths_db(&l->db) != 0) {
		fprintf(stderr, "cadre %s: no usable state directory (set "
		    "CADRE_STATE_DIR or XDG_STATE_HOME)\n", who);
		goto fail;
	}
	if (readonly) {
		rc = state_open_readonly(l->db, &l->st);
		if (rc == CADRE_ERR_NOT_FOUND)
			fprintf(stderr, "cadre %s: no experiments yet: %s does "
			    "not exist (cadre run SPEC or cadre submit SPEC "
			    "makes it)\n", who, l->db);
		else if (rc != 0)
			fprintf(stderr, "cadre %s: %s: %s\n", who, l->db,
			    cadre_strerror(rc));
		if (rc != 0)
			goto fail;
	} else {
		if (paths_mkdir(dir, 0700, 1) != 0) {
			fprintf(stderr, "cadre %s: %s: not a usable state "
			    "directory (see the message above)\n", who, dir);
			goto fail;
		}
		xasprintf(&runs, "%s/runs", dir);
		(void)paths_mkdir(runs, 0700, 0);
		free(runs);
		if ((rc = state_open(l->db, &l->st)) != 0) {
			fprintf(stderr, "cadre %s: %s: %s\n", who, l->db,
			    cadre_strerror(rc));
			goto fail;
		}
	}
	/* read-only: every experiment (nothing is polled); otherwise only
	 * those the command names */
	if (monitor_open(l->st, &l->cfg, readonly, &l->m) != 0) {
		fprintf(stderr, "cadre %s: %s: cannot read the experiments\n",
		    who, l->db);
		goto fail;
	}
	if (!readonly && (l->nt = notify_new()) != NULL)
		monitor_set_notifier(l->m, l->nt);
	free(dir);
	return 0;
fail:
	free(dir);
	cli_local_close(l);
	return CADRE_ERR_INVALID;
}

void
cli_local_close(struct cli_local *l)
{
	if (l->nt != NULL && notify_pending(l->nt) > 0)
		notify_poll(l->nt, 2000);
	notify_free(l->nt);
	monitor_free(l->m);
	state_close(l->st);
	monitor_config_free(&l->cfg);
	free(l->db);
	memset(l, 0, sizeof *l);
}

/* ---------------------------------------------------------------- progress */

const char *
cli_jstr(const json_t *o, const char *key)
{
	const char	*s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "";
}

int64_t
cli_jint(const json_t *o, const char *key)
{
	return (int64_t)json_integer_value(json_object_get(o, key));
}

void
cli_progress_line(const json_t *r, int tty, char *buf, size_t len)
{
	int64_t	 step = cli_jint(r, "step"), steps = cli_jint(r, "steps");
	double	 sps = json_number_value(json_object_get(r, "samples_per_s"));
	double	 gb = (double)cli_jint(r, "global_batch");
	char	 bar[32], eta[32] = "";
	int	 i, fill, fin;
	enum run_state st;

	fin = run_state_parse(cli_jstr(r, "state"), &st) == 0 &&
	    run_state_final(st);
	if (step < 0)
		step = 0;
	if (sps > 0 && gb > 0 && steps > step && !fin) {
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
		    " %.1f samples/s%s %s", cli_jstr(r, "id"), cli_jstr(r, "state"),
		    bar, step, steps, sps, eta, cli_jstr(r, "reason"));
	} else
		snprintf(buf, len, "%s %s step %" PRId64 "/%" PRId64
		    " samples/s %.1f%s%s%s", cli_jstr(r, "id"), cli_jstr(r, "state"),
		    step, steps, sps, eta, *cli_jstr(r, "reason") != '\0' ? " " :
		    "", cli_jstr(r, "reason"));
}

struct progress {
	int	 tty;
	double	 every;		/* plain lines: seconds between rounds */
	double	 last_round;
	double	 last_draw;
	int	 drawn;		/* lines of the block on the terminal */
	json_t	*seen;		/* run id -> state last printed */
};

/* On a terminal: the block of run lines redrawn in place. Otherwise: a
 * line when a run changes state, and every `every` seconds a line per
 * run that is running, so that a log under nohup or CI shows progress. */
static void
progress_show(struct progress *p, struct monitor *m, const char *exp,
    double now, int force)
{
	json_t		*st = NULL, *r;
	char		 err[256], line[512];
	size_t		 i, n;
	int64_t		 rest[RUN_STATE_COUNT] = { 0 }, nrest = 0;
	int		 round, k;
	enum run_state	 s;

	if (!force && now - p->last_draw < (p->tty ? 1.0 : 5.0))
		return;
	p->last_draw = now;
	if (monitor_status(m, exp, &st, err, sizeof err) != 0)
		return;
	n = json_array_size(json_object_get(st, "runs"));
	if (p->tty) {
		for (k = 0; k < p->drawn; k++)
			fputs("\033[A\033[2K", stderr);
		p->drawn = 0;
	}
	round = !p->tty && p->every > 0 && now - p->last_round >= p->every;
	if (round)
		p->last_round = now;
	json_array_foreach(json_object_get(st, "runs"), i, r) {
		const char	*state = cli_jstr(r, "state");

		if (p->tty) {
			if (i >= LOCAL_TTY_ROWS && n > LOCAL_TTY_ROWS) {
				if (run_state_parse(state, &s) == 0)
					rest[s]++;
				nrest++;
				continue;
			}
			cli_progress_line(r, 1, line, sizeof line);
			fprintf(stderr, "%.*s\n", 160, line);
			p->drawn++;
			continue;
		}
		if (strcmp(cli_jstr(p->seen, cli_jstr(r, "id")), state) != 0 ||
		    (round && strcmp(state, run_state_name(RUN_RUNNING)) == 0)) {
			cli_progress_line(r, 0, line, sizeof line);
			fprintf(stderr, "cadre: %s\n", line);
			json_object_set_new(p->seen, cli_jstr(r, "id"),
			    json_string(state));
		}
	}
	if (nrest > 0) {
		fprintf(stderr, "... %" PRId64 " more:", nrest);
		for (k = 0; k < RUN_STATE_COUNT; k++) {
			if (rest[k] > 0)
				fprintf(stderr, " %" PRId64 " %s", rest[k],
				    run_state_name((enum run_state)k));
		}
		fputc('\n', stderr);
		p->drawn++;
	}
	fflush(stderr);
	json_decref(st);
}

/* ---------------------------------------------------------------- drive */

int
cli_all_done(const json_t *st)
{
	const json_t	*r;
	size_t		 i;

	json_array_foreach(json_object_get(st, "runs"), i, r) {
		if (strcmp(cli_jstr(r, "state"), run_state_name(RUN_DONE)) != 0)
			return 0;
	}
	return 1;
}

static double
now_s(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
cli_local_drive(const char *who, struct cli_local *l, const char *exp,
    double progress_every)
{
	static const int	 sigs[] = { SIGINT, SIGTERM };
	struct progress		 p;
	struct pollfd		 pfd;
	json_t			*status = NULL;
	char			 err[LOCAL_ERRLEN], *table = NULL;
	unsigned char		 sig;
	int64_t			 n;
	int			 sigfd, cancelled = 0, rc = CLI_EXIT_FAIL, ms;

	if ((sigfd = sigpipe_open(sigs, 2)) < 0) {
		fprintf(stderr, "cadre %s: signals: %s\n", who, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	memset(&p, 0, sizeof p);
	p.tty = isatty(STDERR_FILENO);
	p.every = progress_every;
	p.last_round = now_s();
	p.seen = json_object();
	while (!monitor_all_final(l->m, exp)) {
		monitor_tick(l->m, now_s());
		if (progress_every >= 0)
			progress_show(&p, l->m, exp, now_s(), 0);
		pfd.fd = sigfd;
		pfd.events = POLLIN;
		if (l->nt != NULL && notify_pending(l->nt) > 0)
			notify_poll(l->nt, 0);
		ms = l->nt != NULL && notify_pending(l->nt) > 0 ? 200 :
		    monitor_timeout_ms(l->m, now_s());
		/* the progress block keeps moving between polls */
		if (progress_every >= 0 && ms > 1000)
			ms = 1000;
		if (poll(&pfd, 1, ms) > 0 && read(sigfd, &sig, 1) == 1 &&
		    !cancelled) {
			fprintf(stderr, "cadre %s: cancelling the runs\n", who);
			cancelled = 1;
			if (monitor_cancel(l->m, exp, &n, err, sizeof err) != 0)
				fprintf(stderr, "cadre %s: %s\n", who, err);
		}
	}
	if (progress_every >= 0)
		progress_show(&p, l->m, exp, now_s(), 1);
	json_decref(p.seen);
	sigpipe_close();
	if (monitor_status(l->m, exp, &status, err, sizeof err) == 0 &&
	    monitor_status_table(l->m, exp, &table, err, sizeof err) == 0) {
		fputs(table, stdout);
		rc = cli_all_done(status) ? CLI_EXIT_OK : CLI_EXIT_FAIL;
		/* then the experiment's report, as `cadre report EXP` prints
		 * it, failed runs included */
		if (!cancelled) {
			fputc('\n', stdout);
			fflush(stdout);
			if (cli_report_print(l->db, exp, stdout) != 0)
				rc = CLI_EXIT_FAIL;
		}
	} else
		fprintf(stderr, "cadre %s: %s\n", who, err);
	json_decref(status);
	free(table);
	return rc;
}
