/* Container wrapping (spec key container.runtime): none, apptainer and
 * singularity (`exec --nv`, the run dir and binds mounted), enroot through
 * Slurm's pyxis (`srun --container-image`). The agent runs inside the
 * container, as in the seeds' recipe; so does each rank under srun. */
#ifndef CADRE_AGENT_CONTAINER_H
#define CADRE_AGENT_CONTAINER_H

#include <stddef.h>

#define CONTAINER_BINDS_MAX	64
#define CONTAINER_PATH_MAX	4096

enum container_runtime {
	CONTAINER_NONE = 0,
	CONTAINER_APPTAINER,
	CONTAINER_SINGULARITY,
	CONTAINER_ENROOT
};

struct container {
	enum container_runtime	 runtime;
	const char		*image;
	const char		*binds[CONTAINER_BINDS_MAX];
	size_t			 nbinds;
	int			 nv;		/* GPUs: apptainer --nv */
};

/* "none", "apptainer", "singularity", "enroot" -> 0, else
 * CADRE_ERR_INVALID. */
int container_parse_runtime(const char *s, enum container_runtime *out);
const char *container_runtime_name(enum container_runtime r);
/* Checks image and binds (absolute paths without ',', ':' or control
 * characters: they go into comma- and colon-separated lists) and rundir. */
int container_check(const struct container *c, const char *rundir, char *msg,
    size_t msglen);
/* The words that run a command inside the container on this node
 * (apptainer/singularity: "apptainer exec [--nv] --bind DIR ... IMAGE");
 * none and enroot (entered by srun) have none. NULL-terminated; *n gets
 * the count. Free with container_free_words. */
char **container_exec_prefix(const struct container *c, const char *rundir,
    size_t *n);
/* srun's options for the container: enroot through pyxis
 * ("--container-image=IMAGE", "--container-mounts=DIR:DIR,..."); none for
 * the others. */
char **container_srun_options(const struct container *c, const char *rundir,
    size_t *n);
void container_free_words(char **w);

#endif
