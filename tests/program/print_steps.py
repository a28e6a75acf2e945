#!/usr/bin/env python3
"""A program that reports progress only as printed lines, for cadre's
program.metrics.regex: no metrics file, no torch, one process.

It prints "step N loss L samples/s X" each step, and now and then a line
the regex should not take (a warning, not a failure):

    step 10 loss 0.53 samples/s 812.5
    step x loss

SIGUSR1 (or SIGTERM) asks for a checkpoint: at the next step it writes
$CADRE_CHECKPOINT_DIR/step-N/state.json (temporary name, then renamed),
prints "checkpoint step N path P", and exits 75 if $CADRE_STOP_FILE
exists. $CADRE_RESUME_FROM continues from such a checkpoint.
"""
import argparse
import json
import math
import os
import signal
import sys
import time

p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
p.add_argument("--steps", type=int, default=50)
p.add_argument("--step-sleep", type=float, default=0.05)
p.add_argument("--batch", type=int, default=32)
args = p.parse_args()

requested = False
def on_signal(signum, frame):
    global requested
    requested = True
signal.signal(signal.SIGUSR1, on_signal)
signal.signal(signal.SIGTERM, on_signal)

ckdir = os.environ.get("CADRE_CHECKPOINT_DIR") or "checkpoints"
stop_file = os.environ.get("CADRE_STOP_FILE", "")
step = 0
if os.environ.get("CADRE_RESUME_FROM"):
    with open(os.path.join(os.environ["CADRE_RESUME_FROM"], "state.json")) as f:
        step = json.load(f)["step"]

while step < args.steps:
    t = time.monotonic()
    time.sleep(args.step_sleep)
    step += 1
    loss = 2.0 * math.exp(-step / 20)  # a loss that falls, as a real one would
    # flush: cadre reads the lines as they come, through a pipe
    print(f"step {step} loss {loss:.4f} samples/s {args.batch / (time.monotonic() - t):.1f}",
          flush=True)
    if step % 7 == 0:
        print("step x loss", flush=True)  # malformed: the regex must skip it
    if not requested:
        continue
    requested = False
    final = os.path.join(ckdir, f"step-{step}")
    os.makedirs(final + ".tmp", exist_ok=True)
    with open(os.path.join(final + ".tmp", "state.json"), "w") as f:
        json.dump({"step": step}, f)
    os.rename(final + ".tmp", final)
    print(f"checkpoint step {step} path {os.path.abspath(final)}", flush=True)
    if stop_file and os.path.exists(stop_file):
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        sys.exit(75)  # saved and stopped: requeue me
# Done: Python puts the default action (death) back as it exits.
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
