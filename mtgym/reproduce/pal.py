"""Experiment 3: PAL and PM-First (arXiv 2408.11919; artifact ``hal-uw/blox-pal``).

Three parts, run by ``run``:

- the eight Sia-Philly traces (Fig. 10) on the headline draw (``--draw artifact``, the
  artifact's own per-GPU draw, by default) and on ``Sizes.draws`` other draws (``seed:N``),
  reported as a distribution;
- the locality sweep (Fig. 12) on workload-6, with PAL's constant lambda and, as a
  sensitivity run, a host-count-dependent one, with the share of GPU-hours spanning hosts;
- the Synergy experiment (Figs. 13, 15, 16): 256 GPUs, FIFO / LAS / SRTF, 8-14 jobs/h.

Modules: ``pal_run`` (episodes), ``pal_analyse`` (gains, rows, verdicts), ``pal_report``
(markdown and figures). The references are fixed in ``pal_analyse`` by the artifact's plot
scripts.

Which placements each part plays: the headline set all six of ``pal_run.POLICIES`` (PAL,
PM-First, Blox's packed and random, sticky and not); the other draws, the locality sweep
and its sensitivity run the four of ``SPREAD_POLICIES`` / ``LOCALITY_POLICIES`` (no random
placement); Synergy ``SYNERGY_POLICIES`` under each scheduler order
of ``SYNERGY_ORDERS``. A task is one instance with several placements
(``pal_run.PhillyTask``), so the instance is built once per task.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtgym.reproduce.common import (
    PAL_TRACE,
    PAL_VARIABILITY,
    ExperimentResult,
    Workers,
    check_data,
    make_progress,
    workers_ctx,
)
from mtgym.reproduce.pal_analyse import (
    LOCALITY_TRACE,
    Setup,
    analyse,
    class_a_stats,
    rows_for,
)
from mtgym.reproduce.pal_report import plot, section
from mtgym.reproduce.pal_run import (
    ARTIFACT,
    DETERMINISTIC,
    LOCALITY,
    POLICIES,
    ROUND_S,
    PhillyTask,
    SynergyTask,
    parse_draw,
    philly_instance,
    run_philly,
    run_rounds,
    run_synergy,
)

__all__ = ["DETERMINISTIC", "FULL", "POLICIES", "QUICK", "ROUND_S", "Sizes", "run", "run_rounds"]

NAME = "pal"
LOCALITY_POLICIES = ("pal", "pm-first", "packed-sticky", "packed-nonsticky")
SPREAD_POLICIES = ("pal", "pm-first", "packed-sticky", "packed-nonsticky")
SYNERGY_POLICIES = ("pal", "pm-first", "packed-nonsticky")
SYNERGY_ORDERS = ("fifo", "las", "srtf")


@dataclass(frozen=True)
class Sizes:
    """Experiment size.

    Attributes:
        traces: the Sia-Philly workloads (1-8) of the set; the first also gives each
            draw's class-A factors for the report.
        draws: other per-GPU draws for the spread (``"seed:N"``); the headline draw is
            ``--draw`` and is skipped here if listed.
        lambdas: the locality sweep's lambdas (factor on a job's iteration time when it
            spans hosts), on workload-6.
        growth: host-count-dependent locality of the sensitivity run (0 = no sensitivity
            run).
        synergy_loads: the Synergy arrival rates, jobs/h.
        synergy_jobs: jobs per Synergy episode.
        max_jobs: keep the first ``max_jobs`` jobs of each trace (None: whole traces, the
            only setting compared with the artifact's own numbers).
    """

    traces: tuple[int, ...]
    draws: tuple[str, ...]
    lambdas: tuple[float, ...]
    growth: float
    synergy_loads: tuple[float, ...]
    synergy_jobs: int
    max_jobs: int | None = None


FULL = Sizes(
    traces=tuple(range(1, 9)),
    draws=tuple(f"seed:{s}" for s in range(5)),
    lambdas=(1.0, 1.5, 2.0, 2.5, 3.0),
    growth=0.5,
    synergy_loads=(8.0, 10.0, 12.0, 14.0),
    synergy_jobs=120,
)
#: Quick: two traces, two other draws, the sweep's ends, two Synergy loads with fewer jobs.
QUICK = Sizes(
    traces=(1, 4),
    draws=("seed:0", "seed:1"),
    lambdas=(1.0, 3.0),
    growth=0.5,
    synergy_loads=(8.0, 14.0),
    synergy_jobs=60,
)


def run(
    data_dir: Path,
    out_dir: Path,
    *,
    quick: bool = False,
    workers: int | Workers = 1,
    progress: bool = True,
    sizes: Sizes | None = None,
    draw: str = ARTIFACT,
    completion_at_round: bool = False,
) -> ExperimentResult:
    """Run the experiment, write its figures, return rows and details.

    Args:
        data_dir: the data folder (eight Sia-Philly traces, Longhorn variability files).
        out_dir: where ``pal_jct.png`` and ``pal_locality.png`` go.
        quick, sizes: ``QUICK`` sizes, or explicit ``sizes`` (which win; tests use small ones).
        workers: a worker count or an open ``Workers`` pool.
        progress: draw progress bars (one per part).
        draw: the headline per-GPU draw: ``"artifact"`` (blox-pal's own) or ``"seed:N"``.
        completion_at_round: record completions at the next round boundary, as the artifact.

    Raises:
        ValueError: a bad ``draw`` (``"artifact"`` or ``"seed:N"``).
        FileNotFoundError: missing data.
    """
    parse_draw(draw)
    z = sizes or (QUICK if quick else FULL)
    _check_pal_data(data_dir)
    plan = _Plan(
        z, draw, tuple(x for x in z.draws if x != draw), str(data_dir), bool(completion_at_round)
    )
    t0 = time.perf_counter()
    with workers_ctx(workers) as pool, make_progress(progress) as bar:
        ep = _run_episodes(plan, pool, bar)
    wall = time.perf_counter() - t0
    d, others, at_round = plan.data, plan.others, plan.at_round
    class_a = {
        x: class_a_stats(philly_instance(d, z.traces[0], LOCALITY, x).cluster.slowdown[:, 0])
        for x in (draw, *others)
    }
    setup = Setup(
        head_draw=draw,
        traces=z.traces,
        draws=others,
        lambdas=z.lambdas,
        growth=z.growth,
        whole_traces=z.max_jobs is None,
        completion_at_round=at_round,
    )
    a = analyse(
        ep.records,
        ep.locality,
        ep.synergy,
        setup,
        class_a=class_a,
        set_wall_s=ep.set_wall_s,
        synergy_wall_s=ep.synergy_wall_s,
    )
    rows = rows_for(a)
    figs = plot(a, ep.records, Path(out_dir))
    sections = [section(a, rows, ep.records, list(others))]
    res = ExperimentResult(NAME, rows, wall, quick, figs, sections)
    res.raw = {
        "sizes": {k: list(v) if isinstance(v, tuple) else v for k, v in z.__dict__.items()},
        "draw": draw,
        "completion_at_round": at_round,
        "set_wall_s": ep.set_wall_s,
        "synergy_wall_s": ep.synergy_wall_s,
        "episodes": ep.records,
        "locality_episodes": ep.locality,
        "synergy_episodes": ep.synergy,
        "headline": a.head,
        "spread": a.spread,
        "class_a": class_a,
        "locality": a.locality,
        "sensitivity": a.sensitivity,
        "synergy": a.synergy,
    }
    return res


def _check_pal_data(data_dir: Path) -> None:
    """Raise ``FileNotFoundError`` unless the eight traces and the variability files exist.

    All eight traces are needed even for a subset: Synergy resamples the demands of all of
    them. The variability files are the per-GPU Longhorn profiles of ResNet, BERT and
    PageRank.

    Args:
        data_dir: the data folder.
    """
    check_data(
        data_dir,
        [PAL_TRACE.format(k=k) for k in range(1, 9)]
        + [
            f"{PAL_VARIABILITY}/{f}"
            for f in (
                "resnet-longhorn-agg.csv",
                "bert-longhorn-agg.csv",
                "pagerank-longhorn-agg.csv",
            )
        ],
    )


@dataclass(frozen=True)
class _Plan:
    """What ``run`` plays: the sizes, the headline draw and the others, the data folder,
    and whether completions are recorded at round boundaries.

    Attributes:
        sizes: the experiment's sizes.
        draw: the headline draw (``"artifact"`` or ``"seed:N"``).
        others: ``sizes.draws`` without the headline draw.
        data: the data folder, as a string (the instance caches' key).
        at_round: ``completion_at_round``.
    """

    sizes: Sizes
    draw: str
    others: tuple[str, ...]
    data: str
    at_round: bool


@dataclass(frozen=True)
class _Episodes:
    """The episodes' records: the set (headline and other draws), the locality sweep and
    Synergy, with the wall times of the headline set and of Synergy.

    Each record is one (instance, placement) episode (``pal_run._record``).

    Attributes:
        records: the set on the headline draw (every placement), then on the other draws.
        locality: the locality sweep (and its sensitivity run), every draw.
        synergy: the Synergy episodes.
        set_wall_s: wall seconds of the headline set alone (a report row: the artifact
            takes about 180 min).
        synergy_wall_s: wall seconds of the Synergy part.
    """

    records: list[dict[str, Any]]
    locality: list[dict[str, Any]]
    synergy: list[dict[str, Any]]
    set_wall_s: float
    synergy_wall_s: float


def _run_episodes(plan: _Plan, pool: Any, bar: Any) -> _Episodes:
    """Play the set, the other draws, the locality sweep and Synergy on ``pool``.

    Each part is one ``pool.map`` (with its own progress bar), so the wall time of the
    headline set and of Synergy can be taken apart.

    Args:
        plan: what to play.
        pool: an open ``common.Workers``.
        bar: the rich progress display (``common.make_progress``).
    """
    z, d, at_round, pols = plan.sizes, plan.data, plan.at_round, tuple(POLICIES)
    t0 = time.perf_counter()
    main = pool.map(
        run_philly,
        [
            PhillyTask(k, LOCALITY, plan.draw, pols, d, z.max_jobs, completion_at_round=at_round)
            for k in z.traces
        ],
        progress=bar,
        description=f"PAL set: {len(z.traces)} traces x {len(pols)} placements",
    )
    set_wall = time.perf_counter() - t0
    extra = pool.map(
        run_philly,
        [
            PhillyTask(k, LOCALITY, x, SPREAD_POLICIES, d, z.max_jobs, completion_at_round=at_round)
            for x in plan.others
            for k in z.traces
        ],
        progress=bar,
        description="PAL set on other draws",
    )
    growths = (0.0, z.growth) if z.growth > 0 else (0.0,)
    sweep = pool.map(
        run_philly,
        [
            PhillyTask(
                LOCALITY_TRACE,
                lam,
                x,
                LOCALITY_POLICIES,
                d,
                z.max_jobs,
                gr,
                completion_at_round=at_round,
            )
            for gr in growths
            for x in (plan.draw, *plan.others)
            for lam in z.lambdas
        ],
        progress=bar,
        description=f"locality sweep (workload-{LOCALITY_TRACE})",
    )
    t1 = time.perf_counter()
    synergy = pool.map(
        run_synergy,
        [
            SynergyTask(
                load, order, SYNERGY_POLICIES, d, z.synergy_jobs, completion_at_round=at_round
            )
            for order in SYNERGY_ORDERS
            for load in z.synergy_loads
        ],
        progress=bar,
        description="Synergy: 256 GPUs, FIFO / LAS / SRTF",
    )
    return _Episodes(
        records=[r for rs in main + extra for r in rs],
        locality=[r for rs in sweep for r in rs],
        synergy=[r for rs in synergy for r in rs],
        set_wall_s=set_wall,
        synergy_wall_s=time.perf_counter() - t1,
    )
