#!/bin/sh
# Gradient checkpointing (keep each layer's input, recompute the layer in
# backward) gives bitwise the same gradients, losses and weights as keeping
# every activation, with dropout on (its Philox masks are recomputed too).
set -eu
: "${top_builddir:=.}"
train="$top_builddir/cadre-train"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rc=0
for task in pretrain classify; do
	for ck in off on; do
		flag=
		[ "$ck" = on ] && flag=--grad-checkpointing
		"$train" synthetic --quiet --model bert-tiny --task "$task" --batch 4 --seq 32 \
		    --steps 3 --dropout 0.1 --threads 2 --out "$work/$task-$ck" $flag >/dev/null
		cut -d' ' -f1-5 "$work/$task-$ck/losses.txt" > "$work/$task-$ck/losses"
	done
	for f in step0.safetensors final.safetensors losses; do
		if cmp -s "$work/$task-off/$f" "$work/$task-on/$f"; then
			echo "$task: $f bitwise equal with checkpointing on and off"
		else
			echo "FAIL: $task: $f differs with checkpointing on and off"
			rc=1
		fi
	done
done
exit $rc
