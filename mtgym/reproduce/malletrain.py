"""Experiment 2: MalleTrain (arXiv 2404.15668) vs FreeTrain: which settings produce a gain.

The paper claims "up to 22.3 %" more training throughput than FreeTrain without users
supplying scalability information. This experiment asks under which conditions that holds
(issue 15, item 5), with every comparison paired and given a 95 % interval:

- **Truth**: BFTrainer's measured ImageNet curves (strongly sublinear and heterogeneous:
  efficiency at 64 nodes from 0.44 to 0.92) and costs, on the Summit idle trace, a start and a
  job draw per seed, scarce and abundant supply (``malletrain_run``).
- **Declarations** FreeTrain is given: exact; costs x0.25 / x0.5 / x2 / x4 of the truth;
  linear curves from the 1-node rate; lognormal sigma = 1 curve noise (the setting where the
  previous version of this experiment found +22 %); and **no information** (FreeTrain with
  ``information="none"``: one flat linear guess and 15 s costs for every job).
- **MalleTrain variants**: the paper-style JPA (probes at 1, 1/2, 1/4, 1/8 of the maximum,
  growth capped at the largest measured size), the same **uncapped**, the
  ``online-profiling`` branch's probe sizes 1-4 capped and uncapped, and **main-branch**
  MalleTrain (starts from the declared curves and costs, updates them passively, never
  probes), compared with FreeTrain under the same declarations.

Modules: ``malletrain_run`` (instances, declarations, policies, episodes),
``malletrain_analyse`` (gains with ``mtgym.stats`` intervals, rows, verdicts),
``malletrain_report`` (markdown and figure).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from mtgym.reproduce.common import (
    IMAGENET_JOBS,
    SUMMIT_FRAGMENTS,
    SUMMIT_NODES,
    ExperimentResult,
    Workers,
    check_data,
    make_progress,
    workers_ctx,
)
from mtgym.reproduce.malletrain_analyse import NAME, PAPER_GAIN, gains, information_value, rows_for
from mtgym.reproduce.malletrain_report import plot, section
from mtgym.reproduce.malletrain_run import (
    DECLARATIONS,
    FULL,
    QUICK,
    VARIANTS,
    Sizes,
    instance,
    run_task,
    tasks,
)

__all__ = [
    "DECLARATIONS",
    "FULL",
    "NAME",
    "PAPER_GAIN",
    "QUICK",
    "VARIANTS",
    "Sizes",
    "instance",
    "run",
    "sizes_for",
]


def sizes_for(quick: bool, seeds: int | None) -> Sizes:
    """The run's sizes: ``QUICK`` or ``FULL``, with seeds 0..seeds-1 if ``seeds`` is given."""
    z = QUICK if quick else FULL
    if seeds is not None:
        if seeds < 2:
            raise ValueError(f"--seeds must be >= 2 for a paired interval, got {seeds}")
        z = replace(z, seeds=tuple(range(int(seeds))))
    return z


def run(
    data_dir: Path,
    out_dir: Path,
    *,
    quick: bool = False,
    seeds: int | None = None,
    workers: int | Workers = 1,
    progress: bool = True,
) -> ExperimentResult:
    """Run the experiment, write its figure, return rows and details."""
    check_data(data_dir, [SUMMIT_FRAGMENTS, SUMMIT_NODES, IMAGENET_JOBS])
    sizes = sizes_for(quick, seeds)
    source = (
        f"`mtgym reproduce malletrain{' --quick' if quick else ''}"
        f"{f' --seeds {seeds}' if seeds is not None else ''}` "
        f"({len(sizes.seeds)} seeds, {', '.join(sizes.regimes)} supply)"
    )
    t0 = time.perf_counter()
    todo = tasks(data_dir, sizes)
    with workers_ctx(workers) as pool, make_progress(progress) as bar:
        results = pool.map(run_task, todo, progress=bar, description="MalleTrain vs FreeTrain")
    wall = time.perf_counter() - t0
    table = gains(results)
    info = information_value(results)
    rows = rows_for(table, info, len(sizes.seeds), source)
    figs = plot(table, out_dir)
    res = ExperimentResult(
        NAME, rows, wall, quick, figs, [section(table, info, results, sizes, source)]
    )
    res.raw = {
        "sizes": {**sizes.__dict__, "seeds": list(sizes.seeds), "regimes": list(sizes.regimes)},
        "source": source,
        "episodes": results,
        "gains": [g.as_dict() for g in table],
        "information_value": [g.as_dict() for g in info],
    }
    return res
