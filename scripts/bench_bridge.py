"""Bench the bridge: record a short schedule, replay it twice on real torch jobs, calibrate
on run 1, predict run 2 with the calibrated simulator, print the errors.

    .venv/bin/python scripts/bench_bridge.py [--out DIR] [--time-scale 5] [--plan staggered]
    .venv/bin/python scripts/bench_bridge.py --plan gpu --record-only TRACE   # trace only

Plans (two jobs of PAL class A, i.e. the small CNN; every job goes 1 -> 2 -> 1 nodes):

- ``staggered`` (default): two nodes; a grows while b waits, then b grows while a waits, and
  b's second node is reclaimed. At most two workers at once (this machine has two cores).
- ``equal-share``: four nodes, the equal-share policy, nodes 2-3 idle only in the middle
  third; both jobs run two workers at once: four workers on two cores (contention).
- ``gpu``: ``staggered`` with job b of class B (``--model gpu``: a ResNet-50 and a
  transformer); ``scripts/gpu_check.sh`` replays it.
- ``mini``: one job, 1 node for 200 simulated s, then 2 for 100: the gpu_check dry run.

Run 2 replays the same trace; the calibration (run 1's measured table + rescale costs) is
the simulator's job profile for the prediction.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

from mtgym.bridge.calibrate import calibrate, write_bftrainer_csv, write_calibration
from mtgym.bridge.controller import ReplayConfig, replay
from mtgym.bridge.measure import measure_replay
from mtgym.bridge.record import record_episode
from mtgym.bridge.report import build_report, write_report
from mtgym.bridge.trace import read_trace
from mtgym.core.types import AppClass
from mtgym.policy.registry import make_policy
from mtgym.testing import ScriptPolicy, linear_job, tiny_instance

PLANS = ("staggered", "equal-share", "gpu", "mini")


def record(plan: str, path: Path) -> None:
    rows = [
        linear_job("a", 100, 2, 1e9, app_class=AppClass.A),
        linear_job("b", 100, 2, 1e9, app_class=AppClass.B if plan == "gpu" else AppClass.A),
    ]
    if plan == "mini":
        inst = tiny_instance(2, rows[:1], windows=[(0, 0, 300), (1, 200, 300)], t_end=300)
        pol = ScriptPolicy([(0, {0: 0}), (200, {0: 0, 1: 0})], name="mini")
    elif plan in ("staggered", "gpu"):
        windows = [(0, 0, 400), (1, 0, 300), (1, 310, 400), (2, 100, 150), (2, 200, 250)]
        inst = tiny_instance(3, rows, windows=windows, t_end=400)
        pol = ScriptPolicy(
            [(0, {0: 0, 1: 1}), (100, {0: 0, 1: 0}), (200, {0: 1, 1: 1}), (300, {0: 1, 1: 0})],
            name=plan,
        )
    else:
        windows = [(0, 0, 300), (1, 0, 300), (2, 100, 200), (3, 100, 200)]
        inst = tiny_instance(4, rows, windows=windows, t_end=300)
        pol = make_policy("equal-share")
    record_episode(inst, pol, path, scenario=f"bench-{plan}", seed=0)


def run(trace: Path, out: Path, args) -> dict:
    cfg = ReplayConfig(time_scale=args.time_scale, dp=args.dp, model=args.model)
    t = time.time()
    replay(trace, out, cfg)
    meas = measure_replay(out)
    tr = read_trace(out / "trace.jsonl")
    cal = calibrate(meas, tr)
    write_calibration(out / "calibration.json", cal)
    write_bftrainer_csv(cal, out / "calibration.csv")
    write_report(out, build_report(out, meas, trace=tr))
    print(f"  replayed {out.name} in {time.time() - t:.1f} s", flush=True)
    return {"meas": meas, "cal": cal, "trace": tr}


def fmt(v, f=",.0f"):
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, f)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="runs/bench-bridge")
    p.add_argument("--plan", default="staggered", choices=PLANS)
    p.add_argument("--record-only", default=None, metavar="TRACE", help="write the trace, exit")
    p.add_argument("--time-scale", type=float, default=5.0)
    p.add_argument("--runs", type=int, default=2, help="replays (calibrate on the first)")
    p.add_argument("--dp", default="ddp", choices=("ddp", "allreduce"))
    p.add_argument("--model", default=None)
    args = p.parse_args()
    if args.record_only:
        Path(args.record_only).parent.mkdir(parents=True, exist_ok=True)
        record(args.plan, Path(args.record_only))
        print(f"trace {args.record_only}: plan {args.plan}")
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = out / f"{stamp}-{args.plan}"
    trace = base / "trace.jsonl"
    record(args.plan, trace)
    print(f"trace {trace}: plan {args.plan}, time scale {args.time_scale}", flush=True)
    runs = [run(trace, base / f"run{i + 1}", args) for i in range(args.runs)]

    print("\nmeasured throughput (samples/s) per job and nodes, and rescale costs (s):")
    for i, r in enumerate(runs, 1):
        for j, jm in r["meas"].jobs.items():
            tp = ", ".join(f"{n} node(s) {t.samples_per_s:,.0f}" for n, t in jm.throughput.items())
            costs = ", ".join(
                f"{k} {statistics.fmean(jm.costs(k)):.2f}"
                for k in ("start", "up", "down")
                if jm.costs(k)
            )
            print(f"  run {i} job {j}: {tp}; {costs}")

    summary: dict = {"plan": args.plan, "time_scale": args.time_scale, "runs": []}
    cal1 = runs[0]["cal"]
    for i, r in enumerate(runs[1:], 2):
        folder = base / f"run{i}"
        rep = build_report(
            folder,
            r["meas"],
            calibration=cal1,
            calibration_path=str(base / "run1" / "calibration.json"),
            trace=r["trace"],
        )
        write_report(folder, rep, stem="report-calibrated")
        print(f"\nrun {i} predicted with run 1's calibration (error = predicted/measured - 1):")
        print(f"  {'job':>3} {'nodes':>5} {'predicted':>10} {'measured':>10} {'error':>8}")
        errs = []
        for j, jb in rep["jobs"].items():
            for w in jb["world_sizes"].values():
                errs.append(abs(w["error"]) if w["error"] is not None else math.inf)
                print(
                    f"  {j:>3} {w['nodes']:>5} {fmt(w['predicted']):>10} "
                    f"{fmt(w['measured']):>10} {fmt(w['error'], '+.1%'):>8}"
                )
            s = jb["samples"]
            print(
                f"  {j:>3} total samples: predicted {fmt(s['predicted'])}, measured "
                f"{s['measured']:,}, error {fmt(s['error'], '+.1%')}"
            )
        tot = rep["totals"]
        print(
            f"  max |throughput error| {max(errs):.1%}; total samples error "
            f"{fmt(tot['samples_error'], '+.1%')}; within 15 %: {max(errs) <= 0.15}"
        )
        summary["runs"].append(
            {
                "run": i,
                "max_abs_tput_error": max(errs),
                "samples_error": tot["samples_error"],
                "report": str(folder / "report-calibrated.json"),
            }
        )
    (base / "bench.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    print(f"\nfiles under {base}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
