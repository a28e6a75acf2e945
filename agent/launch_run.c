/* cadre-agent launch: the command that starts the ranks. mpirun over the
 * agents (`cadre-agent rsh` as its remote shell, the hostfile as the
 * allocation) or srun, with `cadre-agent rank` around each rank; run with
 * its output relayed and signals passed on. */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "buf.h"
#include "container.h"
#include "error.h"
#include "fsutil.h"
#include "hostlist.h"
#include "launch.h"
#include "log.h"
#include "rundir.h"
#include "xmalloc.h"

int
launch_write_hostfile(struct launch *l, char **pathp)
{
	struct cbuf	 b;
	size_t		 i, j;
	char		*path;
	int		 fd, error = 0;

	*pathp = NULL;
	cbuf_init(&b, (size_t)64 << 20);
	for (i = 0; i < l->n; i++) {
		for (j = 0; j < i; j++) {
			if (strcmp(l->nodes[i].info.addr,
			    l->nodes[j].info.addr) == 0) {
				log_error("nodes %s and %s published the same "
				    "address %s", l->nodes[j].name,
				    l->nodes[i].name, l->nodes[i].info.addr);
				cbuf_free(&b);
				return CADRE_ERR_INVALID;
			}
		}
		cbuf_addf(&b, "%s slots=%d\n", l->nodes[i].info.addr,
		    l->nodes[i].slots);
	}
	path = rundir_path(l->rundir, RUNDIR_HOSTFILE);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) ==
	    -1 || write(fd, b.data, b.len) != (ssize_t)b.len) {
		log_error("%s: %s", path, strerror(errno));
		error = CADRE_ERR_SYSTEM;
	}
	if (fd >= 0)
		close(fd);
	cbuf_free(&b);
	if (error == 0)
		*pathp = path;
	else
		free(path);
	return error;
}

/* Relays what mpirun writes on fd to out and the mpirun log. */
static int
relay(int fd, int out, int logfd)
{
	char	buf[16 << 10];
	ssize_t	n;

	n = read(fd, buf, sizeof buf);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0)
		return 0;
	(void)!write(out, buf, (size_t)n);
	if (logfd >= 0)
		(void)!write(logfd, buf, (size_t)n);
	return 1;
}

/* Runs argv; relays its output; forwards signals. 0 with its wait status
 * in *wstatus, *preempted set when we were asked to stop; or
 * CADRE_ERR_SYSTEM with why it could not start in msg. */
int
launch_run_mpirun(struct launch *l, char **argv, int *wstatus, int *preempted,
    char *msg, size_t msglen)
{
	struct pollfd		 pfd[3];
	char			*logpath;
	double			 term_at = 0, kill_at = 0, saved_at = 0;
	int			 out[2] = { -1, -1 }, err[2] = { -1, -1 };
	int			 logfd, status = 0, error;
	int			 open_fds = 2, i, exited = 0, devnull;
	pid_t			 pid;

	*wstatus = 0;
	logpath = rundir_path(l->rundir, RUNDIR_LOG "/mpirun.log");
	logfd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	free(logpath);
	/* Out of descriptors or processes: the job's own processes can be
	 * the cause, so the run fails with a status.json rather than launch
	 * dying without one. */
	if (pipe2(out, O_CLOEXEC) == -1 || pipe2(err, O_CLOEXEC) == -1) {
		error = cadre_errf(msg, msglen, CADRE_ERR_SYSTEM,
		    "cannot start %s: pipe: %s", argv[0], strerror(errno));
		goto fail;
	}
	if ((pid = fork()) == -1) {
		error = cadre_errf(msg, msglen, CADRE_ERR_SYSTEM,
		    "cannot start %s: fork: %s", argv[0], strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGUSR1, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		/* Its own process group: a terminal's ^C reaches launch,
		 * which decides what mpirun gets. */
		setpgid(0, 0);
		/* No stdin: a background process group reading a terminal
		 * would stop, and ranks take no input. */
		if ((devnull = open("/dev/null", O_RDONLY)) == -1 ||
		    dup2(devnull, 0) == -1 || dup2(out[1], 1) == -1 ||
		    dup2(err[1], 2) == -1)
			_exit(127);
		execvp(argv[0], argv);
		dprintf(2, "cadre-agent launch: %s: %s\n", argv[0],
		    strerror(errno));
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	pfd[0].fd = out[0];
	pfd[1].fd = err[0];
	pfd[2].fd = l->sigfd;
	while (!exited || open_fds > 0) {
		for (i = 0; i < 3; i++)
			pfd[i].events = POLLIN;
		if (poll(pfd, 3, 200) == -1 && errno != EINTR)
			fatal("poll");
		launch_forward_signals(l, pid, exited, preempted, &term_at);
		if (l->prog != NULL) {
			launch_program_tick(l, l->prog, exited ? -1 : pid);
			/* A program that saved after the stop request has a
			 * few seconds to exit by itself (75), then the ranks
			 * get SIGTERM (SIGUSR2 to each `rank`), and mpirun
			 * its SIGKILL 30 s later. */
			if (l->prog->stop_saved && saved_at == 0)
				saved_at = now_mono() + PROGRAM_STOP_LINGER;
			if (!exited && l->prog->stopping && kill_at == 0 &&
			    ((term_at != 0 && now_mono() >= term_at) ||
			    (saved_at != 0 && now_mono() >= saved_at))) {
				kill(pid, SIGUSR2);
				term_at = 0;
				kill_at = now_mono() + 30;
			}
		}
		for (i = 0; i < 2; i++) {
			if (pfd[i].fd >= 0 && (pfd[i].revents & (POLLIN |
			    POLLHUP | POLLERR)) && relay(pfd[i].fd, i + 1,
			    logfd) == 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				open_fds--;
			}
		}
		if (!exited && waitpid(pid, &status, WNOHANG) == pid)
			exited = 1;
		if (!exited && l->prog == NULL && term_at != 0 &&
		    now_mono() >= term_at) {
			kill(pid, SIGTERM);
			term_at = 0;
			kill_at = now_mono() + 30;
		}
		if (!exited && kill_at != 0 && now_mono() >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = 0;
		}
		/* Orphans holding the pipes must not hold launch. */
		if (exited && open_fds > 0 && kill_at == 0)
			kill_at = now_mono() + 2;
		if (exited && kill_at != 0 && now_mono() >= kill_at)
			break;
	}
	for (i = 0; i < 2; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	if (logfd >= 0)
		close(logfd);
	*wstatus = status;
	return 0;

 fail:
	for (i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	if (logfd >= 0)
		close(logfd);
	return error;
}

/* srun's words: every node, the same number of tasks on each, block
 * distribution, PMIx. The strings it allocates go to alloc[0..3]. */
static int
srun_words(struct launch *l, const char *srun, int per_node, char **av,
    size_t *nav, char **alloc)
{
	char	**names;
	size_t	  i;

	for (i = 1; i < l->n; i++) {
		if (l->nodes[i].slots != l->nodes[0].slots) {
			log_error("--launcher srun needs the same number of "
			    "slots on every node (%s has %d, %s has %d)",
			    l->nodes[0].name, l->nodes[0].slots,
			    l->nodes[i].name, l->nodes[i].slots);
			return CADRE_ERR_INVALID;
		}
	}
	names = xcalloc(l->n, sizeof *names);
	for (i = 0; i < l->n; i++)
		names[i] = l->nodes[i].name;
	alloc[0] = hostlist_compress(names, l->n);
	free(names);
	xasprintf(&alloc[1], "--nodelist=%s", alloc[0]);
	xasprintf(&alloc[2], "--nodes=%zu", l->n);
	xasprintf(&alloc[3], "--ntasks-per-node=%d", per_node ? 1 :
	    l->nodes[0].slots);
	av[(*nav)++] = (char *)srun;
	av[(*nav)++] = alloc[2];
	av[(*nav)++] = alloc[3];
	av[(*nav)++] = alloc[1];
	av[(*nav)++] = (char *)"--distribution=block";
	av[(*nav)++] = (char *)"--mpi=pmix";
	av[(*nav)++] = (char *)"--export=ALL";
	return 0;
}

/*
 * A `once` program: launch runs `cadre-agent rank --program FILE --rank 0`
 * itself on the head node; the program starts the ranks. Its mpirun
 * reaches the nodes through the agents (Open MPI's rsh agent and the MCA
 * settings launch gives its own mpirun, as variables), and an `ssh` first
 * on its PATH is `cadre-agent rsh` with the run's pinned keys.
 */
static int
once_command(struct launch *l, struct launch_cmd *c)
{
	struct cbuf	 b;
	char		*bindir, *ssh, *path;
	const char	*old;
	int		 error;

	bindir = rundir_path(l->rundir, RUNDIR_BIN);
	xasprintf(&ssh, "%s/ssh", bindir);
	cbuf_init(&b, 1 << 16);
	cbuf_adds(&b, "#!/bin/sh\n# ssh through the run's agents (cadre-agent "
	    "launch, a `once` program)\nexec ");
	cbuf_add_shell_word(&b, agent_self_path());
	cbuf_adds(&b, " rsh --run-dir ");
	cbuf_add_shell_word(&b, l->rundir);
	cbuf_adds(&b, " --shell \"$@\"\n");
	if ((mkdir(bindir, 0700) == -1 && errno != EEXIST) ||
	    fs_write_atomic(ssh, b.data, b.len, 0700) != 0) {
		log_error("%s: %s", ssh, strerror(errno));
		error = CADRE_ERR_SYSTEM;
		goto out;
	}
	old = getenv("PATH");
	xasprintf(&path, "%s%s%s", bindir, old != NULL ? ":" : "",
	    old != NULL ? old : "");
	setenv("PATH", path, 1);
	free(path);
	xasprintf(&c->agent_cmd, "%s rsh --run-dir %s --shell",
	    agent_self_path(), l->rundir);
	setenv("OMPI_MCA_plm_rsh_agent", c->agent_cmd, 1);
	setenv("OMPI_MCA_plm_rsh_no_tree_spawn", "1", 1);
	setenv("OMPI_MCA_routed", "direct", 1);
	setenv("OMPI_MCA_orte_leave_session_attached", "1", 1);
	setenv("OMPI_MCA_plm", "rsh", 1);
	setenv("OMPI_MCA_ras", "^slurm,tm,gridengine,lsf,alps", 1);
	if (geteuid() == 0) {
		setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
		setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	}
	/* The head node's name for the rank's log (the agents set it for
	 * what they run). Not OMPI_MCA_mca_base_env_list for the run's
	 * variables: Open MPI refuses it together with -x, which mpirun
	 * commands use; ranks on the head node inherit them, the others get
	 * what -x names. */
	setenv("CADRE_NODE", l->nodes[0].name, 1);
	c->av = xcalloc(8, sizeof *c->av);
	c->av[0] = (char *)agent_self_path();
	c->av[1] = (char *)"rank";
	c->av[2] = (char *)"--program";
	c->av[3] = l->prog->path;
	c->av[4] = (char *)"--rank";
	c->av[5] = (char *)"0";
	error = 0;
 out:
	cbuf_free(&b);
	free(ssh);
	free(bindir);
	return error;
}

/* The words of mpirun (or srun, o->use_srun) with `cadre-agent rank` and
 * the command after them, into c->av; what they point to is c's or o's. */
int
launch_command(struct launch *l, const struct launch_opts *o, char *hostfile,
    int setup, struct launch_cmd *c)
{
	const char *const *ex = launch_program_exported();
	char	**av;
	size_t	  i, nav;
	int	  error, k, per_node;

	/* mpirun passes shell-quoted words (orted's arguments). */
	xasprintf(&c->agent_cmd, "%s rsh --shell", agent_self_path());
	per_node = setup || (l->prog != NULL &&
	    l->prog->p.launch == PROGRAM_PER_NODE);
	if (!setup && l->prog != NULL && l->prog->p.launch == PROGRAM_ONCE)
		return once_command(l, c);
	xasprintf(&c->np, "%d", per_node ? (int)l->n : l->total_slots);
	c->cwords = container_exec_prefix(&o->ct, l->rundir, &c->ncw);
	c->swords = container_srun_options(&o->ct, l->rundir, &c->nsw);
	av = c->av = xcalloc(80 + o->nmpi + c->ncw + c->nsw + (size_t)o->ncmd,
	    sizeof *av);
	nav = 0;
	if (o->use_srun) {
		if ((error = srun_words(l, o->srun, per_node, av, &nav,
		    c->srun_alloc)) != 0)
			return error;
		for (i = 0; i < c->nsw; i++)
			av[nav++] = c->swords[i];
		for (i = 0; i < o->nmpi; i++)
			av[nav++] = (char *)o->mpi_args[i];
		for (i = 0; i < c->ncw; i++)
			av[nav++] = c->cwords[i];
		goto rank_words;
	}
	av[nav++] = (char *)o->mpirun;
	if (geteuid() == 0)
		av[nav++] = (char *)"--allow-run-as-root";
	av[nav++] = (char *)"--hostfile";
	av[nav++] = hostfile;
	av[nav++] = (char *)"-np";
	av[nav++] = c->np;
	av[nav++] = (char *)"--map-by";
	av[nav++] = (char *)(per_node ? "ppr:1:node" : "slot");
	av[nav++] = (char *)"--bind-to";
	av[nav++] = (char *)"none";
	av[nav++] = (char *)"--mca";
	av[nav++] = (char *)"plm_rsh_agent";
	av[nav++] = c->agent_cmd;
	av[nav++] = (char *)"--mca";
	av[nav++] = (char *)"plm_rsh_no_tree_spawn";
	av[nav++] = (char *)"1";
	/* Every daemon reports straight to mpirun: with the default radix
	 * routing and no tree spawn, a daemon's report could wait on a peer
	 * not up yet, and mpirun sometimes hung ("does not know how to
	 * route a message", about 1 run in 30 on loopback). */
	av[nav++] = (char *)"--mca";
	av[nav++] = (char *)"routed";
	av[nav++] = (char *)"direct";
	/* orted stays attached to its SSH session instead of daemonizing:
	 * it is then the agent's child, which stops it with the session
	 * (agent stopped, connection lost), and a lost node ends the job. */
	av[nav++] = (char *)"--leave-session-attached";
	/* The agents are the launcher and the hostfile the allocation:
	 * inside a Slurm (or PBS, ...) job mpirun would otherwise launch
	 * through srun and refuse the hostfile's addresses as "not in the
	 * allocation" (launch --from-env, and the cadred job scripts). */
	av[nav++] = (char *)"--mca";
	av[nav++] = (char *)"plm";
	av[nav++] = (char *)"rsh";
	av[nav++] = (char *)"--mca";
	av[nav++] = (char *)"ras";
	av[nav++] = (char *)"^slurm,tm,gridengine,lsf,alps";
	av[nav++] = (char *)"-x";
	av[nav++] = (char *)ENV_RUN_DIR;
	for (i = 0; l->prog != NULL && ex[i] != NULL; i++) {
		if (strcmp(ex[i], ENV_RUN_DIR) == 0 || getenv(ex[i]) == NULL)
			continue;
		av[nav++] = (char *)"-x";
		av[nav++] = (char *)ex[i];
	}
	for (i = 0; i < o->nmpi; i++)
		av[nav++] = (char *)o->mpi_args[i];
 rank_words:
	av[nav++] = (char *)agent_self_path();
	av[nav++] = (char *)"rank";
	if (l->prog != NULL) {
		av[nav++] = (char *)"--program";
		av[nav++] = l->prog->path;
		if (setup)
			av[nav++] = (char *)"--setup";
		av[nav] = NULL;
		return 0;
	}
	av[nav++] = (char *)"--";
	for (k = 0; k < o->ncmd; k++)
		av[nav++] = o->cmd[k];
	av[nav] = NULL;
	return 0;
}

void
launch_cmd_free(struct launch_cmd *c)
{
	size_t	i;

	free(c->av);
	free(c->np);
	free(c->agent_cmd);
	container_free_words(c->cwords);
	container_free_words(c->swords);
	for (i = 0; i < 4; i++)
		free(c->srun_alloc[i]);
}
