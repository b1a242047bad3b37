"""Tune a baseline's knobs on a scenario: a short grid, a rule fixed in advance, tuning seeds.

``tune_policy`` runs ``RULE``: coordinate ascent from the untuned default, one pass over the
knobs in the order the policy's ``tuning_grid`` lists them. For each knob it plays every
value (the other knobs at their current choice) on the tuning seeds (``TUNE_SEEDS``: neither
test seeds nor seeds any selection used), and moves to the value with the highest mean
headline only if that beats the current choice by more than ``MIN_GAIN`` (relative); ties
and near-ties keep the earlier value, the default first. So the chosen setting never scores
below the untuned default on the tuning seeds, and a knob moves only for a real gain.

Each setting is played once: a point already played (the current choice reappears in
every knob's values) is reused, not replayed. Every episode is untuned (``tuned=False``:
the scenario's existing record does not leak into its own sweep) and otherwise configured
as ``mtgym evaluate`` configures it (the scenario's episode defaults).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from mtgym.policy.tunable import widen_caps
from mtgym.scenario.tuning import Point, PolicyTuning

#: relative gain of the mean headline a knob's new value must beat to be taken
MIN_GAIN = 0.01
#: seeds of the tuning runs: disjoint from the test seeds (9000-9009), from every range the
#: shipped agent and its selection used (mtgym.benchmark.splits.USED_SEEDS) and from training
TUNE_SEEDS = (6000, 6001, 6002)
RULE = (
    "coordinate ascent from the untuned default, one pass, knobs in the order of the "
    "policy's tuning_grid; per knob every value is played with the other knobs at their "
    "current choice; the value with the highest mean normalized_throughput over the tuning "
    f"seeds is taken only if it beats the current choice's mean by more than {MIN_GAIN:.0%} "
    "(relative), else the current choice stays; the scenario's reference is the tuned "
    "baseline with the highest chosen mean"
)

Params = dict[str, Any]


def play_point(
    scenario: str, policy: str, params: Params, seed: int, horizon_s: float | None
) -> tuple[float, float, float]:
    """One episode of ``policy`` with ``params`` (untuned otherwise): (headline, jobs
    completed, wall seconds). The body of a worker process.

    Args:
        scenario: a scenario name of ``mtgym.scenario.registry``.
        policy: a registry name.
        params: the knobs to set (constructor keyword arguments).
        seed: the instance's seed.
        horizon_s: simulated seconds to play from ``t_start``; None: the whole scenario.
    """
    from mtgym.evaluate import configure_policy, scenario_defaults
    from mtgym.policy.play import play
    from mtgym.policy.registry import make_policy
    from mtgym.scenario.registry import get_generator

    t0 = time.perf_counter()
    gen = get_generator(scenario)
    instance = gen(seed)
    pol = configure_policy(make_policy(policy, tuned=False, **params), scenario_defaults(gen))
    until = None if horizon_s is None else float(instance.t_start) + float(horizon_s)
    res = play(instance, pol, until=until)
    m = res.metrics
    return float(m.normalized_throughput), float(m.jobs_completed), time.perf_counter() - t0


def policy_knobs(scenario: str, policy: str) -> tuple[Params, dict[str, list[Any]]]:
    """The untuned default knobs of ``policy`` and the grid it declares for ``scenario``
    (knobs the policy's factory fixes, e.g. ``freetrain-speedup``'s objective, left out);
    an admission cap ``max_jobs`` is carried up to the scenario's job count
    (``widen_caps``, ``scenario_job_count``).

    The default of each knob is the first value of its grid (``tuning_grid`` lists the
    policy's untuned value first); knobs with an empty grid are dropped.

    Args:
        scenario: a scenario name (its episode defaults shape the grid, e.g. its slots).
        policy: a registry name.

    Returns:
        ``(default, grid)``: knob -> default value, and knob -> the values to try, in the
        order ``RULE`` visits them.

    Raises:
        ValueError: the policy has no knobs to tune.
    """
    from mtgym.evaluate import scenario_defaults
    from mtgym.policy.registry import make_policy
    from mtgym.scenario.registry import get_generator

    pol = make_policy(policy, tuned=False)
    grid_of = getattr(pol, "tuning_grid", None)
    if grid_of is None:
        raise ValueError(f"policy {policy!r} has no knobs to tune")
    fixed = set(getattr(pol, "_given", {}))
    gen = get_generator(scenario)
    grid = {k: list(v) for k, v in grid_of(scenario_defaults(gen)).items()}
    grid = {k: v for k, v in grid.items() if k not in fixed and v}
    if "max_jobs" in grid:  # the admission cap reaches the scenario's own job count
        grid["max_jobs"] = widen_caps(grid["max_jobs"], scenario_job_count(gen))
    if not grid:
        raise ValueError(f"policy {policy!r} has no knobs to tune")
    default = {k: v[0] for k, v in grid.items()}
    return default, grid


def scenario_job_count(generator: Callable[[int], Any]) -> int:
    """The jobs of the scenario's instance on the first tuning seed: the largest admission
    cap worth sweeping (a cap above it admits no more).

    Args:
        generator: the scenario's seeded generator.
    """
    return max(1, int(generator(TUNE_SEEDS[0]).num_jobs))


def point_key(params: Params) -> tuple:
    """A hashable, order-free key of a setting (values by ``repr``), to play it once."""
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


def play_points(
    scenario: str,
    policy: str,
    points: list[tuple[str, Params]],
    seeds: Sequence[int],
    horizon_s: float | None,
    done: dict[tuple, Point],
    pool: ProcessPoolExecutor | None = None,
    progress: Callable[[str], None] | None = None,
) -> None:
    """Play the (knob, setting) points not yet in ``done`` on every seed; add each to it.

    Episodes of all new points go to the pool at once (point-major, seed-minor), so the
    workers stay busy across points; each point is added to ``done`` as soon as its seeds
    are in (a journalling ``done``, ``mtgym.tuning.journal``, keeps it if the run is killed
    later). ``mtgym tune`` and the reference probe
    (``mtgym.tuning.probe``) play their points through it.

    Args:
        scenario: a scenario name.
        policy: a registry name.
        points: (knob varied, setting) pairs; a setting already in ``done`` is not replayed.
        seeds: the seeds every point is played on.
        horizon_s: simulated seconds per episode from ``t_start``; None: whole episodes.
        done: setting key (``point_key``) -> its point; updated in place.
        pool: worker processes; None plays in this process.
        progress: called with ``"<scenario> <policy> <params>: <mean>"`` after each point.
    """
    todo = [(k, p) for k, p in points if point_key(p) not in done]
    args = [(scenario, policy, p, s, horizon_s) for _, p in todo for s in seeds]
    if pool is not None:
        outs = pool.map(play_point, *zip(*args, strict=True)) if args else iter(())
    else:
        outs = (play_point(*a) for a in args)
    n = len(seeds)
    for knob, params in todo:  # each point as soon as its seeds are in (in order)
        rows = [next(outs) for _ in range(n)]
        head = [r[0] for r in rows]
        pt = Point(
            knob=knob,
            params=dict(params),
            headline=head,
            jobs_completed=[r[1] for r in rows],
            mean=float(np.mean(head)),
            wall_s=float(sum(r[2] for r in rows)),
        )
        done[point_key(params)] = pt
        if progress is not None:
            progress(f"{scenario} {policy} {params}: {pt.mean:.3f}")


def tune_policy(
    scenario: str,
    policy: str,
    *,
    seeds: Sequence[int] = TUNE_SEEDS,
    horizon_s: float | None = None,
    workers: int = 1,
    progress: Callable[[str], None] | None = None,
    journal: Any = None,
) -> PolicyTuning:
    """Sweep ``policy``'s grid on ``scenario`` by ``RULE`` (module docstring).

    Args:
        scenario: a scenario name.
        policy: a registry name with a ``tuning_grid``.
        seeds: the tuning seeds (default ``TUNE_SEEDS``).
        horizon_s: simulated seconds per episode from ``t_start``; None: whole episodes.
        workers: processes; 1 plays in this process.
        progress: called with ``"<scenario> <policy> <params>: <mean>"`` after each point.
        journal: a ``mtgym.tuning.journal.PointJournal`` (not imported here: it builds on
            this module): each finished point is written to it, and its points of this
            policy (a killed run's, ``mtgym tune --resume``) are not played again; None:
            none.

    Returns:
        The default and chosen settings with their means, every point played (in order)
        and the wall seconds of the sweep.

    Raises:
        ValueError: the policy has no knobs to tune, or a seed is one of the benchmark's test
            split (``mtgym.benchmark.splits.refuse_test_seeds``; checked before anything is
            played).
    """
    from mtgym.benchmark.splits import refuse_test_seeds

    t0 = time.perf_counter()
    seeds = [int(s) for s in seeds]
    refuse_test_seeds(seeds, what=f"tuning {policy} on {scenario} (mtgym tune)")
    default, grid = policy_knobs(scenario, policy)
    done: dict[tuple, Point] = {} if journal is None else journal.done(policy)
    pool = ProcessPoolExecutor(max_workers=workers) if workers > 1 else None

    def run(points: list[tuple[str, Params]]) -> None:
        play_points(scenario, policy, points, seeds, horizon_s, done, pool, progress)

    try:
        run([("", default)])
        current = dict(default)
        for knob, values in grid.items():
            run([(knob, {**current, knob: v}) for v in values])
            tried = [done[point_key({**current, knob: v})] for v in values]
            top = max(tried, key=lambda pt: pt.mean)  # the first of equal means
            if top.mean > done[point_key(current)].mean * (1 + MIN_GAIN):
                current = dict(top.params)
    finally:
        if pool is not None:
            pool.shutdown()
    return PolicyTuning(
        default=default,
        chosen=current,
        default_mean=done[point_key(default)].mean,
        chosen_mean=done[point_key(current)].mean,
        sweep=list(done.values()),
        wall_s=time.perf_counter() - t0,
    )
