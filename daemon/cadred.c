/*
 * cadred: the per-user daemon. It holds the lock in the runtime dir,
 * listens on the control socket (server.c, daemon/proto.h), and runs the
 * monitor (monitor.c) from one poll() loop. SIGHUP reads the config
 * again; SIGTERM and SIGINT stop the daemon and leave the jobs running:
 * the next start picks them up from the database.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "duration.h"
#include "error.h"
#include "log.h"
#include "monitor.h"
#include "notify.h"
#include "paths.h"
#include "proto.h"
#include "server.h"
#include "sigpipe.h"
#include "spec.h"
#include "state.h"
#include "xmalloc.h"

/* The one daemon state struct. */
static struct {
	struct state		*st;
	struct monitor		*mon;
	struct server		*srv;
	struct notifier		*notifier;
	struct monitor_config	 cfg;
	char			*config_path;
	int			 config_given;
	int			 stop;
	uint64_t		 watchdog_us;	/* 0: no watchdog */
	double			 last_watchdog;
} d;

/* sd_notify(): libsystemd's when built with it, else the datagram to
 * $NOTIFY_SOCKET written here. */
static void
sd_say(const char *msg)
{
#ifdef HAVE_SYSTEMD
	(void)sd_notify(0, msg);
#else
	struct sockaddr_un	 sun;
	const char		*path = getenv("NOTIFY_SOCKET");
	socklen_t		 len;
	int			 fd;

	if (path == NULL || (path[0] != '/' && path[0] != '@') ||
	    strlen(path) >= sizeof sun.sun_path)
		return;
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path));
	if (path[0] == '@')
		sun.sun_path[0] = '\0';	/* abstract namespace */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	    strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return;
	(void)sendto(fd, msg, strlen(msg), MSG_NOSIGNAL,
	    (struct sockaddr *)&sun, len);
	close(fd);
#endif
}

static void
sd_status(void)
{
	char	msg[256], when[16];
	double	since = d.mon != NULL ? monitor_unreachable_since(d.mon) : 0;
	time_t	t = (time_t)since;
	struct tm tm;

	if (since > 0) {
		localtime_r(&t, &tm);
		strftime(when, sizeof when, "%H:%M", &tm);
		snprintf(msg, sizeof msg, "STATUS=scheduler unreachable since "
		    "%s", when);
	} else
		snprintf(msg, sizeof msg, "STATUS=%zu client%s",
		    d.srv != NULL ? server_nclients(d.srv) : 0,
		    d.srv != NULL && server_nclients(d.srv) == 1 ? "" : "s");
	sd_say(msg);
}

static json_t *
handle(void *ctx, enum proto_op op, json_t *req)
{
	json_t		*r = NULL, *body = NULL;
	const char	*spec, *path, *target = NULL, *fmt;
	char		 err[MONITOR_ERR_MAX * 4], *table = NULL;
	int64_t		 n;
	size_t		 len;
	int		 rc;

	(void)ctx;
	err[0] = '\0';
	if (json_is_string(json_object_get(req, "target")))
		target = json_string_value(json_object_get(req, "target"));
	switch (op) {
	case PROTO_OP_PING:
		r = proto_reply_ok();
		json_object_set_new(r, "pid", json_integer(getpid()));
		json_object_set_new(r, "version", json_string(PACKAGE_VERSION));
		return r;
	case PROTO_OP_SUBMIT:
		spec = json_string_value(json_object_get(req, "spec"));
		path = json_string_value(json_object_get(req, "path"));
		if (spec == NULL || path == NULL || path[0] != '/')
			return proto_reply_error("submit: expected \"spec\" "
			    "(text) and \"path\" (absolute)");
		/* the length jansson knows: a NUL inside the text must reach
		 * the spec's checks, not cut it short */
		len = json_string_length(json_object_get(req, "spec"));
		if (len > SPEC_MAX_BYTES)
			return proto_reply_error("submit: spec over %zu bytes",
			    SPEC_MAX_BYTES);
		rc = monitor_submit(d.mon, path, spec, len, &body, err,
		    sizeof err);
		break;
	case PROTO_OP_STATUS:
		fmt = json_string_value(json_object_get(req, "format"));
		if (fmt != NULL && strcmp(fmt, "table") == 0) {
			rc = monitor_status_table(d.mon, target, &table, err,
			    sizeof err);
			if (rc == 0)
				body = json_pack("{s:s}", "table", table);
			free(table);
		} else if (fmt == NULL || strcmp(fmt, "json") == 0)
			rc = monitor_status(d.mon, target, &body, err,
			    sizeof err);
		else
			return proto_reply_error("status: \"format\" is "
			    "\"json\" or \"table\"");
		break;
	case PROTO_OP_CANCEL:
		rc = monitor_cancel(d.mon, target, &n, err, sizeof err);
		if (rc == 0)
			body = json_pack("{s:I}", "cancelled", (json_int_t)n);
		break;
	case PROTO_OP_RERUN:
		rc = monitor_rerun_json(d.mon, req, &body, err, sizeof err);
		break;
	default:
		return proto_reply_error("operation not supported");
	}
	if (rc != 0) {
		json_decref(body);
		/* the error text may hold the spec's diagnostics: keep it
		 * whole instead of proto_reply_error's sanitised copy */
		r = json_pack("{s:i, s:b, s:s}", "v", PROTO_VERSION, "ok", 0,
		    "error", err);
		return r != NULL ? r : proto_reply_error("%s", err);
	}
	r = proto_reply_ok();
	if (body != NULL)
		json_object_update(r, body);
	json_decref(body);
	return r;
}

static void
default_config_path(void)
{
	const char	*x = getenv("XDG_CONFIG_HOME"), *h = getenv("HOME");

	if (x != NULL && x[0] == '/')
		xasprintf(&d.config_path, "%s/cadre/cadred.conf", x);
	else if (h != NULL && h[0] == '/')
		xasprintf(&d.config_path, "%s/.config/cadre/cadred.conf", h);
}

static int
read_config(struct monitor_config *c)
{
	char		err[MONITOR_ERR_MAX];
	enum log_level	lvl;
	int		rc;

	monitor_config_init(c);
	if (d.config_path != NULL && (rc = monitor_config_load(d.config_path,
	    !d.config_given, c, err, sizeof err)) != 0) {
		log_error("%s", err);
		monitor_config_free(c);
		return rc;
	}
	if (c->log_level != NULL && log_level_parse(c->log_level, &lvl) == 0)
		log_set_level(lvl);
	return 0;
}

static void
reload(void)
{
	struct monitor_config	c;

	sd_say("RELOADING=1");
	if (read_config(&c) == 0) {
		monitor_config_free(&d.cfg);
		d.cfg = c;
		monitor_reconfigure(d.mon, &d.cfg);
		log_notice("configuration read again from %s",
		    d.config_path != NULL ? d.config_path : "(defaults)");
	} else
		log_warn("configuration kept as it was");
	sd_say("READY=1");
}

/* The pid file, locked for as long as we live: a second daemon of the
 * same user stops here. */
static int
take_lock(const char *rundir)
{
	char	*path, buf[32];
	ssize_t	 n;
	int	 fd;

	xasprintf(&path, "%s/cadred.pid", rundir);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) == -1)
		fatal("%s", path);
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK)
			fatal("flock %s", path);
		n = read(fd, buf, sizeof buf - 1);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		fprintf(stderr, "cadred: already running (pid %s, lock %s): "
		    "one daemon per user; stop it first ('systemctl --user "
		    "stop cadred' or kill %s)\n", buf[0] != '\0' ? buf : "?",
		    path, buf[0] != '\0' ? buf : "PID");
		exit(1);
	}
	if (ftruncate(fd, 0) != 0)
		fatal("ftruncate %s", path);
	n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	if (pwrite(fd, buf, (size_t)n, 0) != n)
		fatal("write %s", path);
	free(path);
	return fd;
}

static void
usage(FILE *fp)
{
	fprintf(fp, "Usage: cadred [--foreground] [--config FILE]\n"
	    "The cadre daemon: runs submitted experiments on their "
	    "schedulers, one per user.\n\n"
	    "Options:\n"
	    "  -f, --foreground  Stay in the foreground, logging to stderr\n"
	    "  -c, --config FILE Config file (default: "
	    "$XDG_CONFIG_HOME/cadre/cadred.conf)\n"
	    "  -h, --help        Show this help\n"
	    "  -V, --version     Show the version\n"
	    "\nSIGHUP reads the config again; SIGTERM stops the daemon and "
	    "leaves the jobs running.\nSee docs/daemon.md.\n");
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	struct pollfd	*fds;
	char		*rundir = NULL, *statedir = NULL, *db = NULL,
			*sock = NULL, *runs = NULL;
	const char	*wd;
	double		 now;
	size_t		 n;
	int		 c, foreground = 0, sigfd, lockfd, timeout, rc;
	unsigned char	 sig;

	log_init("cadred", LOG_LEVEL_NOTICE, LOG_TARGET_STDERR);
	while ((c = getopt_long(argc, argv, "fc:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			foreground = 1;
			break;
		case 'c':
			free(d.config_path);
			d.config_path = xstrdup(optarg);
			d.config_given = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("cadred %s\n", PACKAGE_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "cadred: unexpected argument '%s'\n",
		    argv[optind]);
		usage(stderr);
		return 2;
	}
	if (d.config_path == NULL)
		default_config_path();
	if (read_config(&d.cfg) != 0)
		return 1;
	if (paths_runtime_dir(&rundir) != 0 || paths_state_dir(&statedir) != 0)
		fatalx("no runtime or state directory: set XDG_RUNTIME_DIR and "
		    "XDG_STATE_HOME (or HOME) to absolute paths");
	if (paths_mkdir(rundir, 0700, 1) != 0 || paths_mkdir(statedir, 0700,
	    1) != 0)
		fatalx("cannot use the runtime dir %s or the state dir %s",
		    rundir, statedir);
	xasprintf(&runs, "%s/runs", statedir);
	if (paths_mkdir(runs, 0700, 0) != 0)
		fatalx("cannot create %s", runs);
	if (!foreground) {
		/* lock before forking too, so that a second daemon says so on
		 * the terminal; the child takes it again */
		close(take_lock(rundir));
		if (daemon(0, 0) != 0)
			fatal("daemon");
		log_init("cadred", log_get_level(), LOG_TARGET_JOURNAL);
	}
	lockfd = take_lock(rundir);
	(void)paths_db(&db);
	(void)paths_socket(&sock);
	if ((rc = state_open(db, &d.st)) != 0)
		fatalx("%s: %s", db, cadre_strerror(rc));
	if ((rc = monitor_open(d.st, &d.cfg, 1, &d.mon)) != 0)
		fatalx("loading the experiments from %s: %s", db,
		    cadre_strerror(rc));
	if ((d.notifier = notify_new()) != NULL)
		monitor_set_notifier(d.mon, d.notifier);
	if ((sigfd = sigpipe_open(sigs, sizeof sigs / sizeof sigs[0])) < 0)
		fatal("sigpipe_open");
	if (server_open(sock, handle, NULL, &d.srv) != 0)
		fatalx("cannot listen on %s", sock);
	if ((wd = getenv("WATCHDOG_USEC")) != NULL)
		d.watchdog_us = strtoull(wd, NULL, 10);
	log_notice("started (pid %ld): socket %s, state %s", (long)getpid(),
	    sock, statedir);
	sd_say("READY=1");
	sd_status();

	fds = xcalloc(2 + SERVER_MAX_CLIENTS, sizeof *fds);
	while (!d.stop) {
		now = wall_now();
		monitor_tick(d.mon, now);
		fds[0].fd = sigfd;
		fds[0].events = POLLIN;
		fds[0].revents = 0;
		n = server_pollfds(d.srv, fds + 1);
		timeout = monitor_timeout_ms(d.mon, wall_now());
		if (timeout > 1000)
			timeout = 1000;	/* stalled clients, the watchdog */
		if (poll(fds, n + 1, timeout) < 0 && errno != EINTR)
			fatal("poll");
		if (fds[0].revents & POLLIN) {
			while (read(sigfd, &sig, 1) == 1) {
				if (sig == SIGHUP)
					reload();
				else {
					log_notice("signal %d: stopping; jobs "
					    "keep running", sig);
					d.stop = 1;
				}
			}
		}
		server_handle(d.srv, fds + 1, n);
		server_expire(d.srv);
		if (d.notifier != NULL && notify_pending(d.notifier) > 0)
			notify_poll(d.notifier, 0);
		now = wall_now();
		if (d.watchdog_us > 0 && (now - d.last_watchdog) * 1e6 >=
		    (double)d.watchdog_us / 2) {
			sd_say("WATCHDOG=1");
			sd_status();
			d.last_watchdog = now;
		}
	}
	sd_say("STOPPING=1");
	free(fds);
	server_close(d.srv);
	monitor_free(d.mon);
	/* webhooks still queued get a moment, not a hang */
	if (d.notifier != NULL && notify_pending(d.notifier) > 0)
		notify_poll(d.notifier, 1000);
	notify_free(d.notifier);
	state_close(d.st);
	monitor_config_free(&d.cfg);
	sigpipe_close();
	close(lockfd);
	free(d.config_path);
	free(rundir);
	free(statedir);
	free(runs);
	free(db);
	free(sock);
	return 0;
}
