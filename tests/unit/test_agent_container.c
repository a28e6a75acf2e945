/* Container wrapping: the words for apptainer/singularity and pyxis, the
 * checks on image and binds. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

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
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(container_suite());
}
