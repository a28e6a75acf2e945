#include "config.h"

#include <sys/wait.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "log.h"
#include "unit.h"

/*
 * stderr is pointed at a temporary file while the code under test runs;
 * capture_end puts it back and returns what was written.
 */
struct capture {
	char	path[4096];
	int	saved;
};

static void
capture_begin(struct capture *c)
{
	int	fd;

	fd = unit_mkstemp(c->path, sizeof c->path, "test_log");
	fflush(stderr);
	c->saved = dup(STDERR_FILENO);
	ck_assert_int_ne(c->saved, -1);
	ck_assert_int_ne(dup2(fd, STDERR_FILENO), -1);
	close(fd);
}

static char *
capture_end(struct capture *c)
{
	char	*s;

	fflush(stderr);
	ck_assert_int_ne(dup2(c->saved, STDERR_FILENO), -1);
	close(c->saved);
	s = unit_read_file(c->path);
	unlink(c->path);
	return s;
}

START_TEST(test_stderr_format)
{
	struct capture	 c;
	char		*out;

	log_init("prog", LOG_LEVEL_INFO, LOG_TARGET_STDERR);
	capture_begin(&c);
	log_error("bad %s at %d", "thing", 3);
	log_warn("careful");
	log_notice("noted");
	log_info("hello %s", "world");
	log_debug("hidden");
	out = capture_end(&c);
	ck_assert_str_eq(out,
	    "prog: error: bad thing at 3\n"
	    "prog: warning: careful\n"
	    "prog: noted\n"
	    "prog: hello world\n");
	free(out);
}
END_TEST

START_TEST(test_levels_filter)
{
	struct capture	 c;
	char		*out;

	log_init("p", LOG_LEVEL_ERROR, LOG_TARGET_STDERR);
	ck_assert_int_eq(log_get_level(), LOG_LEVEL_ERROR);
	capture_begin(&c);
	log_error("e");
	log_warn("w");
	log_notice("n");
	log_info("i");
	log_debug("d");
	out = capture_end(&c);
	ck_assert_str_eq(out, "p: error: e\n");
	free(out);

	log_set_level(LOG_LEVEL_WARN);
	capture_begin(&c);
	log_warn("w");
	log_notice("n");
	out = capture_end(&c);
	ck_assert_str_eq(out, "p: warning: w\n");
	free(out);

	log_set_level(LOG_LEVEL_NOTICE);
	capture_begin(&c);
	log_notice("n");
	log_info("i");
	out = capture_end(&c);
	ck_assert_str_eq(out, "p: n\n");
	free(out);

	log_set_level(LOG_LEVEL_DEBUG);
	ck_assert_int_eq(log_get_level(), LOG_LEVEL_DEBUG);
	capture_begin(&c);
	log_info("i");
	log_debug("d %d", 5);
	out = capture_end(&c);
	ck_assert_str_eq(out, "p: i\np: debug: d 5\n");
	free(out);
}
END_TEST

START_TEST(test_long_message_truncated)
{
	struct capture	 c;
	char		*big, *out;
	size_t		 n = 20000;

	big = malloc(n + 1);
	ck_assert_ptr_nonnull(big);
	memset(big, 'a', n);
	big[n] = '\0';
	log_init("p", LOG_LEVEL_INFO, LOG_TARGET_STDERR);
	capture_begin(&c);
	log_info("%s", big);
	out = capture_end(&c);
	/* One line, cut short, still ending in a newline. */
	ck_assert(strncmp(out, "p: aaaa", 7) == 0);
	ck_assert_uint_lt(strlen(out), n);
	ck_assert_int_eq(out[strlen(out) - 1], '\n');
	ck_assert_ptr_eq(strchr(out, '\n'), out + strlen(out) - 1);
	free(out);
	free(big);
}
END_TEST

START_TEST(test_syslog_target_leaves_stderr)
{
	struct capture	 c;
	char		*out;

	capture_begin(&c);
	log_init("test_log", LOG_LEVEL_DEBUG, LOG_TARGET_SYSLOG);
	log_error("to syslog");
	log_debug("to syslog");
	log_init("test_log", LOG_LEVEL_DEBUG, LOG_TARGET_JOURNAL);
	log_error("to the journal or syslog");
	log_init("p", LOG_LEVEL_INFO, LOG_TARGET_STDERR);
	log_info("back");
	out = capture_end(&c);
	ck_assert_str_eq(out, "p: back\n");
	free(out);
}
END_TEST

START_TEST(test_level_parse)
{
	static const struct {
		const char	*s;
		enum log_level	 level;
	} good[] = {
		{ "error", LOG_LEVEL_ERROR },
		{ "warn", LOG_LEVEL_WARN },
		{ "notice", LOG_LEVEL_NOTICE },
		{ "info", LOG_LEVEL_INFO },
		{ "debug", LOG_LEVEL_DEBUG },
	};
	static const char *const bad[] = {
		"", "ERROR", "Info", "warning", "trace", "debug ", " info",
		"0", "errors",
	};
	enum log_level	level;
	size_t		i;

	for (i = 0; i < sizeof good / sizeof good[0]; i++) {
		level = (enum log_level)-1;
		ck_assert_int_eq(log_level_parse(good[i].s, &level), 0);
		ck_assert_int_eq(level, good[i].level);
	}
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		level = LOG_LEVEL_INFO;
		ck_assert_int_eq(log_level_parse(bad[i], &level),
		    CADRE_ERR_INVALID);
		ck_assert_int_eq(level, LOG_LEVEL_INFO);
	}
}
END_TEST

/* Runs fn in a child with stderr in a file; returns the exit status. */
static int
run_child(void (*fn)(void), char **out)
{
	char	path[4096];
	pid_t	pid;
	int	fd, status;

	fd = unit_mkstemp(path, sizeof path, "test_log");
	fflush(stderr);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		dup2(fd, STDERR_FILENO);
		fn();
		_exit(99);	/* fn must not return */
	}
	close(fd);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	*out = unit_read_file(path);
	unlink(path);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void
do_fatal(void)
{
	log_init("prog", LOG_LEVEL_INFO, LOG_TARGET_STDERR);
	errno = ENOENT;
	fatal("cannot open %s", "x.yaml");
}

static void
do_fatalx(void)
{
	log_init("prog", LOG_LEVEL_ERROR, LOG_TARGET_STDERR);
	errno = ENOENT;
	fatalx("broken invariant %d", 7);
}

START_TEST(test_fatal_appends_errno)
{
	char	*out;

	ck_assert_int_eq(run_child(do_fatal, &out), 1);
	ck_assert_str_eq(out,
	    "prog: error: cannot open x.yaml: No such file or directory\n");
	free(out);
}
END_TEST

START_TEST(test_fatalx_no_errno)
{
	char	*out;

	ck_assert_int_eq(run_child(do_fatalx, &out), 1);
	ck_assert_str_eq(out, "prog: error: broken invariant 7\n");
	free(out);
}
END_TEST

START_TEST(test_fatalx_exit_code)
{
	log_init("prog", LOG_LEVEL_INFO, LOG_TARGET_STDERR);
	fatalx("bye");
}
END_TEST

static Suite *
log_suite(void)
{
	Suite	*s = suite_create("log");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_stderr_format);
	tcase_add_test(tc, test_levels_filter);
	tcase_add_test(tc, test_long_message_truncated);
	tcase_add_test(tc, test_syslog_target_leaves_stderr);
	tcase_add_test(tc, test_level_parse);
	tcase_add_test(tc, test_fatal_appends_errno);
	tcase_add_test(tc, test_fatalx_no_errno);
	tcase_add_exit_test(tc, test_fatalx_exit_code, 1);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(log_suite());
}
