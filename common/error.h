/* cadre's own error codes: 0 is success, failures are negative. */
#ifndef CADRE_ERROR_H
#define CADRE_ERROR_H

enum cadre_err {
	CADRE_OK = 0,
	CADRE_ERR_NOMEM = -1,		/* allocation failed */
	CADRE_ERR_SYSTEM = -2,		/* a system call failed; see errno */
	CADRE_ERR_INVALID = -3,		/* malformed input */
	CADRE_ERR_RANGE = -4,		/* a number out of range */
	CADRE_ERR_TOO_LARGE = -5,	/* a size bound was exceeded */
	CADRE_ERR_NOT_FOUND = -6,
	CADRE_ERR_EXISTS = -7,
	CADRE_ERR_PARSE = -8,		/* syntax error in a file */
	CADRE_ERR_PROTOCOL = -9,	/* a peer broke the protocol */
	CADRE_ERR_VERSION = -10,	/* unsupported version */
	CADRE_ERR_TIMEOUT = -11,
	CADRE_ERR_AUTH = -12,		/* authentication refused */
	CADRE_ERR_HOSTKEY = -13,	/* host key did not match the pinned one */
	CADRE_ERR_UNSUPPORTED = -14,
	CADRE_ERR_BUSY = -15,
	CADRE_ERR_CANCELLED = -16,
	CADRE_ERR_IO = -17,		/* short read or write, bad checksum */
	CADRE_ERR_LAST = -18		/* keep last: one past the lowest code */
};

/* A fixed English message for an error code; never NULL. */
const char *cadre_strerror(int err);

#include <stddef.h>

/* Writes a message into err (errlen bytes; nothing when err is NULL or
 * errlen 0) and returns rc: `return cadre_errf(err, errlen,
 * CADRE_ERR_INVALID, "...", ...);` for functions that report why. */
int cadre_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
