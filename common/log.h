/* Logging: levels, to stderr or (daemonized) syslog/the journal. */
#ifndef CADRE_LOG_H
#define CADRE_LOG_H

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN,
	LOG_LEVEL_NOTICE,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG
};

enum log_target {
	LOG_TARGET_STDERR = 0,
	LOG_TARGET_SYSLOG,
	LOG_TARGET_JOURNAL	/* falls back to syslog when built without libsystemd */
};

/* progname prefixes stderr lines ("cadred: ..."); it is not copied. */
void log_init(const char *progname, enum log_level level, enum log_target target);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* "error", "warn", "notice", "info", "debug" -> 0 and *level, else CADRE_ERR_INVALID. */
int log_level_parse(const char *s, enum log_level *level);

void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Log and exit(1): only at start-up or for a broken invariant.
 * fatal() appends strerror(errno), fatalx() does not. */
void fatal(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

#endif
