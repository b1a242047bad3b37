"""PAL experiment, part 1 of 3: run the episodes (instances, the round loop, the tasks).

Nothing here draws a conclusion: every task returns one flat dict of numbers per policy,
which ``pal_analyse`` turns into gains and verdicts and ``pal_report`` into markdown and
figures.

Setup (docs/papers.md §3.6, ``mtgym.generate.pal_philly``): 16 hosts x 4 GPUs (Sia-Philly) or
64 x 4 (Synergy), rigid jobs, a placement round every 360 s, iteration time = base x the
slowest GPU's Longhorn factor for the job's class x lambda when the job spans hosts, no
restart cost. Placements are created through the policy registry.

Completions are recorded at their exact times by default. ``completion_at_round`` records
each at the next round boundary instead, as the artifact's ``blox_manager.update_metrics``
does; that boundary accounts for the 0.1-0.3 % JCT offset between the two (docs/papers.md,
addendum 2): with it, the mean JCTs on workload-3 equal the artifact's within 0.01 %. It
changes what is recorded, not the trajectory: a finished job's GPUs are free from its true
finish on either way, and nobody is placed on them before the next round. So it is applied
to the final state's finish times, outside the compiled engine.

Every episode runs through ``run_rounds`` (a round loop equivalent to ``play`` with
``decision_interval_s=ROUND_S``), which also integrates the GPU-seconds of jobs spanning
hosts for the locality sweep. Instances are cached per worker process (``lru_cache``), so
one task's placements share one instance.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.types import EventKind, JobStatus
from mtgym.metrics import EpisodeMetrics, compute_metrics
from mtgym.policy.base import Policy
from mtgym.reproduce.common import PAL_TRACE, PAL_VARIABILITY, make
from mtgym.sim.dynamics import advance, apply_allocation, initial_state
from mtgym.sim.view import ViewBuilder

ROUND_S = 360.0
LOCALITY = 1.7
#: Placement policies: key -> (registered name, kwargs).
POLICIES: dict[str, tuple[str, dict[str, Any]]] = {
    "pal": ("pal", {}),
    "pm-first": ("pm-first", {}),
    "packed-sticky": ("packed", {"sticky": True}),
    "packed-nonsticky": ("packed", {"sticky": False}),
    "random-sticky": ("random", {"sticky": True, "seed": 0}),
    "random-nonsticky": ("random", {"sticky": False, "seed": 0}),
}
#: Policies whose FIFO round is a deterministic function of (active jobs, node map, idle
#: nodes): ``run_rounds`` may skip the rounds in which none of these changes.
DETERMINISTIC = ("pal", "pm-first", "packed-sticky", "packed-nonsticky")
#: Events after which a round's inputs may differ.
_CHANGES = (
    EventKind.JOB_COMPLETED
    | EventKind.JOB_ARRIVED
    | EventKind.TRIAL_STOPPED
    | EventKind.NODE_IDLE
    | EventKind.NODE_RECLAIMED
)
#: Draw names: ``"artifact"`` or ``"seed:N"`` (the seed's variability stream).
ARTIFACT = "artifact"


def parse_draw(draw: str) -> tuple[str, int]:
    """``"artifact"`` -> ("artifact", 0); ``"seed:N"`` -> ("stream", N).

    The result is ``PALPhilly``'s ``draw`` and the seed it is built with: the artifact's
    own draw (Python ``random`` seeded 42) ignores the seed, a stream draw is the seed's.

    Args:
        draw: the ``--draw`` text.

    Raises:
        ValueError: any other text.
    """
    if draw == ARTIFACT:
        return "artifact", 0
    if draw.startswith("seed:") and draw[5:].isdigit():
        return "stream", int(draw[5:])
    raise ValueError(f"--draw must be 'artifact' or 'seed:N' (N >= 0), got {draw!r}")


@functools.lru_cache(maxsize=16)
def philly_instance(
    data_dir: str,
    trace: int,
    locality: float,
    draw: str,
    max_jobs: int | None = None,
    growth: float = 0.0,
) -> Instance:
    """Sia-Philly workload ``trace`` on 16 x 4 GPUs with the given draw and lambda.

    Cached (16 entries per process): the set, the other draws and the sweep ask for the
    same instances many times.

    Args:
        data_dir: the data folder, as a string.
        trace: the workload number, 1-8 (``pal-philly/workload-<trace>.csv``).
        locality: lambda, the factor on a job's iteration time when it spans hosts.
        draw: ``"artifact"`` or ``"seed:N"`` (``parse_draw``).
        max_jobs: keep the trace's first ``max_jobs`` jobs; None: all.
        growth: 0 = PAL's constant lambda; > 0 = a host-count-dependent penalty (the
            sensitivity run, ``PALPhilly.locality_growth``).

    Raises:
        ValueError: a bad ``draw``.
    """
    from mtgym.generate.pal_philly import PALPhilly

    kind, seed = parse_draw(draw)
    d = Path(data_dir)
    return PALPhilly(
        d / PAL_TRACE.format(k=trace),
        d / PAL_VARIABILITY,
        num_hosts=16,
        gpus_per_host=4,
        locality=locality,
        max_jobs=max_jobs,
        draw=kind,
        locality_growth=growth,
    )(seed)


@functools.lru_cache(maxsize=8)
def synergy_instance(data_dir: str, jobs_per_hour: float, num_jobs: int, seed: int) -> Instance:
    """PAL's Synergy setup (``PALSynergy``) with the artifact's draw on 256 GPUs.

    The demands are resampled from every Sia-Philly trace's (``philly_demands``); the
    setup's assumptions are ``PALSynergy``'s docstring. Cached (8 entries per process).

    Args:
        data_dir: the data folder, as a string.
        jobs_per_hour: the Poisson arrival rate.
        num_jobs: jobs generated.
        seed: the seed of arrivals, demands and durations (not of the per-GPU draw).
    """
    from mtgym.generate.pal_philly import PALSynergy, philly_demands

    d = Path(data_dir)
    demands = philly_demands([d / PAL_TRACE.format(k=k) for k in range(1, 9)])
    return PALSynergy(
        tuple(int(x) for x in demands),
        d / PAL_VARIABILITY,
        jobs_per_hour=jobs_per_hour,
        num_jobs=num_jobs,
        draw="artifact",
    )(seed)


def at_round_boundary(t: np.ndarray, t0: float, round_s: float) -> np.ndarray:
    """Each time moved to the first round boundary ``t0 + k round_s`` at or after it (a time
    on a boundary stays there; NaN stays NaN).

    A 1e-9 tolerance (in rounds) keeps a time a rounding error past a boundary on it.
    Times before ``t0`` go to ``t0``.

    Args:
        t: times (s), any shape.
        t0: the first boundary (the episode's ``t_start``).
        round_s: seconds between boundaries.

    Raises:
        ValueError: ``round_s`` is not positive.
    """
    if not round_s > 0:
        raise ValueError(f"round_s must be > 0, got {round_s!r}")
    k = np.ceil((np.asarray(t, dtype=np.float64) - t0) / round_s - 1e-9)
    return t0 + np.maximum(k, 0.0) * round_s


@dataclass
class RoundsResult:
    """Metrics and timing of ``run_rounds``, with the GPU-seconds of jobs that span hosts.

    Attributes:
        metrics: ``compute_metrics`` of the final state (finish times moved to round
            boundaries first with ``completion_at_round``).
        wall_s: wall-clock seconds of the episode.
        decisions: placement rounds played (skipped rounds are not counted).
        gpu_s: GPU-seconds held by jobs (a node is one GPU here).
        span_gpu_s: of which by jobs whose GPUs lie on more than one host.
    """

    metrics: EpisodeMetrics
    wall_s: float
    decisions: int
    gpu_s: float
    span_gpu_s: float


def _spanning(node_job: np.ndarray, host: np.ndarray, num_jobs: int) -> np.ndarray:
    """(J,) bool: the job's GPUs lie on more than one host.

    Args:
        node_job: (N,) the job on each node (GPU), -1 for none.
        host: (N,) each node's host index.
        num_jobs: J.
    """
    on = node_job >= 0
    pairs = np.unique(np.stack([node_job[on], host[on]]), axis=1)
    hosts = np.bincount(pairs[0], minlength=num_jobs) if pairs.size else np.zeros(num_jobs)
    return hosts > 1


def run_rounds(
    instance: Instance,
    policy: Policy,
    round_s: float,
    *,
    skip_unchanged: bool,
    completion_at_round: bool = False,
) -> RoundsResult:
    """``run_episode(instance, policy, decision_interval_s=round_s)``, faster.

    With ``skip_unchanged`` (only for a FIFO policy whose decision depends on nothing but the
    active jobs, the node map and the idle nodes): when a round leaves the node map as it
    was, every following round gives the same map until an arrival, a completion or a
    supply change, so the episode jumps to that event and then to the next round boundary
    (rounds stay on the grid ``t_start + k x round_s``). The trajectory, hence every metric
    except the decision count, is the same as ``run_episode``'s. The GPU-seconds of jobs
    spanning hosts are integrated exactly: node sets only shrink (by completions) between
    decisions, and a completed job holds nothing. ``completion_at_round``: each completed
    job's finish is recorded at the next round boundary (module docstring).

    The episode ends at ``instance.t_end``, when every job is done, or when a step makes no
    progress (same time, no event).

    Args:
        instance: the instance (not modified).
        policy: the placement; reset on the first view.
        round_s: seconds between placement rounds (``ROUND_S``: PAL's 360 s).
        skip_unchanged: jump over rounds that cannot change the map (only for the policies
            of ``DETERMINISTIC`` under FIFO).
        completion_at_round: record finishes at the next round boundary.

    Returns:
        The metrics, wall time, rounds played and GPU-seconds (``RoundsResult``).
    """
    t_wall = time.perf_counter()
    state = initial_state(instance)
    views = ViewBuilder(instance, policy.info_mode)
    policy.reset(views(state))
    limit, t0 = instance.t_end, instance.t_start
    host = np.asarray(instance.cluster.topology.coords[:, 1])
    num_jobs = instance.num_jobs
    decisions = 0
    span_s = 0.0
    while state.time < limit:
        before = state.node_job.copy()
        alloc = policy.decide(views(state))
        decisions += 1
        t_prev = state.time
        apply_allocation(state, instance, alloc)
        spans = _spanning(state.node_job, host, num_jobs)
        held = state.node_s.copy()
        step = min(limit, state.time + round_s)
        if skip_unchanged and np.array_equal(state.node_job, before):
            state, info = advance(state, instance, None, until=limit, stop_on=_CHANGES, copy=False)
            if not info.all_done and state.time < limit:
                k = np.ceil((state.time - t0) / round_s - 1e-12)
                step = min(limit, max(t0 + k * round_s, state.time))
                if step > state.time:
                    state, info = advance(
                        state, instance, None, until=step, stop_on=EventKind.HORIZON, copy=False
                    )
        else:
            state, info = advance(
                state, instance, None, until=step, stop_on=EventKind.HORIZON, copy=False
            )
        span_s += float((state.node_s - held)[spans].sum())
        if info.all_done or (state.time == t_prev and info.kinds == EventKind.NONE):
            break
    if completion_at_round:  # the run is over: only what is recorded changes
        done = state.status == JobStatus.COMPLETED
        state.finish_time[done] = at_round_boundary(state.finish_time[done], t0, round_s)
    return RoundsResult(
        compute_metrics(state, instance),
        time.perf_counter() - t_wall,
        decisions,
        float(state.node_s.sum()),
        span_s,
    )


def _record(res: RoundsResult, **keys: Any) -> dict[str, Any]:
    """One flat, JSON-ready record of an episode: ``keys`` then its numbers.

    Args:
        res: the episode's result.
        **keys: what identifies the episode (trace, locality, draw, growth, policy; or
            jobs_per_hour, order, seed, policy).

    Returns:
        ``keys`` plus ``jct_mean``, ``jct_geomean``, ``jct_p99``, ``makespan`` (s),
        ``utilisation``, ``jobs_completed``, ``jobs_total``, ``gpu_s``, ``span_gpu_s`` and
        ``wall_s``.
    """
    m = res.metrics
    return {
        **keys,
        "jct_mean": m.jct_mean,
        "jct_geomean": m.jct_geomean,
        "jct_p99": m.jct_p99,
        "makespan": m.makespan,
        "utilisation": m.utilisation,
        "jobs_completed": m.jobs_completed,
        "jobs_total": m.jobs_total,
        "gpu_s": res.gpu_s,
        "span_gpu_s": res.span_gpu_s,
        "wall_s": res.wall_s,
    }


@dataclass(frozen=True)
class PhillyTask:
    """Every policy in ``policies`` on one Sia-Philly (trace, lambda, draw, growth) instance.

    Attributes:
        trace: the workload number, 1-8.
        locality: lambda.
        draw: ``"artifact"`` or ``"seed:N"``.
        policies: keys of ``POLICIES``, played in this order.
        data_dir: the data folder, as a string.
        max_jobs: keep the trace's first ``max_jobs`` jobs; None: all.
        growth: host-count-dependent locality (0 = PAL's constant lambda).
        completion_at_round: record finishes at the next round boundary.
    """

    trace: int
    locality: float
    draw: str
    policies: tuple[str, ...]
    data_dir: str
    max_jobs: int | None = None
    growth: float = 0.0
    completion_at_round: bool = False


def run_philly(task: PhillyTask) -> list[dict[str, Any]]:
    """Run the task's policies (module-level: runs in worker processes).

    Rounds are skipped (``skip_unchanged``) for the policies of ``DETERMINISTIC``.

    Args:
        task: the instance and its placements.

    Returns:
        One ``_record`` per policy, keyed by trace, locality, draw, growth and policy.
    """
    inst = philly_instance(
        task.data_dir, task.trace, task.locality, task.draw, task.max_jobs, task.growth
    )
    out = []
    for key in task.policies:
        name, kw = POLICIES[key]
        res = run_rounds(
            inst,
            make(name, **kw),
            ROUND_S,
            skip_unchanged=key in DETERMINISTIC,
            completion_at_round=task.completion_at_round,
        )
        out.append(
            _record(
                res,
                trace=task.trace,
                locality=task.locality,
                draw=task.draw,
                growth=task.growth,
                policy=key,
            )
        )
    return out


@dataclass(frozen=True)
class SynergyTask:
    """Every policy in ``policies`` on one Synergy (load, order) setting.

    Attributes:
        jobs_per_hour: the Poisson arrival rate.
        order: the scheduler's job order: ``"fifo"``, ``"las"`` or ``"srtf"``.
        policies: keys of ``POLICIES``, played in this order.
        data_dir: the data folder, as a string.
        num_jobs: jobs generated.
        seed: the seed of the workload.
        completion_at_round: record finishes at the next round boundary.
    """

    jobs_per_hour: float
    order: str
    policies: tuple[str, ...]
    data_dir: str
    num_jobs: int
    seed: int = 0
    completion_at_round: bool = False


def run_synergy(task: SynergyTask) -> list[dict[str, Any]]:
    """Run the task's policies under the task's scheduler order (module-level).

    Rounds are skipped only under FIFO: LAS and SRTF reorder the jobs by attained or
    remaining service, which changes with time even when nothing else does.

    Args:
        task: the setting and its placements.

    Returns:
        One ``_record`` per policy, keyed by jobs_per_hour, order, seed and policy.
    """
    inst = synergy_instance(task.data_dir, task.jobs_per_hour, task.num_jobs, task.seed)
    out = []
    for key in task.policies:
        name, kw = POLICIES[key]
        res = run_rounds(
            inst,
            make(name, order=task.order, **kw),
            ROUND_S,
            skip_unchanged=task.order == "fifo" and key in DETERMINISTIC,
            completion_at_round=task.completion_at_round,
        )
        out.append(
            _record(
                res,
                jobs_per_hour=task.jobs_per_hour,
                order=task.order,
                seed=task.seed,
                policy=key,
            )
        )
    return out
