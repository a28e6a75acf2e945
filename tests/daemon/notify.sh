#!/bin/sh
# Webhooks (daemon/notify.c) against a real HTTP receiver on loopback
# (tests/daemon/webhook-server.py): the JSON body arrives as it was posted
# with Content-Type application/json, over TCP and over a unix socket; a
# 500 is retried (after 1 s) and the retry delivers; a stalled receiver
# does not hold notify_poll() past its time; a 4xx is not retried and the
# log line names the URL without its user:password; the queue holds 1000
# and drops the oldest; bad URLs are refused.
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
tool=$top_builddir/tests/daemon/schedtool
server=$top_srcdir/tests/daemon/webhook-server.py
[ -x "$tool" ] || { echo "notify: $tool not built" >&2; exit 99; }
command -v python3 >/dev/null 2>&1 || { echo "notify: skipped: no python3"; exit 77; }
. "$top_srcdir/tests/lib.sh"
tag=notify
spid=
stop_server() {
	if [ -n "$spid" ]; then
		kill -TERM "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		spid=
	fi
}
trap 'stop_server; rm -rf "$work"' EXIT

# start NAME [OPTIONS...]: a receiver recording into $work/NAME; sets $url.
start() {
	stop_server
	_d=$work/$1; shift
	mkdir -p "$_d"
	python3 "$server" "$_d" "$@" &
	spid=$!
	_n=0
	while [ ! -e "$_d/ready" ]; do
		_n=$((_n + 1))
		[ $_n -gt 100 ] && { fail "receiver did not start"; exit 1; }
		sleep 0.1
	done
	[ -f "$_d/port" ] && url=http://127.0.0.1:$(cat "$_d/port")/hook
}

body='{"experiment":"e1","run":"0123456789ab","state":"done","reason":"exited 0","attempt":1,"time":1795270000}'
start ok
out=$("$tool" notify 5000 "$url" "$body" 2>"$work/err")
if [ "$out" = "pending 0" ] && [ "$(cat "$work/ok/bodies")" = "$body" ] &&
    [ "$(cat "$work/ok/types")" = application/json ]; then
	pass "POST over TCP: the body as posted, Content-Type application/json"
else
	fail "POST over TCP: $out; bodies: $(cat "$work/ok/bodies" 2>&1); $(cat "$work/err")"
fi

start unix --unix "$work/hook.sock"
out=$("$tool" notify 5000 "unix://$work/hook.sock" "$body" 2>"$work/err")
if [ "$out" = "pending 0" ] && [ "$(cat "$work/unix/bodies")" = "$body" ]; then
	pass "POST over a unix socket (unix:///PATH)"
else
	fail "unix socket: $out; $(cat "$work/err")"
fi

start retry --fail-first 1
out=$("$tool" notify 8000 "$url" "$body" 2>"$work/err")
if [ "$out" = "pending 0" ] && [ "$(grep -c . "$work/retry/bodies")" = 2 ]; then
	pass "500 the first time: tried again, delivered"
else
	fail "retry: $out; $(grep -c . "$work/retry/bodies") POSTs; $(cat "$work/err")"
fi

start stall --stall
out=$("$tool" notify 500 "$url" "$body" 2>"$work/err")
if [ "$out" = "pending 1" ]; then
	pass "a receiver that never answers: notify_poll returns, the POST still pending"
else
	fail "stalled receiver: $out; $(cat "$work/err")"
fi

start gone --status 404
uurl=$(echo "$url" | sed 's|//|//alice:s3cret@|')
out=$("$tool" notify 3000 "$uurl" "$body" 2>"$work/err")
if [ "$out" = "pending 0" ] && [ "$(grep -c . "$work/gone/bodies")" = 1 ] &&
    grep -q 'HTTP 404; giving up after 1 try' "$work/err" &&
    grep -q "http://127.0.0.1:" "$work/err" && ! grep -q 's3cret\|alice' "$work/err"; then
	pass "404: not retried; the log names the URL without user:password"
else
	fail "404: $out; $(cat "$work/err")"
fi
stop_server

# 1001 posts, no polling: the oldest is dropped with a log line.
set --
i=0
while [ $i -le 1000 ]; do
	set -- "$@" "http://127.0.0.1:9/x" "{\"n\":$i}"
	i=$((i + 1))
done
out=$("$tool" notify 0 "$@" 2>"$work/err")
if [ "$out" = "pending 1000" ] && [ "$(grep -c 'dropping the oldest' "$work/err")" = 1 ]; then
	pass "1001 queued: 1000 kept, the oldest dropped with a log line"
else
	fail "queue bound: $out; $(head -3 "$work/err")"
fi

for bad in "ftp://127.0.0.1/x" "file:///etc/passwd" "unix://relative" "http://a/$(printf 'x\ty')" ""; do
	if "$tool" notify 0 "$bad" "$body" >/dev/null 2>&1; then
		fail "URL '$bad' accepted"
	else
		pass "URL '$bad' refused"
	fi
done
exit $failed
