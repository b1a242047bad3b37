"""Benchmark: decision latency of the admitting baselines at scale.

The wall time of one ``policy.decide(view)`` (the ``Policy`` interface's per-decision call,
what ``mtgym.policy.play`` times) at 64, 512 and 4,734 nodes with 16, 128, 1,024 and 4,096
jobs admitted (``make_policy(name, max_jobs=K, tuned=False)``: the untuned policy with a
fixed admission cap K).

**State.** Per machine size, the default scenario's generator (``default_generator``:
topology groups of 16, A100 and V100 groups, Longhorn-like variability, a synthetic
Summit-shaped idle supply at 35 %, drains scaled with the machine as in ``default-512``)
on N nodes with a queue of 4,096 + 128 jobs of the default job mix, all submitted in the
first seconds. Equal share (BFTrainer's non-MILP baseline, its scaled cap) plays five
decisions 60 s apart (``Args.warmup_decisions``), so some jobs run and the rest wait;
every policy then decides on that view. Admitted = min(K, active jobs) (the queue keeps at
least 4,096 active, so K always binds); the ``minima fit idle`` column says whether the
admitted jobs' minimum node counts fit the idle pool (``no (K > N)``: more admitted jobs
than the machine has nodes; most of them get 0 nodes, and the solver still weighs them).

**Timing.** A fresh policy per (policy, N, K): ``reset``, a first call, timed apart (it
loads, or with ``--cold`` compiles, the numba kernels this process has not used yet, and
FreeTrain makes its curves: ``first ms``, and per policy in a second table), then
``--repeats`` timed calls,
each on a copy of the policy as the first call left it (so every call sees the same input:
MalleTrain's profiler state included); a cell stops repeating once it has spent
``--cell-budget`` seconds. Median and p95 over the repeats.

**Node-level MILP** (``freetrain-milp``: HiGHS, CBC when HiGHS fails, as the policy does;
the solver's time limit set to ``--milp-budget``, BFTrainer's 10 s): tried from the
smallest K up at each size; a first call longer than the budget (PuLP's model building
included) or without a proven optimum (the policy then keeps its previous map) is reported
as over the budget and the larger K of that size are skipped; a model of more than
``--max-milp-binaries`` binaries (``bench_milp``'s count, 2 K x idle + 5 K) is skipped
without being built (PuLP alone would take minutes).

    .venv/bin/python scripts/bench_decision.py [--repeats 15] [--policies freetrain,greedy]
        [--json OUT] [--cold]

``--cold`` points numba at an empty cache folder first (removed at exit), so the first
calls compile: the scene's simulator kernels while it is built, the count DP's in the
first FreeTrain call.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

if "--cold" in sys.argv:  # before mtgym is imported: it reads the cache folder on import
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-decision-numba-")
    atexit.register(shutil.rmtree, os.environ["NUMBA_CACHE_DIR"], ignore_errors=True)

import argparse
import copy
import json
import platform
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numba
import numpy as np
from rich.console import Console
from rich.table import Table

from mtgym.core.instance import Instance
from mtgym.core.types import EventKind, JobStatus
from mtgym.generate.default import default_generator
from mtgym.policy.base import Policy
from mtgym.policy.registry import make_policy
from mtgym.policy.tunable import admission_order
from mtgym.sim.dynamics import advance, initial_state
from mtgym.sim.state import ClusterState
from mtgym.sim.view import SchedulerView, ViewBuilder

POLICIES = (
    "freetrain",
    "freetrain-speedup",
    "freetrain-aware",
    "malletrain",
    "greedy",
    "equal-share",
    "freetrain-milp",
)


@dataclass
class Args:
    nodes: tuple[int, ...] = (64, 512, 4734)
    jobs: tuple[int, ...] = (16, 128, 1024, 4096)
    policies: tuple[str, ...] = POLICIES
    repeats: int = 15
    cell_budget_s: float = 15.0  # a cell stops repeating after this many timed seconds
    milp_budget_s: float = 10.0  # BFTrainer's MILP time limit per event
    max_milp_binaries: int = 100_000  # larger node-level models are not built
    extra_jobs: int = 128  # queue = max(jobs) + this, so every K binds
    warmup_decisions: int = 5
    interval_s: float = 60.0
    seed: int = 0
    json: Path | None = None
    cold: bool = False


@dataclass
class Scene:
    """One machine size's decision state."""

    nodes: int
    instance: Instance
    state: ClusterState
    builders: dict[str, ViewBuilder] = field(default_factory=dict)

    def view(self, policy: Policy) -> SchedulerView:
        """The state in ``policy``'s information mode."""
        mode = str(policy.info_mode)
        if mode not in self.builders:
            self.builders[mode] = ViewBuilder(self.instance, mode)
        return self.builders[mode](self.state)


def machine() -> str:
    """CPU model, cores, load and versions, one line."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{model}, {os.cpu_count()} cores, load {load}; Python {platform.python_version()}, "
        f"numpy {np.__version__}, numba {numba.__version__}"
    )


def scene(nodes: int, args: Args) -> Scene:
    """The default scenario's machine on ``nodes`` nodes, a long queue, a few decisions in."""
    g = default_generator()
    scale = nodes / g.num_nodes
    g = replace(
        g,
        name=f"bench-decision-{nodes}",
        num_nodes=nodes,
        campaigns=(),
        supply=replace(g.supply, drains_per_hour=g.supply.drains_per_hour * scale),
        jobs=replace(g.jobs, num_jobs=max(args.jobs) + args.extra_jobs, arrival_rate_per_h=3.6e6),
    )
    inst = g(args.seed)
    state = initial_state(inst)
    driver = make_policy("equal-share", tuned=False)
    views = ViewBuilder(inst, driver.info_mode)
    driver.reset(views(state))
    for _ in range(args.warmup_decisions):
        alloc = driver.decide(views(state))
        until = state.time + args.interval_s
        state, _ = advance(state, inst, alloc, until=until, stop_on=EventKind.HORIZON, copy=False)
    return Scene(nodes, inst, state)


def make(name: str, k: int, args: Args) -> Policy:
    """The untuned policy with admission cap ``k``."""
    extra = {"time_limit_s": args.milp_budget_s} if name == "freetrain-milp" else {}
    return make_policy(name, max_jobs=k, tuned=False, **extra)


def fits(view: SchedulerView, admitted: np.ndarray, k: int) -> str:
    """Whether the admitted jobs' minima fit the idle pool."""
    if k > view.num_nodes:
        return "no (K > N)"
    idle = int(np.count_nonzero(view.available))
    return "yes" if int(view.min_nodes[admitted].sum()) <= idle else "no (K > idle)"


def time_cell(policy: Policy, view: SchedulerView, args: Args) -> dict:
    """First call, then up to ``repeats`` timed calls, each on a copy of the policy as the
    first call left it; the MILP stops after a first call over its budget.
    """
    policy.reset(view)
    t0 = time.perf_counter()
    alloc = policy.decide(view)
    first = time.perf_counter() - t0
    given = np.unique(alloc.node_job[alloc.node_job >= 0]).size
    out: dict = {"first_ms": 1e3 * first, "given": int(given), "status": "ok", "note": ""}
    last = getattr(policy, "last", None)
    if policy.name == "freetrain-milp" and (first > args.milp_budget_s or not last.optimal):
        note = f"over the budget: {last.solver} {last.status!r} after {first:.1f} s"
        out.update(status="over", note=note)
        return out
    times: list[float] = []
    while len(times) < args.repeats and sum(times) < args.cell_budget_s:
        p = copy.deepcopy(policy)
        t0 = time.perf_counter()
        p.decide(view)
        times.append(time.perf_counter() - t0)
    ms = 1e3 * np.array(times)
    out.update(median_ms=float(np.median(ms)), p95_ms=float(np.percentile(ms, 95)))
    out["repeats"] = len(times)
    return out


def milp_skip(binaries: int, over_at: int | None, args: Args) -> str | None:
    """Why the node-level MILP is not run on a cell, or None."""
    if over_at is not None:
        return f"skipped: K = {over_at:,} was over the budget"
    if binaries > args.max_milp_binaries:
        return f"skipped: {binaries:,} binaries (not built)"
    return None


def run(args: Args, console: Console) -> list[dict]:
    """Every (policy, N, K) cell, as rows."""
    rows: list[dict] = []
    for nodes in args.nodes:
        t0 = time.perf_counter()
        sc = scene(nodes, args)
        st = sc.state
        active = int(np.count_nonzero(st.status == JobStatus.ACTIVE))
        running = int(np.count_nonzero((st.status == JobStatus.ACTIVE) & (st.n_nodes > 0)))
        idle = int(np.count_nonzero(st.available))
        console.print(
            f"{nodes:,} nodes: t = {st.time:.0f} s, {idle:,} idle, {active:,} active jobs "
            f"({running:,} running), built in {time.perf_counter() - t0:.1f} s"
        )
        for name in args.policies:
            over_at = None  # the MILP's smallest K over the budget at this size
            for k in args.jobs:
                policy = make(name, k, args)
                view = sc.view(policy)
                admitted = admission_order(view)[:k]
                row = {"policy": name, "nodes": nodes, "idle": idle, "K": k,
                       "admitted": int(admitted.size), "fits": fits(view, admitted, k)}  # fmt: skip
                binaries = 2 * admitted.size * idle + 5 * admitted.size  # bench_milp's count
                skip = milp_skip(binaries, over_at, args) if name == "freetrain-milp" else None
                if skip is not None:
                    row.update(status="skipped", note=skip)
                else:
                    row.update(time_cell(policy, view, args))
                    over_at = k if over_at is None and row["status"] == "over" else over_at
                rows.append(row)
    return rows


def table(rows: list[dict], args: Args) -> Table:
    """The rows as a rich table."""
    t = Table(
        title=f"bench_decision: ms per policy.decide, median and p95 of up to {args.repeats} "
        f"calls after a first call (a cell stops after {args.cell_budget_s:.0f} s of calls)"
    )
    cols = ("policy", "nodes", "idle", "K", "admitted", "minima fit idle", "first ms",
            "median ms", "p95 ms", "calls", "jobs given nodes", "note")  # fmt: skip
    for c in cols:
        t.add_column(c, justify="left" if c in ("policy", "minima fit idle", "note") else "right")
    prev = None
    for r in rows:
        if prev is not None and r["policy"] != prev:
            t.add_section()
        prev = r["policy"]
        head = [r["policy"], f"{r['nodes']:,}", f"{r['idle']:,}", f"{r['K']:,}",
                f"{r['admitted']:,}", r["fits"]]  # fmt: skip
        first = f"{r['first_ms']:,.2f}" if "first_ms" in r else "-"
        given = f"{r['given']:,}" if "given" in r else "-"
        if r["status"] == "ok":
            mid = [f"{r['median_ms']:,.2f}", f"{r['p95_ms']:,.2f}", str(r["repeats"])]
        else:
            mid = ["-", "-", "-"]
        t.add_row(*head, first, *mid, given, r["note"])
    return t


def first_calls(rows: list[dict]) -> Table:
    """Each policy's first call in the process (numba kernels loaded or compiled there)."""
    t = Table(
        title="first call of each policy in this process (kernels loaded, or compiled with "
        "--cold; FreeTrain's curves made) vs the median of its cell"
    )
    for c in ("policy", "cell (N x K)", "first call ms", "median ms", "first - median ms"):
        t.add_column(c, justify="left" if c == "policy" else "right")
    seen: set[str] = set()
    for r in rows:
        if r["policy"] in seen or "first_ms" not in r:
            continue
        seen.add(r["policy"])
        med = r.get("median_ms", float("nan"))
        t.add_row(r["policy"], f"{r['nodes']:,} x {r['K']:,}", f"{r['first_ms']:,.1f}",
                  f"{med:,.2f}", f"{r['first_ms'] - med:,.1f}")  # fmt: skip
    return t


def parse() -> Args:
    """Command-line options."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--repeats", type=int, default=Args.repeats, help="timed calls per cell")
    p.add_argument("--policies", default=",".join(POLICIES), help="comma-separated names")
    p.add_argument("--json", type=Path, default=None, help="write the rows here")
    p.add_argument("--cell-budget", type=float, default=Args.cell_budget_s,
                   help="seconds of timed calls after which a cell stops repeating")  # fmt: skip
    p.add_argument("--milp-budget", type=float, default=Args.milp_budget_s,
                   help="freetrain-milp's time limit per call, seconds")  # fmt: skip
    p.add_argument("--max-milp-binaries", type=int, default=Args.max_milp_binaries,
                   help="larger node-level MILPs are not built")  # fmt: skip
    p.add_argument("--cold", action="store_true", help="compile numba kernels afresh")
    ns = p.parse_args()
    return Args(
        policies=tuple(x for x in ns.policies.split(",") if x),
        repeats=ns.repeats,
        cell_budget_s=ns.cell_budget,
        milp_budget_s=ns.milp_budget,
        max_milp_binaries=ns.max_milp_binaries,
        json=ns.json,
        cold=ns.cold,
    )


def main() -> None:
    args = parse()
    console = Console(width=180)
    t0 = time.perf_counter()
    mach = machine()
    console.print(f"machine: {mach}")
    cache = os.environ.get("NUMBA_CACHE_DIR", "mtgym's folder")
    console.print(f"numba cache: {'empty (--cold)' if args.cold else cache}")
    rows = run(args, console)
    console.print(table(rows, args))
    console.print(first_calls(rows))
    wall = time.perf_counter() - t0
    console.print(f"wall time {wall:.0f} s")
    if args.json is not None:
        out = {"machine": mach, "args": {k: str(v) for k, v in asdict(args).items()},
               "wall_s": wall, "rows": rows}  # fmt: skip
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
