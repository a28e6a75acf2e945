/* cadre-agent launch: signals. They come through a pipe (sigpipe.h) from
 * the start of launch; before the ranks start a stopping signal ends the
 * launch, afterwards each is passed on to mpirun. */
#include "config.h"

#include <sys/types.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include "agent.h"
#include "error.h"
#include "launch.h"
#include "log.h"

/* Sleeps up to secs, watching the signal pipe: CADRE_ERR_CANCELLED once
 * SIGTERM, SIGINT, SIGHUP or SIGUSR1 came. SIGUSR1 is the scheduler's one
 * warning that the time limit is near: with no rank to pass it to yet,
 * and no time to be sure of a checkpoint, the launch stops (resumable)
 * rather than start ranks that would never hear of it. */
int
launch_wait_signal(struct launch *l, double secs)
{
	struct pollfd	pfd;
	unsigned char	sig;

	pfd.fd = l->sigfd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, (int)(secs * 1000)) == -1 && errno != EINTR)
		fatal("poll");
	while (read(l->sigfd, &sig, 1) == 1)
		if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP ||
		    sig == SIGUSR1)
			l->stop_sig = sig;
	return l->stop_sig != 0 ? CADRE_ERR_CANCELLED : 0;
}

/*
 * What came on the signal pipe while mpirun (pid) runs. A program
 * (l->prog): any of them asks it to save and stop (above). Otherwise: SIGUSR1 (the
 * checkpoint request) goes to mpirun, which passes it to every rank.
 * SIGTERM/SIGINT/SIGHUP become SIGUSR2, which each `rank` turns into
 * SIGTERM for its command, so that the trainer can checkpoint: mpirun's
 * own SIGTERM handling kills the ranks too soon for that. mpirun itself
 * is terminated at *term_at: --term-grace later, or at once on a second
 * signal.
 */
void
launch_forward_signals(struct launch *l, pid_t pid, int exited, int *preempted,
    double *term_at)
{
	unsigned char	sig;

	while (read(l->sigfd, &sig, 1) == 1) {
		if (sig == SIGCHLD || exited)
			continue;
		if (l->prog != NULL && !*preempted) {
			/* A program: the scheduler's warning and a stop are
			 * the same request, save then stop. The stop file
			 * tells the program which it is; the ranks get
			 * SIGTERM once it saved or at *term_at. */
			log_notice("signal %d: asking the program to save "
			    "and stop (%s, then SIGTERM within %llds)", sig,
			    l->prog->stop_file, (long long)l->term_grace);
			*preempted = 1;
			launch_program_stop(l->prog, pid);
			*term_at = now_mono() + (double)l->term_grace;
		} else if (l->prog != NULL) {
			log_notice("signal %d again: stopping the program "
			    "now", sig);
			*term_at = now_mono();
		} else if (sig == SIGUSR1) {
			log_info("SIGUSR1: passed to the ranks "
			    "(checkpoint)");
			kill(pid, SIGUSR1);
		} else if (!*preempted) {
			log_notice("signal %d: asking the ranks to "
			    "stop (SIGTERM), mpirun ends in %llds",
			    sig, (long long)l->term_grace);
			*preempted = 1;
			kill(pid, SIGUSR2);
			*term_at = now_mono() + (double)l->term_grace;
		} else {
			log_notice("signal %d again: terminating "
			    "mpirun", sig);
			*term_at = now_mono();
		}
	}
}
