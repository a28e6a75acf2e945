#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "unit.h"

/* Writes n bytes of c to a new temporary file; caller unlinks path. */
static void
make_file(char *path, size_t size, size_t n, char c)
{
	char	chunk[4096];
	size_t	k;
	int	fd;

	fd = unit_mkstemp(path, size, "test_buf");
	memset(chunk, c, sizeof chunk);
	while (n > 0) {
		k = n < sizeof chunk ? n : sizeof chunk;
		ck_assert_int_eq(write(fd, chunk, k), (ssize_t)k);
		n -= k;
	}
	close(fd);
}

START_TEST(test_init_free)
{
	struct cbuf	b;

	cbuf_init(&b, 100);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.max, 100);
	cbuf_free(&b);
	ck_assert_ptr_null(b.data);
	/* Freeing twice is harmless. */
	cbuf_free(&b);
}
END_TEST

START_TEST(test_add_and_terminate)
{
	struct cbuf	b;

	cbuf_init(&b, 1024);
	ck_assert_int_eq(cbuf_add(&b, "abc", 3), 0);
	ck_assert_int_eq(cbuf_addc(&b, '-'), 0);
	ck_assert_int_eq(cbuf_adds(&b, "def"), 0);
	ck_assert_int_eq(cbuf_addf(&b, "[%d:%s]", 42, "x"), 0);
	ck_assert_uint_eq(b.len, 13);
	ck_assert_str_eq(b.data, "abc-def[42:x]");
	ck_assert_uint_le(b.len + 1, b.cap);
	/* Binary data with NULs keeps its length. */
	ck_assert_int_eq(cbuf_add(&b, "\0z", 2), 0);
	ck_assert_uint_eq(b.len, 15);
	ck_assert_int_eq(b.data[13], '\0');
	ck_assert_int_eq(b.data[14], 'z');
	ck_assert_int_eq(b.data[15], '\0');
	cbuf_free(&b);
}
END_TEST

START_TEST(test_add_nothing)
{
	struct cbuf	 b;
	char		*s;
	size_t		 len = 99;

	cbuf_init(&b, 10);
	ck_assert_int_eq(cbuf_add(&b, NULL, 0), 0);
	ck_assert_ptr_nonnull(b.data);
	ck_assert_str_eq(b.data, "");
	s = cbuf_detach(&b, &len);
	ck_assert_str_eq(s, "");
	ck_assert_uint_eq(len, 0);
	free(s);
}
END_TEST

START_TEST(test_max_bound)
{
	struct cbuf	b;

	cbuf_init(&b, 8);
	ck_assert_int_eq(cbuf_adds(&b, "12345"), 0);
	/* Over the bound: refused and nothing changes. */
	ck_assert_int_eq(cbuf_adds(&b, "6789"), CADRE_ERR_TOO_LARGE);
	ck_assert_uint_eq(b.len, 5);
	ck_assert_str_eq(b.data, "12345");
	ck_assert_int_eq(cbuf_addf(&b, "%d", 6789), CADRE_ERR_TOO_LARGE);
	ck_assert_str_eq(b.data, "12345");
	/* Exactly the bound is fine. */
	ck_assert_int_eq(cbuf_adds(&b, "678"), 0);
	ck_assert_uint_eq(b.len, 8);
	ck_assert_str_eq(b.data, "12345678");
	ck_assert_int_eq(cbuf_addc(&b, 'x'), CADRE_ERR_TOO_LARGE);
	ck_assert_int_eq(cbuf_add(&b, "", 0), 0);
	/* Never allocates past what max can use. */
	ck_assert_uint_le(b.cap, 9);
	cbuf_free(&b);

	cbuf_init(&b, 0);
	ck_assert_int_eq(cbuf_addc(&b, 'x'), CADRE_ERR_TOO_LARGE);
	ck_assert_int_eq(cbuf_add(&b, "", 0), 0);
	ck_assert_str_eq(b.data, "");
	cbuf_free(&b);

	/* A length that would wrap around is refused, not allocated. */
	cbuf_init(&b, SIZE_MAX);
	ck_assert_int_eq(cbuf_adds(&b, "ab"), 0);
	ck_assert_int_eq(cbuf_add(&b, "x", SIZE_MAX - 1), CADRE_ERR_TOO_LARGE);
	ck_assert_int_eq(cbuf_add(&b, "x", SIZE_MAX), CADRE_ERR_TOO_LARGE);
	ck_assert_int_eq(cbuf_add(&b, "x", SIZE_MAX - 2), CADRE_ERR_TOO_LARGE);
	ck_assert_str_eq(b.data, "ab");
	cbuf_free(&b);
}
END_TEST

START_TEST(test_growth)
{
	struct cbuf	b;
	size_t		i;

	cbuf_init(&b, 1 << 20);
	for (i = 0; i < 100000; i++)
		ck_assert_int_eq(cbuf_addc(&b, (char)('a' + i % 26)), 0);
	ck_assert_uint_eq(b.len, 100000);
	ck_assert_uint_eq(strlen(b.data), 100000);
	for (i = 0; i < 100000; i++)
		ck_assert_int_eq(b.data[i], 'a' + (int)(i % 26));
	cbuf_free(&b);
}
END_TEST

START_TEST(test_addf_long)
{
	struct cbuf	 b;
	char		*big;

	big = malloc(5001);
	memset(big, 'q', 5000);
	big[5000] = '\0';
	cbuf_init(&b, 100000);
	ck_assert_int_eq(cbuf_adds(&b, "<"), 0);
	ck_assert_int_eq(cbuf_addf(&b, "%s|%s", big, big), 0);
	ck_assert_uint_eq(b.len, 10002);
	ck_assert_int_eq(b.data[5001], '|');
	ck_assert_int_eq(b.data[10002], '\0');
	cbuf_free(&b);
	free(big);
}
END_TEST

START_TEST(test_reset_detach)
{
	struct cbuf	 b;
	char		*s;
	size_t		 len;

	cbuf_init(&b, 100);
	cbuf_adds(&b, "hello");
	cbuf_reset(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(b.data, "");
	ck_assert_int_eq(cbuf_adds(&b, "again"), 0);
	s = cbuf_detach(&b, &len);
	ck_assert_str_eq(s, "again");
	ck_assert_uint_eq(len, 5);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.max, 100);
	free(s);
	/* Detaching an empty buffer still gives a string. */
	s = cbuf_detach(&b, NULL);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "");
	free(s);
	/* And the buffer is usable afterwards. */
	ck_assert_int_eq(cbuf_adds(&b, "x"), 0);
	ck_assert_str_eq(b.data, "x");
	cbuf_free(&b);
}
END_TEST

START_TEST(test_read_file)
{
	char		path[4096];
	struct cbuf	b;
	size_t		i;

	make_file(path, sizeof path, 100000, 'k');
	cbuf_init(&b, 100000);
	ck_assert_int_eq(cbuf_read_file(&b, path), 0);
	ck_assert_uint_eq(b.len, 100000);
	for (i = 0; i < b.len; i++)
		ck_assert_int_eq(b.data[i], 'k');
	ck_assert_int_eq(b.data[b.len], '\0');
	cbuf_free(&b);

	/* One byte over the bound. */
	cbuf_init(&b, 99999);
	ck_assert_int_eq(cbuf_read_file(&b, path), CADRE_ERR_TOO_LARGE);
	ck_assert_uint_eq(b.len, 0);
	cbuf_free(&b);

	/* The bound counts what the buffer already holds. */
	cbuf_init(&b, 100001);
	cbuf_adds(&b, "ab");
	ck_assert_int_eq(cbuf_read_file(&b, path), CADRE_ERR_TOO_LARGE);
	ck_assert_str_eq(b.data, "ab");
	cbuf_free(&b);
	unlink(path);
}
END_TEST

START_TEST(test_read_empty_file)
{
	char		path[4096];
	struct cbuf	b;

	make_file(path, sizeof path, 0, 'x');
	cbuf_init(&b, 10);
	ck_assert_int_eq(cbuf_read_file(&b, path), 0);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_ptr_nonnull(b.data);
	ck_assert_str_eq(b.data, "");
	cbuf_free(&b);
	unlink(path);
}
END_TEST

START_TEST(test_read_missing_file)
{
	struct cbuf	b;

	cbuf_init(&b, 10);
	errno = 0;
	ck_assert_int_eq(cbuf_read_file(&b, "/nonexistent/dir/file"),
	    CADRE_ERR_SYSTEM);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_uint_eq(b.len, 0);
	cbuf_free(&b);

	/* A directory cannot be read. */
	cbuf_init(&b, 10);
	errno = 0;
	ck_assert_int_eq(cbuf_read_file(&b, "/tmp"), CADRE_ERR_SYSTEM);
	ck_assert_int_eq(errno, EISDIR);
	cbuf_free(&b);
}
END_TEST

START_TEST(test_read_unbounded_source)
{
	struct cbuf	b;
	double		t0;

	/* An endless device stops at the bound instead of filling memory. */
	t0 = unit_now();
	cbuf_init(&b, 1 << 20);
	ck_assert_int_eq(cbuf_read_file(&b, "/dev/zero"), CADRE_ERR_TOO_LARGE);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_le(b.cap, (1 << 20) + 1);
	cbuf_free(&b);
	ck_assert(unit_now() - t0 < 5.0);
}
END_TEST

/* Reads "-" with stdin taken from path. */
static int
read_stdin_from(struct cbuf *b, const char *path)
{
	int	saved, fd, error;

	fd = open(path, O_RDONLY);
	ck_assert_int_ne(fd, -1);
	saved = dup(STDIN_FILENO);
	ck_assert_int_ne(dup2(fd, STDIN_FILENO), -1);
	close(fd);
	error = cbuf_read_file(b, "-");
	ck_assert_int_ne(dup2(saved, STDIN_FILENO), -1);
	close(saved);
	return error;
}

START_TEST(test_read_stdin)
{
	char		path[4096];
	struct cbuf	b;

	make_file(path, sizeof path, 3000, 's');
	cbuf_init(&b, 3000);
	ck_assert_int_eq(read_stdin_from(&b, path), 0);
	ck_assert_uint_eq(b.len, 3000);
	ck_assert_int_eq(b.data[2999], 's');
	cbuf_free(&b);

	cbuf_init(&b, 2999);
	ck_assert_int_eq(read_stdin_from(&b, path), CADRE_ERR_TOO_LARGE);
	cbuf_free(&b);

	cbuf_init(&b, 4096);
	ck_assert_int_eq(read_stdin_from(&b, "/dev/zero"), CADRE_ERR_TOO_LARGE);
	cbuf_free(&b);
	unlink(path);
}
END_TEST

/* The shell form of one word, and that /bin/sh reads it back unchanged. */
START_TEST(test_shell_word)
{
	static const char *const words[] = {
		"plain/path-1.0", "a b", "it's", "", "$(rm -rf /)", "`id`",
		"a=b", "~root", "x\ny", "'", "*", "semi;colon", "\\",
	};
	static const char *const forms[] = {
		"plain/path-1.0", "'a b'", "'it'\\''s'", "''", "'$(rm -rf /)'",
		"'`id`'", "'a=b'", "'~root'", "'x\ny'", "''\\'''", "'*'",
		"'semi;colon'", "'\\'",
	};
	struct cbuf	 b, cmd;
	size_t		 i;
	char		 got[256];
	FILE		*f;

	for (i = 0; i < sizeof words / sizeof words[0]; i++) {
		cbuf_init(&b, 1024);
		ck_assert_int_eq(cbuf_add_shell_word(&b, words[i]), 0);
		ck_assert_str_eq(b.data, forms[i]);
		cbuf_init(&cmd, 4096);
		ck_assert_int_eq(cbuf_adds(&cmd, "printf %s "), 0);
		ck_assert_int_eq(cbuf_add(&cmd, b.data, b.len), 0);
		f = popen(cmd.data, "r");
		ck_assert_ptr_nonnull(f);
		memset(got, 0, sizeof got);
		(void)!fread(got, 1, sizeof got - 1, f);
		ck_assert_int_eq(pclose(f), 0);
		ck_assert_str_eq(got, words[i]);
		cbuf_free(&cmd);
		cbuf_free(&b);
	}
	/* Over the bound: refused, the buffer as it was. */
	cbuf_init(&b, 8);
	ck_assert_int_eq(cbuf_adds(&b, "ab"), 0);
	ck_assert_int_eq(cbuf_add_shell_word(&b, "a b c d e"),
	    CADRE_ERR_TOO_LARGE);
	ck_assert_str_eq(b.data, "ab");
	ck_assert_uint_eq(b.len, 2);
	cbuf_free(&b);
}
END_TEST

static Suite *
buf_suite(void)
{
	Suite	*s = suite_create("buf");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_init_free);
	tcase_add_test(tc, test_add_and_terminate);
	tcase_add_test(tc, test_add_nothing);
	tcase_add_test(tc, test_max_bound);
	tcase_add_test(tc, test_growth);
	tcase_add_test(tc, test_addf_long);
	tcase_add_test(tc, test_reset_detach);
	tcase_add_test(tc, test_read_file);
	tcase_add_test(tc, test_read_empty_file);
	tcase_add_test(tc, test_read_missing_file);
	tcase_add_test(tc, test_read_unbounded_source);
	tcase_add_test(tc, test_read_stdin);
	tcase_add_test(tc, test_shell_word);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(buf_suite());
}
