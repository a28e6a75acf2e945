/* Container wrapping: the words for apptainer/singularity, charliecloud
 * and pyxis, the checks on image and binds, the preflight on this
 * machine's files. */
#include "config.h"

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container.h"
#include "error.h"
#include "xmalloc.h"
#include "unit.h"

static char *
join(char **w)
{
	size_t	 i, len = 1;
	char	*s;

	for (i = 0; w[i] != NULL; i++)
		len += strlen(w[i]) + 1;
	s = xcalloc(1, len);
	for (i = 0; w[i] != NULL; i++) {
		if (i > 0)
			strcat(s, " ");
		strcat(s, w[i]);
	}
	return s;
}

START_TEST(test_runtimes)
{
	enum container_runtime	r;

	ck_assert_int_eq(container_parse_runtime("none", &r), 0);
	ck_assert_int_eq(r, CONTAINER_NONE);
	ck_assert_int_eq(container_parse_runtime("singularity", &r), 0);
	ck_assert_int_eq(r, CONTAINER_SINGULARITY);
	ck_assert_int_eq(container_parse_runtime("enroot", &r), 0);
	ck_assert_int_eq(container_parse_runtime("Apptainer", &r),
	    CADRE_ERR_INVALID);
	ck_assert_int_eq(container_parse_runtime("", &r), CADRE_ERR_INVALID);
	ck_assert_str_eq(container_runtime_name(CONTAINER_APPTAINER),
	    "apptainer");
}
END_TEST

START_TEST(test_words)
{
	struct container	 c;
	char			**w, *s;
	size_t			 n;

	memset(&c, 0, sizeof c);
	w = container_exec_prefix(&c, "/run/x", &n);
	ck_assert_int_eq(n, 0);
	container_free_words(w);

	c.runtime = CONTAINER_APPTAINER;
	c.image = "/img/c.sif";
	c.binds[c.nbinds++] = "/scratch";
	c.binds[c.nbinds++] = "/data";
	c.nv = 1;
	w = container_exec_prefix(&c, "/run/x", &n);
	s = join(w);
	ck_assert_str_eq(s, "apptainer exec --nv --bind /run/x --bind /scratch "
	    "--bind /data /img/c.sif");
	ck_assert_int_eq(n, 10);
	free(s);
	container_free_words(w);
	w = container_srun_options(&c, "/run/x", &n);
	ck_assert_int_eq(n, 0);
	container_free_words(w);

	c.runtime = CONTAINER_ENROOT;
	c.image = "nvcr.io#nvidia/pytorch:24.01";
	w = container_srun_options(&c, "/run/x", &n);
	s = join(w);
	ck_assert_str_eq(s, "--container-image=nvcr.io#nvidia/pytorch:24.01 "
	    "--container-mounts=/run/x:/run/x,/scratch:/scratch,/data:/data");
	free(s);
	container_free_words(w);
	w = container_exec_prefix(&c, "/run/x", &n);
	ck_assert_int_eq(n, 0);
	container_free_words(w);

	c.runtime = CONTAINER_CHARLIECLOUD;
	c.image = "/img/dir";
	unsetenv("TMPDIR");
	w = container_exec_prefix(&c, "/run/x", &n);
	s = join(w);
	ck_assert_str_eq(s, "ch-run -b /scratch -b /data -b /run/x /img/dir --");
	ck_assert_int_eq(n, 9);
	free(s);
	container_free_words(w);
	w = container_exec_prefix(&c, "/tmp/run", &n);
	s = join(w);
	ck_assert_str_eq(s, "ch-run -b /scratch -b /data /img/dir --");
	free(s);
	container_free_words(w);
	/* ch-run would mount $TMPDIR at /tmp: the host's /tmp instead */
	setenv("TMPDIR", "/tmp/job", 1);
	w = container_exec_prefix(&c, "/tmp/run", &n);
	s = join(w);
	ck_assert_str_eq(s, "env -u TMPDIR ch-run --set-env=TMPDIR=/tmp/job "
	    "-b /scratch -b /data /img/dir --");
	free(s);
	container_free_words(w);
	w = container_srun_options(&c, "/run/x", &n);
	ck_assert_int_eq(n, 0);
	container_free_words(w);

	c.runtime = CONTAINER_OCI;
	w = container_exec_prefix(&c, "/run/x", &n);
	s = join(w);
	/* this program again: wrap writes the bundle */
	ck_assert_ptr_nonnull(strstr(s, " wrap --container oci --image /img/dir "
	    "--bind /scratch --bind /data --run-dir /run/x --"));
	ck_assert_int_eq(w[0][0], '/');
	free(s);
	container_free_words(w);
}
END_TEST

/* The preflight against real files: a directory image, a file image, a
 * missing bind, a missing mount point, a missing runtime program. */
START_TEST(test_preflight)
{
	struct container	 c;
	char			 msg[1024], dir[1024], *img, *file, *mp, *path;
	char			*ch;
	FILE			*f;

	unit_mkdtemp(dir, sizeof dir, "container");
	xasprintf(&img, "%s/img", dir);
	xasprintf(&mp, "%s/img/run", dir);
	xasprintf(&file, "%s/file", dir);
	ck_assert_int_eq(mkdir(img, 0755), 0);
	ck_assert_ptr_nonnull(f = fopen(file, "w"));
	fputs("not an image", f);
	fclose(f);
	memset(&c, 0, sizeof c);
	c.runtime = CONTAINER_CHARLIECLOUD;
	c.image = file;
	/* ch-run from $PATH: a directory with a stand-in */
	path = getenv("PATH") != NULL ? xstrdup(getenv("PATH")) : NULL;
	setenv("PATH", "/nonexistent", 1);
	ck_assert_int_eq(container_preflight(&c, "/run", msg, sizeof msg),
	    CADRE_ERR_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(msg, "ch-run is not found"));
	setenv("PATH", dir, 1);
	xasprintf(&ch, "%s/ch-run", dir);
	ck_assert_ptr_nonnull(f = fopen(ch, "w"));
	fclose(f);
	ck_assert_int_eq(chmod(ch, 0755), 0);
	free(ch);
	ck_assert_int_eq(container_preflight(&c, "/run", msg, sizeof msg),
	    CADRE_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(msg, "neither"));
	c.image = img;
	ck_assert_int_eq(container_preflight(&c, "/run", msg, sizeof msg),
	    CADRE_ERR_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(msg, "no directory /run to bind onto"));
	ck_assert_int_eq(mkdir(mp, 0755), 0);
	ck_assert_int_eq(container_preflight(&c, "/run", msg, sizeof msg), 0);
	/* under /tmp, ch-run's own bind */
	ck_assert_int_eq(container_preflight(&c, "/tmp/x/y", msg, sizeof msg),
	    0);
	c.binds[c.nbinds++] = "/nonexistent/bind";
	ck_assert_int_eq(container_preflight(&c, "/run", msg, sizeof msg),
	    CADRE_ERR_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(msg, "/nonexistent/bind"));
	c.nbinds = 0;
	c.runtime = CONTAINER_OCI;
	setenv("CADRE_OCI_RUNTIME", "/nonexistent/crun", 1);
	ck_assert_int_eq(container_preflight(&c, "/run", msg, sizeof msg),
	    CADRE_ERR_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(msg, "/nonexistent/crun is not found"));
	unsetenv("CADRE_OCI_RUNTIME");
	if (path != NULL)
		setenv("PATH", path, 1);
	free(path);
	free(img);
	free(mp);
	free(file);
	unit_rmtree(dir);
}
END_TEST

START_TEST(test_check)
{
	struct container	c;
	char			msg[256];

	memset(&c, 0, sizeof c);
	ck_assert_int_eq(container_check(&c, "relative", msg, sizeof msg), 0);
	c.runtime = CONTAINER_SINGULARITY;
	ck_assert_int_eq(container_check(&c, "/r", msg, sizeof msg),
	    CADRE_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(msg, "needs an image"));
	c.image = "/i.sif";
	ck_assert_int_eq(container_check(&c, "/r", msg, sizeof msg), 0);
	ck_assert_int_ne(container_check(&c, "r", msg, sizeof msg), 0);
	ck_assert_int_ne(container_check(&c, "/r:x", msg, sizeof msg), 0);
	c.binds[c.nbinds++] = "/a,b";
	ck_assert_int_eq(container_check(&c, "/r", msg, sizeof msg),
	    CADRE_ERR_INVALID);
	c.binds[0] = "/a\nb";
	ck_assert_int_ne(container_check(&c, "/r", msg, sizeof msg), 0);
	c.binds[0] = "";
	ck_assert_int_ne(container_check(&c, "/r", msg, sizeof msg), 0);
	c.binds[0] = "/ok";
	c.image = "two words";
	ck_assert_int_ne(container_check(&c, "/r", msg, sizeof msg), 0);
}
END_TEST

static Suite *
container_suite(void)
{
	Suite	*s = suite_create("agent_container");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_runtimes);
	tcase_add_test(tc, test_words);
	tcase_add_test(tc, test_check);
	tcase_add_test(tc, test_preflight);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(container_suite());
}
