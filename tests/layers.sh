#!/bin/sh
# Includes only go down the layers (docs/architecture.md "Layout"):
#   common <- spec <- sched <- report <- daemon <- cli
# and agent/ and trainer/ stand on common/ alone (trainer/cuda/ on trainer/
# too); cli/, at the top, may also read what trainer/ defines (the shard
# format its preflight checks), which keeps the graph without a cycle. Every #include "X" of a C or CUDA source is resolved to the
# directory that holds X; one that reaches a part its own may not use fails,
# naming the file, the line and the include.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 99

# The parts each directory may include from, besides itself.
allowed() {
	case $1 in
	common) echo "" ;;
	spec) echo "common" ;;
	sched) echo "common spec" ;;
	report) echo "common spec sched" ;;
	daemon) echo "common spec sched report" ;;
	cli) echo "common spec sched report daemon trainer" ;;
	agent) echo "common" ;;
	trainer) echo "common" ;;
	trainer/cuda) echo "common trainer" ;;
	*) echo "" ;;
	esac
}
parts="common spec sched report daemon cli agent trainer trainer/cuda"

# Where each header lives: "name dir" lines.
index=$(for d in $parts; do
	for h in "$d"/*.h "$d"/*.cuh; do
		[ -f "$h" ] && echo "${h##*/} $d"
	done
done)

fail=0
checked=0
for d in $parts; do
	ok=" $d $(allowed "$d") "
	for f in "$d"/*.c "$d"/*.h "$d"/*.cu "$d"/*.cuh; do
		[ -f "$f" ] || continue
		checked=$((checked + 1))
		grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
		sed 's/^\([0-9]*\):.*"\([^"]*\)".*/\1 \2/' > "${TMPDIR:-/tmp}/layers.$$"
		while read -r line inc; do
			case $inc in config.h|commit.h) continue ;; esac
			# An include with a directory is relative to the file.
			case $inc in */*) where=$(cd "$(dirname "$f")/$(dirname "$inc")" 2>/dev/null && pwd)
				where=${where#"$top"/} ;;
			*) where=$(echo "$index" | awk -v h="$inc" '$1 == h { print $2; exit }') ;;
			esac
			if [ -z "$where" ]; then
				echo "FAIL: $f:$line: includes \"$inc\", which no part holds"
				fail=$((fail + 1))
				continue
			fi
			case $ok in *" $where "*) ;; *)
				echo "FAIL: $f:$line: includes \"$inc\" from $where/, above $d/ (it may use: $(allowed "$d"))"
				fail=$((fail + 1)) ;;
			esac
		done < "${TMPDIR:-/tmp}/layers.$$"
	done
done
rm -f "${TMPDIR:-/tmp}/layers.$$"
# Header names are one namespace (every part's directory is on the include
# path), so each name must be unique.
dups=$(echo "$index" | awk '{ print $1 }' | sort | uniq -d)
for h in $dups; do
	echo "FAIL: header name $h in more than one part: $(echo "$index" | awk -v h="$h" '$1 == h { printf "%s/ ", $2 }')"
	fail=$((fail + 1))
done
[ "$checked" -gt 100 ] || { echo "FAIL: only $checked sources found under $top"; exit 1; }
if [ "$fail" -eq 0 ]; then
	echo "PASS: $checked sources include only their own part and the parts below it"
	exit 0
fi
exit 1
