# Sourced by tests/daemon/report-*.sh: fixture experiments as a real run
# would leave them. The database is written by tests/daemon/reportfix
# (state.h, as cadred does); each run directory gets the metrics.jsonl
# and status.json (docs/contracts.md) that cadre-train rank 0 and
# cadre-agent launch would write. These are FIXTURES, not runs.
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
. "$top_srcdir/tests/lib.sh"
cadre=$top_builddir/cadre
fix=$top_builddir/tests/daemon/reportfix
[ -x "$cadre" ] && [ -x "$fix" ] || skip "cadre or reportfix not built"

# fixture_spec FILE NAME NODES_LIST INCLUDE_NODES SEED: 2 or 3
# configurations of bert-tiny MLM on 1 rank per node, 3 repeats,
# skip_steps 10; the seed makes the run ids of two experiments differ.
fixture_spec() {
	cat > "$1" <<SPEC
version: 1
name: $2
scheduler:
  backend: local
resources:
  gpus_per_node: 0
  ranks_per_node: 1
trainer:
  model: bert-tiny
  task: mlm
  data: /scratch/shards
  seq_len: 128
  batch_size: 8
  steps: 40
  log_every: 5
  seed: $5
measure:
  skip_steps: 10
repeats: 3
matrix:
  resources.nodes: [$3]
SPEC
	if [ -n "${4:-}" ]; then
		printf 'include:\n  - resources.nodes: %s\n' "$4" >> "$1"
	fi
}

# metrics FILE BASE FROM TO [RESUMED_FROM]: a start event, then step lines
# every 5 steps from FROM to TO with samples_per_s around BASE, loss
# falling; elapsed_s continues from earlier attempts in FILE.
metrics() {
	awk -v base="$2" -v from="$3" -v to="$4" -v res="${5:-}" '
	BEGIN {
		printf "{\"event\":\"start\",\"time\":1763700000,\"step\":%d,", \
		    res == "" ? 0 : res
		printf "\"resumed_from\":%s,\"ranks\":1,\"threads\":1,", \
		    res == "" ? "null" : "\"checkpoints/step-" res "\""
		printf "\"model\":\"bert-tiny\",\"task\":\"mlm\",\"batch_size\":8,"
		printf "\"seq_len\":128,\"grad_accum\":1,\"global_batch\":8,"
		printf "\"precision\":\"fp32\",\"device\":\"cpu\",\"commit\":\"f1x7ure\"}\n"
		for (s = from; s <= to; s += 5) {
			sps = base * (1 + ((s * 7) % 11) * 0.006)
			printf "{\"event\":\"step\",\"step\":%d,\"epoch\":0,", s
			printf "\"loss\":%.4f,\"mlm_acc\":%.4f,\"lr\":0.0001,", \
			    10.5 - s * 0.05 + base * 0.002, s * 0.001
			printf "\"grad_norm\":1.5,\"samples_per_s\":%.3f,", sps
			printf "\"tokens_per_s\":%.1f,\"step_ms\":%.2f,", \
			    sps * 128, 8000 / sps
			printf "\"elapsed_s\":%.2f,\"samples\":%d}\n", s * 0.37, s * 8
		}
	}' >> "$1"
}

# summary FILE STEP RSS: the last attempt's summary event.
summary() {
	printf '{"event":"summary","step":%d,"complete":true,"exit":"done","samples":%d,"steps_this_attempt":%d,"skip_steps":10,"median_samples_per_s":1,"median_tokens_per_s":1,"final_loss":1,"mlm_acc":null,"peak_rss_bytes":%d,"elapsed_s":%s,"env":{"commit":"f1x7ure","threads":1,"ranks":1,"device":"cpu","blas":"OpenBLAS 0.3.21","mpi":"Open MPI 4.1.4"}}\n' \
	    "$2" $(($2 * 8)) "$2" "$3" "$(echo "$2" | awk '{ printf "%.2f", $1 * 0.37 + 0.5 }')" >> "$1"
}

# setstate RUN STATE [REASON]: in the database and in states.txt.
setstate() {
	"$fix" state "$sd" "$@" || return 1
	echo "$1 $2" >> "$sd/states.txt"
}

status() {
	printf '{"reason":"%s","resumable":false,"exit_status":%d,"ranks":1,"message":"%s"}\n' \
	    "$2" "$3" "$4" > "$1/status.json"
}

# make_experiment STATE_DIR EXP_ID NAME SCALE [SEED]: records the experiment and
# writes every run's files; runs.txt in STATE_DIR lists
# RUN CONFIG REPEAT NODES BATCH RUN_DIR.
#   config 0 (1 node):  r1 done, r2 done (resumed once), r3 failed
#   config 1 (2 nodes): r1 done, r2 done, r3 out of memory
#   config 2 (4 nodes, from include): r1 running, r2 cancelled, r3 queued
# SCALE multiplies the throughput of the 2-node runs (for --compare).
make_experiment() {
	sd=$1
	mkdir -p "$sd"
	rm -f "$sd/runs.txt" "$sd/states.txt"
	fixture_spec "$sd/$3.yaml" "$3" "1, 2" 4 "${5:-42}"
	"$fix" add "$sd" "$2" "$sd/$3.yaml" > "$sd/runs.txt" || return 1
	while read -r run cfg rep nodes batch rd; do
		m=$rd/metrics.jsonl
		base=$(awk -v n="$nodes" -v r="$rep" -v k="$4" 'BEGIN {
		    b = 40 + r; if (n == 2) b = b * 1.8 * k; if (n == 4) b = 200
		    printf "%.3f", b }')
		case "$cfg.$rep" in
		0.1|1.1|1.2)
			metrics "$m" "$base" 5 40
			summary "$m" 40 $((100000000 + nodes * 1000000 + rep))
			status "$rd" "done" 0 ""
			setstate "$run" "done" ;;
		0.2)
			# resumed from step 15 after a node failure (step-20
			# did not verify): 20 again
			metrics "$m" "$base" 5 20
			status "$rd" node_fail 137 "rank 0 on node1 killed by signal 9"
			echo '{"event":"checkpoint_skipped","path":"checkpoints/step-20","why":"meta.json: not JSON"}' >> "$m"
			metrics "$m" "$base" 20 40 15
			summary "$m" 40 $((100000000 + nodes * 1000000 + rep))
			status "$rd" "done" 0 ""
			setstate "$run" "done" ;;
		0.3)
			metrics "$m" "$base" 5 15
			echo '{"event":"error","kind":"data","message":"bad shard"}' >> "$m"
			status "$rd" failed 1 "rank 0 exited 1"
			setstate "$run" failed ;;
		1.3)
			metrics "$m" "$base" 5 5
			echo '{"event":"error","kind":"oom","message":"out of memory allocating 1.0 GiB"}' >> "$m"
			status "$rd" oom 3 "rank 1 on node2 ran out of memory"
			setstate "$run" failed ;;
		2.1)
			metrics "$m" "$base" 5 10
			setstate "$run" running ;;
		2.2)
			setstate "$run" cancelled "cancelled by the user" ;;
		*)
			setstate "$run" queued ;;
		esac || return 1
	done < "$sd/runs.txt"
}
