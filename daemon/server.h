/*
 * cadred's control socket: a unix stream socket that accepts only our own
 * uid (SO_PEERCRED), reads framed requests (daemon/proto.h) from
 * non-blocking clients inside the daemon's poll() loop, hands each to a
 * handler and writes the reply back. A client that breaks the protocol,
 * stalls half-way through a frame or has too much unread output is
 * dropped; the others and the daemon carry on.
 */
#ifndef CADRE_SERVER_H
#define CADRE_SERVER_H

#include <poll.h>
#include <stddef.h>

#include <jansson.h>

#include "proto.h"

#define SERVER_MAX_CLIENTS	64
#define SERVER_IDLE_S		30	/* a frame half-sent this long: dropped */

struct server;

/* Answers one request (req is the handler's to read, not to keep): the
 * reply, which the server then owns; NULL means an internal error. */
typedef json_t *(*server_fn)(void *ctx, enum proto_op op, json_t *req);

/* Listens on path (its directory must exist; a stale socket there is
 * replaced: the caller holds the pid lock), mode 0600. */
int server_open(const char *path, server_fn fn, void *ctx,
    struct server **out);
/* Closes every client and the socket, and unlinks it. */
void server_close(struct server *s);

/* The poll() entries the server needs now (at most 1 +
 * SERVER_MAX_CLIENTS): fills fds and returns the count. */
size_t server_pollfds(struct server *s, struct pollfd *fds);
/* Works on the entries server_pollfds() filled, after poll(). */
void server_handle(struct server *s, const struct pollfd *fds, size_t n);
/* Drops clients idle in the middle of a frame for SERVER_IDLE_S. */
void server_expire(struct server *s);
size_t server_nclients(const struct server *s);

#endif
