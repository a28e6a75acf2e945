#!/bin/sh
# cadred through the slurm-rest backend (libcurl to the private Slurm's
# slurmrestd on its unix socket, tests/slurm/): cadred and cadre run as
# the REST user, whom rest_auth/local trusts, with the fake agent and
# trainer (tests/daemon/cadred-fake-*). A 2-node run ends done; a run
# whose trainer exits 75 once is requeued (slurmrestd has no requeue: the
# daemon submits anew) and done at its second attempt.
. "$top_srcdir/tests/slurm/lib.sh"
. "$top_srcdir/tests/daemon/cadred-lib.sh"
if ! command -v setpriv >/dev/null 2>&1; then
	echo "SKIP: no setpriv"
	exit 77
fi
chown -R "$rest_user" "$work/d" "$work/ctl"
chmod 0755 "$work/ctl"
# setpriv execs (runuser would stay as the parent, and cadred_stop would
# signal runuser instead of cadred)
cadred_as="setpriv --reuid=$rest_user --regid=$(id -g "$rest_user") --init-groups"
extra_cleanup='cadred_stop KILL'
cadred_start

cat > "$work/rest.yaml" <<SPEC
version: 1
name: rest
scheduler:
  backend: slurm-rest
  time_limit: 10m
  rest: { url: "unix://$rest_sock" }
agent: { startup_timeout: 10s }
trainer: { model: bert-tiny, data: /nonexistent, steps: 10 }
measure: { skip_steps: 0 }
retries: { backoff: 1s }
include:
  - { trainer.seed: 1, resources.nodes: 2 }
  - { trainer.seed: 75 }
SPEC
chmod 0644 "$work/rest.yaml"
echo 0 > "$work/ctl/mode-1"
echo "75 0" > "$work/ctl/mode-75"
chmod 0644 "$work/ctl"/mode-*
id=$(cadre submit "$work/rest.yaml" 2>/dev/null)
[ -n "$id" ] || { fail "submit: $(tail -n 5 "$work/d/cadred.log")"; exit 1; }
set -- $(run_ids "$work/rest.yaml")
for r in "$@"; do
	if wait_run 120 "$r" done; then
		pass "slurm-rest: run $r done after $(run_field "$r" attempts) attempt(s)"
	else
		fail "slurm-rest: run $r $(run_field "$r" state): $(tail -n 5 "$work/d/cadred.log")"
	fi
done
check "slurm-rest: the run preempted once took 2 attempts" \
    "$(for r in "$@"; do run_field "$r" attempts; done | sort | tr '\n' ' ')" "1 2 "
exit $failed
