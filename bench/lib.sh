# Shared by the bench/ scripts: where results go and the header each
# result file starts with (machine, date, commit, command).
top=$(cd "$(dirname "$0")/.." && pwd)
results_dir="$top/bench/results"

# result_header COMMAND...: prints the provenance block of a result file.
result_header() {
	commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
	# Results being written are not a change to the code measured.
	dirty=$(git -C "$top" status --porcelain -- . ':!bench/results' 2>/dev/null | grep -q . && echo "+dirty" || true)
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
	echo "machine: $(uname -srm), ${cpu:-unknown cpu}, $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $commit$dirty"
	echo "command: $*"
}
