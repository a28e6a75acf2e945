/*
 * The CLI's side of cadred's control socket (daemon/proto.h): connect,
 * send one request, read its reply, with a bound on the reply's size and
 * a time limit.
 */
#ifndef CADRE_CLIENT_H
#define CADRE_CLIENT_H

#include <stddef.h>

#include <jansson.h>

#define CLIENT_TIMEOUT_MS	120000	/* for a reply */

/* Connects to the daemon's socket (paths_socket()): 0 and *fd, or
 * CADRE_ERR_NOT_FOUND when no daemon listens there, with a message that
 * says how to start one. */
int client_connect(int *fd, char *err, size_t errlen);
/* Sends req and reads the reply: 0 and *reply (a checked object; caller
 * decrefs) when the daemon answered "ok": true; CADRE_ERR_INVALID with
 * the daemon's error in err when it answered false; others for transport
 * trouble. */
int client_call(int fd, const json_t *req, json_t **reply, char *err,
    size_t errlen);
/* client_connect + client_call + close. */
int client_request(const json_t *req, json_t **reply, char *err,
    size_t errlen);

#endif
