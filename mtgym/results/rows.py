"""Each command's episodes as the result file's ``rows``: one flat dict per episode,
``scenario``, ``policy`` and ``seed`` first, then the episode's row as the command recorded
it (``mtgym.evaluate.episode_row`` with the bound and common-jobs metrics).

The rows are the commands' own records, reused: nothing is recomputed here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any


def policy_rows(scenario: str, runs: Iterable[Any]) -> list[dict[str, Any]]:
    """The rows of several policies on one scenario.

    Args:
        scenario: the scenario's name.
        runs: ``mtgym.evaluate.PolicyRun``s (``name``, ``per_seed``).
    """
    return [
        {"scenario": scenario, "policy": run.name, "seed": row.get("seed"), **row}
        for run in runs
        for row in run.per_seed
    ]


#: the keys a benchmark row has besides the episode's own (``benchmark_rows``)
BENCHMARK_KEYS = ("scenario", "policy", "seed", "horizon_s", "decision_interval_s")


def benchmark_rows(
    results: Sequence[Any], decision_interval_s: float | None = None
) -> list[dict[str, Any]]:
    """The rows of a benchmark: every scenario's (``mtgym.benchmark.runner.ScenarioRuns``)
    policies that ran, in the split's order. A policy that could not run has no row; its
    reason is in the aggregates (``unsupported``).

    Each row also says how its episode was played: ``horizon_s`` (simulated seconds from
    the start; null: the whole scenario) and ``decision_interval_s`` (null: the policy's own
    schedule), so ``mtgym.benchmark.cache`` can reuse it only for the same episode.

    Args:
        results: the scenarios' episodes.
        decision_interval_s: the run's ``--decision-interval`` (None: each policy's own).
    """
    return [
        {
            "scenario": row["scenario"],
            "policy": row["policy"],
            "seed": row["seed"],
            "horizon_s": sr.horizon_s,
            "decision_interval_s": decision_interval_s,
            **row,
        }
        for sr in results
        for row in policy_rows(sr.scenario, sr.runs)
    ]


def tuning_rows(records: Iterable[Any]) -> list[dict[str, Any]]:
    """The rows of a tuning sweep: one per (scenario, policy, point tried, tuning seed).

    Args:
        records: ``mtgym.scenario.tuning.TuningRecord``s.

    Returns:
        Rows with ``scenario``, ``policy``, ``seed``, ``knob`` (the knob the point varies,
        ``""`` for the default), ``params`` (every knob's value), ``normalized_throughput``
        and ``jobs_completed``.
    """
    out = []
    for rec in records:
        for policy, t in rec.policies.items():
            for pt in t.sweep:
                seeds = zip(rec.seeds, pt.headline, pt.jobs_completed, strict=False)
                for seed, head, done in seeds:
                    out.append(
                        {
                            "scenario": rec.scenario,
                            "policy": policy,
                            "seed": seed,
                            "knob": pt.knob,
                            "params": dict(pt.params),
                            "normalized_throughput": head,
                            "jobs_completed": done,
                        }
                    )
    return out


#: a row's fields that are measured, not simulated: two runs of one episode differ there
MEASURED_FIELDS = frozenset({"wall_s", "decision_ms"})


def same_episode(a: dict[str, Any], b: dict[str, Any], ignore: Iterable[str] = ()) -> bool:
    """Whether two rows are the same episode bit for bit: every field equal (NaN equal to
    NaN) but the measured ones (``MEASURED_FIELDS``) and ``ignore`` (what the caller set
    apart, e.g. the knob that was varied).
    """
    skip = MEASURED_FIELDS | set(ignore)
    for k in (set(a) | set(b)) - skip:
        x, y = a.get(k), b.get(k)
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            continue
        if x != y:
            return False
    return True
