#!/usr/bin/env python3
"""Recomputes cadre report's table from the raw run files, independently
of report/report.c, and compares it with `cadre report --format json`.

    report_recompute.py RUNS_TXT STATES_TXT SKIP_STEPS REPORT_JSON

RUNS_TXT: "RUN CONFIG REPEAT NODES BATCH RUN_DIR" per run (reportfix add);
STATES_TXT: "RUN STATE" per run, as the test recorded them in the
database. The rules are the documented ones (docs/report.md): a run's
throughput is the median samples_per_s of its step lines with step >
skip_steps over all attempts; a configuration's figures are over its done
runs; the baseline is the configuration with the fewest ranks; speedup =
median / baseline median; efficiency = speedup / (ranks / baseline ranks);
time to train and final loss are medians of the last step line's
elapsed_s and loss; peak memory the largest summary peak_rss_bytes; a
failed run whose status.json says "oom" is an out-of-memory run.
Prints the recomputed table and one line per mismatch; exits 1 on any.
"""
import json
import os
import statistics
import sys


def read_metrics(path, skip):
    sps, last, rss = [], None, None
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return sps, last, rss
    with f:
        for line in f:
            if not line.endswith("\n"):
                continue  # being written
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if not isinstance(ev, dict):
                continue
            if ev.get("event") == "step":
                try:
                    step, s = int(ev["step"]), float(ev["samples_per_s"])
                    loss, el = float(ev["loss"]), float(ev["elapsed_s"])
                except (KeyError, TypeError, ValueError):
                    continue
                if step > skip:
                    sps.append(s)
                last = (step, el, loss)
            elif ev.get("event") == "summary":
                r = ev.get("peak_rss_bytes")
                if isinstance(r, int) and (rss is None or r > rss):
                    rss = r
    return sps, last, rss


def klass(state, run_dir):
    if state == "done":
        return "done"
    if state == "cancelled":
        return "cancelled"
    if state == "failed":
        try:
            with open(os.path.join(run_dir, "status.json")) as f:
                if json.load(f).get("reason") == "oom":
                    return "oom"
        except (OSError, ValueError):
            pass
        return "failed"
    return "unfinished"


def med(v):
    return statistics.median(v) if v else None


def main():
    runs_txt, states_txt, skip, report_json = sys.argv[1:5]
    skip = int(skip)
    states = dict(l.split(None, 1) for l in open(states_txt).read().split("\n") if l)
    states = {k: v.strip() for k, v in states.items()}
    report = json.load(open(report_json))
    cfg_of_run = {r["id"]: r["config_id"] for r in report["runs"]}

    configs = {}
    for line in open(runs_txt):
        run, cfg, rep, nodes, batch, rd = line.split(None, 5)
        rd = rd.strip()
        c = configs.setdefault(int(cfg), {"ranks": int(nodes), "runs": []})
        c["id"] = cfg_of_run[run]
        sps, last, rss = read_metrics(os.path.join(rd, "metrics.jsonl"), skip)
        c["runs"].append({"class": klass(states.get(run, "queued"), rd),
                          "thr": med(sps), "last": last, "rss": rss})

    table = {}
    for i, c in sorted(configs.items()):
        done = [r for r in c["runs"] if r["class"] == "done"]
        thr = [r["thr"] for r in done if r["thr"] is not None]
        row = {
            "ranks": c["ranks"],
            "done": len(done),
            "failed": sum(r["class"] == "failed" for r in c["runs"]),
            "oom": sum(r["class"] == "oom" for r in c["runs"]),
            "cancelled": sum(r["class"] == "cancelled" for r in c["runs"]),
            "median": med(thr),
            "mean": statistics.fmean(thr) if thr else None,
            "min": min(thr) if thr else None,
            "max": max(thr) if thr else None,
            "ttt": med([r["last"][1] for r in done if r["last"]]),
            "loss": med([r["last"][2] for r in done if r["last"]]),
            "rss": max([r["rss"] for r in done if r["rss"] is not None],
                       default=None),
        }
        table[c["id"]] = row
    base = min(table.values(), key=lambda r: r["ranks"])
    for row in table.values():
        if row["median"] is not None and base["median"]:
            row["speedup"] = row["median"] / base["median"]
            row["efficiency"] = row["speedup"] / (row["ranks"] / base["ranks"])
        else:
            row["speedup"] = row["efficiency"] = None

    print("config        ranks done failed oom  median     mean      speedup  eff")
    for cid, r in table.items():
        print("%-13s %5d %4d %6d %3d  %-10s %-9s %-8s %s" % (
            cid, r["ranks"], r["done"], r["failed"], r["oom"],
            "%.3f" % r["median"] if r["median"] is not None else "-",
            "%.3f" % r["mean"] if r["mean"] is not None else "-",
            "%.4f" % r["speedup"] if r["speedup"] is not None else "-",
            "%.4f" % r["efficiency"] if r["efficiency"] is not None else "-"))

    fields = [("median", "samples_per_s_median"), ("mean", "samples_per_s_mean"),
              ("min", "samples_per_s_min"), ("max", "samples_per_s_max"),
              ("speedup", "speedup"), ("efficiency", "efficiency"),
              ("ttt", "time_to_train_s"), ("loss", "final_loss"),
              ("rss", "peak_rss_bytes")]
    bad = 0
    got = {c["config_id"]: c for c in report["configurations"]}
    if set(got) != set(table):
        print("MISMATCH: configurations %s vs %s" % (sorted(got), sorted(table)))
        return 1
    for cid, mine in table.items():
        theirs = got[cid]
        for k in ("done", "failed", "oom", "cancelled"):
            if theirs["counts"][k] != mine[k]:
                print("MISMATCH: %s %s: report %s, recomputed %s" % (
                    cid, k, theirs["counts"][k], mine[k]))
                bad += 1
        for a, b in fields:
            x, y = mine[a], theirs[b]
            if (x is None) != (y is None) or (x is not None and
                                              abs(x - y) > 1e-9 * max(1.0, abs(x))):
                print("MISMATCH: %s %s: report %r, recomputed %r" % (cid, b, y, x))
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
