#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "sigpipe.h"

/* The write end: the one thing the handler touches. */
static volatile sig_atomic_t	sigpipe_wfd = -1;
static int			sigpipe_rfd = -1;

static void
sigpipe_on_signal(int sig)
{
	unsigned char	c = (unsigned char)sig;
	int		saved = errno;

	if (sigpipe_wfd >= 0)
		(void)!write(sigpipe_wfd, &c, 1);
	errno = saved;
}

int
sigpipe_open(const int *sigs, size_t n)
{
	struct sigaction	sa;
	int			fds[2];
	size_t			i;

	sigpipe_close();
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == -1)
		return CADRE_ERR_SYSTEM;
	sigpipe_rfd = fds[0];
	sigpipe_wfd = fds[1];
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = sigpipe_on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < n; i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return sigpipe_rfd;
}

void
sigpipe_close(void)
{
	int	wfd = sigpipe_wfd;

	sigpipe_wfd = -1;
	if (wfd >= 0)
		close(wfd);
	if (sigpipe_rfd >= 0)
		close(sigpipe_rfd);
	sigpipe_rfd = -1;
}
