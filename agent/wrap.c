/* cadre-agent wrap: runs (or prints) a command inside the run's container,
 * for the job script: `cadre-agent wrap --container apptainer --image I
 * --run-dir D -- cadre-agent serve ...` on every node. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "buf.h"
#include "container.h"
#include "error.h"
#include "log.h"
#include "xmalloc.h"

static void
wrap_usage(FILE *f)
{
	fprintf(f,
	    "usage: cadre-agent wrap --container RUNTIME [--image IMAGE] [--bind PATH]... [--nv]\n"
	    "           [--run-dir DIR] [--print | --srun-options] -- COMMAND [ARG...]\n"
	    "  RUNTIME: none, apptainer, singularity (runs `RUNTIME exec [--nv] --bind DIR\n"
	    "  [--bind PATH]... IMAGE COMMAND...`) or enroot (entered through Slurm's pyxis:\n"
	    "  --srun-options prints the srun options, one per line, for the job script's\n"
	    "  srun line). --print shows the command, quoted for sh, instead of running it.\n"
	    "  DIR defaults to $CADRE_RUN_DIR.\n");
}

int
cmd_wrap(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "container", required_argument, NULL, 'c' },
		{ "image", required_argument, NULL, 'i' },
		{ "bind", required_argument, NULL, 'b' },
		{ "nv", no_argument, NULL, 'g' },
		{ "run-dir", required_argument, NULL, 'd' },
		{ "print", no_argument, NULL, 'p' },
		{ "srun-options", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct container	  c;
	const char		 *rundir = NULL;
	char			  msg[1024], **pre = NULL, **av = NULL;
	struct cbuf		  line;
	size_t			  npre, i, n = 0;
	int			  ch, print = 0, srun_opts = 0, rc = 2;

	memset(&c, 0, sizeof c);
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			if (container_parse_runtime(optarg, &c.runtime) != 0) {
				log_error("--container %s: expected none, "
				    "apptainer, singularity or enroot", optarg);
				return 2;
			}
			break;
		case 'i':
			c.image = optarg;
			break;
		case 'b':
			if (c.nbinds >= CONTAINER_BINDS_MAX) {
				log_error("more than %d --bind",
				    CONTAINER_BINDS_MAX);
				return 2;
			}
			c.binds[c.nbinds++] = optarg;
			break;
		case 'g':
			c.nv = 1;
			break;
		case 'd':
			rundir = optarg;
			break;
		case 'p':
			print = 1;
			break;
		case 's':
			srun_opts = 1;
			break;
		case 'h':
			wrap_usage(stdout);
			return 0;
		default:
			wrap_usage(stderr);
			return 2;
		}
	}
	if ((rundir = rundir_default(rundir)) == NULL) {
		log_error("no run directory: pass --run-dir or set "
		    "CADRE_RUN_DIR");
		return 2;
	}
	if (container_check(&c, rundir, msg, sizeof msg) != 0) {
		log_error("%s", msg);
		return 2;
	}
	if (srun_opts) {
		pre = container_srun_options(&c, rundir, &npre);
		for (i = 0; i < npre; i++)
			printf("%s\n", pre[i]);
		container_free_words(pre);
		return 0;
	}
	if (optind >= argc) {
		wrap_usage(stderr);
		return 2;
	}
	if (c.runtime == CONTAINER_ENROOT) {
		log_error("enroot containers are entered by srun through pyxis: "
		    "put the options of `cadre-agent wrap --srun-options` on "
		    "the srun line");
		return 2;
	}
	pre = container_exec_prefix(&c, rundir, &npre);
	av = xcalloc(npre + (size_t)(argc - optind) + 1, sizeof *av);
	for (i = 0; i < npre; i++)
		av[n++] = pre[i];
	for (ch = optind; ch < argc; ch++)
		av[n++] = argv[ch];
	av[n] = NULL;
	if (print) {
		/* For the user's eyes: nothing here is run through a shell. */
		cbuf_init(&line, SIZE_MAX);
		for (i = 0; i < n; i++) {
			if (i > 0)
				cbuf_addc(&line, ' ');
			cbuf_add_shell_word(&line, av[i]);
		}
		printf("%s\n", line.data);
		cbuf_free(&line);
		rc = 0;
	} else {
		fflush(NULL);
		execvp(av[0], av);
		log_error("%s: %s", av[0], strerror(errno));
		rc = 127;
	}
	free(av);
	container_free_words(pre);
	return rc;
}
