#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#ifdef HAVE_SYSTEMD
#include <systemd/sd-journal.h>
#endif

#include "error.h"
#include "log.h"

/*
 * Messages are formatted into a fixed buffer on the stack rather than with
 * an allocation: xmalloc reports running out of memory through fatalx, so
 * logging must not need memory itself.
 */
#define LOG_LINE_MAX	8192

/* The module's state, set once by log_init before any thread starts. */
static const char	*log_progname;
static enum log_level	 cur_level = LOG_LEVEL_INFO;
static enum log_target	 cur_target = LOG_TARGET_STDERR;
static int		 log_syslog_open;

static const char *const log_names[] = {
	[LOG_LEVEL_ERROR] = "error",
	[LOG_LEVEL_WARN] = "warn",
	[LOG_LEVEL_NOTICE] = "notice",
	[LOG_LEVEL_INFO] = "info",
	[LOG_LEVEL_DEBUG] = "debug",
};

/* The label after the program name on stderr; notices and info have none. */
static const char *const log_labels[] = {
	[LOG_LEVEL_ERROR] = "error: ",
	[LOG_LEVEL_WARN] = "warning: ",
	[LOG_LEVEL_NOTICE] = "",
	[LOG_LEVEL_INFO] = "",
	[LOG_LEVEL_DEBUG] = "debug: ",
};

static const int log_priorities[] = {
	[LOG_LEVEL_ERROR] = LOG_ERR,
	[LOG_LEVEL_WARN] = LOG_WARNING,
	[LOG_LEVEL_NOTICE] = LOG_NOTICE,
	[LOG_LEVEL_INFO] = LOG_INFO,
	[LOG_LEVEL_DEBUG] = LOG_DEBUG,
};

static const char *
log_name(void)
{
	if (log_progname != NULL)
		return log_progname;
	return program_invocation_short_name;
}

void
log_init(const char *progname, enum log_level level, enum log_target target)
{
	if (log_syslog_open) {
		closelog();
		log_syslog_open = 0;
	}
	log_progname = progname;
	log_set_level(level);
	if (target != LOG_TARGET_SYSLOG && target != LOG_TARGET_JOURNAL)
		target = LOG_TARGET_STDERR;
#ifndef HAVE_SYSTEMD
	if (target == LOG_TARGET_JOURNAL)
		target = LOG_TARGET_SYSLOG;
#endif
	cur_target = target;
	if (target == LOG_TARGET_SYSLOG) {
		openlog(log_name(), LOG_PID | LOG_NDELAY, LOG_DAEMON);
		log_syslog_open = 1;
	}
}

void
log_set_level(enum log_level level)
{
	if ((int)level < LOG_LEVEL_ERROR)
		level = LOG_LEVEL_ERROR;
	if (level > LOG_LEVEL_DEBUG)
		level = LOG_LEVEL_DEBUG;
	cur_level = level;
}

enum log_level
log_get_level(void)
{
	return cur_level;
}

int
log_level_parse(const char *s, enum log_level *level)
{
	int	i;

	for (i = LOG_LEVEL_ERROR; i <= LOG_LEVEL_DEBUG; i++) {
		if (strcmp(s, log_names[i]) == 0) {
			*level = (enum log_level)i;
			return 0;
		}
	}
	return CADRE_ERR_INVALID;
}

/* Formats and emits one message; errstr, when not NULL, is appended. */
static void
log_emit(enum log_level level, const char *errstr, const char *fmt,
    va_list ap)
{
	char	msg[LOG_LINE_MAX];
	size_t	len;

	vsnprintf(msg, sizeof msg, fmt, ap);
	if (errstr != NULL) {
		len = strlen(msg);
		snprintf(msg + len, sizeof msg - len, ": %s", errstr);
	}

	switch (cur_target) {
	case LOG_TARGET_SYSLOG:
		syslog(log_priorities[level], "%s", msg);
		break;
#ifdef HAVE_SYSTEMD
	case LOG_TARGET_JOURNAL:
		sd_journal_print(log_priorities[level], "%s", msg);
		break;
#endif
	default:
		/* One fprintf, so that one line is one write on unbuffered stderr. */
		fprintf(stderr, "%s: %s%s\n", log_name(), log_labels[level], msg);
		break;
	}
}

void
log_error(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_emit(LOG_LEVEL_ERROR, NULL, fmt, ap);
	va_end(ap);
}

void
log_warn(const char *fmt, ...)
{
	va_list	ap;

	if (cur_level < LOG_LEVEL_WARN)
		return;
	va_start(ap, fmt);
	log_emit(LOG_LEVEL_WARN, NULL, fmt, ap);
	va_end(ap);
}

void
log_notice(const char *fmt, ...)
{
	va_list	ap;

	if (cur_level < LOG_LEVEL_NOTICE)
		return;
	va_start(ap, fmt);
	log_emit(LOG_LEVEL_NOTICE, NULL, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	ap;

	if (cur_level < LOG_LEVEL_INFO)
		return;
	va_start(ap, fmt);
	log_emit(LOG_LEVEL_INFO, NULL, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list	ap;

	if (cur_level < LOG_LEVEL_DEBUG)
		return;
	va_start(ap, fmt);
	log_emit(LOG_LEVEL_DEBUG, NULL, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list	ap;
	char	errbuf[256];
	int	saved = errno;

	/* strerror_r, not strerror: another thread may be logging too. */
	va_start(ap, fmt);
	log_emit(LOG_LEVEL_ERROR, strerror_r(saved, errbuf, sizeof errbuf),
	    fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_emit(LOG_LEVEL_ERROR, NULL, fmt, ap);
	va_end(ap);
	exit(1);
}
