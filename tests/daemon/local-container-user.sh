#!/bin/sh
# Charliecloud as an ordinary user: tests/daemon/local-container.sh's
# charliecloud case run by a user that is not root (as root, the user
# cadre-test, made here with useradd when missing). ch-run needs user
# namespaces: where the kernel keeps them from that user, a skip saying so.
: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/lib.sh"
[ -z "${CADRE_DISTCHECK_FAST:-}" ] ||
    skip "the container runs that make check ran (CADRE_DISTCHECK_FAST)"
command -v ch-run >/dev/null || skip "no ch-run (Debian charliecloud-runtime)"
if [ "$(id -u)" != 0 ]; then
	skip "not root: tests/daemon/local-container.sh ran charliecloud as this user already"
fi
user=cadre-test
if ! id -u "$user" >/dev/null 2>&1; then
	useradd --system --no-create-home --shell /bin/sh "$user" 2>"$work/useradd.err" ||
		skip "no user to run as: useradd: $(cat "$work/useradd.err")"
fi
command -v runuser >/dev/null || skip "no runuser (util-linux)"
. "$top_srcdir/tests/container-image.sh"
# The user's own temporary directory, under the same root as ours (the
# image has a mount point for it).
chmod 0755 "$work"
utmp=$work/tmp
mkdir -m 0700 "$utmp" && chown "$user" "$utmp" || { fail "chown"; exit 1; }
if ! runuser -u "$user" -- ch-run "$image" -- true 2>"$work/ch.err"; then
	case $(cat "$work/ch.err") in
	*namespace*|*"Operation not permitted"*|*"Permission denied"*)
		skip "ch-run as $user: user namespaces not permitted here: $(cat "$work/ch.err")" ;;
	esac
	fail "ch-run as $user: $(cat "$work/ch.err")"
	exit 1
fi
runuser -u "$user" -- env TMPDIR="$utmp" USER="$user" HOME="$utmp" \
	top_srcdir="$top_srcdir" top_builddir="$top_builddir" \
	CADRE_CONTAINER_CASES=charliecloud \
	sh "$top_srcdir/tests/daemon/local-container.sh"
