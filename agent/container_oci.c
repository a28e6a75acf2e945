/* The OCI bundle that crun or runc runs a command in: a config.json per
 * command, in RUN_DIR/oci/ID/, whose root is the image's root file system
 * and whose process is the command with this process's environment,
 * working directory and user. Only the mount namespace (and for a user
 * other than root, a user namespace mapping just that user) is new: the
 * host's network, PIDs and /dev stay, so the agents' loopback addresses,
 * signals and GPUs work as without a container. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "container.h"
#include "error.h"
#include "json.h"
#include "rundir.h"
#include "xmalloc.h"

extern char **environ;

/* What a root process in the container may do: the set container engines
 * give by default, so that root there reads and writes the run dir as on
 * the host. */
static const char *const root_caps[] = {
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER",
	"CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP",
	"CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL",
	"CAP_AUDIT_WRITE", NULL
};

static json_t *
bind_mount(const char *path)
{
	return json_pack("{s:s, s:s, s:s, s:[s, s]}", "destination", path,
	    "type", "bind", "source", path, "options", "rbind", "rw");
}

static json_t *
id_map(long id)
{
	return json_pack("[{s:I, s:I, s:i}]", "containerID", (json_int_t)id,
	    "hostID", (json_int_t)id, "size", 1);
}

static json_t *
config_new(const struct container *c, const char *rundir, char **argv,
    const char *cwd)
{
	static const char *const host[] = { "/proc", "/sys", "/dev", "/tmp" };
	json_t	*args = json_array(), *env = json_array(), *mounts = json_array();
	json_t	*caps = json_array(), *ns, *proc, *linux_, *cfg;
	char	*root = container_oci_rootfs(c->image), *abs;
	size_t	 i;
	uid_t	 uid = getuid();

	for (i = 0; argv[i] != NULL; i++)
		json_array_append_new(args, json_string(argv[i]));
	for (i = 0; environ[i] != NULL; i++)
		json_array_append_new(env, json_string(environ[i]));
	for (i = 0; i < sizeof host / sizeof host[0]; i++)
		json_array_append_new(mounts, bind_mount(host[i]));
	for (i = 0; i < c->nbinds; i++)
		json_array_append_new(mounts, bind_mount(c->binds[i]));
	json_array_append_new(mounts, bind_mount(rundir));
	if (uid == 0)
		for (i = 0; root_caps[i] != NULL; i++)
			json_array_append_new(caps, json_string(root_caps[i]));
	proc = json_pack("{s:b, s:{s:I, s:I}, s:o, s:o, s:s, s:b, "
	    "s:{s:O, s:O, s:O}}", "terminal", 0, "user", "uid", (json_int_t)uid,
	    "gid", (json_int_t)getgid(), "args", args, "env", env, "cwd", cwd,
	    "noNewPrivileges", 1, "capabilities", "bounding", caps,
	    "effective", caps, "permitted", caps);
	json_decref(caps);
	ns = json_pack("[{s:s}]", "type", "mount");
	linux_ = json_pack("{s:o}", "namespaces", ns);
	if (uid != 0) {
		json_array_append_new(ns, json_pack("{s:s}", "type", "user"));
		json_object_set_new(linux_, "uidMappings", id_map((long)uid));
		json_object_set_new(linux_, "gidMappings",
		    id_map((long)getgid()));
	}
	abs = realpath(root, NULL);
	cfg = json_pack("{s:s, s:o, s:{s:s, s:b}, s:o, s:o}", "ociVersion",
	    "1.0.2", "process", proc, "root", "path", abs != NULL ? abs : root,
	    "readonly", 1, "mounts", mounts, "linux", linux_);
	free(abs);
	free(root);
	return cfg;
}

char **
container_oci_command(const struct container *c, const char *rundir,
    char **argv, char *msg, size_t msglen)
{
	char		 cwd[CONTAINER_PATH_MAX + 1], id[96], *dir = NULL;
	char		*bundle = NULL, *path = NULL, *state = NULL, **w = NULL;
	const char	*base = strrchr(rundir, '/');
	json_t		*cfg = NULL;
	size_t		 i, k = 0;
	int		 r;

	if (getcwd(cwd, sizeof cwd) == NULL) {
		snprintf(msg, msglen, "getcwd: %s", strerror(errno));
		return NULL;
	}
	/* unique on the node; the run dir's name (a run id) for the reader */
	snprintf(id, sizeof id, "cadre-%.40s-%ld", base != NULL && base[1] ?
	    base + 1 : "run", (long)getpid());
	for (i = 0; id[i] != '\0'; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') ||
		    (id[i] >= 'A' && id[i] <= 'Z') ||
		    (id[i] >= '0' && id[i] <= '9') || id[i] == '-'))
			id[i] = '_';
	dir = rundir_path(rundir, RUNDIR_OCI);
	xasprintf(&bundle, "%s/%s", dir, id);
	xasprintf(&state, "%s/state", dir);
	if ((mkdir(dir, 0700) != 0 && errno != EEXIST) ||
	    (mkdir(bundle, 0700) != 0 && errno != EEXIST) ||
	    (mkdir(state, 0700) != 0 && errno != EEXIST)) {
		snprintf(msg, msglen, "%s: %s", bundle, strerror(errno));
		goto out;
	}
	xasprintf(&path, "%s/config.json", bundle);
	cfg = config_new(c, rundir, argv, cwd);
	if ((r = cjson_write_atomic(path, cfg, 0600)) != 0) {
		snprintf(msg, msglen, "%s: %s", path, cadre_strerror(r));
		goto out;
	}
	w = xcalloc(8, sizeof *w);
	w[k++] = xstrdup(container_oci_engine());
	w[k++] = xstrdup("--root");
	w[k++] = xstrdup(state);
	w[k++] = xstrdup("run");
	w[k++] = xstrdup("--bundle");
	w[k++] = xstrdup(bundle);
	w[k++] = xstrdup(id);
	w[k] = NULL;
out:
	json_decref(cfg);
	free(path);
	free(state);
	free(bundle);
	free(dir);
	return w;
}
