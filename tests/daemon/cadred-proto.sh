#!/bin/sh
# cadred's socket and protocol, with no scheduler behind it (the local
# backend in dry mode): an invalid spec is refused at submit with
# validate's messages before anything is contacted; without a daemon,
# submit says how to start one; one daemon per user; garbage, oversized,
# wrong-version and unknown-operation frames get an error reply and the
# client is dropped, and the daemon answers the next client; a connection
# from another uid is refused (as root only); SIGHUP reads the config
# again (a bad one is refused and the old kept); SIGTERM stops it.
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/daemon/cadred-lib.sh"
cleanup() {
	cadred_stop KILL
	rm -rf "$work"
}
trap cleanup EXIT
echo "dry = 1" >> "$conf"

cat > "$work/bad.yaml" <<'SPEC'
version: 1
name: bad
trainer: { model: bert-tiny, data: /x, steps: -3, batch_size: lots }
SPEC
cat > "$work/good.yaml" <<'SPEC'
version: 1
name: proto
scheduler: { backend: local }
trainer: { model: bert-tiny, data: /nonexistent, steps: 10 }
measure: { skip_steps: 0 }
matrix:
  trainer.seed: [1, 2, 3]
SPEC

# invalid spec: validate's messages, exit 2, no daemon needed
cadre submit "$work/bad.yaml" > "$work/out" 2> "$work/err"
rc=$?
cadre validate "$work/bad.yaml" 2> "$work/verr"
if [ $rc -eq 2 ] && cmp -s "$work/err" "$work/verr" && [ -s "$work/err" ]; then
	pass "invalid spec: validate's messages, exit 2"
else
	fail "invalid spec: exit $rc, stderr: $(cat "$work/err")"
fi

# no daemon: exit 1 and how to start it
cadre submit "$work/good.yaml" > "$work/out" 2> "$work/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "systemctl --user start cadred" "$work/err"; then
	pass "no daemon: says how to start it, exit 1"
else
	fail "no daemon: exit $rc: $(cat "$work/err")"
fi

# systemd: READY=1 and WATCHDOG=1 reach $NOTIFY_SOCKET
if command -v python3 >/dev/null 2>&1; then
	python3 - "$work/notify.sock" "$work/notify.out" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(0.5)
end = time.time() + 20
with open(sys.argv[2], "w") as f:
    while time.time() < end:
        try:
            f.write(s.recv(4096).decode() + "\n")
            f.flush()
        except socket.timeout:
            pass
PY
	py=$!
	wait_until 10 test -S "$work/notify.sock"
	NOTIFY_SOCKET=$work/notify.sock WATCHDOG_USEC=400000 \
	    "$cadred_bin" --foreground --config "$conf" > /dev/null 2>&1 &
	p=$!
	wait_until 10 grep -q WATCHDOG=1 "$work/notify.out"
	kill $p
	wait $p
	kill $py 2>/dev/null
	wait $py 2>/dev/null
	if grep -q '^READY=1' "$work/notify.out" && grep -q '^WATCHDOG=1' "$work/notify.out" &&
	    grep -q '^STATUS=' "$work/notify.out" && grep -q '^STOPPING=1' "$work/notify.out"; then
		pass "sd_notify: READY, STATUS, WATCHDOG, STOPPING"
	else
		fail "sd_notify: $(tr '\n' ' ' < "$work/notify.out")"
	fi
fi

cadred_start
sock=$CADRE_RUNTIME_DIR/cadred.sock
if "$cadred_bin" --foreground --config "$conf" > "$work/out" 2>&1; then
	fail "a second cadred started"
elif grep -q "already running (pid $cadred_pid" "$work/out"; then
	pass "a second cadred: already running (pid $cadred_pid)"
else
	fail "a second cadred: $(cat "$work/out")"
fi
[ "$(stat -c %a "$CADRE_RUNTIME_DIR")" = 700 ] &&
    [ "$(stat -c %a "$sock")" = 600 ] &&
    pass "runtime dir 0700, socket 0600" ||
    fail "modes: $(stat -c '%a %n' "$CADRE_RUNTIME_DIR" "$sock")"

id1=$(cadre submit "$work/good.yaml" 2>/dev/null)
id2=$(cadre submit "$work/good.yaml" 2>/dev/null)
if [ -n "$id1" ] && [ "$id1" = "$id2" ]; then
	pass "submit twice: the same id $id1"
else
	fail "submit twice: '$id1' then '$id2'"
fi

if command -v python3 >/dev/null 2>&1; then
	frame() { python3 "$top_srcdir/tests/daemon/cadred-frame.py" "$sock" "$1" 2>&1 | tr '\n' ' '; }
	for c in "garbage:not JSON" "oversize:frame over the bound" \
	    "version:protocol version 99 is not supported" \
	    "noop:unknown operation" "array:expected a JSON object" \
	    "empty:empty frame"; do
		got=$(frame "${c%%:*}")
		case $got in
		*"${c#*:}"*closed*) pass "${c%%:*} frame: error reply, dropped" ;;
		*) fail "${c%%:*} frame: $got" ;;
		esac
		cadred_answers || fail "${c%%:*}: the next client got no answer"
	done
	[ "$(frame ping)" = "ok " ] && pass "a good frame after the bad ones" ||
	    fail "ping: $(frame ping)"
else
	echo "SKIP: frame cases: no python3"
fi
# a client that stops half-way through a frame holds nobody up
printf '\000\000\001' | timeout 5 sh -c "cat > /dev/null" &
if cadred_answers; then
	pass "daemon answers while another client stalls"
else
	fail "status while another client stalls"
fi

# another uid: the socket made reachable on purpose; SO_PEERCRED refuses
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
	chmod 0755 "$work" "$work/d" "$CADRE_RUNTIME_DIR"
	chmod 0666 "$sock"
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
	    env CADRE_RUNTIME_DIR="$CADRE_RUNTIME_DIR" ASAN_OPTIONS=detect_leaks=0 \
	    "$cadre_bin" status 2>&1)
	rc=$?
	chmod 0700 "$work" "$work/d" "$CADRE_RUNTIME_DIR"
	chmod 0600 "$sock"
	if [ $rc -ne 0 ] && grep -q "refused a connection from uid 65534" \
	    "$work/d/cadred.log"; then
		pass "another uid refused (cadre: $out)"
	else
		fail "another uid: exit $rc: $out"
	fi
else
	echo "SKIP: another uid: needs root and setpriv"
fi

# SIGHUP: a good config is read again, a bad one refused and the old kept
echo "poll_interval = 0.5" >> "$conf"
kill -HUP $cadred_pid
wait_until 20 grep -q "configuration read again" "$work/d/cadred.log" &&
    pass "SIGHUP: config read again" || fail "SIGHUP: no reload in the log"
echo "no equals sign here" >> "$conf"
kill -HUP $cadred_pid
if wait_until 20 grep -q "configuration kept" "$work/d/cadred.log" &&
    grep -q "cadred.conf:[0-9]*: error: expected 'key = value'" "$work/d/cadred.log" &&
    cadre status > /dev/null; then
	pass "SIGHUP with a bad config: refused with its line, old one kept"
else
	fail "SIGHUP with a bad config: $(tail -n 3 "$work/d/cadred.log")"
fi

cadre status > "$work/st"
if [ "$(grep -c ' queued ' "$work/st")" -eq 3 ]; then
	pass "status: 3 runs queued (dry)"
else
	fail "status: $(cat "$work/st")"
fi
cadre status nosuchthing > /dev/null 2> "$work/err"
[ $? -eq 1 ] && grep -q "no experiment or run 'nosuchthing'" "$work/err" &&
    pass "status of an unknown target: error" || fail "status unknown: $(cat "$work/err")"

sed -i '/no equals sign/d' "$conf"
pid=$cadred_pid
cadred_stop TERM
if [ ! -e "$sock" ] && ! kill -0 $pid 2>/dev/null; then
	pass "SIGTERM: stopped, socket removed"
else
	fail "SIGTERM: still there"
fi
cadred_start
[ "$(cadre status | grep -c ' queued ')" -eq 3 ] &&
    pass "restart: the runs are picked up again" ||
    fail "restart: $(cadre status)"
exit $failed
