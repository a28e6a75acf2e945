#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hostlist.h"
#include "unit.h"

#define MAX_HOSTS	65536

/* Expands expr and compares with the space-separated expected hosts. */
static void
check_expand(const char *expr, const char *want)
{
	struct hostlist	 hl;
	char		*copy, *tok, *save = NULL;
	size_t		 i = 0, errpos = 99;
	int		 r;

	r = hostlist_expand(expr, MAX_HOSTS, &hl, &errpos);
	ck_assert_msg(r == 0, "\"%s\" gave %d at %zu", expr, r, errpos);
	copy = strdup(want);
	for (tok = strtok_r(copy, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save)) {
		ck_assert_msg(i < hl.n, "\"%s\": too few hosts", expr);
		ck_assert_msg(strcmp(hl.hosts[i], tok) == 0,
		    "\"%s\": host %zu is %s, not %s", expr, i, hl.hosts[i], tok);
		i++;
	}
	ck_assert_msg(i == hl.n, "\"%s\": %zu hosts, not %zu", expr, hl.n, i);
	free(copy);
	hostlist_free(&hl);
	ck_assert_ptr_null(hl.hosts);
	ck_assert_uint_eq(hl.n, 0);
}

static void
check_error(const char *expr, size_t max, int want, size_t wantpos)
{
	struct hostlist	hl;
	size_t		errpos = 12345;
	int		r;

	hl.hosts = (char **)&hl;	/* must be cleared */
	hl.n = 7;
	r = hostlist_expand(expr, max, &hl, &errpos);
	ck_assert_msg(r == want, "\"%s\" gave %d, not %d", expr, r, want);
	ck_assert_msg(errpos == wantpos, "\"%s\": error at %zu, not %zu",
	    expr, errpos, wantpos);
	ck_assert_ptr_null(hl.hosts);
	ck_assert_uint_eq(hl.n, 0);
}

START_TEST(test_expand)
{
	check_expand("node1", "node1");
	check_expand("a,b,c", "a b c");
	check_expand("node[1-3]", "node1 node2 node3");
	check_expand("node[01-04,7]", "node01 node02 node03 node04 node7");
	check_expand("node[01-04,7],gpu[1-2]",
	    "node01 node02 node03 node04 node7 gpu1 gpu2");
	check_expand("node[7]", "node7");
	check_expand("node[007]", "node007");
	check_expand("n[8-11]", "n8 n9 n10 n11");
	check_expand("n[08-11]", "n08 n09 n10 n11");
	check_expand("n[098-101]", "n098 n099 n100 n101");
	check_expand("n[01-100]", "n01 n02 n03 n04 n05 n06 n07 n08 n09 n10 "
	    "n11 n12 n13 n14 n15 n16 n17 n18 n19 n20 n21 n22 n23 n24 n25 n26 "
	    "n27 n28 n29 n30 n31 n32 n33 n34 n35 n36 n37 n38 n39 n40 n41 n42 "
	    "n43 n44 n45 n46 n47 n48 n49 n50 n51 n52 n53 n54 n55 n56 n57 n58 "
	    "n59 n60 n61 n62 n63 n64 n65 n66 n67 n68 n69 n70 n71 n72 n73 n74 "
	    "n75 n76 n77 n78 n79 n80 n81 n82 n83 n84 n85 n86 n87 n88 n89 n90 "
	    "n91 n92 n93 n94 n95 n96 n97 n98 n99 n100");
	/* The width is the lower bound's, not the upper's. */
	check_expand("n[1-010]", "n1 n2 n3 n4 n5 n6 n7 n8 n9 n10");
	check_expand("n[0-0]", "n0");
	check_expand("n[3,1,2]", "n3 n1 n2");
	check_expand("r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2");
	check_expand("r[1-2]n[1-2]-ib", "r1n1-ib r1n2-ib r2n1-ib r2n2-ib");
	check_expand("[1-3]", "1 2 3");
	check_expand("a[1-2]b[01,3]c[5]", "a1b01c5 a1b3c5 a2b01c5 a2b3c5");
	check_expand("gpu-node_1.example.org",
	    "gpu-node_1.example.org");
	check_expand("h[1-2].ex-ample.org,x", "h1.ex-ample.org h2.ex-ample.org x");
	check_expand("a,a", "a a");
}
END_TEST

START_TEST(test_expand_errors)
{
	check_error("", MAX_HOSTS, CADRE_ERR_INVALID, 0);
	check_error(",", MAX_HOSTS, CADRE_ERR_INVALID, 0);
	check_error("a,", MAX_HOSTS, CADRE_ERR_INVALID, 2);
	check_error(",a", MAX_HOSTS, CADRE_ERR_INVALID, 0);
	check_error("a,,b", MAX_HOSTS, CADRE_ERR_INVALID, 2);
	check_error("n[1-2", MAX_HOSTS, CADRE_ERR_INVALID, 1);
	check_error("n[", MAX_HOSTS, CADRE_ERR_INVALID, 1);
	check_error("n[1,", MAX_HOSTS, CADRE_ERR_INVALID, 1);
	check_error("n1-2]", MAX_HOSTS, CADRE_ERR_INVALID, 4);
	check_error("n[1-2]]", MAX_HOSTS, CADRE_ERR_INVALID, 6);
	check_error("n[]", MAX_HOSTS, CADRE_ERR_INVALID, 2);
	check_error("n[1-]", MAX_HOSTS, CADRE_ERR_INVALID, 4);
	check_error("n[-1]", MAX_HOSTS, CADRE_ERR_INVALID, 2);
	check_error("n[1--2]", MAX_HOSTS, CADRE_ERR_INVALID, 4);
	check_error("n[1-2-3]", MAX_HOSTS, CADRE_ERR_INVALID, 5);
	check_error("n[,1]", MAX_HOSTS, CADRE_ERR_INVALID, 2);
	check_error("n[1,,2]", MAX_HOSTS, CADRE_ERR_INVALID, 4);
	check_error("n[1,]", MAX_HOSTS, CADRE_ERR_INVALID, 4);
	check_error("n[4-1]", MAX_HOSTS, CADRE_ERR_INVALID, 2);
	check_error("n[1,09-08]", MAX_HOSTS, CADRE_ERR_INVALID, 4);
	check_error("n[1-[2]]", MAX_HOSTS, CADRE_ERR_INVALID, 4);
	check_error("n[[1]]", MAX_HOSTS, CADRE_ERR_INVALID, 2);
	check_error("n[a-b]", MAX_HOSTS, CADRE_ERR_INVALID, 2);
	check_error("n[1 - 2]", MAX_HOSTS, CADRE_ERR_INVALID, 3);
	check_error("n[ 1]", MAX_HOSTS, CADRE_ERR_INVALID, 2);
	check_error("a b", MAX_HOSTS, CADRE_ERR_INVALID, 1);
	check_error(" a", MAX_HOSTS, CADRE_ERR_INVALID, 0);
	check_error("a ", MAX_HOSTS, CADRE_ERR_INVALID, 1);
	check_error("a, b", MAX_HOSTS, CADRE_ERR_INVALID, 2);
	check_error("a/b", MAX_HOSTS, CADRE_ERR_INVALID, 1);
	check_error("a;b", MAX_HOSTS, CADRE_ERR_INVALID, 1);
	check_error("a:1", MAX_HOSTS, CADRE_ERR_INVALID, 1);
	check_error("ä", MAX_HOSTS, CADRE_ERR_INVALID, 0);
	check_error("x\ny", MAX_HOSTS, CADRE_ERR_INVALID, 1);
	check_error("$(reboot)", MAX_HOSTS, CADRE_ERR_INVALID, 0);
	check_error("n[1-2]x,]", MAX_HOSTS, CADRE_ERR_INVALID, 8);
	/* Numbers too long to be host numbers. */
	check_error("n[1234567890123456789]", MAX_HOSTS, CADRE_ERR_INVALID, 2);
	/* Names longer than DNS allows. */
	check_error("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	    MAX_HOSTS, CADRE_ERR_INVALID, 0);
}
END_TEST

START_TEST(test_expand_bounds)
{
	struct hostlist	hl;
	double		t0;

	/* Exactly max is fine, one more is not. */
	ck_assert_int_eq(hostlist_expand("n[1-4]", 4, &hl, NULL), 0);
	ck_assert_uint_eq(hl.n, 4);
	hostlist_free(&hl);
	check_error("n[1-4]", 3, CADRE_ERR_TOO_LARGE, 0);
	check_error("a,b,n[1-2]", 3, CADRE_ERR_TOO_LARGE, 4);
	check_error("a", 0, CADRE_ERR_TOO_LARGE, 0);
	ck_assert_int_eq(hostlist_expand("r[1-4]n[1-4]", 16, &hl, NULL), 0);
	ck_assert_uint_eq(hl.n, 16);
	ck_assert_str_eq(hl.hosts[15], "r4n4");
	hostlist_free(&hl);
	check_error("r[1-4]n[1-4]", 15, CADRE_ERR_TOO_LARGE, 0);

	/* Huge expressions are refused before anything is allocated. */
	t0 = unit_now();
	check_error("n[0-999999999]", MAX_HOSTS, CADRE_ERR_TOO_LARGE, 0);
	check_error("n[0-999999999999999999]", MAX_HOSTS, CADRE_ERR_TOO_LARGE,
	    0);
	check_error("a[0-99999]b[0-99999]c[0-99999]d[0-99999]", MAX_HOSTS,
	    CADRE_ERR_TOO_LARGE, 0);
	check_error("a[0-999999999999999999]b[0-999999999999999999]"
	    "c[0-999999999999999999]", (size_t)-1, CADRE_ERR_TOO_LARGE, 0);
	check_error("x,n[0-65535]", MAX_HOSTS, CADRE_ERR_TOO_LARGE, 2);
	ck_assert(unit_now() - t0 < 1.0);

	ck_assert_int_eq(hostlist_expand("n[00000-65535]", MAX_HOSTS, &hl,
	    NULL), 0);
	ck_assert_uint_eq(hl.n, MAX_HOSTS);
	ck_assert_str_eq(hl.hosts[0], "n00000");
	ck_assert_str_eq(hl.hosts[65535], "n65535");
	hostlist_free(&hl);
}
END_TEST

/* Compresses the space-separated hosts and compares the result. */
static void
check_compress(const char *hosts, const char *want)
{
	char	*copy, *tok, *save = NULL, *list[256], *got;
	size_t	 n = 0;

	copy = strdup(hosts);
	for (tok = strtok_r(copy, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save))
		list[n++] = tok;
	got = hostlist_compress(list, n);
	ck_assert_msg(strcmp(got, want) == 0, "\"%s\" -> \"%s\", not \"%s\"",
	    hosts, got, want);
	free(got);
	free(copy);
}

START_TEST(test_compress)
{
	check_compress("", "");
	check_compress("node1", "node1");
	check_compress("node01 node02 node03 node07", "node[01-03,07]");
	check_compress("node03 node01 node02", "node[01-03]");
	check_compress("n1 n2 n3 n5 n7 n8", "n[1-3,5,7-8]");
	check_compress("n8 n9 n10 n11", "n[8-11]");
	check_compress("n08 n09 n10 n11", "n[08-11]");
	check_compress("n098 n099 n100", "n[098-100]");
	check_compress("node01 node02 node7", "node[01-02,7]");
	check_compress("gpu1 node1 gpu2 node2", "gpu[1-2],node[1-2]");
	check_compress("b1 a c b2 a", "b[1-2],a,c");
	check_compress("login node1 login", "login,node1");
	check_compress("n1 n1 n2 n2 n1", "n[1-2]");
	check_compress("n5 n5", "n5");
	check_compress("r1n1 r1n2 r2n1 r2n2", "r1n[1-2],r2n[1-2]");
	check_compress("a1b c1d", "a1b,c1d");
	check_compress("1 2 3", "[1-3]");
	check_compress("n0 n00 n000", "n[0,00,000]");
	check_compress("n1 n01", "n[1,01]");
	check_compress("node node1", "node,node1");
	check_compress("x.example.org x1.example.org", "x.example.org,"
	    "x1.example.org");
	check_compress("h-1 h-2", "h-[1-2]");
	/* Only a number at the very end is compressed. */
	check_compress("gpu-1.cl gpu-2.cl", "gpu-1.cl,gpu-2.cl");
	/* Numbers too long to hold are kept as they are. */
	check_compress("n12345678901234567890 n12345678901234567891",
	    "n12345678901234567890,n12345678901234567891");
}
END_TEST

/* compress(expand(x)) == x for expressions already in canonical form. */
START_TEST(test_round_trip)
{
	static const char *const canonical[] = {
		"node[01-04,7],gpu[1-2]",
		"node[01-03,07]",
		"n[1-100]",
		"n[001-128]",
		"a,b,c",
		"login,node[1-4]",
		"n[08-11]",
		"n[1-3,5,7-8,10-12]",
		"n[0-65535]",
		"gpu-[1-2],cpu-[10-20],login.cluster",
	};
	struct hostlist	 hl;
	char		*got;
	size_t		 i;

	for (i = 0; i < sizeof canonical / sizeof canonical[0]; i++) {
		ck_assert_int_eq(hostlist_expand(canonical[i], MAX_HOSTS, &hl,
		    NULL), 0);
		got = hostlist_compress(hl.hosts, hl.n);
		ck_assert_str_eq(got, canonical[i]);
		free(got);
		hostlist_free(&hl);
	}
}
END_TEST

/* expand(compress(hosts)) gives back each host, duplicates once. */
START_TEST(test_round_trip_hosts)
{
	char		*hosts[500], *s;
	struct hostlist	 hl;
	size_t		 i, j, n = 0;
	unsigned int	 seed = 1;

	for (i = 0; i < 500; i++) {
		seed = seed * 1103515245 + 12345;
		switch ((seed >> 16) % 4) {
		case 0:
			asprintf(&hosts[n++], "node%03u", (seed >> 8) % 300);
			break;
		case 1:
			asprintf(&hosts[n++], "gpu%u", (seed >> 8) % 50);
			break;
		case 2:
			asprintf(&hosts[n++], "r%un%u", (seed >> 8) % 3,
			    (seed >> 12) % 5);
			break;
		default:
			asprintf(&hosts[n++], "login%c", 'a' + (seed >> 8) % 3);
			break;
		}
	}
	s = hostlist_compress(hosts, n);
	ck_assert_int_eq(hostlist_expand(s, MAX_HOSTS, &hl, NULL), 0);
	/* Every input host is there once, and nothing else. */
	for (i = 0; i < n; i++) {
		size_t found = 0;

		for (j = 0; j < hl.n; j++)
			found += strcmp(hosts[i], hl.hosts[j]) == 0;
		ck_assert_msg(found == 1, "%s found %zu times in %s", hosts[i],
		    found, s);
	}
	for (j = 0; j < hl.n; j++) {
		size_t found = 0;

		for (i = 0; i < n; i++)
			found += strcmp(hosts[i], hl.hosts[j]) == 0;
		ck_assert(found > 0);
	}
	hostlist_free(&hl);
	free(s);
	for (i = 0; i < n; i++)
		free(hosts[i]);
}
END_TEST

static Suite *
hostlist_suite(void)
{
	Suite	*s = suite_create("hostlist");
	TCase	*tc = tcase_create("core");

	tcase_add_test(tc, test_expand);
	tcase_add_test(tc, test_expand_errors);
	tcase_add_test(tc, test_expand_bounds);
	tcase_add_test(tc, test_compress);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_round_trip_hosts);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(hostlist_suite());
}
