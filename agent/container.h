/* Container wrapping (spec key container.runtime): none, apptainer and
 * singularity (`exec --nv`, the run dir and binds mounted), enroot through
 * Slurm's pyxis (`srun --container-image`), charliecloud (`ch-run` on a
 * directory image or a SquashFS file) and oci (crun or runc on a bundle
 * or a root file system; the bundle's config.json is written by
 * container_oci.c). The agent runs inside the container, as in the seeds'
 * recipe; so does each rank under srun. docs/containers.md. */
#ifndef CADRE_AGENT_CONTAINER_H
#define CADRE_AGENT_CONTAINER_H

#include <stddef.h>

#define CONTAINER_BINDS_MAX	64
#define CONTAINER_PATH_MAX	4096
/* For messages: what container_parse_runtime takes. */
#define CONTAINER_RUNTIMES	"none, apptainer, singularity, enroot, " \
	"charliecloud or oci"

enum container_runtime {
	CONTAINER_NONE = 0,
	CONTAINER_APPTAINER,
	CONTAINER_SINGULARITY,
	CONTAINER_ENROOT,
	CONTAINER_CHARLIECLOUD,
	CONTAINER_OCI
};

struct container {
	enum container_runtime	 runtime;
	const char		*image;
	const char		*binds[CONTAINER_BINDS_MAX];
	size_t			 nbinds;
	int			 nv;		/* GPUs: apptainer --nv */
};

/* "none", "apptainer", "singularity", "enroot", "charliecloud", "oci" -> 0,
 * else CADRE_ERR_INVALID. */
int container_parse_runtime(const char *s, enum container_runtime *out);
const char *container_runtime_name(enum container_runtime r);
/* Checks image and binds (absolute paths without ',', ':' or control
 * characters: they go into comma- and colon-separated lists) and rundir. */
int container_check(const struct container *c, const char *rundir, char *msg,
    size_t msglen);
/* What the image must be on this node before the runtime is started:
 * present, readable and of the runtime's kind (charliecloud: a directory
 * or a SquashFS file; oci: a bundle or a root file system directory;
 * apptainer/singularity: a file; enroot: not checked, srun's pyxis reads
 * it), every bind's host path present, and for charliecloud user
 * namespaces allowed. 0, or an error with msg saying what to fix. */
int container_preflight(const struct container *c, const char *rundir,
    char *msg, size_t msglen);
/* The root file system of an oci image: IMAGE/rootfs for a bundle (a
 * directory with config.json), else IMAGE itself. Allocated. */
char *container_oci_rootfs(const char *image);
/* The OCI runtime program: $CADRE_OCI_RUNTIME, else crun where it is on
 * PATH, else runc. */
const char *container_oci_engine(void);
/* The program that starts c's containers on a node (ch-run, crun, ...);
 * NULL for none and enroot. */
const char *container_program(const struct container *c);
/* The words that run a command inside the container on this node
 * (apptainer/singularity: "apptainer exec [--nv] --bind DIR ... IMAGE";
 * charliecloud: "ch-run -b PATH ... -b DIR IMAGE --"; oci: this program's
 * "wrap --container oci ... --", which writes the bundle's config.json);
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
/* container_oci.c: writes the bundle RUN_DIR/oci/ID/config.json that runs
 * argv inside c's image and returns the words that run it ("crun --root
 * RUN_DIR/oci/state run --bundle DIR ID"), or NULL with msg. */
char **container_oci_command(const struct container *c, const char *rundir,
    char **argv, char *msg, size_t msglen);

#endif
