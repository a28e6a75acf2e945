/* One accepted SSH connection, served in its own forked process: public-key
 * authentication with the run key only, one session channel, one exec
 * request, stdio relayed, exit status or signal returned.
 *
 * An exec request is run as an argv, with no shell, when the client sent
 * the env request CADRE_EXEC=argv first: the command string is then a JSON
 * array of words. Otherwise it is run with /bin/sh -c, as sshd does,
 * because mpirun's rsh agent passes shell-quoted words. */
#include "config.h"

#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <libssh/server.h>

#include "agent.h"
#include "error.h"
#include "json.h"
#include "log.h"
#include "sigpipe.h"
#include "xmalloc.h"

#define SESSION_AUTH_TRIES	6	/* refused attempts before hanging up */
#define SESSION_KILL_GRACE	5.0	/* seconds from SIGTERM to SIGKILL */
#define SESSION_DRAIN_GRACE	1.0	/* output after the command exited */
#define SESSION_IO_CHUNK	(32u << 10)

static const struct {
	const char	*name;
	int		 sig;
} signal_names[] = {
	{ "ABRT", SIGABRT }, { "ALRM", SIGALRM }, { "FPE", SIGFPE },
	{ "HUP", SIGHUP }, { "ILL", SIGILL }, { "INT", SIGINT },
	{ "KILL", SIGKILL }, { "PIPE", SIGPIPE }, { "QUIT", SIGQUIT },
	{ "SEGV", SIGSEGV }, { "TERM", SIGTERM }, { "USR1", SIGUSR1 },
	{ "USR2", SIGUSR2 },
};

int
ssh_signal_number(const char *name)
{
	size_t	i;

	for (i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
		if (strcmp(signal_names[i].name, name) == 0)
			return signal_names[i].sig;
	return 0;
}

const char *
ssh_signal_name(int sig)
{
	size_t	i;

	for (i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
		if (signal_names[i].sig == sig)
			return signal_names[i].name;
	return NULL;
}

/* Environment a client may set: what mpirun and the trainer use. */
static int
env_allowed(const char *name)
{
	static const char *const prefixes[] = {
		"CADRE_", "OMPI_", "PMIX_", "NCCL_", "LC_", NULL
	};
	static const char *const names[] = {
		"LANG", "TZ", "CUDA_VISIBLE_DEVICES", NULL
	};
	size_t	i;

	for (i = 0; prefixes[i] != NULL; i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	for (i = 0; names[i] != NULL; i++)
		if (strcmp(name, names[i]) == 0)
			return 1;
	return 0;
}

struct session {
	const struct session_config		*cfg;
	ssh_session				 ssh;
	ssh_event				 event;
	ssh_channel				 chan;
	struct ssh_server_callbacks_struct	 scb;
	struct ssh_channel_callbacks_struct	 ccb;
	int					 authed;
	int					 auth_failures;
	char					*env[AGENT_ENV_MAX];
	int					 nenv;
	int					 argv_mode;	/* CADRE_EXEC=argv */

	pid_t		 child;		/* leader of its own process group */
	int		 child_done;
	int		 status;
	int		 in_fd, out_fd, err_fd;	/* -1 once closed */
	char		*inbuf;		/* bytes for the command's stdin */
	size_t		 inlen;
	int		 client_eof;
	int		 client_closed;
	double		 kill_at;	/* SIGKILL the group then; 0: not armed */
	double		 drain_until;
	int		 paused[2];	/* stdout, stderr: waiting for window */
	int		 sigfd;		/* read end of the signal pipe */
};

static int
cb_auth_pubkey(ssh_session s, const char *user, struct ssh_key_struct *key,
    char state, void *ud)
{
	struct session	*se = ud;

	if (strcmp(user, se->cfg->user) != 0 ||
	    ssh_key_cmp(key, se->cfg->client_pub, SSH_KEY_CMP_PUBLIC) != 0) {
		log_warn("refused public key for user '%.64s': %s", user,
		    strcmp(user, se->cfg->user) != 0 ? "not the agent's user" :
		    "not the run's key");
		if (++se->auth_failures >= SESSION_AUTH_TRIES)
			ssh_disconnect(s);
		return SSH_AUTH_DENIED;
	}
	if (state == SSH_PUBLICKEY_STATE_NONE)
		return SSH_AUTH_SUCCESS;	/* the key would be accepted */
	if (state == SSH_PUBLICKEY_STATE_VALID) {
		se->authed = 1;
		return SSH_AUTH_SUCCESS;
	}
	++se->auth_failures;
	return SSH_AUTH_DENIED;
}

static int
cb_auth_password(ssh_session s, const char *user, const char *password,
    void *ud)
{
	struct session	*se = ud;

	log_warn("refused password authentication for user '%.64s'", user);
	if (++se->auth_failures >= SESSION_AUTH_TRIES)
		ssh_disconnect(s);
	return SSH_AUTH_DENIED;
}

static int
cb_auth_none(ssh_session s, const char *user, void *ud)
{
	struct session	*se = ud;

	if (++se->auth_failures >= SESSION_AUTH_TRIES)
		ssh_disconnect(s);
	return SSH_AUTH_DENIED;
}

static int
cb_data(ssh_session s, ssh_channel c, void *data, uint32_t len, int is_stderr,
    void *ud)
{
	struct session	*se = ud;
	size_t		 room, n;

	if (se->in_fd < 0)
		return (int)len;	/* no one reads it: drop */
	room = AGENT_STDIN_MAX - se->inlen;
	n = len < room ? len : room;
	if (n == 0)
		return 0;		/* full: libssh keeps the rest */
	if (se->inbuf == NULL)
		se->inbuf = xmalloc(AGENT_STDIN_MAX);
	memcpy(se->inbuf + se->inlen, data, n);
	se->inlen += n;
	return (int)n;
}

static void
cb_eof(ssh_session s, ssh_channel c, void *ud)
{
	struct session	*se = ud;

	se->client_eof = 1;
}

static void
cb_close(ssh_session s, ssh_channel c, void *ud)
{
	struct session	*se = ud;

	se->client_closed = 1;
}

static void
cb_signal(ssh_session s, ssh_channel c, const char *name, void *ud)
{
	struct session	*se = ud;
	int		 sig = ssh_signal_number(name);

	if (sig == 0) {
		log_warn("ignored unknown signal '%.16s' from the client", name);
		return;
	}
	if (se->child > 0 && !se->child_done)
		kill(-se->child, sig);
}

static int
cb_env(ssh_session s, ssh_channel c, const char *name, const char *value,
    void *ud)
{
	struct session	*se = ud;

	if (strcmp(name, AGENT_EXEC_MODE_ENV) == 0) {
		if (strcmp(value, "argv") != 0 || se->child > 0)
			return 1;
		se->argv_mode = 1;
		return 0;
	}
	if (!env_allowed(name) || se->nenv >= AGENT_ENV_MAX ||
	    strlen(value) > AGENT_ENV_VALUE_MAX || strlen(name) > 256 ||
	    strchr(name, '=') != NULL || se->child > 0)
		return 1;
	xasprintf(&se->env[se->nenv++], "%s=%s", name, value);
	return 0;
}

static int
set_nonblock(int fd)
{
	int	fl = fcntl(fd, F_GETFL);

	if (fl == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)
		return CADRE_ERR_SYSTEM;
	return 0;
}

/* The words of an argv-mode command: a JSON array of 1 to AGENT_ARGV_MAX
 * strings without NUL bytes. NULL-terminated; NULL when malformed. */
static char **
parse_argv(const char *command)
{
	json_t		*arr = NULL, *w;
	char		**argv = NULL;
	size_t		 i, n;

	if (cjson_loadb(command, strlen(command), AGENT_COMMAND_MAX, &arr,
	    NULL) != 0)
		goto out;
	if (!json_is_array(arr) || (n = json_array_size(arr)) == 0 ||
	    n > AGENT_ARGV_MAX)
		goto out;
	argv = xcalloc(n + 1, sizeof *argv);
	json_array_foreach(arr, i, w) {
		if (!json_is_string(w) ||
		    strlen(json_string_value(w)) != json_string_length(w)) {
			while (i > 0)
				free(argv[--i]);
			free(argv);
			argv = NULL;
			goto out;
		}
		argv[i] = xstrdup(json_string_value(w));
	}
 out:
	json_decref(arr);
	return argv;
}

static void
free_argv(char **argv)
{
	size_t	i;

	for (i = 0; argv != NULL && argv[i] != NULL; i++)
		free(argv[i]);
	free(argv);
}

/* Runs argv (argv mode) or command under /bin/sh -c in a new process
 * group: 0, or CADRE_ERR_SYSTEM (logged) when it cannot be started. */
static int
spawn(struct session *se, const char *command, char **argv)
{
	int	in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	int	i, sig;
	pid_t	pid;

	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1 ||
	    pipe2(err, O_CLOEXEC) == -1)
		goto fail;
	if ((pid = fork()) == -1)
		goto fail;
	if (pid == 0) {
		sigset_t	all;

		setsid();
		for (sig = 1; sig < NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				signal(sig, SIG_DFL);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		alarm(0);
		if (dup2(in[0], 0) == -1 || dup2(out[1], 1) == -1 ||
		    dup2(err[1], 2) == -1)
			_exit(127);
		for (i = 0; i < se->nenv; i++)
			putenv(se->env[i]);
		if (argv != NULL) {
			execvp(argv[0], argv);
			dprintf(2, "cadre-agent: %s: %s\n", argv[0],
			    strerror(errno));
		} else {
			execl("/bin/sh", "sh", "-c", command, (char *)NULL);
			dprintf(2, "cadre-agent: /bin/sh: %s\n",
			    strerror(errno));
		}
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	se->child = pid;
	se->in_fd = in[1];
	se->out_fd = out[0];
	se->err_fd = err[0];
	set_nonblock(se->in_fd);
	set_nonblock(se->out_fd);
	set_nonblock(se->err_fd);
	return 0;
 fail:
	log_warn("cannot start the command: %s", strerror(errno));
	for (i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	return CADRE_ERR_SYSTEM;
}

static int
cb_exec(ssh_session s, ssh_channel c, const char *command, void *ud)
{
	struct session	*se = ud;
	char		**argv = NULL;
	int		  rc;

	if (se->child > 0 || strlen(command) > AGENT_COMMAND_MAX)
		return 1;
	log_debug("exec%s: %.200s", se->argv_mode ? " (argv)" : "", command);
	if (se->argv_mode && (argv = parse_argv(command)) == NULL) {
		log_warn("refused an argv exec request that is not a JSON "
		    "array of strings");
		return 1;
	}
	rc = spawn(se, command, argv);
	free_argv(argv);
	if (rc != 0)
		return 1;
	alarm(0);	/* the login grace is over: the command runs */
	return 0;
}

static int
cb_shell(ssh_session s, ssh_channel c, void *ud)
{
	log_warn("refused a shell request: only exec is served");
	return 1;
}

static ssh_channel
cb_open_session(ssh_session s, void *ud)
{
	struct session	*se = ud;

	if (!se->authed || se->chan != NULL)
		return NULL;
	if ((se->chan = ssh_channel_new(s)) == NULL)
		return NULL;
	memset(&se->ccb, 0, sizeof se->ccb);
	se->ccb.userdata = se;
	se->ccb.channel_data_function = cb_data;
	se->ccb.channel_eof_function = cb_eof;
	se->ccb.channel_close_function = cb_close;
	se->ccb.channel_signal_function = cb_signal;
	se->ccb.channel_exec_request_function = cb_exec;
	se->ccb.channel_env_request_function = cb_env;
	se->ccb.channel_shell_request_function = cb_shell;
	ssh_callbacks_init(&se->ccb);
	ssh_set_channel_callbacks(se->chan, &se->ccb);
	return se->chan;
}

/* Reads what the command wrote on fd and sends it, no more than the
 * client's window takes, so that a client that stops reading stalls its
 * command (the pipe fills) but never this process: signals and the
 * client's requests are still handled. Closes fd at EOF. */
static void
relay_output(struct session *se, int *fdp, int is_stderr)
{
	char		buf[SESSION_IO_CHUNK];
	ssize_t		n;
	uint32_t	win;
	int		rounds;

	for (rounds = 0; rounds < 8 && *fdp >= 0; rounds++) {
		win = se->chan != NULL && !se->client_closed ?
		    ssh_channel_window_size(se->chan) : sizeof buf;
		if (win == 0) {
			if (!se->paused[is_stderr]) {
				ssh_event_remove_fd(se->event, *fdp);
				se->paused[is_stderr] = 1;
			}
			return;
		}
		n = read(*fdp, buf, win < sizeof buf ? win : sizeof buf);
		if (n > 0) {
			if (se->chan != NULL && !se->client_closed &&
			    (is_stderr ? ssh_channel_write_stderr(se->chan, buf,
			    (uint32_t)n) : ssh_channel_write(se->chan, buf,
			    (uint32_t)n)) == SSH_ERROR)
				se->client_closed = 1;
			continue;
		}
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (!se->paused[is_stderr])
			ssh_event_remove_fd(se->event, *fdp);
		close(*fdp);
		*fdp = -1;
	}
}

static int cb_stdout(socket_t, int, void *);
static int cb_stderr(socket_t, int, void *);

/* Output paused for a full window goes on once the client made room. */
static void
resume_output(struct session *se)
{
	if (se->chan == NULL || se->client_closed ||
	    ssh_channel_window_size(se->chan) == 0)
		return;
	if (se->paused[0] && se->out_fd >= 0 && ssh_event_add_fd(se->event,
	    se->out_fd, POLLIN, cb_stdout, se) == SSH_OK)
		se->paused[0] = 0;
	if (se->paused[1] && se->err_fd >= 0 && ssh_event_add_fd(se->event,
	    se->err_fd, POLLIN, cb_stderr, se) == SSH_OK)
		se->paused[1] = 0;
}

static int
cb_stdout(socket_t fd, int revents, void *ud)
{
	struct session	*se = ud;

	relay_output(se, &se->out_fd, 0);
	return 0;
}

static int
cb_stderr(socket_t fd, int revents, void *ud)
{
	struct session	*se = ud;

	relay_output(se, &se->err_fd, 1);
	return 0;
}

/* Moves buffered client bytes into the command's stdin. */
static void
flush_stdin(struct session *se)
{
	ssize_t	n;

	while (se->in_fd >= 0 && se->inlen > 0) {
		n = write(se->in_fd, se->inbuf, se->inlen);
		if (n > 0) {
			memmove(se->inbuf, se->inbuf + n, se->inlen - (size_t)n);
			se->inlen -= (size_t)n;
		} else if (n == -1 && errno == EAGAIN) {
			return;
		} else {
			close(se->in_fd);	/* EPIPE: it closed stdin */
			se->in_fd = -1;
			se->inlen = 0;
		}
	}
	if (se->in_fd >= 0 && se->client_eof && se->inlen == 0) {
		close(se->in_fd);
		se->in_fd = -1;
	}
}

static void
reap(struct session *se)
{
	int	status;

	if (se->child <= 0 || se->child_done)
		return;
	if (waitpid(se->child, &status, WNOHANG) == se->child) {
		se->child_done = 1;
		se->status = status;
		se->drain_until = now_mono() + SESSION_DRAIN_GRACE;
	}
}

/* Signals from the serve process (SIGTERM at shutdown) reach the command. */
static int
cb_sigpipe(socket_t fd, int revents, void *ud)
{
	struct session	*se = ud;
	unsigned char	 c;

	while (read(se->sigfd, &c, 1) == 1) {
		if (c == SIGCHLD) {
			reap(se);
			continue;
		}
		if (se->child > 0 && !se->child_done) {
			kill(-se->child, c);
			if (se->kill_at == 0)
				se->kill_at = now_mono() + SESSION_KILL_GRACE;
		} else {
			se->client_closed = 1;	/* nothing runs: leave */
		}
	}
	return 0;
}

static void
send_exit(struct session *se)
{
	const char	*name;
	char		 buf[32];

	if (se->chan == NULL || se->client_closed)
		return;
	if (WIFEXITED(se->status)) {
		ssh_channel_request_send_exit_status(se->chan,
		    WEXITSTATUS(se->status));
	} else if (WIFSIGNALED(se->status) &&
	    (name = ssh_signal_name(WTERMSIG(se->status))) != NULL) {
		snprintf(buf, sizeof buf, "%s", name);
		ssh_channel_request_send_exit_signal(se->chan, buf,
		    WCOREDUMP(se->status) ? 1 : 0, "", "");
	} else {
		ssh_channel_request_send_exit_status(se->chan,
		    128 + (WIFSIGNALED(se->status) ? WTERMSIG(se->status) : 0));
	}
	ssh_channel_send_eof(se->chan);
	ssh_channel_close(se->chan);
}

/* After the client went away: stop the command, bounded. */
static void
stop_child(struct session *se)
{
	double	deadline;

	if (se->child <= 0 || se->child_done)
		return;
	kill(-se->child, SIGHUP);
	kill(-se->child, SIGTERM);
	deadline = now_mono() + SESSION_KILL_GRACE;
	while (now_mono() < deadline) {
		reap(se);
		if (se->child_done)
			return;
		poll(NULL, 0, 20);
	}
	kill(-se->child, SIGKILL);
	waitpid(se->child, NULL, 0);
	se->child_done = 1;
}

int
session_run(int fd, const struct session_config *cfg)
{
	struct session		 se;
	ssh_bind		 bind = NULL;
	ssh_key			 hostkey;
	bool			 no = false;
	int			 rc, error = CADRE_ERR_PROTOCOL;
	int			 i;

	memset(&se, 0, sizeof se);
	se.cfg = cfg;
	se.in_fd = se.out_fd = se.err_fd = se.sigfd = -1;

	/* Handshake, authentication and the exec request must all happen
	 * within the login grace: SIGALRM's default action ends a slow or
	 * half-open client's process, and only that one. */
	alarm((unsigned)cfg->login_grace);

	if ((se.sigfd = sigpipe_open((const int[]){ SIGCHLD, SIGTERM, SIGINT,
	    SIGHUP }, 4)) < 0)
		goto out;

	if ((se.ssh = ssh_new()) == NULL || (bind = ssh_bind_new()) == NULL)
		goto out;
	/* The bind takes the key it imports: this process's copy. */
	hostkey = cfg->host_key;
	if (ssh_bind_options_set(bind, SSH_BIND_OPTIONS_PROCESS_CONFIG, &no) !=
	    SSH_OK ||
	    ssh_bind_options_set(bind, SSH_BIND_OPTIONS_IMPORT_KEY, hostkey) !=
	    SSH_OK)
		goto out;
	memset(&se.scb, 0, sizeof se.scb);
	se.scb.userdata = &se;
	se.scb.auth_pubkey_function = cb_auth_pubkey;
	se.scb.auth_password_function = cb_auth_password;
	se.scb.auth_none_function = cb_auth_none;
	se.scb.channel_open_request_session_function = cb_open_session;
	ssh_callbacks_init(&se.scb);
	ssh_set_server_callbacks(se.ssh, &se.scb);
	if (ssh_bind_accept_fd(bind, se.ssh, fd) != SSH_OK) {
		log_warn("accept: %s", ssh_get_error(bind));
		goto out;
	}
	fd = -1;	/* the session owns it now */
	ssh_set_auth_methods(se.ssh, SSH_AUTH_METHOD_PUBLICKEY);
	if (ssh_handle_key_exchange(se.ssh) != SSH_OK) {
		log_info("key exchange failed: %s", ssh_get_error(se.ssh));
		goto out;
	}
	if ((se.event = ssh_event_new()) == NULL ||
	    ssh_event_add_session(se.event, se.ssh) != SSH_OK ||
	    ssh_event_add_fd(se.event, se.sigfd, POLLIN, cb_sigpipe, &se) !=
	    SSH_OK)
		goto out;

	/* Until the command is started. */
	while (se.child == 0) {
		rc = ssh_event_dopoll(se.event, 1000);
		if ((rc == SSH_ERROR && errno != EINTR) ||
		    !ssh_is_connected(se.ssh) || se.client_closed)
			goto out;
	}
	if (ssh_event_add_fd(se.event, se.out_fd, POLLIN, cb_stdout, &se) !=
	    SSH_OK ||
	    ssh_event_add_fd(se.event, se.err_fd, POLLIN, cb_stderr, &se) !=
	    SSH_OK)
		goto out;

	for (;;) {
		rc = ssh_event_dopoll(se.event, se.inlen > 0 ? 20 : 250);
		if (rc == SSH_ERROR && errno != EINTR &&
		    !ssh_is_connected(se.ssh))
			se.client_closed = 1;
		if (!ssh_is_connected(se.ssh) ||
		    (se.chan != NULL && ssh_channel_is_closed(se.chan)))
			se.client_closed = 1;
		flush_stdin(&se);
		reap(&se);
		resume_output(&se);
		/* A client reading slowly keeps what is left of the output;
		 * the grace is for orphans that hold the pipes open. */
		if (se.child_done && (se.paused[0] || se.paused[1]))
			se.drain_until = now_mono() + SESSION_DRAIN_GRACE;
		if (se.kill_at != 0 && !se.child_done && now_mono() > se.kill_at)
			kill(-se.child, SIGKILL);
		if (se.client_closed) {
			stop_child(&se);
			break;
		}
		if (se.child_done && ((se.out_fd < 0 && se.err_fd < 0) ||
		    now_mono() > se.drain_until)) {
			if (se.out_fd >= 0)
				relay_output(&se, &se.out_fd, 0);
			if (se.err_fd >= 0)
				relay_output(&se, &se.err_fd, 1);
			send_exit(&se);
			error = 0;
			break;
		}
	}
	/* Let the exit status and close reach the client, briefly. */
	for (i = 0; i < 20 && error == 0 && ssh_is_connected(se.ssh) &&
	    !se.client_closed; i++)
		ssh_event_dopoll(se.event, 50);
 out:
	alarm(0);
	stop_child(&se);
	if (se.ssh != NULL)
		ssh_disconnect(se.ssh);
	if (fd >= 0)
		close(fd);
	/* This process exits right after (_exit): the OS takes the session,
	 * the bind and the key it imported. */
	return error;
}
