/* cadre-agent serve: the SSH server on each node. One process listens and
 * supervises; each connection is served by a forked child (session.c), so
 * a slow, half-open or garbage-sending client holds only its own process,
 * never the listener. */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "agent.h"
#include "duration.h"
#include "error.h"
#include "log.h"
#include "sigpipe.h"
#include "strutil.h"
#include "xmalloc.h"

#define SERVE_DEFAULT_SESSIONS	64
#define SERVE_MAX_SESSIONS	4096
#define SERVE_TICK_MS		200
#define SERVE_STOP_GRACE	10.0	/* seconds from SIGTERM to SIGKILL */

struct serve {
	const char		*rundir;
	struct agent_info	 info;
	struct session_config	 scfg;
	char			 user[256];
	int			 lfd;
	pid_t			*kids;
	int			 maxkids, nkids;
	int64_t			 idle_timeout;
	double			 last_busy;
	char			*json_path;
	char			*status_path;
	int			 sigfd;
};

static void
serve_usage(FILE *f)
{
	fprintf(f,
	    "usage: cadre-agent serve [--run-dir DIR] [--node NAME] [--addr ADDR] [--port PORT]\n"
	    "           [--max-sessions N] [--login-grace DURATION] [--idle-timeout DURATION]\n"
	    "           [--log-level LEVEL]\n"
	    "  Serves SSH on ADDR:PORT (PORT 0: any free port) with a fresh ed25519 host key,\n"
	    "  publishes DIR/agents/NAME.json and runs exec requests authenticated with the\n"
	    "  run's key (DIR/keys/id_ed25519.pub) for this user only. Exits on SIGTERM or\n"
	    "  SIGINT (stopping its commands), when DIR/status.json appears, or after\n"
	    "  --idle-timeout (default 30m; 0: never) without a session.\n"
	    "  DIR defaults to $CADRE_RUN_DIR, NAME to $SLURMD_NODENAME, else the short\n"
	    "  host name.\n");
}

/* The address to bind: addr, else any; the address to publish: addr, else
 * the host name's first address, else the host name. 0, or (logged)
 * CADRE_ERR_INVALID for an address that does not resolve, CADRE_ERR_SYSTEM
 * when the socket cannot listen. */
static int
serve_listen(struct serve *sv, const char *addr, int port)
{
	struct addrinfo		 hints, *res = NULL;
	struct sockaddr_storage	 ss;
	socklen_t		 sl = sizeof ss;
	char			 portstr[16], host[256], num[INET6_ADDRSTRLEN];
	int			 fd = -1, one = 1, rc;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	snprintf(portstr, sizeof portstr, "%d", port);
	if ((rc = getaddrinfo(addr, portstr, &hints, &res)) != 0) {
		log_error("--addr %s: %s", addr ? addr : "(any)",
		    gai_strerror(rc));
		return CADRE_ERR_INVALID;
	}
	if ((fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC,
	    0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == -1 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) == -1 ||
	    listen(fd, 512) == -1 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) == -1) {
		log_error("listen on %s port %d: %s", addr ? addr : "(any)",
		    port, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return CADRE_ERR_SYSTEM;
	}
	freeaddrinfo(res);
	sv->info.port = ss.ss_family == AF_INET6 ?
	    ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) :
	    ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (addr != NULL) {
		snprintf(sv->info.addr, sizeof sv->info.addr, "%s", addr);
	} else {
		if (gethostname(host, sizeof host) == -1)
			snprintf(host, sizeof host, "localhost");
		host[sizeof host - 1] = '\0';
		snprintf(sv->info.addr, sizeof sv->info.addr, "%s", host);
		memset(&hints, 0, sizeof hints);
		hints.ai_family = AF_INET;
		hints.ai_socktype = SOCK_STREAM;
		if (getaddrinfo(host, NULL, &hints, &res) == 0) {
			if (inet_ntop(AF_INET, &((struct sockaddr_in *)
			    res->ai_addr)->sin_addr, num, sizeof num) != NULL)
				snprintf(sv->info.addr, sizeof sv->info.addr,
				    "%s", num);
			freeaddrinfo(res);
		}
	}
	sv->lfd = fd;
	return 0;
}

static void
serve_reap(struct serve *sv)
{
	pid_t	pid;
	int	i, status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (i = 0; i < sv->nkids; i++) {
			if (sv->kids[i] == pid) {
				sv->kids[i] = sv->kids[--sv->nkids];
				break;
			}
		}
	}
	if (sv->nkids > 0)
		sv->last_busy = now_mono();
}

static void
serve_accept(struct serve *sv)
{
	pid_t	pid;
	int	fd, rc;

	fd = accept4(sv->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd == -1) {
		if (errno == EMFILE || errno == ENFILE) {
			/* Out of descriptors: the connection stays queued;
			 * pause rather than spin on a readable listener. */
			log_warn("accept: %s", strerror(errno));
			poll(NULL, 0, 100);
		} else if (errno != EAGAIN && errno != EINTR &&
		    errno != ECONNABORTED) {
			log_warn("accept: %s", strerror(errno));
		}
		return;
	}
	sv->last_busy = now_mono();
	if (sv->nkids >= sv->maxkids) {
		log_warn("refused a connection: %d sessions already",
		    sv->nkids);
		close(fd);
		return;
	}
	if ((pid = fork()) == -1) {
		log_warn("fork: %s", strerror(errno));
		close(fd);
		return;
	}
	if (pid == 0) {
		close(sv->lfd);
		sigpipe_close();	/* the session opens its own */
		rc = session_run(fd, &sv->scfg);
		_exit(rc == 0 ? 0 : 1);
	}
	close(fd);
	sv->kids[sv->nkids++] = pid;
}

/* SIGTERM to every session (each passes it to its command), then wait,
 * then SIGKILL what is left. */
static void
serve_stop_sessions(struct serve *sv, int sig)
{
	double	deadline;
	int	i;

	for (i = 0; i < sv->nkids; i++)
		kill(sv->kids[i], sig);
	deadline = now_mono() + SERVE_STOP_GRACE;
	while (sv->nkids > 0 && now_mono() < deadline) {
		poll(NULL, 0, 20);
		serve_reap(sv);
	}
	for (i = 0; i < sv->nkids; i++)
		kill(sv->kids[i], SIGKILL);
	while (sv->nkids > 0 && waitpid(-1, NULL, 0) > 0)
		serve_reap(sv);
}

/*
 * Open MPI's daemons keep their session directories under a tmpdir base,
 * /tmp by default. Several agents on one machine (the local backend, the
 * tests) make their orteds race for the same directories there ("mkdir:
 * File exists", orte_init fails); a base of each node's own keeps them
 * apart, and costs nothing on a cluster where each node has its own /tmp.
 * A base the user set is kept. Returns the directory made, or NULL.
 */
static char *
ompi_tmpdir(const char *node)
{
	const char	*tmp = getenv("TMPDIR");
	struct stat	 st;
	char		*base;

	if (getenv("OMPI_MCA_orte_tmpdir_base") != NULL)
		return NULL;
	xasprintf(&base, "%s/cadre-ompi.%u.%s", tmp != NULL && *tmp == '/' ?
	    tmp : "/tmp", (unsigned)getuid(), node);
	/* Someone else's directory, or a link, at that name is not used. */
	if ((mkdir(base, 0700) == -1 && errno != EEXIST) ||
	    lstat(base, &st) == -1 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != getuid() || (st.st_mode & 077) != 0) {
		log_warn("%s: not usable for Open MPI's session directories; "
		    "ranks of several nodes on this machine may collide", base);
		free(base);
		return NULL;
	}
	setenv("OMPI_MCA_orte_tmpdir_base", base, 1);
	return base;
}

/* Accepts and reaps sessions until a signal, the end of the run or the
 * idle timeout; then stops the sessions' commands. */
static void
serve_loop(struct serve *sv)
{
	struct pollfd	pfd[2];
	struct stat	st;
	unsigned char	sig;
	int		stop = 0;

	sv->last_busy = now_mono();
	while (!stop) {
		pfd[0].fd = sv->lfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = sv->sigfd;
		pfd[1].events = POLLIN;
		if (poll(pfd, 2, SERVE_TICK_MS) == -1 && errno != EINTR)
			fatal("poll");
		while (read(sv->sigfd, &sig, 1) == 1) {
			if (sig == SIGCHLD)
				continue;
			log_info("signal %d: stopping", sig);
			stop = sig;
		}
		serve_reap(sv);
		if (!stop && (pfd[0].revents & POLLIN))
			serve_accept(sv);
		/* A status.json older than this agent is a previous
		 * attempt's; a newer one means the run ended. */
		if (stat(sv->status_path, &st) == 0 &&
		    (double)st.st_mtime >=
		    (double)(long long)sv->info.started) {
			log_info("the run ended (%s exists): stopping",
			    sv->status_path);
			stop = SIGTERM;
		} else if (sv->idle_timeout > 0 && sv->nkids == 0 &&
		    now_mono() - sv->last_busy > (double)sv->idle_timeout) {
			log_info("idle for %lld s: stopping",
			    (long long)sv->idle_timeout);
			stop = SIGTERM;
		}
	}
	serve_stop_sessions(sv, SIGTERM);
}

int
cmd_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "run-dir", required_argument, NULL, 'd' },
		{ "node", required_argument, NULL, 'n' },
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "max-sessions", required_argument, NULL, 'm' },
		{ "login-grace", required_argument, NULL, 'g' },
		{ "idle-timeout", required_argument, NULL, 'i' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct serve		 sv;
	enum log_level		 level;
	const char		*rundir_opt = NULL, *node = NULL, *addr = NULL;
	char			 msg[1024], host[256], *b64 = NULL, *agents;
	char			*ompi_tmp = NULL;
	int64_t			 v, grace = 30;
	int			 c, port = 0, rc = 1;
	ssh_key			 hostkey = NULL, clientpub = NULL;

	memset(&sv, 0, sizeof sv);
	sv.lfd = sv.sigfd = -1;
	sv.maxkids = SERVE_DEFAULT_SESSIONS;
	sv.idle_timeout = 30 * 60;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			rundir_opt = optarg;
			break;
		case 'n':
			node = optarg;
			break;
		case 'a':
			addr = optarg;
			break;
		case 'p':
			if (str_to_int64(optarg, &v) != 0 || v < 0 || v > 65535)
				fatalx("--port %s: expected 0..65535", optarg);
			port = (int)v;
			break;
		case 'm':
			if (str_to_int64(optarg, &v) != 0 || v < 1 ||
			    v > SERVE_MAX_SESSIONS)
				fatalx("--max-sessions %s: expected 1..%d",
				    optarg, SERVE_MAX_SESSIONS);
			sv.maxkids = (int)v;
			break;
		case 'g':
			if (duration_parse(optarg, &grace) != 0 || grace < 1 ||
			    grace > 3600)
				fatalx("--login-grace %s: expected a duration "
				    "from 1s to 1h", optarg);
			break;
		case 'i':
			if (duration_parse(optarg, &sv.idle_timeout) != 0)
				fatalx("--idle-timeout %s: expected a duration "
				    "(\"30m\", \"0\": never)", optarg);
			break;
		case 'l':
			if (log_level_parse(optarg, &level) != 0)
				fatalx("--log-level %s: expected error, warn, "
				    "notice, info or debug", optarg);
			log_set_level(level);
			break;
		case 'h':
			serve_usage(stdout);
			return 0;
		default:
			serve_usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		serve_usage(stderr);
		return 2;
	}
	if ((sv.rundir = rundir_default(rundir_opt)) == NULL)
		fatalx("no run directory: pass --run-dir or set CADRE_RUN_DIR");
	/* Slurm's node name when under srun (it can differ from the host
	 * name, and launch gets $SLURM_JOB_NODELIST), else the host name. */
	if (node == NULL && (node = getenv("SLURMD_NODENAME")) != NULL &&
	    !str_is_name(node, AGENT_NODE_MAX))
		node = NULL;
	if (node == NULL) {
		if (gethostname(host, sizeof host) == -1)
			fatal("gethostname");
		host[sizeof host - 1] = '\0';
		host[strcspn(host, ".")] = '\0';
		node = host;
	}
	if (!str_is_name(node, AGENT_NODE_MAX))
		fatalx("node name '%s' must match [A-Za-z0-9._-]{1,%d}", node,
		    AGENT_NODE_MAX);
	if (addr != NULL && strlen(addr) > AGENT_ADDR_MAX)
		fatalx("--addr is longer than %d bytes", AGENT_ADDR_MAX);
	if (rundir_check(sv.rundir, msg, sizeof msg) != 0)
		fatalx("%s", msg);
	if (rundir_load_client_pub(sv.rundir, &clientpub, msg, sizeof msg) != 0)
		fatalx("%s", msg);
	if (self_user(sv.user, sizeof sv.user) != 0)
		fatalx("no user name for uid %lu", (unsigned long)geteuid());

	/* A host key of this start only, never written to disk: the run dir
	 * carries its public half, which is what clients pin. */
	if (ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &hostkey) != SSH_OK ||
	    ssh_pki_export_pubkey_base64(hostkey, &b64) != SSH_OK)
		fatalx("cannot generate the host key");
	snprintf(sv.info.hostkey, sizeof sv.info.hostkey, "ssh-ed25519 %s",
	    b64);
	ssh_string_free_char(b64);
	memcpy(sv.info.node, node, strlen(node) + 1);	/* checked: <= 64 */
	sv.scfg.node = sv.info.node;
	sv.scfg.user = sv.user;
	sv.scfg.client_pub = clientpub;
	sv.scfg.host_key = hostkey;
	sv.scfg.login_grace = (int)grace;
	sv.kids = xcalloc((size_t)sv.maxkids, sizeof *sv.kids);

	if ((sv.sigfd = sigpipe_open((const int[]){ SIGTERM, SIGINT, SIGHUP,
	    SIGCHLD }, 4)) < 0)
		fatal("pipe");

	if (serve_listen(&sv, addr, port) != 0)
		goto out;
	/* What commands see: which node they are on, which run. */
	setenv("CADRE_NODE", sv.info.node, 1);
	setenv("CADRE_RUN_DIR", sv.rundir, 1);
	ompi_tmp = ompi_tmpdir(sv.info.node);

	agents = rundir_path(sv.rundir, RUNDIR_AGENTS);
	c = rundir_mkdir_private(agents, msg, sizeof msg);
	free(agents);
	if (c != 0) {
		log_error("%s", msg);
		goto out;
	}
	sv.info.pid = (long)getpid();
	sv.info.started = now_real();
	xasprintf(&sv.json_path, "%s/%s/%s.json", sv.rundir, RUNDIR_AGENTS,
	    sv.info.node);
	sv.status_path = rundir_path(sv.rundir, RUNDIR_STATUS);
	if ((c = agent_info_publish(sv.rundir, &sv.info)) != 0) {
		log_error("%s: %s", sv.json_path, cadre_strerror(c));
		goto out;
	}
	log_info("node %s serving on %s port %d", sv.info.node, sv.info.addr,
	    sv.info.port);

	serve_loop(&sv);
	rc = 0;
 out:
	if (ompi_tmp != NULL) {
		(void)rmdir(ompi_tmp);	/* Open MPI removes what it made in it */
		free(ompi_tmp);
	}
	if (sv.json_path != NULL)
		unlink(sv.json_path);
	if (sv.lfd >= 0)
		close(sv.lfd);
	free(sv.json_path);
	free(sv.status_path);
	free(sv.kids);
	ssh_key_free(hostkey);
	ssh_key_free(clientpub);
	return rc;
}
