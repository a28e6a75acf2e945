/*
 * cadre-agent rank --program: what a user's program gets besides its
 * command (docs/program.md): the identity variables of its launch mode,
 * program.json's environment and workdir, the checkpoint signal delivered
 * to the right processes, the OOM killer's count, and --setup.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "agent.h"
#include "buf.h"
#include "error.h"
#include "json.h"
#include "log.h"
#include "program.h"
#include "rank.h"
#include "strutil.h"
#include "xmalloc.h"

#define RANK_ID_LIMIT	(1 << 24)	/* ranks, sizes, node indexes */
/* What torchrun, accelerate and deepspeed give each of their workers. */
#define WORKER_MARK	"LOCAL_RANK="

/* The variables a per_rank program gets, and a per_node launcher must not
 * inherit (it sets them for its workers). */
static const char *const rank_vars[] = {
	"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", NULL
};

/* A variable holding an integer in 0..RANK_ID_LIMIT-1; -1: unset or not
 * one. */
static int64_t
env_id(const char *name)
{
	const char	*v = getenv(name);
	int64_t		 n;

	if (v == NULL || str_to_int64(v, &n) != 0 || n < 0 ||
	    n >= RANK_ID_LIMIT)
		return -1;
	return n;
}

/* The first count of Slurm's "2(x3),1"; -1: none. */
static int64_t
env_first_id(const char *name)
{
	const char	*v = getenv(name);
	char		 num[16];
	size_t		 n;
	int64_t		 id;

	if (v == NULL || (n = strspn(v, "0123456789")) == 0 ||
	    n >= sizeof num)
		return -1;
	memcpy(num, v, n);
	num[n] = '\0';
	if (str_to_int64(num, &id) != 0 || id >= RANK_ID_LIMIT)
		return -1;
	return id;
}

static void
setenv_id(const char *name, int64_t v)
{
	char	num[24];

	snprintf(num, sizeof num, "%" PRId64, v);
	if (setenv(name, num, 1) == -1)
		fatal("setenv %s", name);
}

/* One process per rank: who it is, from Open MPI, else srun. */
struct ids {
	int64_t		 rank, size, lrank, lsize, node;
	const char	*vars;	/* the variables, for a message */
};

/* 0, CADRE_ERR_NOT_FOUND (neither launcher's variables are here), or
 * CADRE_ERR_INVALID with msg. */
static int
launcher_ids(struct ids *id, char *msg, size_t msglen)
{
	if (getenv("OMPI_COMM_WORLD_RANK") != NULL) {
		id->vars = "OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK and "
		    "_LOCAL_SIZE";
		id->rank = env_id("OMPI_COMM_WORLD_RANK");
		id->size = env_id("OMPI_COMM_WORLD_SIZE");
		id->lrank = env_id("OMPI_COMM_WORLD_LOCAL_RANK");
		id->lsize = env_id("OMPI_COMM_WORLD_LOCAL_SIZE");
		/* launch maps by slot, the same slots on every node. */
		id->node = id->rank >= 0 && id->lsize > 0 ?
		    id->rank / id->lsize : -1;
	} else if (getenv("SLURM_PROCID") != NULL) {
		id->vars = "SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, "
		    "SLURM_NODEID and SLURM_NTASKS_PER_NODE or "
		    "SLURM_TASKS_PER_NODE";
		id->rank = env_id("SLURM_PROCID");
		id->size = env_id("SLURM_NTASKS");
		id->lrank = env_id("SLURM_LOCALID");
		if ((id->lsize = env_id("SLURM_NTASKS_PER_NODE")) <= 0)
			id->lsize = env_first_id("SLURM_TASKS_PER_NODE");
		id->node = env_id("SLURM_NODEID");
	} else
		return CADRE_ERR_NOT_FOUND;
	if (id->rank < 0 || id->size <= id->rank || id->lrank < 0 ||
	    id->lsize <= id->lrank || id->node < 0)
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "%s are missing or do not agree", id->vars);
	return 0;
}

/* The node's index for a per_node program (or a setup): Open MPI's rank
 * (one slot a node), srun's node id, --rank. -1: none says. */
static int64_t
node_index(const struct program *p, int rank_opt)
{
	struct ids	id;
	char		msg[8];
	int64_t		n;

	if (p->launch == PROGRAM_ONCE)
		return 0;
	if (p->launch == PROGRAM_PER_RANK)
		return launcher_ids(&id, msg, sizeof msg) == 0 ? id.node :
		    rank_opt;
	if ((n = env_id("OMPI_COMM_WORLD_RANK")) >= 0 ||
	    (n = env_id("SLURM_NODEID")) >= 0 ||
	    (n = env_id("SLURM_PROCID")) >= 0)
		return n;
	return rank_opt;
}

int
rank_identity(const struct program *p, int rank_opt, int lenient,
    int *indexp, char *msg, size_t msglen)
{
	struct ids	id;
	int64_t		node;
	size_t		i;
	int		error;

	*indexp = -1;
	if (p->launch == PROGRAM_PER_RANK && !lenient) {
		if ((error = launcher_ids(&id, msg, msglen)) ==
		    CADRE_ERR_NOT_FOUND)
			return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
			    "a %s program runs under mpirun or srun: neither "
			    "OMPI_COMM_WORLD_RANK nor SLURM_PROCID is set",
			    PROGRAM_LAUNCH_PER_RANK);
		if (error != 0)
			return error;
		setenv_id("RANK", id.rank);
		setenv_id("WORLD_SIZE", id.size);
		setenv_id("LOCAL_RANK", id.lrank);
		setenv_id("LOCAL_WORLD_SIZE", id.lsize);
		setenv_id("GROUP_RANK", id.node);
		setenv_id("NODE_RANK", id.node);
		setenv_id(ENV_NODE_RANK, id.node);
		*indexp = (int)id.rank;
		return 0;
	}
	for (i = 0; rank_vars[i] != NULL; i++)
		unsetenv(rank_vars[i]);
	if ((node = node_index(p, rank_opt)) < 0) {
		if (lenient)
			return 0;
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "which node is this? a %s program runs under mpirun "
		    "(OMPI_COMM_WORLD_RANK), srun (SLURM_NODEID) or with "
		    "--rank N", PROGRAM_LAUNCH_PER_NODE);
	}
	setenv_id(ENV_NODE_RANK, node);
	*indexp = p->launch == PROGRAM_ONCE && rank_opt >= 0 ? rank_opt :
	    (int)node;
	return 0;
}

void
rank_program_env(const struct program *p)
{
	size_t	i;

	for (i = 0; i < p->nenv; i++)
		if (setenv(p->env[i].name, p->env[i].value, 1) == -1)
			fatal("setenv %s", p->env[i].name);
}

int
rank_program_chdir(const struct program *p, const char *rundir, char *msg,
    size_t msglen)
{
	const char	*dir = p->workdir != NULL ? p->workdir : rundir;

	if (dir != NULL && chdir(dir) == -1)
		return cadre_errf(msg, msglen, CADRE_ERR_SYSTEM, "%s %s: %s",
		    p->workdir != NULL ? PJ_WORKDIR : "the run directory",
		    dir, strerror(errno));
	return 0;
}

/* ---------------------------------------------------------------- signals */

struct proc {
	pid_t	pid, ppid;
};

static int
proc_cmp(const void *a, const void *b)
{
	const struct proc	*x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Every process's pid and parent, sorted by pid. */
static struct proc *
proc_table(size_t *np)
{
	struct proc	*t = NULL;
	struct dirent	*de;
	DIR		*d;
	char		 path[300], stat[1024], *rp;
	size_t		 n = 0, cap = 0;
	ssize_t		 len;
	int		 fd, ppid;

	*np = 0;
	if ((d = opendir("/proc")) == NULL)
		return NULL;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
		    strspn(de->d_name, "0123456789") != strlen(de->d_name))
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			continue;
		len = read(fd, stat, sizeof stat - 1);
		close(fd);
		if (len <= 0)
			continue;
		stat[len] = '\0';
		/* "PID (COMM) S PPID ...": COMM may hold anything. */
		if ((rp = strrchr(stat, ')')) == NULL ||
		    sscanf(rp + 1, " %*c %d", &ppid) != 1)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			t = xreallocarray(t, cap, sizeof *t);
		}
		t[n].pid = (pid_t)atoi(de->d_name);
		t[n].ppid = (pid_t)ppid;
		n++;
	}
	closedir(d);
	if (n > 0)
		qsort(t, n, sizeof *t, proc_cmp);
	*np = n;
	return t;
}

/* Whether pid's environment (as it was exec'd) has a variable starting
 * with mark ("NAME="): 1, 0, or -1 when it cannot be read. */
static int
environ_has(pid_t pid, const char *mark)
{
	char	path[64], buf[16 << 10];
	size_t	mlen = strlen(mark), at = 0;	/* mark bytes matched */
	ssize_t	n, i;
	int	fd, dead = 0;	/* this variable does not match */

	snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		for (i = 0; i < n; i++) {
			if (buf[i] == '\0') {
				at = 0;
				dead = 0;
			} else if (!dead && buf[i] == mark[at]) {
				if (++at == mlen) {
					close(fd);
					return 1;
				}
			} else
				dead = 1;
		}
	}
	close(fd);
	return n == 0 ? 0 : -1;
}

int
rank_signal_ranks(pid_t child, int sig)
{
	struct proc	*t, key, *parent;
	unsigned char	*in;
	size_t		 n, i;
	int		 changed = 1, sent = 0;

	t = proc_table(&n);
	in = xcalloc(n + 1, 1);
	/* The child's descendants: passes until no process joins. */
	while (changed) {
		changed = 0;
		for (i = 0; i < n; i++) {
			if (in[i] || t[i].pid == child)
				continue;
			key.pid = t[i].ppid;
			if (t[i].ppid == child || ((parent = bsearch(&key, t, n,
			    sizeof *t, proc_cmp)) != NULL && in[parent - t])) {
				in[i] = 1;
				changed = 1;
			}
		}
	}
	/* A rank has LOCAL_RANK and its parent (the launcher) has not; a
	 * process a rank forked (a DataLoader worker) has both. */
	for (i = 0; i < n; i++) {
		if (in[i] && environ_has(t[i].pid, WORKER_MARK) == 1 &&
		    environ_has(t[i].ppid, WORKER_MARK) == 0 &&
		    kill(t[i].pid, sig) == 0)
			sent++;
	}
	free(in);
	free(t);
	return sent;
}

/* ---------------------------------------------------------------- OOM */

/* The number after "name " at a line's start in text; -1: none. */
static int64_t
field(const char *text, const char *name)
{
	size_t		 len = strlen(name);
	const char	*p = text;
	char		 num[24];
	int64_t		 v;
	size_t		 n;

	for (; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 :
	    NULL) {
		if (strncmp(p, name, len) != 0 || p[len] != ' ')
			continue;
		p += len + 1;
		if ((n = strspn(p, "0123456789")) == 0 || n >= sizeof num)
			return -1;
		memcpy(num, p, n);
		num[n] = '\0';
		return str_to_int64(num, &v) == 0 ? v : -1;
	}
	return -1;
}

int64_t
rank_oom_kills(void)
{
	struct cbuf	 b;
	char		*path = NULL, *p, *end;
	int64_t		 v = -1;

	cbuf_init(&b, (size_t)64 << 10);
	if (cbuf_read_file(&b, "/proc/self/cgroup") != 0 || b.data == NULL)
		goto out;
	/* cgroup v2: "0::/PATH". */
	for (p = b.data; p != NULL; p = (end = strchr(p, '\n')) ? end + 1 :
	    NULL) {
		if (strncmp(p, "0::/", 4) != 0)
			continue;
		end = p + 3 + strcspn(p + 3, "\n");
		xasprintf(&path, "/sys/fs/cgroup%.*s/memory.events",
		    (int)(end - (p + 3)), p + 3);
		break;
	}
	cbuf_reset(&b);
	if (path != NULL && cbuf_read_file(&b, path) == 0 && b.data != NULL)
		v = field(b.data, "oom_kill");
 out:
	free(path);
	cbuf_free(&b);
	return v;
}

/* ---------------------------------------------------------------- --setup */

/* log/setup-NODE.json: which command failed (NULL: none) and how. */
static void
setup_write_status(const char *rundir, const char *node, const char *command,
    int exit_code, const char *message)
{
	json_t	*js;
	char	*rel, *path;

	if (rundir == NULL)
		return;
	xasprintf(&rel, "%s/setup-%s.json", RUNDIR_LOG, node);
	path = rundir_path(rundir, rel);
	free(rel);
	js = json_pack("{s:i, s:s, s:o, s:i}", "version", STATUS_VERSION,
	    "node", node, "command", command != NULL ?
	    rank_message_json(command) : json_null(), "exit", exit_code);
	if (js != NULL && message != NULL)
		json_object_set_new(js, "message", rank_message_json(message));
	if (js == NULL || cjson_write_atomic(path, js, 0600) != 0)
		log_warn("%s: cannot write the setup's status", path);
	json_decref(js);
	free(path);
}

int
rank_setup(const struct program *p, const char *why, const char *rundir,
    const char *node, int rank_opt, int sigfd)
{
	struct rank_output	 o;
	struct rank_result	 res;
	struct rank_signals	 rs = { 1, p != NULL ? p->signal : SIGUSR1, 0 };
	const char		*failed = NULL;
	char			 msg[1024], tag[128], *text = NULL;
	char			*av[4];
	int			 logfd, index, rc = 0, message = 0;
	size_t			 i;

	snprintf(tag, sizeof tag, "setup-%s.log", node);
	logfd = rank_open_log(rundir, tag);
	snprintf(tag, sizeof tag, "setup %s", node);
	rank_output_init(&o, tag, logfd);
	if (p == NULL) {
		snprintf(msg, sizeof msg, "%s", why);
		rc = 1;
		message = 1;
		goto done;
	}
	(void)rank_identity(p, rank_opt, 1, &index, msg, sizeof msg);
	rank_program_env(p);
	if (rank_program_chdir(p, rundir, msg, sizeof msg) != 0) {
		rc = 1;
		message = 1;
		goto done;
	}
	for (i = 0; i < p->nsetup; i++) {
		failed = p->setup[i];
		if (program_expand_shell(p, p->setup[i], &text, msg,
		    sizeof msg) != 0) {
			rc = 1;
			message = 1;
			goto done;
		}
		rank_say(&o, "setup: %s", text);
		av[0] = "/bin/sh";
		av[1] = "-c";
		av[2] = text;
		av[3] = NULL;
		if (rank_exec(av, &o, &rs, sigfd, &res) != 0) {
			snprintf(msg, sizeof msg, "cannot start /bin/sh: %s",
			    strerror(errno));
			rc = 1;
			message = 1;
			goto done;
		}
		free(text);
		text = NULL;
		if ((rc = rank_exit_code(res.status)) != 0)
			goto done;
		if (res.stopped) {
			snprintf(msg, sizeof msg, "stopped by a signal");
			rc = 128 + SIGTERM;
			message = 1;
			goto done;
		}
	}
	failed = NULL;
 done:
	if (message)
		rank_say(&o, "%s", msg);
	else if (failed != NULL)
		rank_say(&o, "setup: exit %d: %s", rc, failed);
	setup_write_status(rundir, node, failed, rc, message ? msg : NULL);
	free(text);
	rank_output_free(&o);
	return rc;
}
