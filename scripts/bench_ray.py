"""Benchmark: the local evaluation backend vs the Ray backend on this machine.

A sweep of scenarios x policies x seeds (default: default, hetero-mix, nas-campaign x
equal-share, greedy, freetrain, malletrain x 8 seeds = 96 episodes), timed with
``mtgym.evaluate.evaluate`` (one process) and with ``evaluate_ray`` (one task per episode on
a local Ray with ``--num-cpus`` CPUs). Also: Ray start-up and shutdown, the round trip of a
no-op task, and the overhead per task (Ray wall minus local wall / CPUs, over the tasks).
Checks that both backends give the same rows (timing fields aside). Prints figures with
rich; asserts nothing.

    .venv/bin/python scripts/bench_ray.py [--seeds 8] [--num-cpus 2] [--horizon-h 2]

``--horizon-h H`` shortens every scenario to H hours by writing copies of the preset files
under a temporary folder (removed at the end).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from mtgym.backends.ray_backend import evaluate_ray, ray_session, strip_timing  # noqa: E402
from mtgym.evaluate import evaluate  # noqa: E402
from mtgym.policy.registry import make_policy  # noqa: E402
from mtgym.scenario.registry import PRESETS_DIR, get_generator  # noqa: E402

SCENARIOS = ["default", "hetero-mix", "nas-campaign"]
POLICIES = ["equal-share", "greedy", "freetrain", "malletrain"]


def _noop() -> None:
    return None


def shorten(name: str, hours: float, folder: Path) -> str:
    """A copy of preset ``name`` with ``horizon_s`` set to ``hours`` (its path)."""
    preset = PRESETS_DIR / f"{name}.yaml"
    if not preset.is_file():
        raise SystemExit(f"--horizon-h needs a preset file; {name!r} has none (built in code)")
    text = preset.read_text()
    new, n = re.subn(r"horizon_s:\s*[0-9.eE+-]+", f"horizon_s: {hours * 3600.0}", text)
    if n != 1:
        raise SystemExit(f"{name}: cannot find one horizon_s to shorten")
    path = folder / f"{name}-{hours:g}h.yaml"
    path.write_text(new)
    return str(path)


def same(a: dict, b: dict) -> bool:
    def eq(x, y):
        return (isinstance(x, float) and math.isnan(x) and math.isnan(y)) or x == y

    a, b = strip_timing(a), strip_timing(b)
    return a.keys() == b.keys() and all(eq(a[k], b[k]) for k in a)


def main() -> None:
    a = _parse_args()
    console = Console(width=max(Console().width, 110))
    seeds = list(range(a.seeds))
    n_tasks = len(a.scenarios) * len(a.policies) * len(seeds)
    console.print(
        f"[bold]{len(a.scenarios)} scenarios x {len(a.policies)} policies x {len(seeds)} seeds"
        f" = {n_tasks} episodes[/]; {a.num_cpus} Ray CPUs on a {os.cpu_count()}-core machine"
        + (f"; horizons cut to {a.horizon_h:g} h" if a.horizon_h else "")
    )
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
        names = {s: (shorten(s, a.horizon_h, Path(tmp)) if a.horizon_h else s) for s in a.scenarios}
        for s in names.values():
            get_generator(s)
        local, t_local = _run_local(a, names, seeds, console)
        ray_times = _run_ray(a, names, seeds, console)
    L = _print_walls(a, seeds, local, t_local, ray_times, console)
    _print_overheads(a, n_tasks, L, ray_times, console)


def _parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", nargs="+", default=SCENARIOS)
    ap.add_argument("--policies", nargs="+", default=POLICIES)
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--num-cpus", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--horizon-h", type=float, default=None, help="shorten the scenarios")
    ap.add_argument("--noop-tasks", type=int, default=200)
    return ap.parse_args()


def _run_local(
    a: argparse.Namespace, names: dict[str, str], seeds: list[int], console: Console
) -> tuple[dict[str, Any], dict[str, float]]:
    """The real `mtgym evaluate` loop, one process (its table is swallowed): runs and walls."""
    local, t_local = {}, {}
    for s, arg in names.items():
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            runs = evaluate(
                get_generator(arg),
                [(p, lambda p=p: make_policy(p)) for p in a.policies],
                seeds,
                progress=False,
                scenario_name=s,
            )
        t_local[s] = time.perf_counter() - t0
        local[s] = runs
        console.print(f"local {s}: {t_local[s]:.1f} s")
    return local, t_local


@dataclass
class _RayTimes:
    """What the Ray backend measured: runs and walls per scenario, and its overheads."""

    remote: dict[str, Any] = field(default_factory=dict)
    wall: dict[str, float] = field(default_factory=dict)
    init: float = 0.0
    first: float = 0.0
    noop_latency: float = 0.0
    noop_per_task: float = 0.0
    shutdown: float = 0.0
    identical: bool = True  # rows equal to the local ones (timing aside)


def _run_ray(
    a: argparse.Namespace, names: dict[str, str], seeds: list[int], console: Console
) -> _RayTimes:
    """Start Ray once, a cold task (worker start-up + imports), the sweep, no-op tasks."""
    rt = _RayTimes()
    t0 = time.perf_counter()
    with ray_session(num_cpus=a.num_cpus) as ray:
        rt.init = time.perf_counter() - t0
        noop = ray.remote(num_cpus=1)(_noop)
        t0 = time.perf_counter()
        ray.get([noop.remote() for _ in range(a.num_cpus)])
        rt.first = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(20):
            ray.get(noop.remote())
        rt.noop_latency = (time.perf_counter() - t0) / 20
        t0 = time.perf_counter()
        ray.get([noop.remote() for _ in range(a.noop_tasks)])
        rt.noop_per_task = (time.perf_counter() - t0) / a.noop_tasks
        for s, arg in names.items():
            t0 = time.perf_counter()
            rt.remote[s] = evaluate_ray(arg, a.policies, seeds)
            rt.wall[s] = time.perf_counter() - t0
            console.print(f"ray   {s}: {rt.wall[s]:.1f} s")
        t0 = time.perf_counter()
    rt.shutdown = time.perf_counter() - t0
    return rt


def _print_walls(
    a: argparse.Namespace,
    seeds: list[int],
    local: dict[str, Any],
    t_local: dict[str, float],
    rt: _RayTimes,
    console: Console,
) -> float:
    """The wall-time table per scenario; returns the local total and records whether the
    rows were identical in ``rt``.
    """
    remote, t_ray = rt.remote, rt.wall
    tab = Table(title="wall time per scenario (s)")
    for h in ("scenario", "episodes", "local", "sum of episode wall_s", "ray", "speed-up"):
        tab.add_column(h, justify="right" if h != "scenario" else "left")
    identical = True
    for s in a.scenarios:
        ep = sum(r["wall_s"] for run in remote[s] for r in run.per_seed)
        n = len(a.policies) * len(seeds)
        tab.add_row(
            s,
            str(n),
            f"{t_local[s]:.1f}",
            f"{ep:.1f}",
            f"{t_ray[s]:.1f}",
            f"{t_local[s] / t_ray[s]:.2f}x",
        )
        for lr, rr in zip(local[s], remote[s], strict=True):
            identical &= lr.name == rr.name and all(
                same(x, y) for x, y in zip(lr.per_seed, rr.per_seed, strict=True)
            )
    L, R = sum(t_local.values()), sum(t_ray.values())
    n_tasks = len(a.scenarios) * len(a.policies) * len(seeds)
    tab.add_row("all", str(n_tasks), f"{L:.1f}", "", f"{R:.1f}", f"{L / R:.2f}x", style="bold")
    console.print(tab)
    rt.identical = identical
    return L


def _print_overheads(
    a: argparse.Namespace, n_tasks: int, L: float, rt: _RayTimes, console: Console
) -> None:
    """The table of Ray's overheads against the local wall ``L``."""
    R = sum(rt.wall.values())
    over = Table(title="Ray overheads")
    over.add_column("item")
    over.add_column("value", justify="right")
    ideal = L / a.num_cpus
    rows = [
        ("ray.init (local, private)", f"{rt.init:.2f} s"),
        (f"first {a.num_cpus} no-op tasks (worker start)", f"{rt.first:.2f} s"),
        ("no-op task round trip (sequential)", f"{rt.noop_latency * 1e3:.2f} ms"),
        (f"no-op task, {a.noop_tasks} in flight", f"{rt.noop_per_task * 1e3:.2f} ms/task"),
        ("ray.shutdown", f"{rt.shutdown:.2f} s"),
        (f"ideal sweep wall (local / {a.num_cpus})", f"{ideal:.1f} s"),
        ("sweep overhead vs ideal (ray - ideal)", f"{R - ideal:.1f} s"),
        (
            "  per task, in CPU time ((ray - ideal) x CPUs / tasks)",
            f"{(R - ideal) / n_tasks * a.num_cpus * 1e3:.0f} ms",
        ),
        ("end to end incl. init + shutdown", f"{rt.init + rt.first + R + rt.shutdown:.1f} s"),
        ("rows identical to local (timing aside)", "yes" if rt.identical else "[red]NO[/]"),
    ]
    for k, v in rows:
        over.add_row(k, v)
    console.print(over)


if __name__ == "__main__":
    main()
