/* cadred's control socket (daemon/server.h). */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "log.h"
#include "server.h"
#include "xmalloc.h"

#define SERVER_READ_CHUNK	65536
/* Bytes read from one client per loop round: a fast writer cannot keep
 * the loop from the others. */
#define SERVER_READ_ROUND	((size_t)1 << 20)

struct client {
	int			 fd;
	unsigned		 id;
	struct proto_reader	 rd;
	char			*out;		/* frames still to write */
	size_t			 outlen, outoff;
	int			 closing;	/* close once out is written */
	time_t			 last;		/* last byte read */
};

struct server {
	int		 fd;
	char		*path;
	server_fn	 fn;
	void		*ctx;
	struct client	 clients[SERVER_MAX_CLIENTS];
	size_t		 nclients;
	unsigned	 next_id;
	/* which client each pollfd entry after the first belongs to */
	size_t		 polled[SERVER_MAX_CLIENTS];
	size_t		 npolled;
};

static void
set_flags(int fd)
{
	int	fl;

	if ((fl = fcntl(fd, F_GETFL)) != -1)
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
}

int
server_open(const char *path, server_fn fn, void *ctx, struct server **out)
{
	struct sockaddr_un	 sun;
	struct server		*s = NULL;
	int			 fd = -1, rc;

	*out = NULL;
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		log_error("%s: socket path longer than %zu bytes", path,
		    sizeof sun.sun_path - 1);
		return CADRE_ERR_TOO_LARGE;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		log_error("socket: %s", strerror(errno));
		return CADRE_ERR_SYSTEM;
	}
	if (unlink(path) != 0 && errno != ENOENT) {
		log_error("unlink %s: %s", path, strerror(errno));
		rc = CADRE_ERR_SYSTEM;
		goto out;
	}
	/* the directory is 0700 already; the mode is a second fence */
	if (bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0 ||
	    chmod(path, 0600) != 0 || listen(fd, 64) != 0) {
		log_error("%s: %s", path, strerror(errno));
		rc = CADRE_ERR_SYSTEM;
		goto out;
	}
	set_flags(fd);
	s = xcalloc(1, sizeof *s);
	s->fd = fd;
	s->path = xstrdup(path);
	s->fn = fn;
	s->ctx = ctx;
	fd = -1;
	*out = s;
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	return rc;
}

static void
client_drop(struct server *s, size_t i, const char *why)
{
	struct client	*c = &s->clients[i];

	if (why != NULL)
		log_info("client %u: dropped: %s", c->id, why);
	close(c->fd);
	proto_reader_free(&c->rd);
	free(c->out);
	s->nclients--;
	if (i != s->nclients)
		s->clients[i] = s->clients[s->nclients];
}

void
server_close(struct server *s)
{
	if (s == NULL)
		return;
	while (s->nclients > 0)
		client_drop(s, s->nclients - 1, NULL);
	close(s->fd);
	(void)unlink(s->path);
	free(s->path);
	free(s);
}

size_t
server_nclients(const struct server *s)
{
	return s->nclients;
}

size_t
server_pollfds(struct server *s, struct pollfd *fds)
{
	size_t	i, n = 0;

	fds[n].fd = s->fd;
	fds[n].events = s->nclients < SERVER_MAX_CLIENTS ? POLLIN : 0;
	fds[n++].revents = 0;
	s->npolled = 0;
	for (i = 0; i < s->nclients; i++) {
		struct client	*c = &s->clients[i];

		fds[n].fd = c->fd;
		/* one request at a time: read again once the reply is out */
		fds[n].events = c->outoff < c->outlen ? POLLOUT :
		    (c->closing ? 0 : POLLIN);
		fds[n++].revents = 0;
		s->polled[s->npolled++] = i;
	}
	return n;
}

static void
queue(struct client *c, json_t *reply)
{
	char	*f;
	size_t	 len;
	int	 rc;

	if (reply == NULL)
		reply = proto_reply_error("internal error (see cadred's log)");
	if ((rc = proto_frame(reply, PROTO_MAX_REPLY, &f, &len)) != 0) {
		json_decref(reply);
		reply = proto_reply_error("reply too large (%s): ask for "
		    "less (a single experiment or run)", cadre_strerror(rc));
		if (proto_frame(reply, PROTO_MAX_REPLY, &f, &len) != 0) {
			json_decref(reply);
			c->closing = 1;
			return;
		}
	}
	json_decref(reply);
	if (c->outoff == c->outlen) {
		free(c->out);
		c->out = NULL;
		c->outlen = c->outoff = 0;
	}
	c->out = xreallocarray(c->out, c->outlen + len, 1);
	memcpy(c->out + c->outlen, f, len);
	c->outlen += len;
	free(f);
}

/* A request that broke the protocol: one error reply, then the client
 * goes. */
static void
refuse(struct client *c, const char *fmt, const char *detail)
{
	log_warn("client %u: %s%s%s: dropped", c->id, fmt,
	    detail != NULL ? ": " : "", detail != NULL ? detail : "");
	queue(c, proto_reply_error("%s%s%s", fmt, detail != NULL ? ": " : "",
	    detail != NULL ? detail : ""));
	c->closing = 1;
}

static void
accept_one(struct server *s)
{
	struct ucred	 cred;
	socklen_t	 len = sizeof cred;
	struct client	*c;
	int		 fd;

	if ((fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) ==
	    -1) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			log_warn("accept: %s", strerror(errno));
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
		log_warn("SO_PEERCRED: %s: connection closed", strerror(errno));
		close(fd);
		return;
	}
	if (cred.uid != geteuid()) {
		log_warn("refused a connection from uid %lu (pid %ld): only "
		    "uid %lu may use this daemon", (unsigned long)cred.uid,
		    (long)cred.pid, (unsigned long)geteuid());
		close(fd);
		return;
	}
	if (s->nclients >= SERVER_MAX_CLIENTS) {
		log_warn("more than %d clients: connection closed",
		    SERVER_MAX_CLIENTS);
		close(fd);
		return;
	}
	c = &s->clients[s->nclients++];
	memset(c, 0, sizeof *c);
	c->fd = fd;
	c->id = ++s->next_id;
	c->last = time(NULL);
	proto_reader_init(&c->rd, PROTO_MAX_REQUEST);
	log_debug("client %u: connected (pid %ld)", c->id, (long)cred.pid);
}

static void
answer(struct server *s, struct client *c)
{
	enum proto_op	 op;
	json_t		*req;
	char		*body, err[PROTO_ERR_MAX];
	size_t		 len;
	int		 rc;

	body = proto_reader_take(&c->rd, &len);
	rc = proto_parse(body, len, PROTO_MAX_REQUEST, &req, &op, err,
	    sizeof err);
	free(body);
	if (rc != 0) {
		refuse(c, "bad request", err);
		return;
	}
	log_debug("client %u: %s", c->id, proto_op_name(op));
	queue(c, s->fn(s->ctx, op, req));
	json_decref(req);
}

/* 0, or why the client is to be dropped now: CADRE_ERR_IO when it
 * closed the connection, CADRE_ERR_SYSTEM when read() failed. */
static int
client_read(struct server *s, struct client *c)
{
	char	 buf[SERVER_READ_CHUNK];
	size_t	 total = 0, off, used;
	ssize_t	 n;
	int	 rc;

	while (total < SERVER_READ_ROUND && !c->closing &&
	    c->outoff == c->outlen) {
		n = read(c->fd, buf, sizeof buf);
		if (n == 0)
			return CADRE_ERR_IO;
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == EINTR)
				return 0;
			return CADRE_ERR_SYSTEM;
		}
		c->last = time(NULL);
		total += (size_t)n;
		for (off = 0; off < (size_t)n && !c->closing; off += used) {
			rc = proto_reader_feed(&c->rd, buf + off, (size_t)n -
			    off, &used);
			if (rc == CADRE_ERR_TOO_LARGE) {
				refuse(c, "frame over the bound", NULL);
				break;
			}
			if (rc < 0) {
				refuse(c, "empty frame", NULL);
				break;
			}
			if (rc == 1)
				answer(s, c);
		}
	}
	return 0;
}

/* 0, or why the client is to be dropped now: CADRE_ERR_SYSTEM when
 * write() failed, CADRE_ERR_PROTOCOL once the reply to a refused request
 * is out. */
static int
client_write(struct client *c)
{
	ssize_t	n;

	while (c->outoff < c->outlen) {
		n = write(c->fd, c->out + c->outoff, c->outlen - c->outoff);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == EINTR)
				return 0;
			return CADRE_ERR_SYSTEM;
		}
		c->outoff += (size_t)n;
	}
	return c->closing ? CADRE_ERR_PROTOCOL : 0;
}

void
server_handle(struct server *s, const struct pollfd *fds, size_t n)
{
	size_t	i, k;
	int	drop;

	/* clients first, from the end: dropping one moves the last */
	for (k = s->npolled; k-- > 0;) {
		if (k + 1 >= n)
			continue;
		i = s->polled[k];
		if (i >= s->nclients || fds[k + 1].fd != s->clients[i].fd)
			continue;
		drop = 0;
		if (fds[k + 1].revents & (POLLERR | POLLNVAL))
			drop = 1;
		else if (fds[k + 1].revents & POLLOUT)
			drop = client_write(&s->clients[i]) != 0;
		else if (fds[k + 1].revents & (POLLIN | POLLHUP)) {
			drop = client_read(s, &s->clients[i]) != 0;
			/* answer at once when the socket takes it */
			if (!drop && s->clients[i].outoff <
			    s->clients[i].outlen)
				drop = client_write(&s->clients[i]) != 0;
			/* refused with no reply left to write */
			if (!drop && s->clients[i].closing &&
			    s->clients[i].outoff == s->clients[i].outlen)
				drop = 1;
		}
		if (drop)
			client_drop(s, i, NULL);
	}
	if (n > 0 && (fds[0].revents & POLLIN))
		accept_one(s);
}

void
server_expire(struct server *s)
{
	time_t	now = time(NULL);
	size_t	i;

	for (i = s->nclients; i-- > 0;) {
		struct client	*c = &s->clients[i];

		/* a client waiting for its reply to drain, or idle between
		 * requests, is not stalled; one half-way through a frame is */
		if ((c->rd.hlen > 0 || c->outoff < c->outlen) &&
		    now - c->last > SERVER_IDLE_S)
			client_drop(s, i, "stalled half-way through a frame");
	}
}
