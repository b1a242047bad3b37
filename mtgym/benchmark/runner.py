"""Run a split's scenarios for several policies, paired on the same seeds, and score them.

**Running** (``run_split``): per scenario, every policy plays every seed's instance (the same
instance for every policy) through the pieces ``mtgym.evaluate`` and the Ray backend use:
``configure_policy`` with the scenario's defaults, ``play``, ``episode_row`` and
``add_common_metrics``, so a row here is an ``evaluate`` row (the headline among its
``RESULT_KEYS``), with the (scenario, seed)'s hindsight bound computed once for all policies
(``bound_one``; ``mtgym.evaluate.add_bound``). A quick run passes
``until`` to ``play``. With a ``cache`` (``mtgym.benchmark.cache``), a recorded reference's
row and a bound that an earlier result file of the same code, scenario and tuning holds
are taken from it instead of played (both backends). ``backend="ray"`` runs one Ray task
per (scenario, policy, seed) in ``mtgym.backends.ray_backend.ray_session`` (same rows;
only timings differ).

A policy that cannot run on a scenario (``PolicyUnsupportedError`` from its ``reset``) is recorded
with its one-line reason for that scenario and left out of it; the others run.

**The clairvoyant** (``CLAIRVOYANT``, ``baselines/clairvoyant.py``) is a reference point, not
a competitor (``is_reference_point``): it is never a scenario's reference nor its best
baseline, it does not define the common jobs, and once a scenario has run every row of
it gets the seed's clairvoyant headline (``clairvoyant``), that headline over the seed's
hindsight bound (``clairvoyant_fraction``) and its own headline over the clairvoyant's
(``of_clairvoyant``; ``add_clairvoyant``): the bracket around the optimum.

**Scoring** is ``mtgym.benchmark.scoring`` (``score_split``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from mtgym.benchmark.cache import EpisodeCache
from mtgym.benchmark.journal import Journal
from mtgym.benchmark.splits import Split
from mtgym.core.errors import PolicyUnsupportedError
from mtgym.evaluate import PolicyRun, add_bound, add_common_metrics, episode_bound, episode_row

#: registry names of learned policies (never a scenario's reference); ``agent:PATH`` too
LEARNED = frozenset({"agent", "rllib-agent"})
#: the clairvoyant planner's name: the lower end of the bracket around the optimum
CLAIRVOYANT = "clairvoyant"
#: the row keys ``add_clairvoyant`` sets
CLAIRVOYANT_KEYS = ("clairvoyant", "clairvoyant_fraction", "of_clairvoyant")


def is_reference_point(policy: str) -> bool:
    """Whether ``policy`` is a reference point told what no online policy knows (the
    clairvoyant): shown beside the policies, never a reference, a best baseline, or a
    definer of the common jobs.
    """
    from mtgym.sim.view import may_see_the_future

    return may_see_the_future(policy.split(":", 1)[0])


BACKENDS = ("local", "ray")


def is_baseline(policy: str) -> bool:
    """Whether ``policy`` may be a scenario's reference (not a learned agent).

    Args:
        policy: a registry name, possibly with an argument (``agent:PATH``): only the part
            before the first ``:`` is checked against ``LEARNED``.
    """
    return policy.split(":", 1)[0] not in LEARNED and not is_reference_point(policy)


def add_clairvoyant(rows: Mapping[str, Sequence[dict[str, Any] | None]]) -> None:
    """Give every row the seed's clairvoyant headline, its fraction of the bound and the
    row's fraction of it (``CLAIRVOYANT_KEYS``; NaN where the clairvoyant did not play
    the seed or a value is missing), in place.

    Args:
        rows: policy -> its rows in seed order (None: not played), bounds already added.
    """
    mine = rows.get(CLAIRVOYANT) or []
    n = max((len(r) for r in rows.values()), default=0)
    for k in range(n):
        c_row = mine[k] if k < len(mine) else None
        c = math.nan if c_row is None else float(c_row.get("normalized_throughput", math.nan))
        bound = math.nan if c_row is None else float(c_row.get("hindsight_bound", math.nan))
        frac = c / bound if bound > 0 else math.nan
        for per_seed in rows.values():
            row = per_seed[k] if k < len(per_seed) else None
            if row is None:
                continue
            head = float(row.get("normalized_throughput", math.nan))
            row["clairvoyant"] = c
            row["clairvoyant_fraction"] = frac
            row["of_clairvoyant"] = head / c if c > 0 else math.nan


# -- running ------------------------------------------------------------------------------
@dataclass
class ScenarioRuns:
    """One scenario's episodes: the policies that ran (rows in seed order) and those that
    could not, with their one-line reasons.

    Attributes:
        scenario: the scenario's name.
        seeds: the seeds played, in row order (the split's).
        horizon_s: simulated seconds played from ``t_start`` (None: the scenario's horizon).
        runs: one ``PolicyRun`` per policy that ran, in the order the policies were given,
            with ``add_common_metrics`` applied (``jct_common_mean`` and the like).
        unsupported: policy -> its one-line reason (``PolicyUnsupportedError``, naming the
            scenario).
        wall_s: wall seconds: the scenario's own episodes on the local backend; on Ray,
            from the split's start until the rows were assembled (the scenarios run
            interleaved).
    """

    scenario: str
    seeds: list[int]
    horizon_s: float | None
    runs: list[PolicyRun]
    unsupported: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0


def _until(instance: Any, horizon_s: float | None) -> float | None:
    """``play``'s ``until``: ``horizon_s`` after the instance's ``t_start`` (None: no limit)."""
    return None if horizon_s is None else float(instance.t_start) + float(horizon_s)


def run_one(
    scenario: str,
    policy: str,
    seed: int,
    horizon_s: float | None = None,
    decision_interval_s: float | None = None,
) -> dict[str, Any]:
    """One episode built from names (the body of a Ray task): its row.

    Only strings and numbers cross to the worker: it builds the scenario's instance, the
    policy (configured with the scenario's defaults) and plays, as ``run_scenario_local``
    does in process.

    Args:
        scenario: a scenario name of ``mtgym.scenario.registry``.
        policy: a registry name (``agent:PATH`` with an absolute path on Ray).
        seed: the instance's seed.
        horizon_s: simulated seconds to play from ``t_start``; None: the whole scenario.
        decision_interval_s: decide every that many seconds; None: the policy's own
            schedule.

    Returns:
        The ``mtgym.evaluate.episode_row`` (without the hindsight bound, added later).

    Raises:
        PolicyUnsupportedError: the policy cannot run on the scenario.
    """
    from mtgym.evaluate import configure_policy, scenario_defaults
    from mtgym.policy.play import play
    from mtgym.policy.registry import make_policy
    from mtgym.scenario.registry import get_generator

    gen = get_generator(scenario)
    instance = gen(seed)
    pol = configure_policy(make_policy(policy), scenario_defaults(gen))
    res = play(
        instance,
        pol,
        until=_until(instance, horizon_s),
        decision_interval_s=decision_interval_s,
    )
    return episode_row(instance, res, seed)


#: the pseudo-policy name of the hindsight-bound tasks of the Ray path
_BOUND = "(hindsight bound)"


def bound_one(scenario: str, seed: int, horizon_s: float | None = None) -> float:
    """The hindsight bound of one (scenario, seed) for the run ``run_one`` plays (the body
    of a Ray task, one per (scenario, seed), shared by every policy; ``episode_bound``).

    Args:
        scenario: a scenario name.
        seed: the instance's seed.
        horizon_s: simulated seconds played from ``t_start``; None: the whole scenario.

    Returns:
        The bound of the headline, in best-node equivalents.
    """
    from mtgym.scenario.registry import get_generator

    instance = get_generator(scenario)(seed)
    return episode_bound(instance, _until(instance, horizon_s))


def _add_bounds(rows: dict[str, list[dict[str, Any] | None]], bounds: list[float | None]) -> None:
    """Each policy's row of seed k gets ``bounds[k]`` and its ``bound_fraction``.

    Args:
        rows: policy -> its rows in seed order (None where it did not run); changed in
            place.
        bounds: the bound of each seed (None: not computed, NaN in the rows).
    """
    for per_seed in rows.values():
        for row, bound in zip(per_seed, bounds, strict=False):
            if row is not None:
                add_bound(row, bound)


@dataclass(frozen=True)
class Reuse:
    """Where a run takes the episodes and bounds it need not play: this run's journal (a
    resumed run's, ``mtgym.benchmark.journal``; it is also told every item played), then
    the registry's cache (``mtgym.benchmark.cache``). Both None: play everything.
    """

    cache: EpisodeCache | None = None
    journal: Journal | None = None


#: play and compute everything, journal nothing
NO_REUSE = Reuse()


def _row_hit(
    reuse: Reuse, key: tuple[str, str, int, float | None, float | None]
) -> dict[str, Any] | None:
    """An episode's row from this run's journal (a resumed run's), else from the registry's
    cache, else None (to be played).
    """
    for source in (reuse.journal, reuse.cache):
        hit = None if source is None else source.row(*key)
        if hit is not None:
            return hit
    return None


def _bound_hit(reuse: Reuse, scenario: str, seed: int, horizon_s: float | None) -> float | None:
    """A (scenario, seed)'s bound from the journal, else the cache, else None."""
    for source in (reuse.journal, reuse.cache):
        hit = None if source is None else source.bound(scenario, seed, horizon_s)
        if hit is not None:
            return hit
    return None


def _finish(
    scenario: str,
    seeds: list[int],
    horizon_s: float | None,
    policies: Sequence[str],
    rows: dict[str, list[dict[str, Any] | None]],
    unsupported: dict[str, str],
    t0: float,
) -> ScenarioRuns:
    """Assemble a ``ScenarioRuns``: the policies that ran, with their common-jobs metrics.

    Args:
        scenario: the scenario's name.
        seeds: the seeds played.
        horizon_s: simulated seconds played (None: whole).
        policies: every policy asked for, in report order.
        rows: policy -> its rows in seed order.
        unsupported: policy -> why it could not run; those are left out of ``runs``.
        t0: ``time.perf_counter()`` at the start, for ``wall_s``.
    """
    runs = [PolicyRun(p, rows[p]) for p in policies if p not in unsupported]  # type: ignore[arg-type]
    add_common_metrics([r for r in runs if not is_reference_point(r.name)])
    for r in runs:
        if is_reference_point(r.name):  # (not compared on the online policies' common jobs)
            for row in r.per_seed:
                row.update(jct_common_mean=math.nan, makespan_common=math.nan, jobs_common=0.0)
    add_clairvoyant({r.name: r.per_seed for r in runs})
    return ScenarioRuns(
        scenario, seeds, horizon_s, runs, unsupported, wall_s=time.perf_counter() - t0
    )


@dataclass
class _Seeds:
    """One scenario's instances and hindsight bounds, each built (or read from the cache)
    once per seed, for every policy.

    Attributes:
        scenario: the scenario's name.
        gen: its generator.
        horizon_s: simulated seconds played from ``t_start`` (None: whole).
        reuse: the journal (asked first, told each bound computed) and the cache of
            reusable bounds.
        instances: seed -> its instance, built when first needed.
        bounds: seed -> its hindsight bound, computed (or reused) when first needed.
    """

    scenario: str
    gen: Any
    horizon_s: float | None
    reuse: Reuse
    instances: dict[int, Any] = field(default_factory=dict)
    bounds: dict[int, float] = field(default_factory=dict)

    def instance(self, seed: int) -> Any:
        """The seed's instance."""
        if seed not in self.instances:
            self.instances[seed] = self.gen(seed)
        return self.instances[seed]

    def bound(self, seed: int) -> float:
        """The seed's hindsight bound: the journal's, the cache's, else ``episode_bound``."""
        if seed not in self.bounds:
            hit = _bound_hit(self.reuse, self.scenario, seed, self.horizon_s)
            if hit is None:
                inst = self.instance(seed)
                hit = episode_bound(inst, _until(inst, self.horizon_s))
                if self.reuse.journal is not None:
                    self.reuse.journal.add_bound(self.scenario, seed, self.horizon_s, hit)
            self.bounds[seed] = hit
        return self.bounds[seed]


def run_scenario_local(
    scenario: str,
    policies: Sequence[str],
    seeds: Sequence[int],
    *,
    horizon_s: float | None = None,
    decision_interval_s: float | None = None,
    progress: Callable[[str], None] | None = None,
    reuse: Reuse = NO_REUSE,
) -> ScenarioRuns:
    """Every policy on every seed of one scenario, in this process (instances built once
    per seed, as ``evaluate`` does).

    The hindsight bound is computed once per seed, for every policy. A policy whose
    ``reset`` raises ``PolicyUnsupportedError`` is recorded as unsupported and its
    remaining seeds are skipped. With ``reuse``'s cache (``mtgym.benchmark.cache``), a
    reference's episode and a bound recorded there are reused instead of played; with its
    journal (``mtgym.benchmark.journal``), what it holds is taken first and each episode,
    bound and unsupported policy is written to it as it finishes.

    Args:
        scenario: a scenario name.
        policies: registry names, played in this order.
        seeds: the seeds.
        horizon_s: simulated seconds to play from ``t_start``; None: the whole scenario.
        decision_interval_s: decide every that many seconds; None: each policy's own.
        progress: called with ``"<scenario>: <policy> seed <seed>"`` as each episode
            finishes (or is taken from the journal or cache).
        reuse: the run's journal and cache (``Reuse``); none: play everything.
    """
    from mtgym.evaluate import configure_policy, scenario_defaults
    from mtgym.policy.play import play
    from mtgym.policy.registry import make_policy
    from mtgym.scenario.registry import get_generator

    t0 = time.perf_counter()
    seeds = [int(s) for s in seeds]
    gen = get_generator(scenario)
    defaults = scenario_defaults(gen)
    journal = reuse.journal
    per_seed = _Seeds(scenario, gen, horizon_s, reuse)
    rows: dict[str, list[dict[str, Any] | None]] = {}
    unsupported: dict[str, str] = {}
    for name in policies:
        rows[name] = []
        why = None if journal is None else journal.unsupported(scenario, name)
        if why is not None:
            unsupported[name] = why
            continue
        for seed in seeds:
            key = (scenario, name, seed, horizon_s, decision_interval_s)
            row = _row_hit(reuse, key)
            if row is None:
                inst = per_seed.instance(seed)
                try:
                    pol = configure_policy(make_policy(name), defaults)
                    res = play(
                        inst,
                        pol,
                        until=_until(inst, horizon_s),
                        decision_interval_s=decision_interval_s,
                    )
                except PolicyUnsupportedError as exc:
                    unsupported[name] = str(exc.with_scenario(scenario))
                    if journal is not None:
                        journal.add_unsupported(scenario, name, unsupported[name])
                    break
                row = episode_row(inst, res, seed)
                if journal is not None:
                    journal.add_row(*key, row)
            rows[name].append(add_bound(row, per_seed.bound(seed)))
            if progress is not None:
                progress(f"{scenario}: {name} seed {seed}")
    return _finish(scenario, seeds, horizon_s, policies, rows, unsupported, t0)


def _portable(policy: str) -> str:
    """``agent:rel/model.zip`` -> an absolute path (Ray workers run elsewhere).

    Only an argument that names an existing path is changed; other names are returned as
    given.

    Args:
        policy: a registry name.
    """
    from pathlib import Path

    if ":" in policy:
        head, arg = policy.split(":", 1)
        p = Path(arg).expanduser()
        if p.exists():
            return f"{head}:{p.resolve()}"
    return policy


def _submit(
    ray: Any,
    split: Split,
    policies: Sequence[str],
    *,
    quick: bool,
    decision_interval_s: float | None,
    reuse: Reuse,
) -> tuple[
    dict[Any, tuple[str, str, int]],
    dict[str, dict[str, list[dict[str, Any] | None]]],
    dict[str, list[float | None]],
]:
    """Submit ``run_split_ray``'s tasks: each (scenario, seed)'s bound and each (scenario,
    policy, seed)'s episode that ``reuse`` does not hold (a policy the journal found
    unsupported on a scenario is not submitted there: its rows stay None).

    Returns:
        The pending tasks (task -> (scenario, policy or ``_BOUND``, seed index)); the rows
        (scenario -> policy -> row per seed) and the bounds (scenario -> bound per seed),
        None where a task will fill them in, the cache's where it held them.
    """
    seeds = split.seeds(quick=quick)
    task = ray.remote(num_cpus=1)(run_one)
    bound_task = ray.remote(num_cpus=1)(bound_one)
    pending: dict[Any, tuple[str, str, int]] = {}
    rows: dict[str, dict[str, list[dict[str, Any] | None]]] = {}
    bounds: dict[str, list[float | None]] = {}
    for sc in split.scenarios:
        h = split.horizon_s(sc, quick=quick)
        bounds[sc.name] = [_bound_hit(reuse, sc.name, s, h) for s in seeds]
        for k, seed in enumerate(seeds):
            if bounds[sc.name][k] is None:
                pending[bound_task.remote(sc.name, seed, h)] = (sc.name, _BOUND, k)
        rows[sc.name] = {}
        for name in policies:
            rows[sc.name][name] = [
                _row_hit(reuse, (sc.name, name, s, h, decision_interval_s)) for s in seeds
            ]
            if reuse.journal is not None and reuse.journal.unsupported(sc.name, name):
                continue
            for k, seed in enumerate(seeds):
                if rows[sc.name][name][k] is None:
                    ref = task.remote(sc.name, _portable(name), seed, h, decision_interval_s)
                    pending[ref] = (sc.name, name, k)
    return pending, rows, bounds


@dataclass
class _RayResults:
    """What ``run_split_ray``'s finished tasks filled in, and where they are journalled.

    Attributes:
        rows: scenario -> policy -> row per seed (None: pending or unsupported).
        bounds: scenario -> bound per seed.
        unsupported: scenario -> policy -> why it cannot run there.
        seeds: the split's seeds.
        horizons: scenario -> its horizon, s (None: whole).
        decision_interval_s: the run's decision interval (None: each policy's own).
        journal: this run's journal, or None.
    """

    rows: dict[str, dict[str, list[dict[str, Any] | None]]]
    bounds: dict[str, list[float | None]]
    unsupported: dict[str, dict[str, str]]
    seeds: list[int]
    horizons: dict[str, float | None]
    decision_interval_s: float | None
    journal: Journal | None

    def take(self, ray: Any, ref: Any, scn: str, name: str, k: int) -> None:
        """Store one finished task's result (a bound, a row, or an unsupported policy) and
        journal it; a task's own error is raised with a note naming scenario, policy and
        seed.
        """
        seed, h, journal = self.seeds[k], self.horizons[scn], self.journal
        try:
            if name == _BOUND:
                self.bounds[scn][k] = bound = ray.get(ref)
                if journal is not None:
                    journal.add_bound(scn, seed, h, bound)
                return
            self.rows[scn][name][k] = row = ray.get(ref)
            if journal is not None:
                journal.add_row(scn, name, seed, h, self.decision_interval_s, row)
        except Exception as exc:
            cause = getattr(exc, "cause", exc)
            if isinstance(cause, PolicyUnsupportedError):
                self.unsupported[scn][name] = why = str(cause.with_scenario(scn))
                if journal is not None:
                    journal.add_unsupported(scn, name, why)
            elif isinstance(cause, Exception) and cause is not exc:
                cause.add_note(f"(in a Ray task: {scn}, {name}, seed {seed})")
                raise cause from None
            else:
                raise


def run_split_ray(
    split: Split,
    policies: Sequence[str],
    *,
    quick: bool = False,
    address: str | None = None,
    num_cpus: int | None = None,
    decision_interval_s: float | None = None,
    progress: Callable[[str], None] | None = None,
    reuse: Reuse = NO_REUSE,
) -> list[ScenarioRuns]:
    """The whole split as Ray tasks, one per (scenario, policy, seed) (``ray_session``), and
    one per (scenario, seed) for its hindsight bound (``bound_one``); one CPU each.

    Arguments as ``run_split``'s (``num_cpus``: a private local cluster's CPUs, None: all).
    On an error the pending tasks are cancelled and the task's own exception is raised,
    with a note naming scenario, policy and seed index (``PolicyUnsupportedError`` is
    recorded instead); ``progress`` is called as each policy's episode finishes. What
    ``reuse`` holds is not submitted (``_submit``); each finished task is written to its
    journal.
    """
    from mtgym.backends.ray_backend import ray_session

    seeds = split.seeds(quick=quick)
    t0 = time.perf_counter()
    results: list[ScenarioRuns] = []
    with ray_session(address, num_cpus=num_cpus) as ray:
        pending, rows, bounds = _submit(
            ray,
            split,
            policies,
            quick=quick,
            decision_interval_s=decision_interval_s,
            reuse=reuse,
        )
        got = _RayResults(
            rows,
            bounds,
            {sc.name: _journal_unsupported(reuse, sc.name, policies) for sc in split.scenarios},
            seeds,
            {sc.name: split.horizon_s(sc, quick=quick) for sc in split.scenarios},
            decision_interval_s,
            reuse.journal,
        )
        unsupported = got.unsupported
        refs = list(pending)
        try:
            while refs:
                done, refs = ray.wait(refs, num_returns=1)
                for ref in done:
                    scn, name, k = pending[ref]
                    got.take(ray, ref, scn, name, k)
                    if progress is not None and name != _BOUND:
                        progress(f"{scn}: {name} seed {seeds[k]}")
        except BaseException:
            for ref in refs:  # do not leave the rest running on a shared cluster
                ray.cancel(ref, force=True)
            raise
    for sc in split.scenarios:
        _add_bounds(rows[sc.name], bounds[sc.name])
        results.append(
            _finish(
                sc.name,
                seeds,
                split.horizon_s(sc, quick=quick),
                policies,
                rows[sc.name],
                unsupported[sc.name],
                t0,
            )
        )
    return results


def _journal_unsupported(reuse: Reuse, scenario: str, policies: Sequence[str]) -> dict[str, str]:
    """The policies the journal found unsupported on ``scenario``, with why."""
    if reuse.journal is None:
        return {}
    found = {p: reuse.journal.unsupported(scenario, p) for p in policies}
    return {p: why for p, why in found.items() if why is not None}


def run_split(
    split: Split,
    policies: Sequence[str],
    *,
    quick: bool = False,
    backend: str = "local",
    address: str | None = None,
    decision_interval_s: float | None = None,
    progress: Callable[[str], None] | None = None,
    reuse: Reuse = NO_REUSE,
) -> list[ScenarioRuns]:
    """Every policy on every scenario of ``split`` on the split's seeds (module docstring).

    Every name is checked first (a policy is built once, each scenario's generator looked
    up), so a typo fails before hours of episodes.

    Args:
        split: the split.
        policies: registry names, each once (the report keeps this order).
        quick: play the split's quick seeds (the first of the full run's).
        backend: ``"local"`` (this process, scenario by scenario) or ``"ray"``.
        address: the Ray cluster (``backend="ray"`` only); None: a private local one.
        decision_interval_s: decide every that many seconds; None: each policy's own.
        progress: called once per episode with ``"<scenario>: <policy> seed <seed>"``.
        reuse: the run's journal (``mtgym.benchmark.journal``: what it holds is taken
            first, and every played episode and bound is written to it as it finishes)
            and the registry's cache of the references' episodes and the bounds
            (``mtgym.benchmark.cache``); ``NO_REUSE``: play and compute everything.

    Returns:
        One ``ScenarioRuns`` per scenario, in the split's order.

    Raises:
        ValueError: an unknown backend, no policy, or a policy named twice.
        KeyError: an unknown policy or scenario (checked before any episode).
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    if not policies:
        raise ValueError("benchmark needs at least one policy (--policy NAME)")
    if len(set(policies)) != len(policies):
        raise ValueError(f"a policy is named twice: {', '.join(policies)}")
    from mtgym.policy.registry import make_policy
    from mtgym.scenario.registry import get_generator

    for name in policies:
        make_policy(name)  # fail fast on an unknown name or a missing model
    for sc in split.scenarios:
        get_generator(sc.name)  # fail fast on a missing scenario or data file
    if backend == "ray":
        return run_split_ray(
            split,
            policies,
            quick=quick,
            address=address,
            decision_interval_s=decision_interval_s,
            progress=progress,
            reuse=reuse,
        )
    seeds = split.seeds(quick=quick)
    return [
        run_scenario_local(
            sc.name,
            policies,
            seeds,
            horizon_s=split.horizon_s(sc, quick=quick),
            decision_interval_s=decision_interval_s,
            progress=progress,
            reuse=reuse,
        )
        for sc in split.scenarios
    ]


def relabel(results: Sequence[ScenarioRuns], labels: Mapping[str, str]) -> list[ScenarioRuns]:
    """The runs renamed from their ``--policy`` strings to their labels
    (``mtgym.naming.policy_labels``): each ``PolicyRun``'s name and each ``unsupported``
    key; a name without a label is kept.

    Args:
        results: ``run_split``'s runs (not changed).
        labels: ``--policy`` string -> label.
    """
    return [
        replace(
            sr,
            runs=[PolicyRun(labels.get(r.name, r.name), r.per_seed) for r in sr.runs],
            unsupported={labels.get(k, k): v for k, v in sr.unsupported.items()},
        )
        for sr in results
    ]


# -- scoring ------------------------------------------------------------------------------
