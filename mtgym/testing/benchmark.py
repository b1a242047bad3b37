"""A one-scenario benchmark split for tests of ``mtgym benchmark`` (the cache, the journal):
the split, its command line and a comparison that ignores measured timing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mtgym.benchmark.splits import Split, SuiteScenario

#: one toy scenario, two quick seeds
ONE = Split(
    name="one",
    description="one toy scenario",
    scenarios=(SuiteScenario("toy-two-jobs", None),),
    seed_start=9000,
    quick_seeds=2,
)
#: timing fields: measured, so equal only where a row is reused
TIMING = ("wall_s", "decision_ms")


def untimed(x: Any) -> Any:
    """``x`` (dicts and lists, nested) without the ``TIMING`` fields."""
    if isinstance(x, dict):
        return {k: untimed(v) for k, v in x.items() if k not in TIMING}
    if isinstance(x, list):
        return [untimed(v) for v in x]
    return x


def bench_argv(tmp_path: Path, out: str, *extra: str) -> list[str]:
    """``mtgym benchmark`` on split ``one``, quick, ``greedy`` judged, without the
    clairvoyant (its planning plays every candidate: the tests of it name it), registry
    ``tmp_path/reg``, output ``tmp_path/out``, then ``extra``.
    """
    return [
        "benchmark",
        "--split",
        "one",
        "--quick",
        "--no-progress",
        "--no-clairvoyant",
        "--policy",
        "greedy",
        "--results-dir",
        str(tmp_path / "reg"),
        "--out",
        str(tmp_path / out),
        *extra,
    ]
