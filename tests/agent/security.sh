#!/bin/sh
# What the agent and its client refuse: another client key, password,
# keyboard-interactive and "none" authentication, another user name, a
# host key other than the published one, run dirs and keys that are not
# private, and (as root, with a temporary user) another local user.
. "$top_srcdir/tests/agent/lib.sh"
[ -x "$probe" ] || { echo "$test_name: $probe not built" >&2; exit 99; }

"$agent" keygen --run-dir "$rd" || fail "keygen"
start_agent "$rd" n1 127.0.1.1
"$agent" rsh --run-dir "$rd" n1 true || fail "the run key was refused"

# A second run: its own key, but n1's published file copied in, so the
# host key check passes and only the client key differs.
rd2=$work/run2
"$agent" keygen --run-dir "$rd2" || fail "keygen 2"
mkdir -m 0700 "$rd2/agents"
cp "$rd/agents/n1.json" "$rd2/agents/n1.json"
timeout 20 "$agent" rsh --run-dir "$rd2" n1 true 2>"$work/err"; rc=$?
[ "$rc" = 255 ] || fail "another run's key: status $rc"
grep -q "refused the run key" "$work/err" || fail "wrong key message: $(cat "$work/err")"
timeout 20 "$probe" auth key "$rd" n1 "$rd2/keys/id_ed25519" || fail "wrong client key accepted"
ok "another client key: refused"

for m in none password kbdint; do
	timeout 20 "$probe" auth $m "$rd" n1 || fail "$m authentication was not refused"
done
timeout 20 "$probe" auth wronguser "$rd" n1 "$rd/keys/id_ed25519" || fail "the run key for another user name was accepted"
timeout 20 "$probe" auth key "$rd" n1 "$rd/keys/id_ed25519" >/dev/null && fail "probe: the run key was refused"
grep -q "refused password authentication" "$work/n1.log" || fail "no log line for the password attempt"
ok "none, password, keyboard-interactive and another user name: refused"

# Channel requests: only exec, only allowed environment, one channel.
timeout 20 "$probe" requests "$rd" n1 > "$work/req" 2>&1 || fail "requests probe: $(cat "$work/req")"
for want in "env LD_PRELOAD: refused" "env CADRE_PROBE: accepted" "pty: refused" \
	"shell: refused" "exec: accepted" "output: \[yes\]\[\]" "second channel: refused"; do
	grep -q "^$want" "$work/req" || fail "requests: expected '$want': $(cat "$work/req")"
done
ok "LD_PRELOAD env, pty, shell and a second channel refused; CADRE_* env and exec accepted"

# A host key other than the published one: another agent's key in n1's file.
start_agent "$rd" n2 127.0.1.2
rd3=$work/run3
"$agent" keygen --run-dir "$rd3" || fail "keygen 3"
mkdir -m 0700 "$rd3/agents"
cp "$rd/keys/id_ed25519" "$rd/keys/id_ed25519.pub" "$rd3/keys/"
k2=$(sed -n 's/.*"hostkey": "\(ssh-ed25519 [A-Za-z0-9+/=]*\)".*/\1/p' "$rd/agents/n2.json")
[ -n "$k2" ] || fail "no host key in n2.json"
sed "s|\"hostkey\": \"[^\"]*\"|\"hostkey\": \"$k2\"|" "$rd/agents/n1.json" > "$rd3/agents/n1.json"
chmod 0600 "$rd3/agents/n1.json"
timeout 20 "$agent" rsh --run-dir "$rd3" n1 echo should-not-run >"$work/out" 2>"$work/err"; rc=$?
[ "$rc" = 255 ] || fail "pinned key mismatch: status $rc"
grep -q "host key does not match the one the agent published" "$work/err" || fail "host key message: $(cat "$work/err")"
[ -s "$work/out" ] && fail "the command ran despite the host key"
ok "a host key other than the published one: refused with '$(cut -c1-60 "$work/err")...'"

# Permissions: the agent and the client refuse what is not private.
chmod 0644 "$rd/keys/id_ed25519"
timeout 20 "$agent" rsh --run-dir "$rd" n1 true 2>"$work/err" && fail "rsh used a 0644 key"
grep -q "permissions 0644 are too open" "$work/err" || fail "0644 key message: $(cat "$work/err")"
timeout 20 "$agent" serve --run-dir "$rd" --node n9 --addr 127.0.1.9 2>"$work/err" && fail "serve used a 0644 key"
grep -q "too open" "$work/err" || fail "serve's 0644 message: $(cat "$work/err")"
chmod 0600 "$rd/keys/id_ed25519"
chmod 0755 "$rd"
timeout 20 "$agent" serve --run-dir "$rd" --node n9 --addr 127.0.1.9 2>"$work/err" && fail "serve used a 0755 run dir"
grep -q "permissions 0755 are too open" "$work/err" || fail "0755 message: $(cat "$work/err")"
chmod 0700 "$rd"
"$agent" rsh --run-dir "$rd" n1 true || fail "rsh after restoring modes"
ok "0644 key and 0755 run dir refused by serve and rsh, with the chmod to run"

# Another local user: cannot read the run dir, so it has no key to offer;
# and the run key offered under its name is refused (above: wronguser).
if [ "$(id -u)" = 0 ] && command -v useradd >/dev/null && command -v setpriv >/dev/null; then
	u=cadre$$
	useradd -M -d /nonexistent -s /bin/sh "$u" 2>/dev/null || fail "useradd"
	extra_cleanup="userdel $u 2>/dev/null"
	uid=$(id -u "$u"); gid=$(id -g "$u")
	chmod 0711 "$work"
	timeout 20 setpriv --reuid="$uid" --regid="$gid" --clear-groups \
		"$agent" rsh --run-dir "$rd" n1 echo ran-as-other >"$work/out" 2>"$work/err"; rc=$?
	chmod 0700 "$work"
	[ "$rc" = 255 ] || fail "another user: status $rc"
	grep -q "ran-as-other" "$work/out" && fail "another user ran a command"
	grep -q "Permission denied" "$work/err" || fail "another user: $(cat "$work/err")"
	ok "another local user (uid $uid): no access to the run dir, refused"
else
	echo "$test_name: skipped the other-user check (needs root, useradd, setpriv)"
fi
exit 0
