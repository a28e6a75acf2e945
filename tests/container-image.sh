# Sourced by the tests and bench scripts that run real containers (POSIX
# sh): sets $image, a directory image made by scripts/cadre-image from
# this machine's files with a mount point for the build tree (ch-run binds
# onto directories the image has) and for the temporary directory's root
# when it is not /tmp (ch-run binds /tmp itself). Made once per build
# tree and kept there; a lock keeps tests running at once from making it
# twice. Needs $top_srcdir and $top_builddir.
: "${top_srcdir:?}" "${top_builddir:?}"
image_builddir=$(cd "$top_builddir" && pwd)
image_tmproot=$(cd "${TMPDIR:-/tmp}" && pwd)
case $image_tmproot in /tmp/*) image_tmproot=/tmp ;; esac
image=$image_builddir/tests/image/rootfs
mkdir -p "$image_builddir/tests/image"
[ -e "$image_builddir/tests/image/lock" ] || : > "$image_builddir/tests/image/lock"
if ! (
	flock 9
	want="$image_builddir $image_tmproot"
	if [ -f "$image/etc/cadre-image" ] &&
	    [ "$(cat "$image_builddir/tests/image/points" 2>/dev/null)" = "$want" ]; then
		exit 0
	fi
	set -- --mount-point "$image_builddir"
	[ "$image_tmproot" = /tmp ] || set -- "$@" --mount-point "$image_tmproot"
	sh "$top_srcdir/scripts/cadre-image" --marker "cadre test image" "$@" \
	    "$image" >/dev/null || exit 1
	echo "$want" > "$image_builddir/tests/image/points"
) 9<"$image_builddir/tests/image/lock"; then
	echo "could not make the test image $image" >&2
	exit 99
fi
