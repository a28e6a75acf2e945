# Shared by the tests/slurm/*.sh tests (POSIX sh): starts a private Slurm
# (tests/slurm/start.sh) in $work/slurm, stops it and removes $work at
# exit. Exits 77 (skipped) when not root or Slurm is not installed. Tests
# that need the cluster hold a lock, so that `make -j check` runs them one
# after the other on the same private ports.
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
. "$top_srcdir/tests/lib.sh"
# scripts/test runs these in `make check`; `make distcheck` (which checks
# that the tarball builds and its tests run) need not start Slurm again.
if [ -n "${CADRE_DISTCHECK_FAST:-}" ]; then
	echo "$test_name: SKIP: the private Slurm tests ran in make check (CADRE_DISTCHECK_FAST)"
	exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "$test_name: SKIP: a private Slurm needs root"
	exit 77
fi
for _p in munged slurmctld slurmd slurmrestd sbatch flock; do
	if ! command -v "$_p" >/dev/null 2>&1; then
		echo "$test_name: SKIP: $_p not installed (scripts/deps install)"
		exit 77
	fi
done
chmod 0755 "$work"	# the munge and REST users reach slurm/ below
slurm=$work/slurm
mkdir "$slurm"
started=0

cleanup() {
	[ $started -eq 1 ] && sh "$top_srcdir/tests/slurm/stop.sh" "$slurm"
	[ -n "${extra_cleanup:-}" ] && eval "$extra_cleanup"
	rm -rf "$work"
}
trap cleanup EXIT

# One private cluster at a time on these ports.
exec 9>"${TMPDIR:-/tmp}/cadre-slurm-${CADRE_SLURM_PORT:-17000}.lock"
if ! flock -w 600 9; then
	echo "FAIL: another test holds the private Slurm for 10 minutes"
	exit 1
fi
started=1
if ! sh "$top_srcdir/tests/slurm/start.sh" "$slurm" 9>&-; then
	echo "FAIL: tests/slurm/start.sh"
	tail -n 20 "$slurm"/log/*.log "$slurm"/munge/munged.log 2>/dev/null
	exit 1
fi
SLURM_CONF=$slurm/slurm.conf
export SLURM_CONF
rest_user=$(cat "$slurm/rest-user")
rest_sock=$slurm/rest/rest.sock
