"""One evaluation loop for every policy: same scenario, same seeds, same metrics and tags.

``evaluate`` runs each policy on each seed's instance (the same instance for every policy:
the comparison is **paired**), prints tables that fit the console (``mtgym.tables``), and,
with ``out``, writes ``out/results.json``, ``out/results.md`` (the same numbers as markdown
tables), ``out/tradeoff.png`` (the headline against the JCT of common jobs,
``mtgym.tradeoff``) and one TensorBoard run per policy under ``out/tb/<policy>/``.

**The headline is ``normalized_throughput``** (``docs/metrics.md``): each job's samples/s
divided by its own reference rate, summed (best-node equivalents of training), the same for
every model. Beside it, per policy: ``fairness_jain``, ``jct_common_mean``,
``jobs_completed`` and the raw ``throughput`` (samples/s).

**Policies get the scenario's defaults.** Before its first episode each policy that has a
``use_scenario_defaults(episode)`` method gets the scenario's ``EpisodeSpec``
(``scenario_defaults``): that is how FreeTrain takes its T_fwd from the scenario. A
round-based policy (``round_s``, e.g. PAL) decides once per round (``play``).

**The hindsight bound** (``mtgym.hindsight``, ``docs/metrics.md#hindsight-bound``): per seed,
once for all policies, an upper bound of the headline that no policy can beat (the whole
episode known in advance, an LP). Every row carries it as ``hindsight_bound`` and the
policy's headline as a share of it, ``bound_fraction``. ``hindsight=False`` (``mtgym
evaluate --no-bound``) leaves both undefined.

**Statistics** (``mtgym.stats``): per metric the mean over seeds and a 95 % percentile
bootstrap interval over seeds; per policy the paired difference and ratio against a
reference policy (``reference``; default ``freetrain`` when it is compared, else the first
policy), with intervals from bootstrapping the per-seed differences. The reference is an
argument, fixed before any number is seen.

**results.json** has ``scenario``, ``seeds``, ``reference``, ``ci`` (level, method,
resamples, bootstrap seed) and ``policies``: per policy, every metric of ``RESULT_KEYS`` as
its mean over seeds (as before), ``ci_low`` and ``ci_high`` (metric -> interval bound),
``n`` (metric -> seeds with a value), ``paired`` (metric -> ``reference``, ``diff``,
``diff_ci_low``, ``diff_ci_high``, ``ratio``, ``ratio_ci_low``, ``ratio_ci_high``, ``n``)
and ``per_seed`` (one row per seed, with ``job_finish_s``: each job's completion time, null
if it did not complete, and ``job_submit_s``). Undefined values are ``null``.

**TensorBoard** (stable-baselines3's logger, ``out/tb/<policy>/``, the folder named by
``mtgym.naming.safe_name``: ``agent:/a/model.zip`` -> ``agent_a_model.zip``): the shared tags of
``TAGS`` (``eval/normalized_throughput``, the headline, ``eval/throughput``, ...) once per
seed with **the step equal to the seed number**; one summary scalar per metric,
``eval_mean/<metric>`` (the mean over seeds, step 0); and ``hparams`` (policy, scenario,
reference, seeds) with those means as its metrics, so the runs line up in TensorBoard's
HParams table. Learned agents write the same ``eval/*`` tags while training, so TensorBoard
overlays them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mtgym import stats
from mtgym.core.instance import Instance
from mtgym.generate.base import Generator
from mtgym.metrics import common_metrics, completion_times
from mtgym.policy.base import Policy
from mtgym.policy.play import EpisodeResult, play
from mtgym.scenario.schema import EpisodeSpec

#: metric -> TensorBoard tag (the shared namespace)
TAGS = {
    "normalized_throughput": "eval/normalized_throughput",  # the headline
    "bound_fraction": "eval/bound_fraction",
    "hindsight_bound": "eval/hindsight_bound",
    "fairness_jain": "eval/fairness_jain",
    "normalized_efficiency": "eval/normalized_efficiency",
    "normalized_samples": "eval/normalized_samples",
    "throughput": "eval/throughput",
    "utilisation": "eval/utilisation",
    "jct_mean": "eval/jct_mean",
    "jct_p99": "eval/jct_p99",
    "jct_common_mean": "eval/jct_common_mean",
    "makespan": "eval/makespan",
    "makespan_common": "eval/makespan_common",
    "jobs_completed": "eval/jobs_completed",
    "upper_bound_fraction": "eval/upper_bound_fraction",
    "samples": "eval/samples",
    "rescales": "eval/rescales",
    "decision_ms": "solver/time_ms",
}
#: prefix of the per-metric summary scalars (the mean over seeds)
SUMMARY_PREFIX = "eval_mean/"
#: metrics of each policy in results.json (mean, interval, paired difference)
RESULT_KEYS = (
    "normalized_throughput",  # the headline (docs/metrics.md)
    "bound_fraction",  # the headline / the episode's hindsight bound
    "hindsight_bound",  # per seed, the same for every policy (mtgym.hindsight)
    "normalized_samples",
    "normalized_efficiency",
    "fairness_jain",
    "samples",
    "throughput",
    "utilisation",
    "jct_mean",
    "jct_p99",
    "jct_common_mean",
    "makespan",
    "makespan_censored",
    "makespan_common",
    "rescales",
    "decision_ms",
    "upper_bound_fraction",
    "jobs_completed",
    "jobs_common",
    "preemptions",
)
#: the policy compared against when none is named (if it is among the compared ones)
DEFAULT_REFERENCE = "freetrain"


@dataclass
class PolicyRun:
    """One policy's results over the seeds (rows in seed order).

    Attributes:
        name: The policy's label as compared (its key in results.json: a registry name,
            or the policy's ``name``, ``mtgym.naming.policy_labels``).
        per_seed: One row per seed: the ``RESULT_KEYS`` metrics (NaN where undefined),
            ``wall_s``, ``seed``, ``job_finish_s`` and ``job_submit_s`` (one entry per
            job, seconds; a finish time is None for a job not completed), filled by
            ``episode_row``, ``add_bound`` and ``add_common_metrics``.
    """

    name: str
    per_seed: list[dict[str, Any]]

    def values(self, key: str) -> np.ndarray:
        """(seeds,) the metric per seed, NaN where undefined.

        Args:
            key: A metric of the rows; a row without it (or with None) gives NaN.
        """
        return np.array(
            [np.nan if r.get(key) is None else r[key] for r in self.per_seed], dtype=np.float64
        )

    def mean(self) -> dict[str, float]:
        """Mean of each metric over seeds (NaN-aware: NaN only if every seed is NaN)."""
        out = {}
        for k in RESULT_KEYS:
            vals = self.values(k)
            ok = ~np.isnan(vals)
            out[k] = float(vals[ok].mean()) if ok.any() else float("nan")
        return out


@dataclass(frozen=True)
class Summary:
    """Statistics of one policy: per metric an interval, and paired against the reference.

    Attributes:
        intervals: Metric -> its mean and percentile-bootstrap interval over the seeds
            that have a value (``mtgym.stats.mean_ci``).
        paired: Metric -> the per-seed difference and ratio against the reference policy
            (``mtgym.stats.paired``; the reference's own entries compare it with itself);
            empty when there is no reference.
    """

    intervals: dict[str, stats.Interval]
    paired: dict[str, stats.Paired] = field(default_factory=dict)


def scenario_defaults(generator: Generator) -> EpisodeSpec:
    """The scenario's ``EpisodeSpec``: the generator's own, else its preset's, else defaults.

    A scenario file carries its ``episode`` section. A scenario built in code (``default``)
    takes the one of the preset file of the same name, which describes the same scenario
    (``tests/scenario/test_presets.py`` checks they build the same instances). The knobs
    ``mtgym tune`` recorded for the scenario (``mtgym.scenario.tuning``) fill
    ``baselines`` for the policies the file does not name.

    Args:
        generator: A scenario's generator; its ``name`` and ``episode`` attributes are
            read when present (a ``SpecGenerator`` has both).

    Raises:
        ScenarioError: the same-named preset file does not validate.
        ValueError: the scenario's tuning record exists but is invalid.
    """
    from mtgym.scenario.tuning import load_record

    name = str(getattr(generator, "name", ""))
    ep = getattr(generator, "episode", None)
    if not isinstance(ep, EpisodeSpec):
        from mtgym.scenario.load import load_scenario
        from mtgym.scenario.registry import preset_path

        preset = preset_path(name)
        ep = load_scenario(preset).episode if preset.is_file() else EpisodeSpec()
    record = load_record(name) if name else None
    if record is None:
        return ep
    # the file's own settings win over the record's, policy by policy
    return ep.model_copy(update={"baselines": {**record.choices(), **ep.baselines}})


def configure_policy(policy: Policy, defaults: EpisodeSpec) -> Policy:
    """Hand the scenario's defaults to a policy that takes them; returns the policy.

    Args:
        policy: A freshly built policy; it is configured in place when it has a
            ``use_scenario_defaults`` method (every ``Tunable`` baseline), else untouched.
        defaults: The scenario's ``EpisodeSpec`` (``scenario_defaults``).
    """
    use = getattr(policy, "use_scenario_defaults", None)
    if callable(use):
        use(defaults)
    return policy


def _row(res: EpisodeResult) -> dict[str, Any]:
    """An episode's ``RESULT_KEYS`` metrics as floats, its mean decision time
    (``decision_ms``), wall time (``wall_s``) and per-job completion times (``job_finish_s``).
    """
    m = res.metrics.as_dict()
    row: dict[str, Any] = {k: float(m[k]) for k in RESULT_KEYS if k in m}
    row["decision_ms"] = res.decision_ms
    row["wall_s"] = res.wall_s
    # None (not NaN) for jobs not completed: rows compare with == and serialise as null
    row["job_finish_s"] = [
        None if math.isnan(x) else x for x in completion_times(res.state).tolist()
    ]
    return row


def episode_row(instance: Instance, res: EpisodeResult, seed: int) -> dict[str, Any]:
    """The per-seed row recorded for one episode (metrics, timing, per-job completions).

    Args:
        instance: The episode's instance (its jobs' submission times go in the row).
        res: ``play``'s result on it.
        seed: The seed ``instance`` was built from.

    Returns:
        A ``PolicyRun.per_seed`` row without the bound and common-job metrics
        (``add_bound`` and ``add_common_metrics`` add them).
    """
    row = _row(res)
    row["job_submit_s"] = instance.jobs.submit_s.astype(np.float64).tolist()
    row["seed"] = seed
    return row


def episode_bound(instance: Instance, until: float | None = None) -> float:
    """The hindsight bound of the headline on ``instance`` (``play(until=until)``'s run),
    best-node equivalents (``mtgym.hindsight.hindsight_bound``'s value). Compute it once
    per (instance, until) and give it to every policy's row (``add_bound``).

    Args:
        instance: The episode.
        until: The prefix's end given to ``play``; None: the horizon.

    Returns:
        The bound with ``hindsight_bound``'s defaults (a 60 s LP budget); a solver time-out
        leaves it looser, never wrong.
    """
    from mtgym.hindsight import hindsight_bound

    return hindsight_bound(instance, until).value


def add_bound(row: dict[str, Any], bound: float | None) -> dict[str, Any]:
    """Set ``hindsight_bound`` and ``bound_fraction`` (the row's headline / the bound) in
    ``row`` (NaN when ``bound`` is None or not positive); returns the row.

    Args:
        row: A per-seed row (``episode_row``), changed in place.
        bound: The seed's hindsight bound (``episode_bound``); None when it was not
            computed (``hindsight=False``), which also leaves ``hindsight_bound`` NaN.
    """
    head = row.get("normalized_throughput")
    frac = math.nan
    if bound is not None and head is not None and bound > 0 and math.isfinite(bound):
        frac = float(head) / float(bound)
    row["hindsight_bound"] = math.nan if bound is None else float(bound)
    row["bound_fraction"] = frac
    return row


def add_common_metrics(runs: Sequence[PolicyRun]) -> None:
    """Fill ``jct_common_mean``, ``makespan_common``, ``jobs_common`` seed by seed.

    The common jobs of a seed are those every policy in ``runs`` completed on it
    (``mtgym.metrics.common_metrics``). Rows of one seed must sit at the same position in
    every run (``ValueError`` otherwise).

    Args:
        runs: Every compared policy's run on the same seeds; their rows are changed in
            place. A single run makes its own completed jobs the common ones.
    """
    if not runs:
        return
    n = len(runs[0].per_seed)
    for run in runs:
        if len(run.per_seed) != n:
            raise ValueError(f"policy {run.name!r} has {len(run.per_seed)} seeds, expected {n}")
    for k in range(n):
        rows = [run.per_seed[k] for run in runs]
        if len({r["seed"] for r in rows}) != 1:
            raise ValueError(f"row {k}: seeds differ between policies: {[r['seed'] for r in rows]}")
        finish = [
            np.array([np.nan if v is None else v for v in r["job_finish_s"]], dtype=np.float64)
            for r in rows
        ]
        common = common_metrics(finish, np.asarray(rows[0]["job_submit_s"], dtype=np.float64))
        for r, c in zip(rows, common, strict=True):
            r["jct_common_mean"] = c.jct_common_mean
            r["makespan_common"] = c.makespan_common
            r["jobs_common"] = float(c.jobs_common)


def resolve_reference(names: Sequence[str], reference: str | None) -> str | None:
    """The reference policy: ``reference`` (must be compared), else freetrain, else the first.

    Args:
        names: The compared policies, in order.
        reference: The policy asked for; None picks the default above.

    Returns:
        The reference's name; None only when ``names`` is empty.

    Raises:
        ValueError: ``reference`` is not one of the compared policies.
    """
    if reference is not None:
        if reference not in names:
            raise ValueError(
                f"reference policy {reference!r} is not among the compared policies: "
                f"{', '.join(names)}"
            )
        return reference
    if DEFAULT_REFERENCE in names:
        return DEFAULT_REFERENCE
    return names[0] if names else None


def summarise(
    runs: Sequence[PolicyRun],
    reference: str | None = None,
    *,
    level: float = stats.LEVEL,
    n_boot: int = stats.N_BOOT,
    seed: int = stats.SEED,
) -> dict[str, Summary]:
    """Intervals of every metric and paired comparisons against the reference, per policy.

    Args:
        runs: The policies' runs on the same seeds (rows in the same seed order).
        reference: The reference policy (``resolve_reference``).
        level: The intervals' confidence level, in (0, 1).
        n_boot: Bootstrap resamples of the seeds.
        seed: Seed of the resampling (the same inputs give the same intervals).

    Returns:
        Policy name -> its ``Summary``.
    """
    ref_name = resolve_reference([r.name for r in runs], reference)
    ref = next((r for r in runs if r.name == ref_name), None)
    out = {}
    for run in runs:
        iv = {
            k: stats.mean_ci(run.values(k), level=level, n_boot=n_boot, seed=seed)
            for k in RESULT_KEYS
        }
        pr = {}
        if ref is not None:
            pr = {
                k: stats.paired(
                    run.values(k),
                    ref.values(k),
                    reference=ref.name,
                    level=level,
                    n_boot=n_boot,
                    seed=seed,
                )
                for k in RESULT_KEYS
            }
        out[run.name] = Summary(iv, pr)
    return out


def _json_safe(x: Any) -> Any:
    """``x`` with every NaN or infinite float, in nested dicts and lists, replaced by None
    (JSON ``null``: strict JSON has no NaN).
    """
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
    reference: str | None = None,
    hindsight: bool = True,
    journal: Any = None,
) -> list[PolicyRun]:
    """Run every (name, factory) policy on every seed; return and optionally write results.

    Each seed's instance is built once and played by every policy (a paired comparison);
    each policy is built afresh per episode and given the scenario's defaults. Prints the
    tables to the console at the end (``print_table``). With ``progress`` and an output
    that is not a terminal (a log file), one line per finished policy instead of the bar.

    Args:
        generator: The scenario's seeded generator.
        policies: (name, factory) per policy; the factory builds a fresh policy.
        seeds: The seeds, one instance each.
        out: Folder for results.json, results.md, tradeoff.png and ``tb/`` (created);
            None writes nothing.
        decision_interval_s: Decide every that many seconds; None: each policy's own
            schedule (``play``).
        progress: Show a transient progress bar.
        scenario_name: The name in the tables and results.json; None: the generator's.
        reference: The policy the others are compared with (``resolve_reference``).
        hindsight: Compute each seed's hindsight bound (once, for all policies) and put
            it and ``bound_fraction`` in the rows (``add_bound``).
        journal: a ``mtgym.benchmark.journal.Journal`` that episodes and bounds are taken
            from and written to as they finish (``mtgym evaluate --resume``); None: none.

    Returns:
        One ``PolicyRun`` per policy, in the order given.

    Raises:
        ValueError: ``reference`` is not one of the policies (before any episode).
    """
    from rich.console import Console
    from rich.progress import Progress

    names = [name for name, _ in policies]
    resolve_reference(names, reference)  # fail before simulating
    console = Console()  # the terminal's width, $COLUMNS, or 80 in a pipe: tables fit it
    defaults = scenario_defaults(generator)
    bounds: dict[int, float | None] = {}
    runs = [PolicyRun(name, []) for name in names]
    total = len(policies) * len(seeds)
    t_start = time.perf_counter()
    name = scenario_name or getattr(generator, "name", "scenario")
    lines = progress and not console.is_terminal
    episodes = _Episodes(generator, defaults, decision_interval_s, name, journal)
    with Progress(console=console, disable=not progress or lines, transient=True) as bar:
        task = bar.add_task("evaluating", total=total)
        for k, (run, (label, factory)) in enumerate(zip(runs, policies, strict=True)):
            for seed in seeds:
                if seed not in bounds:
                    bar.update(task, description=f"hindsight bound, seed {seed}")
                    bounds[seed] = episodes.bound(seed) if hindsight else None
                bar.update(task, description=f"{label} seed {seed}")
                row = episodes.row(label, factory, seed)
                run.per_seed.append(add_bound(row, bounds[seed]))
                bar.advance(task)
            if lines:
                done = (k + 1) * len(seeds)
                elapsed = time.perf_counter() - t_start
                print(f"[{done}/{total} episodes, {elapsed:.0f} s] {name}: {label}", flush=True)
    add_common_metrics(runs)
    results = results_dict(runs, seeds, name, reference=reference)
    if out is not None:
        write_results(out, runs, seeds, name, reference=reference, results=results)
    elapsed = time.perf_counter() - t_start
    title = f"{name}: {len(seeds)} seed(s), {elapsed:.1f} s"
    print_table(runs, console, title=title, reference=reference, results=results)
    return runs


@dataclass
class _Episodes:
    """``evaluate``'s episodes and bounds: each instance built once, each episode and bound
    taken from the journal when it holds it, else played (and journalled).
    """

    generator: Generator
    defaults: EpisodeSpec
    decision_interval_s: float | None
    scenario: str
    journal: Any
    instances: dict[int, Instance] = field(default_factory=dict)

    def instance(self, seed: int) -> Instance:
        """The seed's instance, built once."""
        if seed not in self.instances:
            self.instances[seed] = self.generator(seed)
        return self.instances[seed]

    def bound(self, seed: int) -> float:
        """The seed's hindsight bound."""
        hit = None if self.journal is None else self.journal.bound(self.scenario, seed, None)
        if hit is None:
            hit = episode_bound(self.instance(seed))
            if self.journal is not None:
                self.journal.add_bound(self.scenario, seed, None, hit)
        return hit

    def row(self, label: str, factory: Callable[[], Policy], seed: int) -> dict[str, Any]:
        """The episode's row (before its bound)."""
        key = (self.scenario, label, seed, None, self.decision_interval_s)
        hit = None if self.journal is None else self.journal.row(*key)
        if hit is not None:
            return hit
        inst = self.instance(seed)
        policy = configure_policy(factory(), self.defaults)
        res = play(inst, policy, decision_interval_s=self.decision_interval_s)
        row = episode_row(inst, res, seed)
        if self.journal is not None:
            self.journal.add_row(*key, row)
        return row


def results_dict(
    runs: Sequence[PolicyRun],
    seeds: Sequence[int],
    scenario: str,
    *,
    reference: str | None = None,
) -> dict[str, Any]:
    """The content of ``results.json`` (see the module docstring), JSON-safe.

    Args:
        runs: The policies' runs, rows complete (after ``add_common_metrics``).
        seeds: The seeds played, recorded as given.
        scenario: The scenario's name.
        reference: The reference policy (``resolve_reference``).
    """
    ref = resolve_reference([r.name for r in runs], reference)
    summary = summarise(runs, ref)
    results: dict[str, Any] = {
        "scenario": scenario,
        "seeds": list(seeds),
        "reference": ref,
        "ci": {
            "level": stats.LEVEL,
            "method": "percentile bootstrap over seeds (paired: of the per-seed differences)",
            "n_boot": stats.N_BOOT,
            "bootstrap_seed": stats.SEED,
        },
        "policies": {},
    }
    for run in runs:
        s = summary[run.name]
        entry: dict[str, Any] = run.mean()
        entry["ci_low"] = {k: iv.ci_low for k, iv in s.intervals.items()}
        entry["ci_high"] = {k: iv.ci_high for k, iv in s.intervals.items()}
        entry["n"] = {k: iv.n for k, iv in s.intervals.items()}
        entry["paired"] = {k: p.as_dict() for k, p in s.paired.items()}
        entry["per_seed"] = run.per_seed
        results["policies"][run.name] = entry
    return _json_safe(results)  # type: ignore[no-any-return]


def write_results(
    out: Path,
    runs: Sequence[PolicyRun],
    seeds: Sequence[int],
    scenario: str,
    *,
    reference: str | None = None,
    results: dict[str, Any] | None = None,
) -> None:
    """``out/results.json``, ``out/results.md`` (the same numbers as markdown tables),
    ``out/tradeoff.png`` (``mtgym.tradeoff``) and ``out/tb/<policy>/`` event files (SB3
    logger; the folder is the policy's name made safe on every file system,
    ``mtgym.naming.safe_names``); ``results`` is ``results_dict``'s content when already
    computed.

    The TensorBoard runs also get a CSV beside the events (``progress.csv``). A policy
    whose means are all undefined records a placeholder metric so its ``hparams`` entry is
    still written.

    Args:
        out: The output folder (created).
        runs: The policies' runs.
        seeds: The seeds played.
        scenario: The scenario's name.
        reference: The reference policy, when ``results`` is not given.
        results: ``results_dict(runs, seeds, scenario, reference=reference)``, if at hand.
    """
    from stable_baselines3.common.logger import HParam, configure

    from mtgym import tables, tradeoff
    from mtgym.naming import safe_names

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if results is None:
        results = results_dict(runs, seeds, scenario, reference=reference)
    folders = safe_names([run.name for run in runs])  # no ':' or '/' (mtgym.naming)
    for run in runs:
        logger = configure(str(out / "tb" / folders[run.name]), ["tensorboard", "csv"])
        for row in run.per_seed:
            for key, tag in TAGS.items():
                v = row.get(key)
                if v is not None and not (isinstance(v, float) and math.isnan(v)):
                    logger.record(tag, v)
            logger.dump(int(row["seed"]))
        means = {
            SUMMARY_PREFIX + k: v
            for k, v in results["policies"][run.name].items()
            if k in TAGS and v is not None
        }
        for tag, v in means.items():
            logger.record(tag, v)
        hp = {
            "policy": run.name,
            "scenario": scenario,
            "reference": str(results["reference"]),
            "seeds": len(seeds),
        }
        logger.record("hparams", HParam(hp, means or {SUMMARY_PREFIX + "none": 0.0}), exclude="csv")
        logger.dump(0)
        logger.close()
    from mtgym.core.io import atomic_write_json, atomic_write_text

    atomic_write_json(out / "results.json", _json_safe(results))
    atomic_write_text(out / "results.md", tables.markdown(results))
    tradeoff.write(results, out / tradeoff.FILENAME)


def print_table(
    runs: Sequence[PolicyRun],
    console: Any,
    title: str,
    *,
    reference: str | None = None,
    results: dict[str, Any] | None = None,
) -> None:
    """The mean [95 % interval] tables, then the paired difference (ratio) tables, each split
    to fit ``console.width`` (``mtgym.tables``); ``results`` is ``results_dict``'s content when
    already computed.

    Args:
        runs: The policies' runs.
        console: A ``rich.console.Console``; its width decides how many columns fit.
        title: The first table's title; also the scenario name when ``results`` is None.
        reference: The reference policy, when ``results`` is not given.
        results: The ``results.json`` content, if at hand.
    """
    from mtgym import tables

    if results is None:
        seeds = [r["seed"] for r in runs[0].per_seed] if runs else []
        results = results_dict(runs, seeds, title, reference=reference)
    tables.print_results(results, console, title)
