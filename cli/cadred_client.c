/* The CLI's side of cadred's control socket (cli/cadred_client.h). */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cadred_client.h"
#include "error.h"
#include "paths.h"
#include "proto.h"
#include "xmalloc.h"

int
client_connect(int *fd, char *err, size_t errlen)
{
	struct sockaddr_un	 sun;
	char			*path = NULL;
	int			 s = -1, rc;

	*fd = -1;
	if ((rc = paths_socket(&path)) != 0)
		return cadre_errf(err, errlen, rc, "no runtime directory: set "
		    "XDG_RUNTIME_DIR or CADRE_RUNTIME_DIR to an absolute path");
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		rc = cadre_errf(err, errlen, CADRE_ERR_TOO_LARGE, "%s: socket path "
		    "too long", path);
		goto out;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		rc = cadre_errf(err, errlen, CADRE_ERR_SYSTEM, "socket: %s",
		    strerror(errno));
		goto out;
	}
	if (connect(s, (struct sockaddr *)&sun, sizeof sun) != 0) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			rc = cadre_errf(err, errlen, CADRE_ERR_NOT_FOUND, "cadred is "
			    "not running (nothing listens on %s): start it "
			    "with 'cadred' or 'systemctl --user start cadred'",
			    path);
		else
			rc = cadre_errf(err, errlen, CADRE_ERR_SYSTEM, "%s: %s", path,
			    strerror(errno));
		goto out;
	}
	*fd = s;
	s = -1;
	rc = 0;
out:
	if (s != -1)
		close(s);
	free(path);
	return rc;
}

/* Waits for fd to be ready for events within the deadline (ms since the
 * epoch of CLOCK_MONOTONIC). */
static int
wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd	pfd;
	struct timespec	ts;
	int64_t		now;
	int		n;

	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		if (now >= deadline)
			return CADRE_ERR_TIMEOUT;
		pfd.fd = fd;
		pfd.events = events;
		n = poll(&pfd, 1, (int)(deadline - now));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return CADRE_ERR_SYSTEM;
	}
}

int
client_call(int fd, const json_t *req, json_t **reply, char *err,
    size_t errlen)
{
	struct proto_reader	 rd;
	struct timespec		 ts;
	json_t			*o = NULL;
	const char		*msg;
	char			*f = NULL, *body = NULL, buf[65536];
	size_t			 len, off = 0, used, blen;
	int64_t			 deadline;
	ssize_t			 n;
	int			 rc, done = 0;

	*reply = NULL;
	proto_reader_init(&rd, PROTO_MAX_REPLY);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	deadline = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 +
	    CLIENT_TIMEOUT_MS;
	if ((rc = proto_frame(req, PROTO_MAX_REQUEST, &f, &len)) != 0) {
		rc = cadre_errf(err, errlen, rc, "request over %zu bytes",
		    PROTO_MAX_REQUEST);
		goto out;
	}
	while (off < len) {
		n = send(fd, f + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = cadre_errf(err, errlen, CADRE_ERR_IO, "sending to "
			    "cadred: %s", strerror(errno));
			goto out;
		}
		off += (size_t)n;
	}
	while (!done) {
		if ((rc = wait_fd(fd, POLLIN, deadline)) != 0) {
			rc = cadre_errf(err, errlen, rc, "no reply from cadred in %d "
			    "s", CLIENT_TIMEOUT_MS / 1000);
			goto out;
		}
		n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = cadre_errf(err, errlen, CADRE_ERR_IO, "cadred closed "
			    "the connection without a reply%s%s", n < 0 ?
			    ": " : "", n < 0 ? strerror(errno) : "");
			goto out;
		}
		for (off = 0; off < (size_t)n && !done; off += used) {
			rc = proto_reader_feed(&rd, buf + off, (size_t)n - off,
			    &used);
			if (rc < 0) {
				rc = cadre_errf(err, errlen, CADRE_ERR_PROTOCOL, "bad "
				    "reply from cadred: %s", cadre_strerror(rc));
				goto out;
			}
			done = rc == 1;
		}
	}
	body = proto_reader_take(&rd, &blen);
	if ((rc = proto_parse(body, blen, PROTO_MAX_REPLY, &o, NULL, err,
	    errlen)) != 0)
		goto out;
	if (!json_is_true(json_object_get(o, "ok"))) {
		msg = json_string_value(json_object_get(o, "error"));
		rc = cadre_errf(err, errlen, CADRE_ERR_INVALID, "%s", msg != NULL ?
		    msg : "cadred refused the request");
		goto out;
	}
	*reply = o;
	o = NULL;
	rc = 0;
out:
	json_decref(o);
	free(body);
	free(f);
	proto_reader_free(&rd);
	return rc;
}

int
client_request(const json_t *req, json_t **reply, char *err, size_t errlen)
{
	int	fd, rc;

	*reply = NULL;
	if ((rc = client_connect(&fd, err, errlen)) != 0)
		return rc;
	rc = client_call(fd, req, reply, err, errlen);
	close(fd);
	return rc;
}
