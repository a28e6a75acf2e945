# Sourced by the shell tests of cadre-train once top_srcdir and
# top_builddir are set: tests/lib.sh, and $tool, the cadre-train under test.
. "$top_srcdir/tests/lib.sh"
tool="$top_builddir/cadre-train"

# need_prep: exits 77 where cadre-train has no prep (built without
# utf8proc), as every test of prep or of training on its shards must.
need_prep() {
	"$tool" prep --help > /dev/null 2>&1 ||
	    skip "cadre-train has no prep (built without utf8proc)"
}
