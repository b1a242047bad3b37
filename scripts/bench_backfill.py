"""Benchmark: replay the Lublin SWF log (10,000 jobs, 256 nodes) under FCFS + EASY backfilling
and print jobs, jobs/s, wall time, utilisation and idle-window statistics. The goal is the whole
log in under 5 s. Runs on one core (BLAS threads pinned to 1). Prints figures; asserts nothing.

    .venv/bin/python scripts/bench_backfill.py [--data ../shared/data] [--repeat 3]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from mtgym.core.paths import data_dir  # noqa: E402
from mtgym.generate.backfill import easy_backfill, idle_windows  # noqa: E402
from mtgym.readers.swf import read_swf  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = data_dir()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--log", default="swf/lublin_256.swf", help="path under --data")
    ap.add_argument("--repeat", type=int, default=3, help="replays timed (the best is shown)")
    args = ap.parse_args()
    path = args.data / args.log

    t = time.perf_counter()
    log = read_swf(path)
    read_s = time.perf_counter() - t
    num_nodes = log.max_nodes or int(log.nodes.max())

    replay_s = []
    for _ in range(max(1, args.repeat)):
        t = time.perf_counter()
        schedule = easy_backfill(log, num_nodes)
        replay_s.append(time.perf_counter() - t)
    best = min(replay_s)

    t0, t1 = 0.0, float(log.submit_s[-1])
    t = time.perf_counter()
    supply = idle_windows(schedule, num_nodes, t0, t1, known_ends=True)
    windows_s = time.perf_counter() - t

    length = supply.end_s - supply.start_s
    util = schedule.utilisation(t0, t1)
    idle_ns = supply.offered_node_seconds(t0, t1)
    rows = [
        ("log", str(path)),
        ("jobs replayed", f"{schedule.num_jobs:,} ({log.dropped} dropped by reader)"),
        ("nodes", f"{num_nodes}"),
        ("read_swf wall time", f"{read_s:.3f} s"),
        ("easy_backfill wall time", f"{best:.3f} s (best of {len(replay_s)})"),
        ("jobs/s", f"{schedule.num_jobs / best:,.0f}"),
        ("idle_windows wall time", f"{windows_s:.3f} s"),
        ("span", f"[{t0:,.0f}, {t1:,.0f}) s = {(t1 - t0) / 86400:.1f} days"),
        ("utilisation", f"{util:.4f}"),
        ("1 - idle fraction (from windows)", f"{1 - idle_ns / (num_nodes * (t1 - t0)):.4f}"),
        ("mean wait", f"{schedule.wait_s.mean():,.0f} s"),
        ("idle windows", f"{supply.num_windows:,}"),
        ("median window length", f"{np.median(length):,.0f} s" if length.size else "-"),
        ("mean window length", f"{length.mean():,.0f} s" if length.size else "-"),
        ("windows with known end", f"{supply.end_known.mean():.1%}" if length.size else "-"),
        ("mean idle nodes", f"{idle_ns / (t1 - t0):.1f} of {num_nodes}"),
    ]
    table = Table(title="bench_backfill: FCFS + EASY replay of an SWF log")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for k, v in rows:
        table.add_row(k, v)
    Console().print(table)


if __name__ == "__main__":
    main()
