#!/usr/bin/env python3
"""Checks cadred's timed checkpoints against the raw files (tests/daemon/timed.sh).

  timed_check.py --at SECONDS --victim RUN --report REPORT.json RUN_DIR:STATUS.json...

For each run: the "checkpoint" events of metrics.jsonl that carry due_s,
and the lines of eval.jsonl, read here on their own, must equal what
`cadre status RUN --json` says cadred recorded; every timed checkpoint is
at its mark (elapsed_s in [due_s, due_s + 5)); the victim (requeued once)
has its first mark from attempt 1 and its second from attempt 2. Then the
report at SECONDS: per configuration, the median over its runs of the
steps and samples at the mark, of the runs' throughputs (each the median
samples_per_s of its step lines past skip_steps) and of the eval accuracy,
recomputed here from the raw files, must equal `cadre report --at`'s JSON.
Prints PASS/FAIL lines; exits 1 on any FAIL.
"""
import argparse
import json
import os
import statistics
import sys

failed = False


def ok(what):
    print("PASS: " + what)


def bad(what):
    global failed
    failed = True
    print("FAIL: " + what)


def close(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


def raw_run(run_dir):
    """The run's timed checkpoints {due: {...}}, throughput, attempts."""
    ck, sps, starts, skip = {}, [], 0, None
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            o = json.loads(line)
            ev = o.get("event")
            if ev == "start":
                starts += 1
            elif ev == "checkpoint" and "due_s" in o:
                ck[o["due_s"]] = {"step": o["step"], "samples": o["samples"],
                                  "elapsed_s": o["elapsed_s"], "start": starts}
            elif ev == "step":
                sps.append((o["step"], o["samples_per_s"]))
            elif ev == "summary":
                skip = o.get("skip_steps")
    ev = {}
    p = os.path.join(run_dir, "eval.jsonl")
    if os.path.exists(p):
        with open(p) as f:
            for line in f:
                o = json.loads(line)
                ev[o["step"]] = o
    for c in ck.values():
        e = ev.get(c["step"])
        c["loss"] = e.get("loss") if e else None
        c["accuracy"] = e.get("accuracy") if e else None
    measured = [v for s, v in sps if skip is None or s > skip]
    return ck, (statistics.median(measured) if measured else None), starts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--at", type=float, required=True)
    ap.add_argument("--victim", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    per_config = {}
    for arg in a.runs:
        run_dir, status = arg.rsplit(":", 1)
        run = os.path.basename(run_dir)
        ck, thr, starts = raw_run(run_dir)
        with open(status) as f:
            st = json.load(f)
        sr = [r for r in st["runs"] if r["id"] == run][0]
        rec = {c["due_s"]: c for c in sr.get("checkpoints", [])}
        if sorted(rec) != sorted(ck):
            bad("run %s: cadred recorded marks %s, metrics.jsonl has %s" %
                (run, sorted(rec), sorted(ck)))
            continue
        if a.at not in ck:
            bad("run %s: no checkpoint at %g s (marks %s)" % (run, a.at, sorted(ck)))
            continue
        same = True
        for due, c in ck.items():
            r = rec[due]
            if (r["step"] != c["step"] or r["samples"] != c["samples"] or
                    not close(r["elapsed_s"], c["elapsed_s"]) or
                    not close(r["eval_loss"], c["loss"]) or
                    not close(r["eval_accuracy"], c["accuracy"])):
                same = False
                bad("run %s at %g s: cadred %s, raw files %s" % (run, due, r, c))
            if not (due <= c["elapsed_s"] < due + 5):
                same = False
                bad("run %s: the checkpoint due at %g s was taken at %.2f s of training" %
                    (run, due, c["elapsed_s"]))
            if c["loss"] is None:
                same = False
                bad("run %s: the checkpoint at %g s was not evaluated" % (run, due))
        if same:
            ok("run %s: %d timed checkpoints (%s s), at their marks, evaluated, "
               "as cadred recorded them" % (run, len(ck), ", ".join("%g" % d for d in sorted(ck))))
        if run == a.victim:
            marks = sorted(ck)
            atts = [rec[d]["attempt"] for d in marks]
            if starts == 2 and atts[:2] == [1, 2] and [ck[d]["start"] for d in marks[:2]] == [1, 2]:
                ok("requeued run %s: the 1st mark from attempt 1, the 2nd from attempt 2, "
                   "at %.2f s and %.2f s of training" % (run, ck[marks[0]]["elapsed_s"],
                                                          ck[marks[1]]["elapsed_s"]))
            else:
                bad("requeued run %s: %d starts, marks %s by attempts %s" % (run, starts, marks, atts))
        cfg = sr["config"]
        c = ck[a.at]
        per_config.setdefault(cfg, []).append((c["step"], c["samples"], thr, c["accuracy"], c["loss"]))
    with open(a.report) as f:
        rep = json.load(f)
    got = {}
    for t in rep.get("at", []):
        if abs(t.get("seconds", -1) - a.at) < 0.5:
            for row in t.get("configs", []):
                got[row["config"]] = row
    if not got:
        bad("the report has no table at %g s: %s" % (a.at, json.dumps(rep.get("at"))[:300]))
        return
    for cfg, vals in sorted(per_config.items()):
        want = {
            "steps": statistics.median(v[0] for v in vals),
            "samples": statistics.median(v[1] for v in vals),
            "samples_per_s": statistics.median(v[2] for v in vals),
            "accuracy": statistics.median(v[3] for v in vals),
            "loss": statistics.median(v[4] for v in vals),
        }
        row = got.get(cfg)
        if row is None:
            bad("report at %g s: no row for configuration %s" % (a.at, cfg))
            continue
        diff = [k for k in want if not close(row.get(k, {}).get("median") if isinstance(row.get(k), dict) else row.get(k), want[k])]
        if diff:
            bad("report at %g s, configuration %s: %s differ: report %s, recomputed %s" %
                (a.at, cfg, diff, {k: row.get(k) for k in diff}, {k: want[k] for k in diff}))
        else:
            ok("report at %g s, configuration %s (%d runs): steps %g, samples %g, "
               "samples/s %.2f, accuracy %.4f, loss %.4f as recomputed" %
               (a.at, cfg, len(vals), want["steps"], want["samples"], want["samples_per_s"],
                want["accuracy"], want["loss"]))


main()
sys.exit(1 if failed else 0)
