#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "nodefile.h"
#include "unit.h"

static int
parse(const char *text, struct nodefile *nf, size_t *errline)
{
	return nodefile_parse(text, strlen(text), nf, errline);
}

static void
check_bad(const char *text, int want, size_t wantline)
{
	struct nodefile	nf;
	size_t		line = 999;
	int		r;

	r = parse(text, &nf, &line);
	ck_assert_msg(r == want, "\"%s\" gave %d, not %d", text, r, want);
	ck_assert_msg(line == wantline, "\"%s\": line %zu, not %zu", text,
	    line, wantline);
	ck_assert_ptr_null(nf.hosts);
	ck_assert_uint_eq(nf.n, 0);
	ck_assert_int_eq(nf.total_slots, 0);
}

START_TEST(test_parse_slots)
{
	struct nodefile	nf;
	size_t		line = 7;

	ck_assert_int_eq(parse("n2\nn2\nn1\nn2\nn3\nn1\n", &nf, &line), 0);
	ck_assert_uint_eq(line, 0);
	ck_assert_uint_eq(nf.n, 3);
	ck_assert_int_eq(nf.total_slots, 6);
	/* First appearance decides the order. */
	ck_assert_str_eq(nf.hosts[0].name, "n2");
	ck_assert_int_eq(nf.hosts[0].slots, 3);
	ck_assert_str_eq(nf.hosts[1].name, "n1");
	ck_assert_int_eq(nf.hosts[1].slots, 2);
	ck_assert_str_eq(nf.hosts[2].name, "n3");
	ck_assert_int_eq(nf.hosts[2].slots, 1);
	nodefile_free(&nf);
	ck_assert_ptr_null(nf.hosts);
	ck_assert_uint_eq(nf.n, 0);
}
END_TEST

START_TEST(test_parse_whitespace_comments)
{
	struct nodefile	 nf;
	const char	*text =
	    "# PBS nodefile\n"
	    "\n"
	    "  gpu01.cluster  \n"
	    "\tgpu01.cluster\r\n"
	    "   \n"
	    "gpu02.cluster # second host\n"
	    "#gpu03.cluster\n"
	    "gpu02.cluster";	/* no final newline */

	ck_assert_int_eq(parse(text, &nf, NULL), 0);
	ck_assert_uint_eq(nf.n, 2);
	ck_assert_str_eq(nf.hosts[0].name, "gpu01.cluster");
	ck_assert_int_eq(nf.hosts[0].slots, 2);
	ck_assert_str_eq(nf.hosts[1].name, "gpu02.cluster");
	ck_assert_int_eq(nf.hosts[1].slots, 2);
	ck_assert_int_eq(nf.total_slots, 4);
	nodefile_free(&nf);
}
END_TEST

START_TEST(test_parse_errors)
{
	check_bad("n1\nn2 n3\n", CADRE_ERR_INVALID, 2);
	check_bad("n1\tslots=4\n", CADRE_ERR_INVALID, 1);
	check_bad("n1\n\n\nn/2\n", CADRE_ERR_INVALID, 4);
	check_bad("n1\nn;2\n", CADRE_ERR_INVALID, 2);
	check_bad("n1\n$(rm -rf)\n", CADRE_ERR_INVALID, 2);
	check_bad("n1\nnöde\n", CADRE_ERR_INVALID, 2);
	check_bad("n1:4\n", CADRE_ERR_INVALID, 1);
	check_bad("n1\r\nn2\r\nn 3\r\n", CADRE_ERR_INVALID, 3);
	/* Nothing but comments and blanks: no host at all. */
	check_bad("", CADRE_ERR_INVALID, 0);
	check_bad("\n\n# only a comment\n   \n", CADRE_ERR_INVALID, 0);
}
END_TEST

START_TEST(test_parse_nul)
{
	struct nodefile	nf;
	size_t		line = 0;

	ck_assert_int_eq(nodefile_parse("n1\nn\0002\n", 7, &nf, &line),
	    CADRE_ERR_INVALID);
	ck_assert_uint_eq(line, 2);
}
END_TEST

START_TEST(test_parse_long_name)
{
	struct nodefile	nf;
	char		text[600];

	memset(text, 'a', 255);
	strcpy(text + 255, "\n");
	ck_assert_int_eq(parse(text, &nf, NULL), 0);
	ck_assert_uint_eq(strlen(nf.hosts[0].name), 255);
	nodefile_free(&nf);
	memset(text, 'a', 256);
	strcpy(text + 256, "\n");
	check_bad(text, CADRE_ERR_INVALID, 1);
	snprintf(text, sizeof text, "ok\n%0500d\n", 1);
	check_bad(text, CADRE_ERR_INVALID, 2);
}
END_TEST

START_TEST(test_bounds)
{
	struct nodefile	 nf;
	char		*text;
	size_t		 len, line, i, off = 0;

	/* Too many bytes: refused before looking at them. */
	len = NODEFILE_MAX_BYTES + 1;
	text = malloc(len);
	memset(text, '\n', len);
	ck_assert_int_eq(nodefile_parse(text, len, &nf, &line),
	    CADRE_ERR_TOO_LARGE);
	ck_assert_ptr_null(nf.hosts);
	free(text);

	/* Exactly NODEFILE_MAX_HOSTS distinct hosts, then one more. */
	text = malloc((NODEFILE_MAX_HOSTS + 1) * 16);
	for (i = 0; i < NODEFILE_MAX_HOSTS; i++)
		off += (size_t)sprintf(text + off, "h%zu\n", i);
	ck_assert_int_eq(nodefile_parse(text, off, &nf, &line), 0);
	ck_assert_uint_eq(nf.n, NODEFILE_MAX_HOSTS);
	ck_assert_str_eq(nf.hosts[NODEFILE_MAX_HOSTS - 1].name, "h65535");
	nodefile_free(&nf);
	/* Repeating a known host is still fine. */
	off += (size_t)sprintf(text + off, "h7\n");
	ck_assert_int_eq(nodefile_parse(text, off, &nf, &line), 0);
	ck_assert_int_eq(nf.hosts[7].slots, 2);
	ck_assert_int_eq(nf.total_slots, NODEFILE_MAX_HOSTS + 1);
	nodefile_free(&nf);
	off += (size_t)sprintf(text + off, "extra\n");
	ck_assert_int_eq(nodefile_parse(text, off, &nf, &line),
	    CADRE_ERR_TOO_LARGE);
	ck_assert_uint_eq(line, NODEFILE_MAX_HOSTS + 2);
	ck_assert_ptr_null(nf.hosts);
	free(text);
}
END_TEST

START_TEST(test_many_slots)
{
	struct nodefile	 nf;
	char		*text;
	size_t		 i, off = 0;

	/* Many hosts with interleaved slots: the lookups stay correct. */
	text = malloc(5000 * 4 * 16);
	for (i = 0; i < 5000 * 4; i++)
		off += (size_t)sprintf(text + off, "node%zu\n", (i * 7) % 5000);
	ck_assert_int_eq(nodefile_parse(text, off, &nf, NULL), 0);
	ck_assert_uint_eq(nf.n, 5000);
	ck_assert_int_eq(nf.total_slots, 20000);
	for (i = 0; i < nf.n; i++)
		ck_assert_int_eq(nf.hosts[i].slots, 4);
	ck_assert_str_eq(nf.hosts[0].name, "node0");
	ck_assert_str_eq(nf.hosts[1].name, "node7");
	nodefile_free(&nf);
	free(text);
}
END_TEST

START_TEST(test_read)
{
	char		 path[4096];
	struct nodefile	 nf;
	size_t		 line;
	FILE		*f;
	int		 fd;

	fd = unit_mkstemp(path, sizeof path, "test_nodefile");
	f = fdopen(fd, "w");
	fputs("a\na\nb\n", f);
	fclose(f);
	ck_assert_int_eq(nodefile_read(path, &nf, &line), 0);
	ck_assert_uint_eq(nf.n, 2);
	ck_assert_int_eq(nf.total_slots, 3);
	nodefile_free(&nf);

	f = fopen(path, "w");
	fputs("a\nb c\n", f);
	fclose(f);
	ck_assert_int_eq(nodefile_read(path, &nf, &line), CADRE_ERR_INVALID);
	ck_assert_uint_eq(line, 2);
	unlink(path);

	errno = 0;
	ck_assert_int_eq(nodefile_read(path, &nf, &line), CADRE_ERR_SYSTEM);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_null(nf.hosts);
}
END_TEST

static Suite *
nodefile_suite(void)
{
	Suite	*s = suite_create("nodefile");
	TCase	*tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_parse_slots);
	tcase_add_test(tc, test_parse_whitespace_comments);
	tcase_add_test(tc, test_parse_errors);
	tcase_add_test(tc, test_parse_nul);
	tcase_add_test(tc, test_parse_long_name);
	tcase_add_test(tc, test_bounds);
	tcase_add_test(tc, test_many_slots);
	tcase_add_test(tc, test_read);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(nodefile_suite());
}
