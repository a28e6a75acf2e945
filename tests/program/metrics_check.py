#!/usr/bin/env python3
"""metrics_check.py FILE STEPS: checks a program's metrics.jsonl (the
program contract, docs/program.md) over all its attempts: every line a
JSON object with an "event"; the "step" events are 1..STEPS, each once
and in order (an attempt resumed from a checkpoint at N goes on at N+1),
with a finite loss, samples_per_s > 0 and elapsed_s never going back;
each "checkpoint" event comes right after its step's line and names a
directory that exists. Lines of other events (cadre's own "start" and
"summary") are let through. Prints the checkpoint steps, space
separated; exits 1 with the problems on stderr.
"""
import json
import math
import os
import sys


def main():
    path, steps = sys.argv[1], int(sys.argv[2])
    bad, want, last_elapsed, last_step, cks = [], 1, -1.0, 0, []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                ev = json.loads(line)
            except ValueError:
                bad.append(f"line {n}: not JSON: {line.strip()[:80]}")
                continue
            if not isinstance(ev, dict) or not isinstance(ev.get("event"), str):
                bad.append(f"line {n}: no event")
                continue
            if ev["event"] == "step":
                s, loss = ev.get("step"), ev.get("loss")
                if s != want:
                    bad.append(f"line {n}: step {s}, expected {want}")
                want = (s if isinstance(s, int) else want) + 1
                if not isinstance(loss, (int, float)) or not math.isfinite(loss):
                    bad.append(f"line {n}: loss {loss!r}")
                if not ev.get("samples_per_s", 0) > 0:
                    bad.append(f"line {n}: samples_per_s {ev.get('samples_per_s')!r}")
                el = ev.get("elapsed_s", -1)
                if not isinstance(el, (int, float)) or el < last_elapsed:
                    bad.append(f"line {n}: elapsed_s {el!r} after {last_elapsed}")
                else:
                    last_elapsed = el
                last_step = s
            elif ev["event"] == "checkpoint":
                if ev.get("step") != last_step:
                    bad.append(f"line {n}: checkpoint of step {ev.get('step')} after step {last_step}")
                if not os.path.isdir(ev.get("path", "")):
                    bad.append(f"line {n}: checkpoint path {ev.get('path')!r} is not a directory")
                cks.append(str(ev.get("step")))
    if want != steps + 1:
        bad.append(f"last step {want - 1}, expected {steps}")
    for b in bad[:10]:
        print(f"{path}: {b}", file=sys.stderr)
    print(" ".join(cks))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
