/* cadre-agent rsh HOST CMD...: runs CMD on HOST's agent, as its words (no
 * shell), or with --shell joined and run by /bin/sh as ssh would, which is
 * how Open MPI's plm_rsh_agent uses it. */
#include "config.h"

#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <jansson.h>

#include "agent.h"
#include "buf.h"
#include "error.h"
#include "log.h"
#include "sigpipe.h"
#include "xmalloc.h"

#define RSH_TIMEOUT_MS	10000

struct rsh {
	ssh_session				 ssh;
	ssh_channel				 chan;
	struct ssh_channel_callbacks_struct	 ccb;
	ssh_event				 event;
	int					 stdin_open;
	int					 exit_status;	/* -1: none yet */
	int					 exit_signal;
	int					 remote_eof;
	int					 closed;
	int					 sigfd;
	int					 signals;
	const char				*host;
};

static void
rsh_usage(FILE *f)
{
	fprintf(f,
	    "usage: cadre-agent rsh [--run-dir DIR] [--shell] [-n] [-x] [-l USER] HOST COMMAND [ARG...]\n"
	    "  Runs COMMAND with its arguments, as they are and with no shell, on the\n"
	    "  agent of HOST (a node name or address in DIR/agents/); with --shell, its\n"
	    "  words are joined by spaces and run by /bin/sh, as ssh does (what mpirun's\n"
	    "  plm_rsh_agent needs: \"cadre-agent rsh --shell\"). It pins the host\n"
	    "  key it published and authenticating with DIR/keys/id_ed25519. Relays stdin,\n"
	    "  stdout and stderr and exits with the command's status (128+N for signal N),\n"
	    "  or 255 when it could not run it. -n: no stdin. ssh's -x -T -t -q -A -a -C -4 -6\n"
	    "  and -l -p -o -i -F with their values are accepted and ignored; USER@HOST is HOST.\n"
	    "  DIR defaults to $CADRE_RUN_DIR.\n");
}

/* Writes all of buf to fd (blocking). */
static void
write_all(int fd, const char *buf, size_t len)
{
	ssize_t	n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static int
rcb_data(ssh_session s, ssh_channel c, void *data, uint32_t len,
    int is_stderr, void *ud)
{
	write_all(is_stderr ? 2 : 1, data, len);
	return (int)len;
}

static void
rcb_eof(ssh_session s, ssh_channel c, void *ud)
{
	struct rsh	*r = ud;

	r->remote_eof = 1;
}

static void
rcb_close(ssh_session s, ssh_channel c, void *ud)
{
	struct rsh	*r = ud;

	r->closed = 1;
}

static void
rcb_exit_status(ssh_session s, ssh_channel c, int status, void *ud)
{
	struct rsh	*r = ud;

	r->exit_status = status;
}

static void
rcb_exit_signal(ssh_session s, ssh_channel c, const char *sig, int core,
    const char *errmsg, const char *lang, void *ud)
{
	struct rsh	*r = ud;
	int		 n = ssh_signal_number(sig);

	r->exit_signal = n > 0 ? n : SIGTERM;
}

static int
rsh_stdin(socket_t fd, int revents, void *ud)
{
	struct rsh	*r = ud;
	char		 buf[32 << 10];
	ssize_t		 n;

	n = read(0, buf, sizeof buf);
	if (n > 0) {
		if (ssh_channel_write(r->chan, buf, (uint32_t)n) == SSH_ERROR)
			r->closed = 1;
		return 0;
	}
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	ssh_event_remove_fd(r->event, 0);
	r->stdin_open = 0;
	ssh_channel_send_eof(r->chan);
	return 0;
}

/* The first SIGTERM/SIGINT/SIGHUP goes to the remote command; another
 * one ends rsh at once. */
static int
rsh_signal(socket_t fd, int revents, void *ud)
{
	struct rsh	*r = ud;
	unsigned char	 c;
	const char	*name;

	while (read(r->sigfd, &c, 1) == 1) {
		if (++r->signals > 1) {
			log_notice("%s: interrupted", r->host);
			_exit(128 + c);
		}
		if ((name = ssh_signal_name(c)) != NULL)
			ssh_channel_request_send_signal(r->chan, name);
	}
	return 0;
}

/* The exec string of an argv command: its words as a JSON array. */
static int
argv_command(char **words, int n, struct cbuf *cmd)
{
	json_t	*arr = json_array(), *w;
	char	*text = NULL;
	int	 i, rc = -1;

	if (n > AGENT_ARGV_MAX) {
		log_error("the command has %d words; at most %d", n,
		    AGENT_ARGV_MAX);
		goto out;
	}
	for (i = 0; i < n; i++) {
		if ((w = json_string(words[i])) == NULL) {
			log_error("argument %d of the command is not UTF-8 "
			    "text; pass it through --shell", i + 1);
			goto out;
		}
		json_array_append_new(arr, w);
	}
	if ((text = json_dumps(arr, JSON_COMPACT)) == NULL ||
	    cbuf_adds(cmd, text) != 0) {
		log_error("the command is longer than %u bytes",
		    AGENT_COMMAND_MAX);
		goto out;
	}
	rc = 0;
 out:
	free(text);
	json_decref(arr);
	return rc;
}

int
cmd_rsh(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "run-dir", required_argument, NULL, 'd' },
		{ "shell", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct rsh		 r;
	struct agent_info	 ai;
	struct cbuf		 cmd;
	const char		*rundir_opt = NULL, *rundir;
	char			 msg[1024], *keyfile = NULL;
	int			 c, i, no_stdin = 0, use_shell = 0;
	int			 rc = RSH_EXIT_CONNECT, error;

	memset(&r, 0, sizeof r);
	r.exit_status = -1;
	r.sigfd = -1;
	cbuf_init(&cmd, AGENT_COMMAND_MAX);
	optind = 1;
	/* '+': options end at HOST; what follows is the command's. */
	while ((c = getopt_long(argc, argv, "+nxTqtAaC46hl:p:o:i:F:", longopts, NULL)) !=
	    -1) {
		switch (c) {
		case 'd':
			rundir_opt = optarg;
			break;
		case 's':
			use_shell = 1;
			break;
		case 'n':
			no_stdin = 1;
			break;
		case 'x': case 'T': case 'q': case 'l': case 'p': case 'o':
		case 't': case 'A': case 'a': case 'C': case '4': case '6':
		case 'i': case 'F':
			/* ssh's options that mpirun, horovodrun and
			 * pdsh-style scripts pass: the agent decides
			 * the port, key and host-key checking itself */
			break;
		case 'h':
			rsh_usage(stdout);
			return 0;
		default:
			rsh_usage(stderr);
			return RSH_EXIT_CONNECT;
		}
	}
	if (argc - optind < 2) {
		rsh_usage(stderr);
		return RSH_EXIT_CONNECT;
	}
	r.host = argv[optind];
	if (strchr(r.host, '@') != NULL)	/* ssh's USER@HOST */
		r.host = strchr(r.host, '@') + 1;
	if (use_shell) {
		for (i = optind + 1; i < argc; i++) {
			if ((i > optind + 1 && cbuf_addc(&cmd, ' ') != 0) ||
			    cbuf_adds(&cmd, argv[i]) != 0) {
				log_error("the command is longer than %u bytes",
				    AGENT_COMMAND_MAX);
				goto out;
			}
		}
	} else if (argv_command(argv + optind + 1, argc - optind - 1, &cmd) !=
	    0)
		goto out;
	if ((rundir = rundir_default(rundir_opt)) == NULL) {
		log_error("no run directory: pass --run-dir or set "
		    "CADRE_RUN_DIR");
		goto out;
	}
	if (rundir_check(rundir, msg, sizeof msg) != 0) {
		log_error("%s", msg);
		goto out;
	}
	if ((error = agent_info_find(rundir, r.host, &ai, msg, sizeof msg)) !=
	    0) {
		log_error("%s", msg);
		goto out;
	}
	keyfile = rundir_path(rundir, RUNDIR_CLIENT_KEY);
	if (agent_client_connect(&ai, keyfile, RSH_TIMEOUT_MS, &r.ssh, msg,
	    sizeof msg) != 0) {
		log_error("%s", msg);
		goto out;
	}
	if ((r.chan = ssh_channel_new(r.ssh)) == NULL ||
	    ssh_channel_open_session(r.chan) != SSH_OK) {
		log_error("%s: cannot open a session: %s", r.host,
		    ssh_get_error(r.ssh));
		goto out;
	}
	r.ccb.userdata = &r;
	r.ccb.channel_data_function = rcb_data;
	r.ccb.channel_eof_function = rcb_eof;
	r.ccb.channel_close_function = rcb_close;
	r.ccb.channel_exit_status_function = rcb_exit_status;
	r.ccb.channel_exit_signal_function = rcb_exit_signal;
	ssh_callbacks_init(&r.ccb);
	ssh_set_channel_callbacks(r.chan, &r.ccb);
	if (!use_shell && ssh_channel_request_env(r.chan, AGENT_EXEC_MODE_ENV,
	    "argv") != SSH_OK) {
		log_error("%s: the agent refused an argv command: %s", r.host,
		    ssh_get_error(r.ssh));
		goto out;
	}
	if (ssh_channel_request_exec(r.chan, cmd.data) != SSH_OK) {
		log_error("%s: the agent refused the command: %s", r.host,
		    ssh_get_error(r.ssh));
		goto out;
	}

	if ((r.sigfd = sigpipe_open((const int[]){ SIGTERM, SIGINT, SIGHUP },
	    3)) < 0)
		fatal("pipe");

	if ((r.event = ssh_event_new()) == NULL ||
	    ssh_event_add_session(r.event, r.ssh) != SSH_OK ||
	    ssh_event_add_fd(r.event, r.sigfd, POLLIN, rsh_signal, &r) !=
	    SSH_OK)
		fatalx("cannot set up the event loop");
	r.stdin_open = !no_stdin && fcntl(0, F_GETFD) != -1;
	if (r.stdin_open &&
	    ssh_event_add_fd(r.event, 0, POLLIN, rsh_stdin, &r) != SSH_OK)
		r.stdin_open = 0;
	if (!r.stdin_open)
		ssh_channel_send_eof(r.chan);

	while (!r.closed && ssh_is_connected(r.ssh) &&
	    !ssh_channel_is_closed(r.chan)) {
		if (ssh_event_dopoll(r.event, 1000) == SSH_ERROR &&
		    errno != EINTR && !ssh_is_connected(r.ssh))
			break;
		if (r.remote_eof && (r.exit_status >= 0 || r.exit_signal > 0))
			break;
	}
	if (r.exit_status >= 0) {
		rc = r.exit_status;
	} else if (r.exit_signal > 0) {
		rc = 128 + r.exit_signal;
	} else {
		log_error("%s: the connection ended without an exit status",
		    r.host);
		rc = RSH_EXIT_CONNECT;
	}
 out:
	if (r.event != NULL) {
		/* ssh_event_free leaves the fd entries to us. */
		ssh_event_remove_fd(r.event, r.sigfd);
		if (r.stdin_open)
			ssh_event_remove_fd(r.event, 0);
		if (r.ssh != NULL)
			ssh_event_remove_session(r.event, r.ssh);
		ssh_event_free(r.event);
	}
	if (r.chan != NULL) {
		ssh_channel_close(r.chan);
		ssh_channel_free(r.chan);
	}
	if (r.ssh != NULL) {
		ssh_disconnect(r.ssh);
		ssh_free(r.ssh);
	}
	sigpipe_close();
	free(keyfile);
	cbuf_free(&cmd);
	return rc;
}
