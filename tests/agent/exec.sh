#!/bin/sh
# cadre-agent serve + rsh: per-run keys, the published file, exec with stdio
# relay, exit status and signal, lookup by name and address, mpirun-style
# quoted words, signals to rsh and to serve, the run's end.
. "$top_srcdir/tests/agent/lib.sh"

"$agent" keygen --run-dir "$rd" || fail "keygen"
[ "$(mode "$rd")" = 700 ] || fail "run dir mode $(mode "$rd")"
[ "$(mode "$rd/keys")" = 700 ] || fail "keys/ mode $(mode "$rd/keys")"
[ "$(mode "$rd/keys/id_ed25519")" = 600 ] || fail "private key mode"
[ "$(mode "$rd/keys/id_ed25519.pub")" = 600 ] || fail "public key mode"
grep -q '^ssh-ed25519 ' "$rd/keys/id_ed25519.pub" || fail "public key format"
"$agent" keygen --run-dir "$rd" 2>/dev/null && fail "keygen overwrote a key"
ok "keygen: 0700 dirs, 0600 keys, never overwrites"

start_agent "$rd" n1 127.0.1.1
j=$rd/agents/n1.json
[ "$(mode "$j")" = 600 ] || fail "agents/n1.json mode $(mode "$j")"
[ "$(mode "$rd/agents")" = 700 ] || fail "agents/ mode"
for k in '"node": "n1"' '"addr": "127.0.1.1"' '"port": ' '"hostkey": "ssh-ed25519 ' '"pid": ' '"started": '; do
	grep -q "$k" "$j" || fail "agents/n1.json lacks $k"
done
ok "published agents/n1.json (0600) with node, addr, port, hostkey, pid, started"

R() { timeout 20 "$agent" rsh --run-dir "$rd" --shell "$@"; }

out=$(R n1 'echo out; echo err >&2; exit 3' 2>"$work/err"); rc=$?
[ "$rc" = 3 ] || fail "exit status $rc, expected 3"
[ "$out" = out ] || fail "stdout '$out'"
[ "$(cat "$work/err")" = err ] || fail "stderr '$(cat "$work/err")'"
ok "stdout, stderr and exit status relayed"

out=$(printf 'line1\nline2\n' | R 127.0.1.1 cat) || fail "cat by address"
[ "$out" = "$(printf 'line1\nline2')" ] || fail "stdin relay '$out'"
head -c 3000000 /dev/urandom > "$work/big"
R n1 cat < "$work/big" > "$work/big.out" || fail "big cat"
cmp -s "$work/big" "$work/big.out" || fail "3 MB through stdin/stdout differ"
ok "stdin relayed (3 MB round trip), host found by address"

# A client that reads slowly gets all of a large output (the command
# waits on the SSH window; the agent does not buffer without bound).
n=$(R n1 'head -c 6000000 /dev/zero; echo done >&2' 2>"$work/err" | (sleep 2; wc -c)) || fail "slow reader"
[ "$n" = 6000000 ] || fail "slow reader got $n bytes"
grep -q done "$work/err" || fail "slow reader: no stderr"
ok "a slow reader gets all 6 MB"

R n1 'kill -TERM $$'; rc=$?
[ "$rc" = 143 ] || fail "killed by SIGTERM: status $rc, expected 143"
ok "a remote signal death is 128+N"

# What Open MPI passes: words already shell-quoted, run by /bin/sh -c.
out=$(R n1 printf '"%s|"' '"a b"' 'c') || fail "quoted words"
[ "$out" = "a b|c|" ] || fail "quoted words gave '$out'"
out=$(R -x n1 'echo $CADRE_NODE $CADRE_RUN_DIR') || fail "env"
[ "$out" = "n1 $rd" ] || fail "CADRE_NODE/CADRE_RUN_DIR: '$out'"
ok "shell-quoted words (mpirun's form) and CADRE_NODE in the environment"

# Without --shell the words are the command's argv: no shell expands them.
A() { timeout 20 "$agent" rsh --run-dir "$rd" "$@"; }
out=$(A n1 printf '%s|' 'a b' '$HOME' '*' "it's" '') || fail "argv words"
[ "$out" = "a b|\$HOME|*|it's||" ] || fail "argv words gave '$out'"
A n1 sh -c 'exit 4'; rc=$?
[ "$rc" = 4 ] || fail "argv exit status $rc, expected 4"
A n1 /nonexistent/program 2>"$work/err"; rc=$?
[ "$rc" = 127 ] || fail "argv: a missing program gave $rc, expected 127"
grep -q '/nonexistent/program: No such file' "$work/err" || fail "argv: missing program message: $(cat "$work/err")"
ok "argv commands (no --shell) run without a shell, words kept as they are"

R nosuchnode true 2>"$work/err"; rc=$?
[ "$rc" = 255 ] || fail "unknown host: status $rc"
grep -q "no agent for host 'nosuchnode'" "$work/err" || fail "unknown host message: $(cat "$work/err")"
ok "unknown host: 255 with a message"

# SIGTERM to rsh reaches the remote command.
"$agent" rsh --run-dir "$rd" --shell n1 'trap "echo got-term; exit 7" TERM; echo started; while :; do sleep 0.05; done' > "$work/sig.out" &
rp=$!
wait_for 10 grep -q started "$work/sig.out" || fail "remote command did not start"
kill -TERM $rp
wait_exit 10 $rp; rc=$?
[ "$rc" = 124 ] && fail "rsh still running 10 s after SIGTERM"
[ "$rc" = 7 ] || fail "after SIGTERM: status $rc, expected 7"
grep -q got-term "$work/sig.out" || fail "the remote command did not see SIGTERM"
ok "SIGTERM to rsh reaches the remote command"

# SIGTERM to serve reaches running commands; serve exits and unpublishes.
"$agent" rsh --run-dir "$rd" --shell n1 'trap "echo > '"$work"'/stopped; exit 0" TERM; echo started; while :; do sleep 0.05; done' > "$work/sig2.out" 2>/dev/null &
rp=$!
wait_for 10 grep -q started "$work/sig2.out" || fail "remote command 2 did not start"
kill -TERM "$pid_n1"
wait_for 15 test -f "$work/stopped" || fail "serve's SIGTERM did not reach the command"
wait_exit 15 "$pid_n1"; rc=$?
[ "$rc" = 124 ] && fail "serve still running 15 s after SIGTERM"
[ "$rc" = 0 ] || fail "serve exited $rc after SIGTERM: $(cat "$work/n1.log")"
[ -f "$rd/agents/n1.json" ] && fail "agents/n1.json left behind"
wait_exit 10 $rp
ok "SIGTERM to serve: commands told, clean exit, file removed"

# The run's end (status.json) and the idle timeout stop an agent.
start_agent "$rd" n2 127.0.1.2
echo '{}' > "$rd/status.json"
wait_exit 10 "$pid_n2" || fail "agent n2 ignored status.json"
rm -f "$rd/status.json"
start_agent "$rd" n3 127.0.1.3 --idle-timeout 1s
wait_exit 10 "$pid_n3" || fail "agent n3 ignored its idle timeout"
ok "agents stop when status.json appears and after the idle timeout"
exit 0
