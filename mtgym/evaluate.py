"""One evaluation loop for every policy: same scenario, same seeds, same metrics and tags.

``evaluate`` runs each policy on each seed's instance (the same instance for every policy),
prints a rich table, and, with ``out``, writes ``out/results.json`` and one TensorBoard run
per policy under ``out/tb/<policy>/`` through stable-baselines3's logger, with the shared
tags (``eval/throughput``, ``eval/utilisation``, ``eval/jct_mean``, ``eval/makespan``,
``eval/upper_bound_fraction``, ``eval/samples``, ``eval/rescales``, ``solver/time_ms``), one
step per seed. Learned agents write the same tags, so TensorBoard overlays them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mtgym.generate.base import Generator
from mtgym.policy.base import Policy
from mtgym.policy.play import EpisodeResult, play

#: metric -> TensorBoard tag (the shared namespace)
TAGS = {
    "throughput": "eval/throughput",
    "utilisation": "eval/utilisation",
    "jct_mean": "eval/jct_mean",
    "jct_p99": "eval/jct_p99",
    "makespan": "eval/makespan",
    "upper_bound_fraction": "eval/upper_bound_fraction",
    "samples": "eval/samples",
    "rescales": "eval/rescales",
    "decision_ms": "solver/time_ms",
}
#: keys written per policy in results.json
RESULT_KEYS = (
    "samples",
    "throughput",
    "utilisation",
    "jct_mean",
    "jct_p99",
    "makespan",
    "rescales",
    "decision_ms",
    "upper_bound_fraction",
    "jobs_completed",
    "preemptions",
)


@dataclass
class PolicyRun:
    """One policy's results over the seeds."""

    name: str
    per_seed: list[dict[str, float]]

    def mean(self) -> dict[str, float]:
        """Mean of each metric over seeds (NaN-aware: NaN only if every seed is NaN)."""
        out = {}
        for k in RESULT_KEYS:
            vals = np.array([r[k] for r in self.per_seed], dtype=np.float64)
            ok = ~np.isnan(vals)
            out[k] = float(vals[ok].mean()) if ok.any() else float("nan")
        return out


def _row(res: EpisodeResult) -> dict[str, float]:
    m = res.metrics.as_dict()
    row = {k: float(m[k]) for k in RESULT_KEYS if k in m}
    row["decision_ms"] = res.decision_ms
    row["wall_s"] = res.wall_s
    return row


def _json_safe(x: Any) -> Any:
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_json_safe(v) for v in x]
    return x


def evaluate(
    generator: Generator,
    policies: Sequence[tuple[str, Callable[[], Policy]]],
    seeds: Sequence[int],
    *,
    out: Path | None = None,
    decision_interval_s: float | None = None,
    progress: bool = True,
    scenario_name: str | None = None,
) -> list[PolicyRun]:
    """Run every (name, factory) policy on every seed; return and optionally write results."""
    from rich.console import Console
    from rich.progress import Progress

    console = Console(width=max(Console().width, 120))
    instances = {}
    runs = [PolicyRun(name, []) for name, _ in policies]
    total = len(policies) * len(seeds)
    t_start = time.perf_counter()
    with Progress(console=console, disable=not progress, transient=True) as bar:
        task = bar.add_task("evaluating", total=total)
        for run, (name, factory) in zip(runs, policies, strict=True):
            for seed in seeds:
                if seed not in instances:
                    instances[seed] = generator(seed)
                bar.update(task, description=f"{name} seed {seed}")
                policy = factory()
                res = play(instances[seed], policy, decision_interval_s=decision_interval_s)
                row = _row(res)
                row["seed"] = seed
                run.per_seed.append(row)
                bar.advance(task)
    if out is not None:
        write_results(out, runs, seeds, scenario_name or getattr(generator, "name", "scenario"))
    elapsed = time.perf_counter() - t_start
    name = scenario_name or generator.name
    print_table(runs, console, title=f"{name}: {len(seeds)} seed(s), {elapsed:.1f} s")
    return runs


def write_results(
    out: Path, runs: Sequence[PolicyRun], seeds: Sequence[int], scenario: str
) -> None:
    """``out/results.json`` and ``out/tb/<policy>/`` event files (SB3 logger)."""
    from stable_baselines3.common.logger import configure

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"scenario": scenario, "seeds": list(seeds), "policies": {}}
    for run in runs:
        entry = run.mean()
        entry["per_seed"] = run.per_seed
        results["policies"][run.name] = entry
        logger = configure(str(out / "tb" / run.name), ["tensorboard", "csv"])
        for step, row in enumerate(run.per_seed):
            for key, tag in TAGS.items():
                v = row.get(key, float("nan"))
                if not (isinstance(v, float) and math.isnan(v)):
                    logger.record(tag, v)
            logger.dump(step)
        logger.close()
    from mtgym.core.io import atomic_write_json

    atomic_write_json(out / "results.json", _json_safe(results))


def print_table(runs: Sequence[PolicyRun], console: Any, title: str) -> None:
    """The comparison table (means over seeds)."""
    from rich.table import Table

    table = Table(title=title)
    cols = (
        "throughput",
        "upper_bound_fraction",
        "utilisation",
        "jct_mean",
        "jct_p99",
        "makespan",
        "rescales",
        "decision_ms",
    )
    heads = (
        "tput/s",
        "of UB",
        "util",
        "JCT mean s",
        "JCT p99 s",
        "makespan s",
        "rescales",
        "ms/dec",
    )
    table.add_column("policy", no_wrap=True)
    for h in heads:
        table.add_column(h, justify="right", no_wrap=True)
    for run in runs:
        m = run.mean()
        cells = []
        for c in cols:
            v = m[c]
            cells.append("n/a" if math.isnan(v) else (f"{v:.3f}" if abs(v) < 10 else f"{v:,.0f}"))
        table.add_row(run.name, *cells)
    console.print(table)
