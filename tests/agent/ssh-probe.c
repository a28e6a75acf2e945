/* ssh-probe: what a hostile or broken client would do to an agent, for
 * tests/agent/security.sh and tests/agent/robust.sh.
 *
 *   ssh-probe where RUNDIR NODE             prints "ADDR PORT"
 *   ssh-probe auth METHOD RUNDIR NODE [KEY]  METHOD: none, password, kbdint,
 *       wronguser, key (KEY: a private key file). Exit 0 when the agent
 *       refused, 1 when it accepted, 2 when the probe could not connect.
 *   ssh-probe garbage ADDR PORT BYTES       sends random bytes, reads the
 *       reply until the agent closes (5 s at most)
 *   ssh-probe hold ADDR PORT N SECONDS [banner]  opens N connections that
 *       send nothing (or only an SSH banner), waits, prints
 *       "closed K of N" (K: those the agent closed).
 *   ssh-probe requests RUNDIR NODE   with the run key: a shell request,
 *       env requests (one allowed, one not), an exec, a second channel;
 *       prints what was accepted and the command's output. */
#include "config.h"

#include <sys/socket.h>
#include <sys/types.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "agent.h"
#include "xmalloc.h"

static int
tcp_connect(const char *addr, int port)
{
	struct sockaddr_in	sin;
	int			fd;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return -1;
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof sin) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static double
mono(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
find(const char *rundir, const char *node, struct agent_info *ai)
{
	char	msg[1024];

	if (agent_info_find(rundir, node, ai, msg, sizeof msg) != 0) {
		fprintf(stderr, "ssh-probe: %s\n", msg);
		return -1;
	}
	return 0;
}

static int
probe_auth(const char *method, const char *rundir, const char *node,
    const char *keyfile)
{
	struct agent_info	 ai;
	ssh_session		 s = NULL;
	ssh_key			 key = NULL;
	char			 msg[1024];
	int			 rc;

	if (find(rundir, node, &ai) != 0)
		return 2;
	if (agent_client_connect(&ai, NULL, 5000, &s, msg, sizeof msg) != 0) {
		fprintf(stderr, "ssh-probe: %s\n", msg);
		return 2;
	}
	if (strcmp(method, "none") == 0) {
		rc = ssh_userauth_none(s, NULL);
	} else if (strcmp(method, "password") == 0) {
		rc = ssh_userauth_password(s, NULL, "secret");
	} else if (strcmp(method, "kbdint") == 0) {
		rc = ssh_userauth_kbdint(s, NULL, NULL);
		if (rc == SSH_AUTH_INFO)
			rc = SSH_AUTH_SUCCESS;	/* it asked: not refused */
	} else if (strcmp(method, "wronguser") == 0 ||
	    strcmp(method, "key") == 0) {
		if (ssh_pki_import_privkey_file(keyfile, NULL, NULL, NULL,
		    &key) != SSH_OK) {
			fprintf(stderr, "ssh-probe: cannot read %s\n", keyfile);
			ssh_free(s);
			return 2;
		}
		if (strcmp(method, "wronguser") == 0)
			ssh_options_set(s, SSH_OPTIONS_USER, "cadre-nobody");
		rc = ssh_userauth_publickey(s, NULL, key);
		ssh_key_free(key);
	} else {
		fprintf(stderr, "ssh-probe: unknown method %s\n", method);
		ssh_free(s);
		return 2;
	}
	ssh_disconnect(s);
	ssh_free(s);
	printf("%s: %s\n", method, rc == SSH_AUTH_SUCCESS ? "accepted" :
	    "refused");
	return rc == SSH_AUTH_SUCCESS ? 1 : 0;
}

static const char *
verdict(int rc)
{
	return rc == SSH_OK ? "accepted" : "refused";
}

static int
probe_requests(const char *rundir, const char *node)
{
	struct agent_info	 ai;
	ssh_session		 s = NULL;
	ssh_channel		 c = NULL, c2 = NULL;
	char			 msg[1024], buf[256], *key;
	int			 n;

	if (find(rundir, node, &ai) != 0)
		return 2;
	key = rundir_path(rundir, RUNDIR_CLIENT_KEY);
	if (agent_client_connect(&ai, key, 5000, &s, msg, sizeof msg) != 0) {
		fprintf(stderr, "ssh-probe: %s\n", msg);
		free(key);
		return 2;
	}
	free(key);
	c = ssh_channel_new(s);
	if (c == NULL || ssh_channel_open_session(c) != SSH_OK) {
		fprintf(stderr, "ssh-probe: no session channel\n");
		return 2;
	}
	printf("env LD_PRELOAD: %s\n",
	    verdict(ssh_channel_request_env(c, "LD_PRELOAD", "/tmp/x.so")));
	printf("env CADRE_PROBE: %s\n",
	    verdict(ssh_channel_request_env(c, "CADRE_PROBE", "yes")));
	printf("pty: %s\n", verdict(ssh_channel_request_pty(c)));
	printf("shell: %s\n", verdict(ssh_channel_request_shell(c)));
	printf("exec: %s\n", verdict(ssh_channel_request_exec(c,
	    "echo \"[${CADRE_PROBE:-}][${LD_PRELOAD:-}]\"")));
	while ((n = ssh_channel_read_timeout(c, buf, sizeof buf - 1, 0,
	    5000)) > 0) {
		buf[n] = '\0';
		printf("output: %s", buf);
	}
	c2 = ssh_channel_new(s);
	printf("second channel: %s\n", verdict(c2 == NULL ? SSH_ERROR :
	    ssh_channel_open_session(c2)));
	ssh_channel_free(c2);
	ssh_channel_free(c);
	ssh_disconnect(s);
	ssh_free(s);
	return 0;
}

static int
probe_garbage(const char *addr, int port, long bytes)
{
	char	buf[4096];
	double	end;
	long	sent = 0;
	ssize_t	n;
	int	fd, i;
	struct pollfd pfd;

	if ((fd = tcp_connect(addr, port)) == -1) {
		fprintf(stderr, "ssh-probe: connect: %s\n", strerror(errno));
		return 2;
	}
	srand((unsigned)getpid());
	while (sent < bytes) {
		for (i = 0; i < (int)sizeof buf; i++)
			buf[i] = (char)(rand() & 0xff);
		n = send(fd, buf, sizeof buf, MSG_NOSIGNAL);
		if (n <= 0)
			break;		/* the agent hung up: fine */
		sent += n;
	}
	end = mono() + 5;
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (mono() < end) {
		if (poll(&pfd, 1, 100) > 0 &&
		    (n = read(fd, buf, sizeof buf)) <= 0)
			break;
	}
	close(fd);
	printf("garbage: sent %ld bytes\n", sent);
	return 0;
}

static int
probe_hold(const char *addr, int port, int n, double secs, int banner)
{
	struct pollfd	*pfd;
	char		 buf[512];
	double		 end;
	int		 i, closed = 0, opened = 0;

	pfd = xcalloc((size_t)n, sizeof *pfd);
	for (i = 0; i < n; i++) {
		pfd[i].fd = tcp_connect(addr, port);
		pfd[i].events = POLLIN;
		if (pfd[i].fd >= 0) {
			opened++;
			if (banner)
				(void)!write(pfd[i].fd, "SSH-2.0-probe\r\n", 15);
		}
	}
	end = mono() + secs;
	while (mono() < end) {
		if (poll(pfd, (nfds_t)n, 100) <= 0)
			continue;
		for (i = 0; i < n; i++) {
			if (pfd[i].fd < 0 || pfd[i].revents == 0)
				continue;
			if (read(pfd[i].fd, buf, sizeof buf) <= 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				closed++;
			}
		}
	}
	for (i = 0; i < n; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	free(pfd);
	printf("closed %d of %d\n", closed, opened);
	return 0;
}

int
main(int argc, char **argv)
{
	struct agent_info	ai;

	ssh_init();
	if (argc == 4 && strcmp(argv[1], "where") == 0) {
		if (find(argv[2], argv[3], &ai) != 0)
			return 2;
		printf("%s %d\n", ai.addr, ai.port);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "requests") == 0)
		return probe_requests(argv[2], argv[3]);
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "auth") == 0)
		return probe_auth(argv[2], argv[3], argv[4],
		    argc == 6 ? argv[5] : NULL);
	if (argc == 5 && strcmp(argv[1], "garbage") == 0)
		return probe_garbage(argv[2], atoi(argv[3]), atol(argv[4]));
	if ((argc == 6 || argc == 7) && strcmp(argv[1], "hold") == 0)
		return probe_hold(argv[2], atoi(argv[3]), atoi(argv[4]),
		    atof(argv[5]), argc == 7);
	fprintf(stderr, "usage: see tests/agent/ssh-probe.c\n");
	return 2;
}
