#!/bin/sh
# The local backend's dry mode (bench/daemon's 10,000 runs): submit records
# a job that never runs, without a process; it stays queued, find names it,
# cancel makes it cancelled.
. "$top_srcdir/tests/daemon/local-lib.sh"
SCHEDTOOL_DRY=1
export SCHEDTOOL_DRY

rd=$(newrun dry) || fatal "mkdir"
ids=
i=0
while [ $i -lt 20 ]; do
	id=$("$tool" submit "$templates" "$spec" 0 "$rd") || fatal "dry submit $i"
	ids="$ids $id"
	i=$((i + 1))
done
case $id in
local-dry-*) ;;
*) fatal "dry id '$id'" ;;
esac
# shellcheck disable=SC2086
n=$("$tool" poll $ids | grep -c ' queued ')
[ "$n" = 20 ] || fail "20 dry jobs: $n queued"
[ "$(ls "$SCHEDTOOL_LOCAL_DIR" | wc -l)" = 20 ] || fail "records: $(ls "$SCHEDTOOL_LOCAL_DIR")"
[ ! -e "$rd/job.out" ] && [ -z "$(procs_of "$rd")" ] || fail "a dry job ran"
sleep 1
[ "$(state "$id")" = queued ] || fail "dry job left the queue"
pass "20 dry submissions: queued, nothing runs"

name=cadre-$(sed -n 's/^run_id=//p' "$rd/job.sh")
[ "$("$tool" find "$name")" = "$id" ] || fail "find: $("$tool" find "$name"), expected $id"
"$tool" cancel "$id" || fail "cancel"
[ "$(state "$id")" = cancelled ] || fail "after cancel: $(state "$id")"
# find skips a cancelled dry job by its record, which poll does not read
grep -q '"state": "cancelled"' "$SCHEDTOOL_LOCAL_DIR/$id.json" ||
	fail "record after cancel: $(cat "$SCHEDTOOL_LOCAL_DIR/$id.json")"
pass "find names the newest dry job; cancel makes it cancelled"

# A record that is not JSON, or none: unknown, with no crash.
printf '{"state": ' >"$SCHEDTOOL_LOCAL_DIR/local-1-1.json"
line=$("$tool" poll local-1-1 local-dry-gone 2>/dev/null | tr '\n' '|')
case $line in
"local-1-1 unknown -1 0 no record|local-dry-gone unknown -1 0 no record|") pass "a broken or missing record: unknown" ;;
*) fail "broken record: '$line'" ;;
esac
exit $failed
