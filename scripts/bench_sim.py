"""Benchmark: replay the whole 14.9-day Summit idle trace (4,734 nodes) with BFTrainer's
1,001 ImageNet jobs under equal share, and print events processed, events/s, wall time and
peak memory. Runs on one core (BLAS threads pinned to 1). Prints figures; asserts nothing.

    .venv/bin/python scripts/bench_sim.py [--data ../shared/data] [--max-jobs 10]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from mtgym.core.paths import data_dir  # noqa: E402
from mtgym.generate.replay import SummitReplay  # noqa: E402
from mtgym.policy.equal_share import EqualShare  # noqa: E402
from mtgym.policy.play import play  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Args:
    data: Path = field(default_factory=data_dir)
    jobs: str = "bftrainer-imagenet-1001j.csv"
    max_jobs: int = 10  # BFTrainer's maxJ
    debug: bool = False


def parse() -> Args:
    a = Args()
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--data",
        type=Path,
        default=a.data,
        help="folder with the Summit data (default: %(default)s)",
    )
    p.add_argument("--jobs", default=a.jobs, help="workload CSV in --data (default: %(default)s)")
    p.add_argument(
        "--max-jobs", type=int, default=a.max_jobs, help="concurrent jobs (default: %(default)s)"
    )
    p.add_argument("--debug", action="store_true", help="check invariants after every step (slow)")
    ns = p.parse_args()
    return Args(ns.data, ns.jobs, ns.max_jobs, ns.debug)


def main() -> None:
    args = parse()
    console = Console()
    t0 = time.perf_counter()
    gen = SummitReplay(
        args.data / "summit-idle-fragments.csv.gz",
        args.data / "summit-nodes.csv",
        args.data / args.jobs,
    )
    inst = gen(0)
    t_load = time.perf_counter() - t0
    t1 = time.perf_counter()
    res = play(inst, EqualShare(args.max_jobs), to_horizon=True, debug=args.debug)
    t_run = time.perf_counter() - t1
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    m = res.metrics
    table = Table(title="bench_sim: Summit 14.9-day replay, 1,001 ImageNet jobs, equal share")
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [
        (
            "nodes / idle windows / jobs",
            f"{inst.num_nodes:,} / {inst.supply.num_windows:,} / {inst.num_jobs:,}",
        ),
        ("simulated span (days)", f"{(res.state.time - inst.t_start) / 86400:.2f}"),
        ("events processed", f"{m.events:,}"),
        ("decision epochs", f"{res.decisions:,}"),
        ("load (read + build) s", f"{t_load:.2f}"),
        ("simulate s", f"{t_run:.2f}"),
        ("wall s (total)", f"{t_load + t_run:.2f}"),
        ("events / s (simulate)", f"{m.events / t_run:,.0f}"),
        ("decisions / s", f"{res.decisions / t_run:,.0f}"),
        ("policy ms / decision", f"{res.decision_ms:.3f}"),
        ("peak RSS MB", f"{peak_mb:.0f}"),
        ("jobs completed", f"{m.jobs_completed:,}"),
        ("makespan h", f"{m.makespan / 3600:.1f}"),
        ("utilisation of offered node-time", f"{m.utilisation:.3f}"),
    ]
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)


if __name__ == "__main__":
    main()
