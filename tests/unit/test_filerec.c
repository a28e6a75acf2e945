#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "filerec.h"
#include "unit.h"

#define HEX_A "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

/* A record saved and loaded again: every field, paths with spaces, the
 * lookup, and a file that changed no longer matching its entry. */
START_TEST(test_round_trip)
{
	struct filerec_set	 s, back;
	const struct filerec	*r;
	struct stat		 sb, sb2;
	char			 dir[4096], path[4200], rec[4200], msg[256];
	FILE			*f;

	unit_mkdtemp(dir, sizeof dir, "filerec");
	snprintf(path, sizeof path, "%s/a file", dir);
	snprintf(rec, sizeof rec, "%s/x.rec", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("abc", f);
	fclose(f);
	ck_assert_int_eq(stat(path, &sb), 0);
	memset(&s, 0, sizeof s);
	filerec_add(&s, "sub/z.bin", &sb, HEX_A);
	filerec_add(&s, "a file", &sb, HEX_A);
	ck_assert_int_eq(filerec_save(rec, &s), 0);
	ck_assert_int_eq(filerec_load(rec, &back, msg, sizeof msg), 0);
	ck_assert_uint_eq(back.n, 2);
	r = filerec_find(&back, "a file");
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(r->sha256, HEX_A);
	ck_assert_int_eq(r->size, 3);
	ck_assert(filerec_same(r, &sb));
	ck_assert_ptr_null(filerec_find(&back, "a"));
	ck_assert_ptr_nonnull(filerec_find(&back, "sub/z.bin"));
	/* Rewritten in place with the same size: the ctime moves. */
	usleep(20000);
	f = fopen(path, "w");
	fputs("abd", f);
	fclose(f);
	ck_assert_int_eq(stat(path, &sb2), 0);
	ck_assert(!filerec_same(r, &sb2));
	filerec_free(&s);
	filerec_free(&back);
	snprintf(rec, sizeof rec, "%s/none.rec", dir);
	ck_assert_int_eq(filerec_load(rec, &back, msg, sizeof msg),
	    CADRE_ERR_NOT_FOUND);
	snprintf(rec, sizeof rec, "%s/x.rec", dir);
	unlink(path);
	unlink(rec);
	rmdir(dir);
}
END_TEST

/* Every kind of bad line is refused with its line number. */
START_TEST(test_bad_text)
{
	static const struct {
		const char	*text;
		const char	*line;
	} bad[] = {
		{ "", "line 1" },
		{ "cadre-filerec 2\n", "line 1" },
		{ "cadre-filerec 1\n" HEX_A " 1 2 3 4 5 p", "line 2" },
		{ "cadre-filerec 1\n" HEX_A " 1 2 3 4 5\n", "line 2" },
		{ "cadre-filerec 1\n" HEX_A " 1 2 3 4 5 \n", "line 2" },
		{ "cadre-filerec 1\nBA7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad 1 2 3 4 5 p\n", "line 2" },
		{ "cadre-filerec 1\n" HEX_A " 1 2 x 4 5 p\n", "line 2" },
		{ "cadre-filerec 1\n" HEX_A " 1 2 3 4 5 p\n" HEX_A " -1 2 3 4 5 q\n", "line 3" },
		{ "cadre-filerec 1\n" HEX_A " 123456789012345678901234 2 3 4 5 p\n", "line 2" },
	};
	struct filerec_set	s;
	char			msg[256];
	size_t			i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_int_eq(filerec_parse(bad[i].text, strlen(bad[i].text),
		    &s, msg, sizeof msg), CADRE_ERR_PARSE);
		ck_assert_msg(strstr(msg, bad[i].line) != NULL, "case %zu: %s",
		    i, msg);
	}
	ck_assert_int_eq(filerec_parse("cadre-filerec 1\n", 16, &s, msg,
	    sizeof msg), 0);
	ck_assert_uint_eq(s.n, 0);
	filerec_free(&s);
}
END_TEST

static Suite *
filerec_suite(void)
{
	Suite	*s = suite_create("filerec");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_bad_text);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(filerec_suite());
}
