#!/bin/sh
# Random bytes, half-open connections, slow clients and a session flood on
# the agent's port: it neither crashes nor blocks, and it frees what they
# hold after the login grace.
. "$top_srcdir/tests/agent/lib.sh"
[ -x "$probe" ] || { echo "$test_name: $probe not built" >&2; exit 99; }

"$agent" keygen --run-dir "$rd" || fail "keygen"
start_agent "$rd" n1 127.0.1.1 --login-grace 2s --max-sessions 8
set -- $("$probe" where "$rd" n1)
addr=$1 port=$2

# rsh_fast: the agent answers a real client within 5 s.
rsh_fast() {
	timeout 5 "$agent" rsh --run-dir "$rd" --shell n1 'echo alive' >"$work/alive" 2>&1 &&
		[ "$(cat "$work/alive")" = alive ]
}

for n in 1 100 65536 1048576; do
	timeout 20 "$probe" garbage "$addr" "$port" $n >/dev/null || fail "garbage probe $n"
done
alive "$pid_n1" || fail "the agent died after random bytes: $(cat "$work/n1.log")"
rsh_fast || fail "no answer after random bytes: $(cat "$work/alive")"
ok "random bytes (1 B to 1 MiB): agent alive and answering"

# Half-open (silent) and slow (banner, then nothing) clients, fewer than
# the session limit: real clients still get through at once.
timeout 20 "$probe" hold "$addr" "$port" 3 4 > "$work/hold1" &
h1=$!
timeout 20 "$probe" hold "$addr" "$port" 3 4 banner > "$work/hold2" &
h2=$!
sleep 0.5
rsh_fast || fail "blocked by half-open clients: $(cat "$work/alive")"
wait_exit 20 $h1; wait_exit 20 $h2
grep -q "closed 3 of 3" "$work/hold1" || fail "silent clients not dropped after the grace: $(cat "$work/hold1")"
grep -q "closed 3 of 3" "$work/hold2" || fail "slow clients not dropped after the grace: $(cat "$work/hold2")"
ok "half-open and slow clients: others served meanwhile, dropped after the 2 s grace"

# A flood past --max-sessions: the excess is refused at once, the agent
# stays up, and once the grace frees the slots real clients get in.
timeout 20 "$probe" hold "$addr" "$port" 30 4 > "$work/hold3" &
h3=$!
sleep 0.5
alive "$pid_n1" || fail "the agent died in the flood"
grep -q "sessions already" "$work/n1.log" || fail "no refusal logged at the session limit"
wait_exit 20 $h3
grep -q "closed 30 of 30" "$work/hold3" || fail "flood: $(cat "$work/hold3")"
rsh_fast || fail "no answer after the flood: $(cat "$work/alive")"
ok "30 connections against --max-sessions 8: excess refused, all freed, agent answering"

# No session processes are left behind.
sleep 0.5
kids=$(pgrep -P "$pid_n1" | wc -l)
[ "$kids" = 0 ] || fail "$kids session processes left"
ok "no session process left"
exit 0
