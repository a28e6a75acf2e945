#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "error.h"

const char *
cadre_strerror(int err)
{
	switch (err) {
	case CADRE_OK:
		return "success";
	case CADRE_ERR_NOMEM:
		return "out of memory";
	case CADRE_ERR_SYSTEM:
		return "system error";
	case CADRE_ERR_INVALID:
		return "invalid input";
	case CADRE_ERR_RANGE:
		return "value out of range";
	case CADRE_ERR_TOO_LARGE:
		return "size limit exceeded";
	case CADRE_ERR_NOT_FOUND:
		return "not found";
	case CADRE_ERR_EXISTS:
		return "already exists";
	case CADRE_ERR_PARSE:
		return "syntax error";
	case CADRE_ERR_PROTOCOL:
		return "protocol error";
	case CADRE_ERR_VERSION:
		return "unsupported version";
	case CADRE_ERR_TIMEOUT:
		return "timed out";
	case CADRE_ERR_AUTH:
		return "authentication refused";
	case CADRE_ERR_HOSTKEY:
		return "host key mismatch";
	case CADRE_ERR_UNSUPPORTED:
		return "operation not supported";
	case CADRE_ERR_BUSY:
		return "resource busy";
	case CADRE_ERR_CANCELLED:
		return "cancelled";
	case CADRE_ERR_IO:
		return "input/output error";
	default:
		return "unknown error";
	}
}

int
cadre_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list	ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}
