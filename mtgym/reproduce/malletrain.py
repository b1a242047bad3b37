"""Experiment 2: MalleTrain (arXiv 2404.15668) vs FreeTrain, where the paper makes its claim.

The paper claims "up to 22.3 %" more training throughput than prior work (FreeTrain)
"without requiring users to provide job scalability information", on NAS and HPO workloads.
Pre-registered in ``docs/malletrain-preregistration.md`` (issue 28), every comparison paired
over seeds with a 95 % interval:

- **Headline (a)**, users provide nothing: paper-style MalleTrain against FreeTrain told
  nothing (``none``); **headline (b)**, users provide what they can measure: against
  FreeTrain told curves measured offline on dedicated packed best-type nodes (``offline``).
  Both on NAS and HPO campaigns (trials of one family whose scaling differs by width, model
  size or batch size; successive halving stops them early), scarce Summit supply, metric
  ``normalized_throughput``.
- **Control** ``exact`` (FreeTrain told the runtime truth: the cost of profiling);
  **secondary** ``family``, ``linear``, noise sigma = 0.25 / 0.5 / 1; the same cells on
  BFTrainer's ImageNet replay (samples/s).

Modules: ``malletrain_campaigns`` (campaigns, offline / exact / family curves),
``malletrain_run`` (instances, declarations, tasks), ``malletrain_analyse`` (gains, verdicts,
rows), ``malletrain_report`` (diagnostics, markdown, figure). This module only wires them:
``run`` plays every task, then computes the gains, the information value of declarations,
the diagnostics and the likeliest reasons, and hands them to the report.

Per seed and workload, MalleTrain plays once (it reads no declarations) and FreeTrain once
per declaration model that applies (``family`` needs a campaign): 8 episodes on ImageNet
and 9 on each campaign workload, so 26 per seed, 520 for the full 20 seeds.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from mtgym.reproduce.common import (
    HPS_JOBS,
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
from mtgym.reproduce.malletrain_report import (
    diagnostics,
    imagenet_linearity,
    plot,
    reasons,
    section,
)
from mtgym.reproduce.malletrain_run import (
    DECLARATIONS,
    FULL,
    QUICK,
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
    "Sizes",
    "instance",
    "run",
    "sizes_for",
]


def sizes_for(quick: bool, seeds: int | None) -> Sizes:
    """The run's sizes: ``QUICK`` or ``FULL``, with seeds 0..seeds-1 if ``seeds`` is given.

    Args:
        quick: start from ``QUICK`` (3 seeds, 25 trials per campaign, 2 h) instead of
            ``FULL`` (20 seeds, 100 trials, 8 h).
        seeds: the number of paired seeds; None: the sizes' own.

    Raises:
        ValueError: ``seeds`` < 2 (a paired interval needs two seeds).
    """
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
    """Run the experiment, write its figure, return rows and details.

    Args:
        data_dir: the data folder (the Summit trace, its node list, both BFTrainer
            workloads: ImageNet for the replay, HPS for the fitted ShuffleNet family).
        out_dir: where ``malletrain_gain.png`` goes.
        quick: ``QUICK`` sizes.
        seeds: the number of paired seeds (``sizes_for``); None: the sizes' own.
        workers: a worker count or an open ``Workers`` pool.
        progress: draw a progress bar.

    Returns:
        The result: the rows of ``malletrain_analyse.rows_for`` (verdicts by the
        pre-registered rule), the figure, the detail section, and ``raw`` with the sizes,
        every episode, the gains, the information value, the diagnostics, the reasons and
        the ImageNet models' efficiency at their largest count.

    Raises:
        FileNotFoundError: a data file is missing (checked before any episode).
        ValueError: ``seeds`` < 2.
    """
    from mtgym.readers import read_bftrainer_jobs

    check_data(data_dir, [SUMMIT_FRAGMENTS, SUMMIT_NODES, IMAGENET_JOBS, HPS_JOBS])
    sizes = sizes_for(quick, seeds)
    source = (
        f"`mtgym reproduce malletrain{' --quick' if quick else ''}"
        f"{f' --seeds {seeds}' if seeds is not None else ''}` "
        f"({len(sizes.seeds)} seeds, {', '.join(sizes.workloads)})"
    )
    t0 = time.perf_counter()
    todo = tasks(data_dir, sizes)
    with workers_ctx(workers) as pool, make_progress(progress) as bar:
        results = pool.map(run_task, todo, progress=bar, description="MalleTrain vs FreeTrain")
    wall = time.perf_counter() - t0
    table = gains(results)
    info = information_value(results)
    diag = diagnostics(results)
    why = reasons(table, info, diag)
    linearity = imagenet_linearity(read_bftrainer_jobs(Path(data_dir) / IMAGENET_JOBS))
    rows = rows_for(table, info, len(sizes.seeds), source, why)
    figs = plot(table, out_dir)
    res = ExperimentResult(
        NAME,
        rows,
        wall,
        quick,
        figs,
        [section(table, info, results, sizes, source, diag, linearity)],
    )
    res.raw = {
        "sizes": {
            "seeds": list(sizes.seeds),
            "workloads": list(sizes.workloads),
            "campaign": {**sizes.campaign.__dict__, "work_hours": list(sizes.campaign.work_hours)},
            "campaign_horizon_s": sizes.campaign_horizon_s,
            "jobs": sizes.jobs,
            "horizon_s": sizes.horizon_s,
        },
        "source": source,
        "episodes": results,
        "gains": [g.as_dict() for g in table],
        "information_value": [g.as_dict() for g in info],
        "diagnostics": diag,
        "reasons": why,
        "imagenet_efficiency_at_64": linearity,
    }
    return res
