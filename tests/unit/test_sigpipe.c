#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "sigpipe.h"
#include "unit.h"

/* A raised signal arrives as its number on the read end, in order. */
START_TEST(test_delivery)
{
	unsigned char	c;
	int		fd;

	fd = sigpipe_open((const int[]){ SIGUSR1, SIGUSR2 }, 2);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	ck_assert_int_ne(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	ck_assert_int_eq(read(fd, &c, 1), -1);	/* nothing yet */
	ck_assert_int_eq(errno, EAGAIN);
	raise(SIGUSR2);
	raise(SIGUSR1);
	ck_assert_int_eq(read(fd, &c, 1), 1);
	ck_assert_int_eq(c, SIGUSR2);
	ck_assert_int_eq(read(fd, &c, 1), 1);
	ck_assert_int_eq(c, SIGUSR1);
	sigpipe_close();
	/* Closed: the handler stays and writes nothing; the process lives. */
	raise(SIGUSR1);
	ck_assert_int_eq(fcntl(fd, F_GETFD), -1);
}
END_TEST

/* Opening again (as a forked child does) replaces the first pipe. */
START_TEST(test_reopen)
{
	unsigned char	c;
	int		fd1, fd2;

	fd1 = sigpipe_open((const int[]){ SIGUSR1 }, 1);
	ck_assert_int_ge(fd1, 0);
	fd2 = sigpipe_open((const int[]){ SIGUSR1 }, 1);
	ck_assert_int_ge(fd2, 0);
	raise(SIGUSR1);
	ck_assert_int_eq(read(fd2, &c, 1), 1);
	ck_assert_int_eq(c, SIGUSR1);
	sigpipe_close();
	/* SIGPIPE is ignored: a write to a closed pipe fails, no death. */
	ck_assert_ptr_eq(signal(SIGPIPE, SIG_IGN), SIG_IGN);
}
END_TEST

static Suite *
sigpipe_suite(void)
{
	Suite	*s = suite_create("sigpipe");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_delivery);
	tcase_add_test(tc, test_reopen);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(sigpipe_suite());
}
