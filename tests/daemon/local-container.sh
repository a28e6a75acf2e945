#!/bin/sh
# Real containers through the local backend on 2 virtual nodes: the agents
# (`cadre-agent serve`), launch and the bundled trainer's ranks run inside
# a directory image made by scripts/cadre-image, with charliecloud (ch-run)
# and with oci (crun, or runc where crun cannot run here), train and
# checkpoint; each agent and rank is seen inside the image (its root holds
# the image's /etc/cadre-image). Then what keeps a container from starting
# (no image, no runtime program, a missing bind) ends the attempt failed
# with the reason in status.json, nothing left running.
# A user's PyTorch program, per_node, all-reduces across the 2 nodes inside
# the charliecloud container.
# CADRE_CONTAINER_CASES (default "charliecloud oci program bad") picks the
# cases:
# tests/daemon/local-container-user.sh runs "charliecloud" as an ordinary
# user.
. "$top_srcdir/tests/daemon/local-lib.sh"
[ -z "${CADRE_DISTCHECK_FAST:-}" ] ||
    skip "the container runs that make check ran (CADRE_DISTCHECK_FAST)"
cases=${CADRE_CONTAINER_CASES:-charliecloud oci program bad}
: "${USER:=$(id -un)}"
export USER
. "$top_srcdir/tests/container-image.sh"
use_trainer

binds="[$image_builddir]"
[ "$image_tmproot" = /tmp ] || binds="[$image_builddir, $image_tmproot]"

# mkspec RUNTIME IMAGE [BINDS]: 2 nodes, a small model, a timed
# checkpoint every 2 s of training.
mkspec() {
	cat >"$spec" <<SPEC
version: 1
name: localcontainer
scheduler: { backend: local, time_limit: 2m, signal_grace: 30s }
resources: { nodes: 2 }
agent: { startup_timeout: 30s }
container: { runtime: $1, image: $2, binds: ${3:-$binds} }
trainer:
  model: { layers: 2, hidden: 32, heads: 2, intermediate: 64, vocab_size: 128, max_position: 64 }
  data: $work/shards
  seq_len: 32
  batch_size: 4
  steps: 400
  log_every: 50
  checkpoint_every: 2s
measure: { skip_steps: 2 }
SPEC
}

# inside PID: whether PID's root is the image (its marker file is there).
inside() {
	[ "$(cat "/proc/$1/root/etc/cadre-image" 2>/dev/null)" = "cadre test image" ]
}

# train RUNTIME NAME: a run in $image; checks it ran inside and finished.
train() {
	f0=$failed
	mkspec "$1" "$image"
	"$top_builddir/cadre" validate "$spec" >"$work/$2.validate" 2>&1 ||
		{ fail "$1: validate: $(cat "$work/$2.validate")"; return; }
	rd=$(newrun "$2") || fatal "mkdir"
	"$tool" train-json "$spec" 0 "$rd" "$rd/train.json" || fatal "train-json"
	id=$(submit "$rd") || fatal "submit"
	# While it runs: both agents, then a rank, inside the image.
	seen_agents=0 seen_rank=0 n=0
	# until both are seen (an agent's file may be read while it is being
	# written) or the run has ended
	while [ $n -lt 600 ] && { [ $seen_rank -eq 0 ] || [ $seen_agents -lt 2 ]; }; do
		if [ $seen_agents -lt 2 ]; then
			seen_agents=0
			for f in "$rd"/agents/node1.json "$rd"/agents/node2.json; do
				pid=$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' "$f" 2>/dev/null)
				[ -n "$pid" ] && inside "$pid" && seen_agents=$((seen_agents + 1))
			done
		fi
		for p in $(procs_of "$rd/train.json"); do
			case $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) in
			*cadre-train\ train*) inside "$p" && seen_rank=1 ;;
			esac
		done
		[ -f "$rd/status.json" ] && break
		n=$((n + 1))
		sleep 0.1
	done
	line=$(wait_state 120 "$id" done) ||
		{ fail "$1: $line; status.json: $(cat "$rd/status.json" 2>&1); job.out: $(tail -20 "$rd/job.out")"; return; }
	[ $seen_agents -eq 2 ] && [ $seen_rank -eq 1 ] ||
		fail "$1: agents seen inside the image: $seen_agents of 2, a rank: $seen_rank"
	grep -q '"event":"summary","step":400,"complete":true' "$rd/metrics.jsonl" ||
		fail "$1: metrics.jsonl: $(tail -2 "$rd/metrics.jsonl")"
	grep -q '"ranks":2' "$rd/metrics.jsonl" || fail "$1: not 2 ranks"
	[ "$(cat "$rd/checkpoints/latest")" = step-400 ] ||
		fail "$1: checkpoints: $(ls "$rd/checkpoints")"
	grep -q '"event":"checkpoint".*"due_s"' "$rd/metrics.jsonl" ||
		fail "$1: no timed checkpoint: $(grep checkpoint "$rd/metrics.jsonl")"
	grep -q "\"runtime\": \"$1\"" "$rd/container.json" ||
		fail "$1: container.json: $(cat "$rd/container.json" 2>&1)"
	grep -q "container $1: " "$rd/job.out" || fail "$1: job.out does not say which runtime"
	left=$(procs_of "$rd")
	[ -z "$left" ] || fail "$1: left running: $left"
	[ "$failed" = "$f0" ] && pass "$1 ($(sed -n 's/.*"program": "\([^"]*\)".*/\1/p' "$rd/container.json")): agents and ranks inside the image on 2 virtual nodes; 400 steps, timed and final checkpoints"
}

# broken RUNTIME IMAGE BINDS WHAT: validate refuses it at the key, naming
# WHAT; `cadre-agent wrap`, as the job script runs it on a node where it
# is so, refuses to start the container and writes WHAT into status.json.
broken() {
	mkspec "$1" "$2" "$3"
	out=$("$top_builddir/cadre" validate "$spec" 2>&1) &&
		fail "validate accepted $1 $2 $3"
	case $out in
	*"spec.yaml:6:"*"$4"*) ;;
	*) fail "validate of $1 $2 $3: $out" ;;
	esac
	rd=$(newrun "bad$nbad") || fatal "mkdir"
	nbad=$((nbad + 1))
	set -- "$1" "$2" "$4" $(echo "$3" | tr -d '[],')
	_rt=$1 _im=$2 _what=$3
	shift 3
	_b=
	for _x in "$@"; do _b="$_b --bind $_x"; done
	# shellcheck disable=SC2086
	"$agent" wrap --container "$_rt" --image "$_im" $_b --run-dir "$rd" \
	    -- true 2>"$rd/wrap.err" && fail "wrap started $_rt on $_im"
	grep -q '"reason": "failed"' "$rd/status.json" &&
	    grep -qF "$_what" "$rd/status.json" ||
		fail "wrap $_rt $_im: status.json: $(cat "$rd/status.json" 2>&1)"
}

for c in $cases; do
	case $c in
	charliecloud)
		command -v ch-run >/dev/null || skip "no ch-run (Debian charliecloud-runtime)"
		if ! ch-run "$image" -- true 2>"$work/ch.err"; then
			case $(cat "$work/ch.err") in
			*namespace*) skip "ch-run cannot make user namespaces here: $(cat "$work/ch.err")" ;;
			esac
			fatal "ch-run on the image: $(cat "$work/ch.err")"
		fi
		train charliecloud ch ;;
	oci)
		[ "$(id -u)" = 0 ] || { echo "oci: runs as root only here (rootless crun/runc is not tested)"; continue; }
		# crun refuses a host whose cgroups are half v1, half v2
		# ("hybrid"); runc runs there.
		mkdir -m 0700 "$work/probe"
		if [ -z "${CADRE_OCI_RUNTIME:-}" ] &&
		    ! "$agent" wrap --container oci --image "$image" \
		    --run-dir "$work/probe" -- true 2>"$work/crun.err"; then
			echo "oci: crun cannot run here ($(grep -v 'container oci' "$work/crun.err" | tail -1)): runc"
			CADRE_OCI_RUNTIME=runc
			export CADRE_OCI_RUNTIME
		fi
		command -v "${CADRE_OCI_RUNTIME:-crun}" >/dev/null ||
			{ fail "oci: no ${CADRE_OCI_RUNTIME:-crun} (Debian crun, runc)"; continue; }
		train oci oci ;;
	program)
		py=$(CADRE_NO_INSTALL=1 sh "$top_srcdir/tests/reference/setup.sh" 2>/dev/null) ||
			{ echo "program: no Python with torch (python3-torch): not run"; continue; }
		# the source tree is not bound into the container: $work is
		cp "$top_srcdir/tests/daemon/container-ddp.py" "$work/ddp.py" || fatal "cp"
		cat >"$spec" <<SPEC
version: 1
name: localcontainerddp
scheduler: { backend: local, time_limit: 2m, signal_grace: 30s }
resources: { nodes: 2 }
agent: { startup_timeout: 30s }
container: { runtime: charliecloud, image: $image, binds: $binds }
program:
  command: [$py, $work/ddp.py]
  launch: per_node
  env: { OMP_NUM_THREADS: "1", GLOO_SOCKET_IFNAME: lo }
SPEC
		rd=$(newrun ddp) || fatal "mkdir"
		"$tool" program-json "$spec" 0 "$rd/program.json" || fatal "program-json"
		id=$(submit "$rd") || fatal "submit"
		ok=1
		line=$(wait_state 120 "$id" done) ||
			{ ok=0; fail "program: $line; status.json: $(cat "$rd/status.json" 2>&1); job.out: $(tail -20 "$rd/job.out")"; }
		for r in 0 1; do
			[ "$(cat "$rd/ddp-$r.txt" 2>&1)" = "sum 3 world 2 image cadre test image" ] ||
				{ ok=0; fail "program: node $r: $(cat "$rd/ddp-$r.txt" 2>&1); $(tail -5 "$rd"/log/rank-$r.log 2>&1)"; }
		done
		[ $ok = 1 ] && pass "a PyTorch program per_node in the charliecloud container: gloo all-reduce over 2 nodes, the image's marker seen" ;;
	bad)
		f0=$failed nbad=0
		broken charliecloud "$work/nothere" "" "$work/nothere: No such file"
		broken charliecloud "$work/text.txt" "" "neither"
		broken charliecloud "$image" "[$image_builddir, $work/nobind]" "$work/nobind: No such file"
		# a runtime program that is not there: validate cannot know
		# $CADRE_OCI_RUNTIME; the job's preflight says it
		mkspec oci "$image"
		rd=$(newrun badprog) || fatal "mkdir"
		"$tool" train-json "$spec" 0 "$rd" "$rd/train.json" || fatal "train-json"
		id=$(CADRE_OCI_RUNTIME=/nonexistent/crun submit "$rd") || fatal "submit"
		line=$(wait_state 60 "$id" '')
		grep -q '"reason": "failed"' "$rd/status.json" &&
		    grep -qF "/nonexistent/crun is not found" "$rd/status.json" ||
			fail "no runtime program: $line; status.json: $(cat "$rd/status.json" 2>&1)"
		left=$(procs_of "$rd")
		[ -z "$left" ] || fail "no runtime program: left running: $left"
		[ "$failed" = "$f0" ] && pass "no image, a file for a directory image, a missing bind: located errors at validate; each, and a missing runtime program, the failed reason in status.json; nothing left running" ;;
	*) fatal "CADRE_CONTAINER_CASES: unknown case $c" ;;
	esac
done
exit "${failed:-0}"
