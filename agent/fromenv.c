/* launch --from-env: the nodes from Slurm's or PBS's environment, the run
 * dir and its keys, and the agents started on every node by launch
 * itself; `node-serve`, what runs on each node. */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "buf.h"
#include "container.h"
#include "error.h"
#include "fromenv.h"
#include "hostlist.h"
#include "log.h"
#include "nodefile.h"
#include "strutil.h"
#include "xmalloc.h"

#define FROMENV_STOP_WAIT	15.0	/* s for the agents to see status.json */
#define FROMENV_TERM_WAIT	10.0	/* s after SIGTERM, then SIGKILL */

struct envnodes {
	char	**names;
	int	 *slots;
	size_t	  n;
	int	  pbs;
	char	 *jobid;
};

static void
envnodes_free(struct envnodes *en)
{
	size_t	i;

	for (i = 0; i < en->n; i++)
		free(en->names[i]);
	free(en->names);
	free(en->slots);
	free(en->jobid);
	memset(en, 0, sizeof *en);
}

/* A positive int from variable name: 0 and *v, CADRE_ERR_NOT_FOUND when
 * unset or empty, CADRE_ERR_INVALID otherwise. */
static int
env_int(const char *name, int *v)
{
	const char	*s = getenv(name);
	int64_t		 x;

	if (s == NULL || *s == '\0')
		return CADRE_ERR_NOT_FOUND;
	if (str_to_int64(s, &x) != 0 || x < 0 || x > 4096) {
		log_error("%s=%s: expected a count 0..4096", name, s);
		return CADRE_ERR_INVALID;
	}
	*v = (int)x;
	return 0;
}

int
fromenv_tasks_per_node(const char *s, size_t n, int *slots)
{
	const char	*p = s;
	char		*end;
	long		 count, rep;
	size_t		 k = 0;

	if (*p == '\0')
		return CADRE_ERR_INVALID;
	for (;;) {
		errno = 0;
		count = strtol(p, &end, 10);
		if (end == p || errno != 0 || count < 1 || count > 4096 ||
		    *p == '-' || *p == '+' || *p == ' ')
			return CADRE_ERR_INVALID;
		p = end;
		rep = 1;
		if (p[0] == '(') {
			if (p[1] != 'x')
				return CADRE_ERR_INVALID;
			p += 2;
			errno = 0;
			rep = strtol(p, &end, 10);
			if (end == p || errno != 0 || rep < 1 ||
			    rep > AGENT_MAX_NODES || *p == '-' || *p == '+' ||
			    *end != ')')
				return CADRE_ERR_INVALID;
			p = end + 1;
		}
		if ((size_t)rep > n - k)
			return CADRE_ERR_INVALID;
		while (rep-- > 0)
			slots[k++] = (int)count;
		if (*p == '\0')
			break;
		if (*p++ != ',')
			return CADRE_ERR_INVALID;
	}
	return k == n ? 0 : CADRE_ERR_INVALID;
}

static int
slurm_nodes(struct envnodes *en, int slots)
{
	struct hostlist	 hl;
	const char	*list, *tpn;
	size_t		 i, errpos;
	int		 v = 0, error;

	if ((list = getenv("SLURM_JOB_NODELIST")) == NULL &&
	    (list = getenv("SLURM_NODELIST")) == NULL) {
		log_error("SLURM_JOB_ID is set but SLURM_JOB_NODELIST is not: "
		    "run launch --from-env in the batch script itself");
		return CADRE_ERR_INVALID;
	}
	if ((error = hostlist_expand(list, AGENT_MAX_NODES, &hl, &errpos)) !=
	    0) {
		log_error("SLURM_JOB_NODELIST=%s: %s at offset %zu", list,
		    cadre_strerror(error), errpos);
		return error;
	}
	en->n = hl.n;
	en->names = hl.hosts;
	en->slots = xcalloc(hl.n + 1, sizeof *en->slots);
	xasprintf(&en->jobid, "%s", getenv("SLURM_JOB_ID"));
	/*
	 * Ranks per node: --slots, else --ntasks-per-node, else one per GPU
	 * (SLURM_GPUS_ON_NODE), else SLURM_TASKS_PER_NODE (always set in a
	 * batch job, "1(x2)" without other options), else 1.
	 */
	if (slots <= 0 && (error = env_int("SLURM_NTASKS_PER_NODE", &v)) ==
	    0 && v > 0)
		slots = v;
	else if (error == CADRE_ERR_INVALID)
		return error;
	if (slots <= 0 && (error = env_int("SLURM_GPUS_ON_NODE", &v)) == 0 &&
	    v > 0)
		slots = v;
	else if (slots <= 0 && error == CADRE_ERR_INVALID)
		return error;
	if (slots > 0) {
		for (i = 0; i < en->n; i++)
			en->slots[i] = slots;
		return 0;
	}
	tpn = getenv("SLURM_TASKS_PER_NODE");
	if (tpn != NULL && *tpn != '\0') {
		if (fromenv_tasks_per_node(tpn, en->n, en->slots) != 0) {
			log_error("SLURM_TASKS_PER_NODE=%s: expected counts "
			    "such as 2(x3),1 for the %zu nodes of "
			    "SLURM_JOB_NODELIST; pass --slots N", tpn, en->n);
			return CADRE_ERR_INVALID;
		}
		return 0;
	}
	for (i = 0; i < en->n; i++)
		en->slots[i] = 1;
	return 0;
}

static int
pbs_nodes(struct envnodes *en, int slots)
{
	struct nodefile	 nf;
	const char	*path = getenv("PBS_NODEFILE"), *jobid;
	size_t		 i, errline;
	int		 error;

	if (path == NULL || *path == '\0') {
		log_error("PBS_JOBID is set but PBS_NODEFILE is not: run "
		    "launch --from-env in the job script itself");
		return CADRE_ERR_INVALID;
	}
	if ((error = nodefile_read(path, &nf, &errline)) != 0) {
		log_error("PBS_NODEFILE %s:%zu: %s", path, errline,
		    error == CADRE_ERR_SYSTEM ? strerror(errno) :
		    cadre_strerror(error));
		return error;
	}
	en->pbs = 1;
	en->n = nf.n;
	en->names = xcalloc(nf.n + 1, sizeof *en->names);
	en->slots = xcalloc(nf.n + 1, sizeof *en->slots);
	for (i = 0; i < nf.n; i++) {
		/* PBS may give FQDNs; agents publish short names. */
		nf.hosts[i].name[strcspn(nf.hosts[i].name, ".")] = '\0';
		en->names[i] = xstrdup(nf.hosts[i].name);
		en->slots[i] = slots > 0 ? slots : nf.hosts[i].slots;
	}
	nodefile_free(&nf);
	jobid = getenv("PBS_JOBID");
	en->jobid = xstrdup(jobid != NULL && *jobid != '\0' ? jobid :
	    "pbs");
	return 0;
}

/* Writes dir/rel with text, 0600, replacing it. */
static int
write_file(const char *dir, const char *rel, const char *text, size_t len)
{
	char	*path = rundir_path(dir, rel), *tmp;
	int	 fd, error = 0;

	xasprintf(&tmp, "%s.tmp", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) ==
	    -1 || write(fd, text, len) != (ssize_t)len || close(fd) == -1 ||
	    rename(tmp, path) == -1) {
		log_error("%s: %s", path, strerror(errno));
		error = CADRE_ERR_SYSTEM;
		unlink(tmp);
	}
	free(tmp);
	free(path);
	return error;
}

/*
 * On one machine that runs several slurmd (the test cluster), every node
 * shares the host name, and an agent publishing its host name's address
 * would publish the same one as the others. Slurm itself reaches such a
 * node through its NodeAddr: where NodeAddr differs from NodeHostName,
 * the agent publishes (and listens on) NodeAddr. Appends "NODE ADDR\n"
 * to addrs for each such node of list (a hostlist); 0, or
 * CADRE_ERR_NOT_FOUND when scontrol did not answer.
 */
static int
scontrol_addrs(const char *list, struct cbuf *addrs)
{
	struct cbuf	 out;
	char		*line, *next, *tok, *save;
	const char	*name, *addr, *hostname;
	int		 pfd[2], status, devnull;
	ssize_t		 n;
	pid_t		 pid;

	if (pipe2(pfd, O_CLOEXEC) == -1)
		fatal("pipe");
	if ((pid = fork()) == -1)
		fatal("fork");
	if (pid == 0) {
		if ((devnull = open("/dev/null", O_RDWR)) == -1 ||
		    dup2(devnull, 0) == -1 || dup2(pfd[1], 1) == -1 ||
		    dup2(devnull, 2) == -1)
			_exit(127);
		execlp("scontrol", "scontrol", "show", "node", "-o", list,
		    (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	cbuf_init(&out, FROMENV_ADDRS_MAX);
	for (;;) {
		char	buf[8192];

		n = read(pfd[0], buf, sizeof buf);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0 || cbuf_add(&out, buf, (size_t)n) != 0)
			break;
	}
	close(pfd[0]);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out.len == 0) {
		cbuf_free(&out);
		return CADRE_ERR_NOT_FOUND;
	}
	for (line = out.data; line != NULL; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		name = addr = hostname = NULL;
		for (tok = strtok_r(line, " ", &save); tok != NULL;
		    tok = strtok_r(NULL, " ", &save)) {
			if (strncmp(tok, "NodeName=", 9) == 0)
				name = tok + 9;
			else if (strncmp(tok, "NodeAddr=", 9) == 0)
				addr = tok + 9;
			else if (strncmp(tok, "NodeHostName=", 13) == 0)
				hostname = tok + 13;
		}
		if (name == NULL || addr == NULL || hostname == NULL ||
		    strcmp(addr, hostname) == 0 ||
		    !str_is_name(name, AGENT_NODE_MAX) ||
		    !str_is_name(addr, AGENT_ADDR_MAX))
			continue;
		(void)cbuf_addf(addrs, "%s %s\n", name, addr);
	}
	cbuf_free(&out);
	return 0;
}

/* One `scontrol show node` for all nodes on the head node; the agents
 * read the answer from RUN_DIR/nodeaddrs (written even when empty, so
 * that they do not ask slurmctld themselves). */
static void
slurm_nodeaddrs(const char *rundir, const struct envnodes *en)
{
	struct cbuf	 addrs;
	char		*list;

	list = hostlist_compress(en->names, en->n);
	cbuf_init(&addrs, FROMENV_ADDRS_MAX);
	if (scontrol_addrs(list, &addrs) != 0)
		log_info("scontrol show node gave no addresses: the agents "
		    "publish their host names' addresses");
	else if (addrs.len > 0)
		log_info("nodes whose NodeAddr is not their host name: "
		    "agents publish NodeAddr (%s)", RUNDIR_NODEADDRS);
	(void)write_file(rundir, RUNDIR_NODEADDRS, addrs.data != NULL ?
	    addrs.data : "", addrs.len);
	cbuf_free(&addrs);
	free(list);
}

/* The run dir: made (0700) with its keys when missing; the agents of an
 * earlier attempt forgotten. */
static int
prepare_rundir(struct fromenv *fe, const char *rundir_opt,
    const struct envnodes *en)
{
	char	 msg[1024], rp[PATH_MAX], *dflt = NULL, *key, *path, *rel;
	size_t	 i;
	int	 error;

	if ((rundir_opt = rundir_default(rundir_opt)) == NULL) {
		if (!str_is_name(en->jobid, 128)) {
			log_error("job id '%s' cannot name a run dir: pass "
			    "--run-dir", en->jobid);
			return CADRE_ERR_INVALID;
		}
		xasprintf(&dflt, "cadre-run.%s", en->jobid);
		rundir_opt = dflt;
	}
	if ((error = rundir_mkdir_private(rundir_opt, msg, sizeof msg)) != 0) {
		log_error("%s", msg);
		goto out;
	}
	if (realpath(rundir_opt, rp) == NULL) {
		log_error("%s: %s", rundir_opt, strerror(errno));
		error = CADRE_ERR_SYSTEM;
		goto out;
	}
	fe->rundir = xstrdup(rp);
	key = rundir_path(fe->rundir, RUNDIR_CLIENT_KEY);
	if (access(key, F_OK) == -1 && errno == ENOENT &&
	    (error = rundir_keygen(fe->rundir, msg, sizeof msg)) != 0)
		log_error("%s", msg);
	free(key);
	if (error != 0)
		goto out;
	for (i = 0; i < en->n; i++) {
		xasprintf(&rel, "%s/%s.json", RUNDIR_AGENTS, en->names[i]);
		path = rundir_path(fe->rundir, rel);
		unlink(path);
		free(path);
		free(rel);
	}
 out:
	free(dflt);
	return error;
}

static pid_t
spawn(char **av)
{
	pid_t	pid;
	int	devnull;

	if ((pid = fork()) == -1)
		fatal("fork");
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		if ((devnull = open("/dev/null", O_RDONLY)) == -1 ||
		    dup2(devnull, 0) == -1)
			_exit(127);
		execvp(av[0], av);
		dprintf(2, "cadre-agent launch: %s: %s\n", av[0],
		    strerror(errno));
		_exit(127);
	}
	return pid;
}

static void
start_agents(struct fromenv *fe, const struct envnodes *en,
    const char *srun_path, const struct container *ct)
{
	char	**cwords, **swords, **av, *nodes, *ntasks, idx[32];
	size_t	  ncw, nsw, nav, i, j, first = 0;

	cwords = container_exec_prefix(ct, fe->rundir, &ncw);
	swords = container_srun_options(ct, fe->rundir, &nsw);
	av = xcalloc(20 + ncw + nsw, sizeof *av);
	if (!en->pbs) {
		xasprintf(&nodes, "--nodes=%zu", en->n);
		xasprintf(&ntasks, "--ntasks=%zu", en->n);
		nav = 0;
		av[nav++] = (char *)srun_path;
		av[nav++] = nodes;
		av[nav++] = ntasks;
		av[nav++] = (char *)"--ntasks-per-node=1";
		av[nav++] = (char *)"--kill-on-bad-exit=0";
		/* The ranks are the agent's children: the step gets every
		 * CPU the job has on the node (Slurm 20.11+), unbound, or
		 * the task's one CPU would confine them all. */
		av[nav++] = (char *)"--whole";
		av[nav++] = (char *)"--cpu-bind=none";
		for (j = 0; j < nsw; j++)
			av[nav++] = swords[j];
		for (j = 0; j < ncw; j++)
			av[nav++] = cwords[j];
		av[nav++] = (char *)agent_self_path();
		av[nav++] = (char *)"node-serve";
		av[nav++] = (char *)"--run-dir";
		av[nav++] = fe->rundir;
		av[nav] = NULL;
		fe->pids = xcalloc(1, sizeof *fe->pids);
		fe->pids[fe->npids++] = spawn(av);
		log_info("agents: %s ... on %zu nodes", srun_path, en->n);
		free(nodes);
		free(ntasks);
	} else {
		/* pbsdsh -n INDEX: the index of the host's first slot in
		 * PBS_NODEFILE (PBS lists a host's slots together). */
		fe->pids = xcalloc(en->n, sizeof *fe->pids);
		for (i = 0; i < en->n; i++) {
			snprintf(idx, sizeof idx, "%zu", first);
			first += (size_t)en->slots[i];
			nav = 0;
			av[nav++] = (char *)"pbsdsh";
			av[nav++] = (char *)"-n";
			av[nav++] = idx;
			av[nav++] = (char *)"--";
			for (j = 0; j < ncw; j++)
				av[nav++] = cwords[j];
			av[nav++] = (char *)agent_self_path();
			av[nav++] = (char *)"node-serve";
			av[nav++] = (char *)"--run-dir";
			av[nav++] = fe->rundir;
			av[nav++] = (char *)"--node";
			av[nav++] = en->names[i];
			av[nav] = NULL;
			fe->pids[fe->npids++] = spawn(av);
		}
		log_info("agents: pbsdsh on %zu nodes", en->n);
	}
	free(av);
	container_free_words(cwords);
	container_free_words(swords);
}

int
fromenv_start(struct fromenv *fe, const char *rundir_opt, int slots,
    int start_agents_too, const char *srun_path, const struct container *ct)
{
	struct envnodes	 en;
	struct cbuf	 nf;
	char		 msg[1024];
	const char	*s;
	size_t		 i;
	int		 k, error;

	memset(fe, 0, sizeof *fe);
	memset(&en, 0, sizeof en);
	if ((s = getenv("SLURM_JOB_ID")) != NULL && *s != '\0')
		error = slurm_nodes(&en, slots);
	else if (((s = getenv("PBS_JOBID")) != NULL && *s != '\0') ||
	    ((s = getenv("PBS_NODEFILE")) != NULL && *s != '\0'))
		error = pbs_nodes(&en, slots);
	else {
		log_error("--from-env: no Slurm or PBS allocation here "
		    "(SLURM_JOB_ID, PBS_JOBID and PBS_NODEFILE are unset); "
		    "outside one, pass --nodes or --nodefile");
		error = CADRE_ERR_NOT_FOUND;
	}
	if (error != 0)
		goto out;
	if (en.n == 0) {
		log_error("--from-env: the allocation lists no nodes");
		error = CADRE_ERR_INVALID;
		goto out;
	}
	for (i = 0; i < en.n; i++) {
		if (!str_is_name(en.names[i], AGENT_NODE_MAX)) {
			log_error("node name '%s' must match "
			    "[A-Za-z0-9._-]{1,%d}", en.names[i],
			    AGENT_NODE_MAX);
			error = CADRE_ERR_INVALID;
			goto out;
		}
	}
	if ((error = prepare_rundir(fe, rundir_opt, &en)) != 0)
		goto out;
	if (container_check(ct, fe->rundir, msg, sizeof msg) != 0) {
		log_error("%s", msg);
		error = CADRE_ERR_INVALID;
		goto out;
	}
	cbuf_init(&nf, (size_t)64 << 20);
	for (i = 0; i < en.n && error == 0; i++)
		for (k = 0; k < en.slots[i] && error == 0; k++)
			error = cbuf_addf(&nf, "%s\n", en.names[i]);
	if (error == 0)
		error = write_file(fe->rundir, RUNDIR_NODEFILE, nf.data,
		    nf.len);
	else
		log_error("too many slots for a nodefile");
	cbuf_free(&nf);
	if (error != 0)
		goto out;
	fe->nodefile = rundir_path(fe->rundir, RUNDIR_NODEFILE);
	fe->nnodes = en.n;
	log_info("--from-env: %s job %s, %zu nodes, run dir %s",
	    en.pbs ? "PBS" : "Slurm", en.jobid, en.n, fe->rundir);
	if (start_agents_too) {
		if (!en.pbs)
			slurm_nodeaddrs(fe->rundir, &en);
		start_agents(fe, &en, srun_path, ct);
	}
 out:
	envnodes_free(&en);
	return error;
}

/* Waits up to secs for fe's children: 0 when all have exited, else
 * CADRE_ERR_TIMEOUT. */
static int
reap(struct fromenv *fe, double secs)
{
	double	until = now_mono() + secs;
	size_t	i, left;
	int	status;

	for (;;) {
		left = 0;
		for (i = 0; i < fe->npids; i++) {
			if (fe->pids[i] <= 0)
				continue;
			if (waitpid(fe->pids[i], &status, WNOHANG) != 0)
				fe->pids[i] = -1;	/* gone (or not ours) */
			else
				left++;
		}
		if (left == 0)
			return 0;
		if (now_mono() >= until)
			return CADRE_ERR_TIMEOUT;
		usleep(100000);
	}
}

void
fromenv_stop(struct fromenv *fe)
{
	struct stat	 sb;
	char		*status;
	size_t		 i;

	if (fe->npids > 0) {
		status = rundir_path(fe->rundir, RUNDIR_STATUS);
		/* With status.json written the agents stop by themselves. */
		if (reap(fe, stat(status, &sb) == 0 ? FROMENV_STOP_WAIT :
		    0) != 0) {
			for (i = 0; i < fe->npids; i++)
				if (fe->pids[i] > 0)
					kill(fe->pids[i], SIGTERM);
			if (reap(fe, FROMENV_TERM_WAIT) != 0) {
				for (i = 0; i < fe->npids; i++)
					if (fe->pids[i] > 0)
						kill(fe->pids[i], SIGKILL);
				(void)reap(fe, FROMENV_TERM_WAIT);
			}
		}
		free(status);
	}
	free(fe->pids);
	free(fe->rundir);
	free(fe->nodefile);
	memset(fe, 0, sizeof *fe);
}

/* ------------------------------------------------------------ node-serve */

/* NODE's address in RUN_DIR/nodeaddrs, into buf; 0 when found. Without
 * the file (a job script that started the agents itself), under Slurm
 * the node asks scontrol about itself. */
static int
nodeaddrs_lookup(const char *rundir, const char *node, char *buf,
    size_t len)
{
	struct cbuf	 b;
	char		*path, *line, *next, *sp;
	int		 found = CADRE_ERR_NOT_FOUND;

	path = rundir_path(rundir, RUNDIR_NODEADDRS);
	cbuf_init(&b, FROMENV_ADDRS_MAX);
	if (cbuf_read_file(&b, path) != 0) {
		if (errno != ENOENT || getenv("SLURMD_NODENAME") == NULL ||
		    scontrol_addrs(node, &b) != 0)
			goto out;
	}
	for (line = b.data; line != NULL && found != 0; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if ((sp = strchr(line, ' ')) == NULL)
			continue;
		*sp++ = '\0';
		if (strcmp(line, node) == 0 && *sp != '\0' &&
		    strlen(sp) < len) {
			snprintf(buf, len, "%s", sp);
			found = 0;
		}
	}
 out:
	cbuf_free(&b);
	free(path);
	return found;
}

int
cmd_node_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "run-dir", required_argument, NULL, 'd' },
		{ "node", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*rundir = NULL, *node = NULL, *addr;
	char		 host[256], abuf[AGENT_ADDR_MAX + 1];
	const char	*av[12];
	size_t		 n = 0;
	int		 c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			rundir = optarg;
			break;
		case 'n':
			node = optarg;
			break;
		case 'h':
			printf("usage: cadre-agent node-serve [--run-dir DIR] "
			    "[--node NAME]\n"
			    "  What launch --from-env starts on every node (srun "
			    "or pbsdsh): `serve` with\n"
			    "  the node's name (NAME, else $SLURMD_NODENAME, "
			    "else the short host name)\n"
			    "  and the address to publish: $CADRE_AGENT_ADDR, "
			    "else the node's line in\n"
			    "  DIR/nodeaddrs, else serve's default.\n");
			return 0;
		default:
			return 2;
		}
	}
	if ((rundir = rundir_default(rundir)) == NULL || optind != argc) {
		fprintf(stderr, "usage: cadre-agent node-serve --run-dir DIR "
		    "[--node NAME]\n");
		return 2;
	}
	if (node == NULL && (node = getenv("SLURMD_NODENAME")) != NULL &&
	    *node == '\0')
		node = NULL;
	if (node == NULL) {
		if (gethostname(host, sizeof host) == -1)
			fatal("gethostname");
		host[sizeof host - 1] = '\0';
		host[strcspn(host, ".")] = '\0';
		node = host;
	}
	addr = getenv("CADRE_AGENT_ADDR");
	if ((addr == NULL || *addr == '\0') &&
	    nodeaddrs_lookup(rundir, node, abuf, sizeof abuf) == 0)
		addr = abuf;
	av[n++] = agent_self_path();
	av[n++] = "serve";
	av[n++] = "--run-dir";
	av[n++] = rundir;
	av[n++] = "--node";
	av[n++] = node;
	if (addr != NULL && *addr != '\0') {
		av[n++] = "--addr";
		av[n++] = addr;
	}
	av[n] = NULL;
	execv(av[0], (char *const *)av);
	log_error("%s: %s", av[0], strerror(errno));
	return 1;
}
