#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "json.h"
#include "unit.h"

/* Number of entries in dir other than "." and "..". */
static int
count_entries(const char *dir)
{
	DIR		*d;
	struct dirent	*e;
	int		 n = 0;

	d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	}
	closedir(d);
	return n;
}

static json_t *
load(const char *text)
{
	json_t	*v = NULL;

	ck_assert_int_eq(cjson_loadb(text, strlen(text), 1 << 20, &v, NULL), 0);
	ck_assert_ptr_nonnull(v);
	return v;
}

START_TEST(test_loadb)
{
	json_t		*v = (json_t *)1;
	json_error_t	 err;
	const char	*text = "{\"a\": 1, \"b\": [true, null]}";

	ck_assert_int_eq(cjson_loadb(text, strlen(text), 100, &v, &err), 0);
	ck_assert(json_is_object(v));
	ck_assert_uint_eq(json_object_size(v), 2);
	json_decref(v);

	/* Exactly max bytes is accepted. */
	ck_assert_int_eq(cjson_loadb(text, strlen(text), strlen(text), &v,
	    NULL), 0);
	json_decref(v);
}
END_TEST

START_TEST(test_loadb_too_large)
{
	json_t		*v = (json_t *)1;
	json_error_t	 err;
	const char	*text = "{\"a\": 1}";

	ck_assert_int_eq(cjson_loadb(text, strlen(text), strlen(text) - 1, &v,
	    &err), CADRE_ERR_TOO_LARGE);
	ck_assert_ptr_null(v);
	/* The size is checked before the text is looked at. */
	v = (json_t *)1;
	ck_assert_int_eq(cjson_loadb("{ not json", 10, 4, &v, NULL),
	    CADRE_ERR_TOO_LARGE);
	ck_assert_ptr_null(v);
}
END_TEST

START_TEST(test_loadb_errors)
{
	static const char *const bad[] = {
		"", "{", "{\"a\": }", "[1, 2", "{\"a\": 1,}", "nul",
		"{\"a\": 1} x", "{'a': 1}", "[\"\\u0000\"]",
	};
	json_t		*v;
	json_error_t	 err;
	size_t		 i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		v = (json_t *)1;
		ck_assert_msg(cjson_loadb(bad[i], strlen(bad[i]), 1000, &v,
		    &err) == CADRE_ERR_PARSE, "\"%s\"", bad[i]);
		ck_assert_ptr_null(v);
		ck_assert(err.text[0] != '\0');
	}

	/* The error says where. */
	ck_assert_int_eq(cjson_loadb("{\n  \"a\": 1,\n  \"b\" 2\n}", 21, 1000,
	    &v, &err), CADRE_ERR_PARSE);
	ck_assert_int_eq(err.line, 3);
	ck_assert_int_gt(err.column, 0);
}
END_TEST

START_TEST(test_loadb_duplicates)
{
	json_t		*v = (json_t *)1;
	json_error_t	 err;
	const char	*text = "{\"a\": 1, \"b\": 2, \"a\": 3}";

	ck_assert_int_eq(cjson_loadb(text, strlen(text), 1000, &v, &err),
	    CADRE_ERR_PARSE);
	ck_assert_ptr_null(v);
	ck_assert_ptr_nonnull(strstr(err.text, "duplicate"));

	/* Also in nested objects. */
	text = "{\"x\": {\"k\": 1, \"k\": 1}}";
	ck_assert_int_eq(cjson_loadb(text, strlen(text), 1000, &v, NULL),
	    CADRE_ERR_PARSE);
}
END_TEST

START_TEST(test_load_file)
{
	char		 path[4096];
	json_t		*v = (json_t *)1;
	json_error_t	 err;
	FILE		*f;
	int		 fd;
	int64_t		 i;

	fd = unit_mkstemp(path, sizeof path, "test_json");
	f = fdopen(fd, "w");
	fputs("{\"n\": 12}\n", f);
	fclose(f);
	ck_assert_int_eq(cjson_load_file(path, 100, &v, &err), 0);
	ck_assert_int_eq(cjson_get_int(v, "n", &i), 0);
	ck_assert_int_eq(i, 12);
	json_decref(v);

	ck_assert_int_eq(cjson_load_file(path, 5, &v, &err),
	    CADRE_ERR_TOO_LARGE);
	ck_assert_ptr_null(v);

	f = fopen(path, "w");
	fputs("{\"n\": }", f);
	fclose(f);
	ck_assert_int_eq(cjson_load_file(path, 100, &v, &err), CADRE_ERR_PARSE);
	ck_assert_ptr_null(v);
	unlink(path);

	errno = 0;
	ck_assert_int_eq(cjson_load_file(path, 100, &v, &err),
	    CADRE_ERR_SYSTEM);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_null(v);
	ck_assert_str_eq(err.text, "No such file or directory");
	ck_assert_str_eq(err.source, path);
}
END_TEST

START_TEST(test_getters)
{
	json_t		*o;
	const char	*s = "keep";
	int64_t		 i = 5;
	double		 d = 5.0;
	int		 b = 5;

	o = load("{\"s\": \"str\", \"i\": -42, \"big\": 9007199254740993,"
	    " \"r\": 0.5, \"t\": true, \"f\": false, \"n\": null,"
	    " \"a\": [1], \"o\": {}}");

	ck_assert_int_eq(cjson_get_string(o, "s", &s), 0);
	ck_assert_str_eq(s, "str");
	ck_assert_int_eq(cjson_get_int(o, "i", &i), 0);
	ck_assert_int_eq(i, -42);
	ck_assert_int_eq(cjson_get_int(o, "big", &i), 0);
	ck_assert(i == 9007199254740993LL);
	ck_assert_int_eq(cjson_get_real(o, "r", &d), 0);
	ck_assert(d == 0.5);
	/* Integers are reals too. */
	ck_assert_int_eq(cjson_get_real(o, "i", &d), 0);
	ck_assert(d == -42.0);
	ck_assert_int_eq(cjson_get_bool(o, "t", &b), 0);
	ck_assert_int_eq(b, 1);
	ck_assert_int_eq(cjson_get_bool(o, "f", &b), 0);
	ck_assert_int_eq(b, 0);

	/* Missing or null: not found, output untouched. */
	s = "keep";
	i = 5;
	d = 5.0;
	b = 5;
	ck_assert_int_eq(cjson_get_string(o, "nope", &s), CADRE_ERR_NOT_FOUND);
	ck_assert_int_eq(cjson_get_string(o, "n", &s), CADRE_ERR_NOT_FOUND);
	ck_assert_int_eq(cjson_get_int(o, "n", &i), CADRE_ERR_NOT_FOUND);
	ck_assert_int_eq(cjson_get_real(o, "nope", &d), CADRE_ERR_NOT_FOUND);
	ck_assert_int_eq(cjson_get_bool(o, "n", &b), CADRE_ERR_NOT_FOUND);
	ck_assert_str_eq(s, "keep");
	ck_assert_int_eq(i, 5);
	ck_assert(d == 5.0);
	ck_assert_int_eq(b, 5);

	/* Wrong types. */
	ck_assert_int_eq(cjson_get_string(o, "i", &s), CADRE_ERR_INVALID);
	ck_assert_int_eq(cjson_get_string(o, "a", &s), CADRE_ERR_INVALID);
	ck_assert_int_eq(cjson_get_int(o, "r", &i), CADRE_ERR_INVALID);
	ck_assert_int_eq(cjson_get_int(o, "s", &i), CADRE_ERR_INVALID);
	ck_assert_int_eq(cjson_get_int(o, "t", &i), CADRE_ERR_INVALID);
	ck_assert_int_eq(cjson_get_real(o, "s", &d), CADRE_ERR_INVALID);
	ck_assert_int_eq(cjson_get_real(o, "t", &d), CADRE_ERR_INVALID);
	ck_assert_int_eq(cjson_get_bool(o, "i", &b), CADRE_ERR_INVALID);
	ck_assert_int_eq(cjson_get_bool(o, "o", &b), CADRE_ERR_INVALID);
	ck_assert_str_eq(s, "keep");
	ck_assert_int_eq(i, 5);
	ck_assert(d == 5.0);
	ck_assert_int_eq(b, 5);

	/* Not an object at all. */
	ck_assert_int_eq(cjson_get_int(json_object_get(o, "a"), "x", &i),
	    CADRE_ERR_NOT_FOUND);
	ck_assert_int_eq(cjson_get_int(NULL, "x", &i), CADRE_ERR_NOT_FOUND);
	json_decref(o);
}
END_TEST

START_TEST(test_write_atomic)
{
	char		 dir[4096], path[4200];
	json_t		*o, *back;
	struct stat	 st;
	char		*text;

	unit_mkdtemp(dir, sizeof dir, "test_json");
	snprintf(path, sizeof path, "%s/state.json", dir);

	o = load("{\"zeta\": 1, \"alpha\": {\"y\": [1, 2], \"x\": \"s\"},"
	    " \"mid\": null}");
	ck_assert_int_eq(cjson_write_atomic(path, o, 0), 0);
	text = unit_read_file(path);
	/* Sorted keys, two-space indent, a final newline. */
	ck_assert_str_eq(text,
	    "{\n"
	    "  \"alpha\": {\n"
	    "    \"x\": \"s\",\n"
	    "    \"y\": [\n"
	    "      1,\n"
	    "      2\n"
	    "    ]\n"
	    "  },\n"
	    "  \"mid\": null,\n"
	    "  \"zeta\": 1\n"
	    "}\n");
	free(text);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	/* No temporary file is left behind. */
	ck_assert_int_eq(count_entries(dir), 1);

	ck_assert_int_eq(cjson_load_file(path, 1 << 20, &back, NULL), 0);
	ck_assert(json_equal(o, back));
	json_decref(back);
	json_decref(o);

	/* Replacing, with an explicit mode. */
	o = load("[1]");
	ck_assert_int_eq(cjson_write_atomic(path, o, 0644), 0);
	text = unit_read_file(path);
	ck_assert_str_eq(text, "[\n  1\n]\n");
	free(text);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0644);
	ck_assert_int_eq(count_entries(dir), 1);
	json_decref(o);

	/* A scalar can be written too. */
	o = json_integer(7);
	ck_assert_int_eq(cjson_write_atomic(path, o, 0), 0);
	text = unit_read_file(path);
	ck_assert_str_eq(text, "7\n");
	free(text);
	json_decref(o);

	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(test_write_atomic_relative)
{
	char	 dir[4096], cwd[4096];
	json_t	*o;
	char	*text;

	unit_mkdtemp(dir, sizeof dir, "test_json");
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
	ck_assert_int_eq(chdir(dir), 0);
	o = load("{\"k\": true}");
	ck_assert_int_eq(cjson_write_atomic("out.json", o, 0), 0);
	text = unit_read_file("out.json");
	ck_assert_str_eq(text, "{\n  \"k\": true\n}\n");
	free(text);
	json_decref(o);
	unlink("out.json");
	ck_assert_int_eq(chdir(cwd), 0);
	rmdir(dir);
}
END_TEST

START_TEST(test_write_atomic_failures)
{
	char	 dir[4096], path[4200];
	json_t	*o;

	o = load("{\"a\": 1}");
	errno = 0;
	ck_assert_int_eq(cjson_write_atomic("/nonexistent/dir/x.json", o, 0),
	    CADRE_ERR_SYSTEM);
	ck_assert_int_eq(errno, ENOENT);

	/* rename onto a directory fails: the temporary file goes away. */
	unit_mkdtemp(dir, sizeof dir, "test_json");
	snprintf(path, sizeof path, "%s/sub", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	errno = 0;
	ck_assert_int_eq(cjson_write_atomic(path, o, 0), CADRE_ERR_SYSTEM);
	ck_assert_int_eq(errno, EISDIR);
	ck_assert_int_eq(count_entries(dir), 1);

	ck_assert_int_eq(cjson_write_atomic(path, NULL, 0), CADRE_ERR_INVALID);
	rmdir(path);
	rmdir(dir);
	json_decref(o);
}
END_TEST

START_TEST(test_dumps_sorted)
{
	json_t	*o;
	char	*s;

	o = load("{\"b\": [1, {\"d\": 2, \"c\": 3}], \"a\": \"x\"}");
	s = cjson_dumps_sorted(o);
	ck_assert_str_eq(s, "{\"a\":\"x\",\"b\":[1,{\"c\":3,\"d\":2}]}");
	free(s);
	json_decref(o);
	ck_assert_ptr_null(cjson_dumps_sorted(NULL));
}
END_TEST

static Suite *
json_suite(void)
{
	Suite	*s = suite_create("json");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_loadb);
	tcase_add_test(tc, test_loadb_too_large);
	tcase_add_test(tc, test_loadb_errors);
	tcase_add_test(tc, test_loadb_duplicates);
	tcase_add_test(tc, test_load_file);
	tcase_add_test(tc, test_getters);
	tcase_add_test(tc, test_write_atomic);
	tcase_add_test(tc, test_write_atomic_relative);
	tcase_add_test(tc, test_write_atomic_failures);
	tcase_add_test(tc, test_dumps_sorted);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(json_suite());
}
