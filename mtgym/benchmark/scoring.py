"""Score a split's runs (``mtgym.benchmark.runner``): per scenario, per policy and over the
suite, with the aggregates (``mtgym.benchmark.aggregates``) over the score matrices.

**Scoring** (``score_split``):

- per scenario and policy: the headline (``normalized_throughput``) mean with its 95 %
  bootstrap interval (``mtgym.stats.mean_ci``), the JCT of the jobs every policy that ran
  completed (``jct_common_mean``) and the jobs completed;
- the scenario's **reference** is its best *baseline*: the policy with the highest mean
  headline among those that ran, learned agents (``agent``, ``agent:PATH``) excluded. It is
  chosen after seeing that scenario's numbers, as the benchmark asks ("its paired ratio to
  that scenario's best baseline"); every policy's ratio to it is paired over the seeds
  (``mtgym.stats.paired``: mean / reference mean, with a bootstrap interval), so the
  reference's own ratio is 1;
- the **suite score** of a policy is the geometric mean over scenarios of those ratios. Its
  interval: resample the seeds of each scenario (the same resample for every policy of a
  scenario, an independent one per scenario), recompute each scenario's ratio of means and
  their geometric mean, take the 2.5 and 97.5 % quantiles. The reference stays the one
  chosen on the full data. A policy that did not run on every scenario (or a scenario with
  no baseline) has **no suite score** (NaN, ``missing`` names the scenarios): it is never
  computed over fewer scenarios.
- **part of a split** (``mtgym benchmark --scenario``): the scenarios played are scored as
  above; no policy has a suite score or an aggregate (``skipped``: "not defined: ran N of M
  scenarios", ``mtgym.benchmark.aggregates.partial_reason``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mtgym import stats
from mtgym.benchmark import aggregates
from mtgym.benchmark.aggregates import Aggregates
from mtgym.benchmark.runner import ScenarioRuns, is_baseline
from mtgym.benchmark.splits import Split
from mtgym.evaluate import PolicyRun
from mtgym.metrics import HEADLINE

_NAN_IV = stats.Interval(math.nan, math.nan, math.nan, 0)


@dataclass(frozen=True)
class PolicyScore:
    """One policy on one scenario (all NaN and ``unsupported`` set when it could not run).

    Intervals are means over seeds with their percentile-bootstrap interval
    (``stats.mean_ci``).

    Attributes:
        headline: the headline (``normalized_throughput``, best-node equivalents).
        ratio: the headline against the scenario's reference, paired over seeds
            (``stats.paired``: ratio of means with its interval); None: no reference.
        jct_common: the mean JCT (s), per seed, of the jobs every policy that ran completed.
        jct_common_ratio: mean JCT of common jobs / the reference's, paired (NaN: no
            reference).
        jobs_completed: jobs completed per episode.
        unsupported: why the policy could not run here (then every number is NaN); None:
            it ran.
        per_seed: the headline seed by seed (the split's seeds, NaN where undefined).
        hindsight_bound: the episode's hindsight bound (NaN when not computed).
        bound_fraction: the headline's fraction of that bound (NaN when not computed).
        of_clairvoyant: the headline's fraction of the clairvoyant's on the same seed (NaN
            in a run without the clairvoyant; ``mtgym.benchmark.runner.add_clairvoyant``).
    """

    headline: stats.Interval
    ratio: stats.Paired | None
    jct_common: stats.Interval
    jct_common_ratio: float
    jobs_completed: stats.Interval
    unsupported: str | None = None
    per_seed: tuple[float, ...] = ()
    hindsight_bound: stats.Interval = field(default_factory=lambda: _NAN_IV)
    bound_fraction: stats.Interval = field(default_factory=lambda: _NAN_IV)
    of_clairvoyant: stats.Interval = field(default_factory=lambda: _NAN_IV)


@dataclass(frozen=True)
class ScenarioScore:
    """One scenario's scores and its reference (None if no baseline ran); ``recorded``: the
    reference is the tuning record's (fixed in advance), not the best of those that ran.

    Attributes:
        scenario: the scenario's name.
        seeds: the seeds played.
        horizon_s: simulated seconds played (None: the scenario's horizon).
        reference: the policy every ratio divides by; None: no baseline ran.
        policies: policy -> its score, every policy asked for, in report order.
        wall_s: ``ScenarioRuns.wall_s``.
        recorded: whether the reference is the recorded one (``mtgym tune``).
    """

    scenario: str
    seeds: list[int]
    horizon_s: float | None
    reference: str | None
    policies: dict[str, PolicyScore]
    wall_s: float
    recorded: bool = False


@dataclass(frozen=True)
class SuiteScore:
    """A policy's geometric mean of ratios over the split (NaN when incomplete).

    Attributes:
        policy: the policy's name.
        score: the geometric mean over scenarios of its ratio of means to the reference.
        ci_low: the low quantile of the bootstrap's geometric means.
        ci_high: the high quantile.
        missing: scenarios without a positive, finite ratio for this policy (it did not
            run, no baseline ran, or the ratio is 0 or NaN); non-empty makes every number
            NaN.
    """

    policy: str
    score: float
    ci_low: float
    ci_high: float
    missing: list[str]

    @property
    def complete(self) -> bool:
        """Whether every scenario gave a ratio (only then is the score defined)."""
        return not self.missing


@dataclass(frozen=True)
class BenchmarkResult:
    """Everything the report shows.

    Attributes:
        split: the split's name.
        quick: whether the quick seeds were played.
        policies: every policy, in report order.
        scenarios: one score per scenario, in the split's order.
        suite: policy -> its suite score.
        level: confidence level of every interval (default 0.95).
        n_boot: bootstrap resamples of the per-scenario and suite intervals.
        boot_seed: the bootstraps' seed.
        aggregates: IQMs, probabilities of improvement and profiles
            (``mtgym.benchmark.aggregates``); None: not computed.
        skipped: the split's scenarios not played (``mtgym benchmark --scenario``), in
            the split's order; any leaves every suite score and aggregate undefined.
    """

    split: str
    quick: bool
    policies: list[str]
    scenarios: list[ScenarioScore]
    suite: dict[str, SuiteScore]
    level: float
    n_boot: int
    boot_seed: int
    aggregates: Aggregates | None = None
    skipped: list[str] = field(default_factory=list)


def best_baseline(runs: Sequence[PolicyRun], key: str = HEADLINE) -> str | None:
    """The baseline with the highest mean ``key`` over seeds (first on ties; None if none).

    Learned agents are skipped (``is_baseline``); NaN seeds are left out of a mean, and a
    policy with no value at all cannot be chosen.

    Args:
        runs: the policies that ran on one scenario.
        key: the row key compared (the headline).
    """
    best, best_v = None, -math.inf
    for run in runs:
        if not is_baseline(run.name):
            continue
        v = run.values(key)
        v = v[~np.isnan(v)]
        if v.size and float(v.mean()) > best_v:
            best, best_v = run.name, float(v.mean())
    return best


def score_scenario(
    sr: ScenarioRuns,
    policies: Sequence[str],
    *,
    level: float = stats.LEVEL,
    n_boot: int = stats.N_BOOT,
    seed: int = stats.SEED,
    reference: str | None = None,
) -> ScenarioScore:
    """Intervals and paired ratios of one scenario (module docstring). ``reference``: the
    scenario's recorded reference (``mtgym.benchmark.references``) when it ran, else the
    best baseline among those that ran.

    Args:
        sr: the scenario's episodes.
        policies: every policy asked for, in report order; one that did not run gets an
            all-NaN score with its reason (``"did not run"`` when none was recorded).
        level: confidence level of the intervals.
        n_boot: bootstrap resamples.
        seed: the bootstrap's seed.
        reference: the recorded reference; ignored when it did not run here.
    """
    by_name = {r.name: r for r in sr.runs}
    ref_name = reference if reference in by_name else best_baseline(sr.runs)
    recorded = ref_name is not None and ref_name == reference
    ref = by_name.get(ref_name) if ref_name is not None else None
    kw = {"level": level, "n_boot": n_boot, "seed": seed}
    out: dict[str, PolicyScore] = {}
    for name in policies:
        if name not in by_name:
            reason = sr.unsupported.get(name, "did not run")
            out[name] = PolicyScore(_NAN_IV, None, _NAN_IV, math.nan, _NAN_IV, reason)
            continue
        run = by_name[name]
        ratio = jct_ratio = None
        if ref is not None:
            ratio = stats.paired(
                run.values(HEADLINE), ref.values(HEADLINE), reference=ref.name, **kw
            )
            jct_ratio = stats.paired(
                run.values("jct_common_mean"),
                ref.values("jct_common_mean"),
                reference=ref.name,
                **kw,
            ).ratio
        bound = run.values("bound_fraction")
        of_c = run.values("of_clairvoyant")
        out[name] = PolicyScore(
            headline=stats.mean_ci(run.values(HEADLINE), **kw),
            ratio=ratio,
            jct_common=stats.mean_ci(run.values("jct_common_mean"), **kw),
            jct_common_ratio=math.nan if jct_ratio is None else jct_ratio,
            jobs_completed=stats.mean_ci(run.values("jobs_completed"), **kw),
            per_seed=tuple(run.values(HEADLINE).tolist()),
            hindsight_bound=stats.mean_ci(run.values("hindsight_bound"), **kw)
            if not np.isnan(bound).all()
            else _NAN_IV,
            bound_fraction=stats.mean_ci(bound, **kw) if not np.isnan(bound).all() else _NAN_IV,
            of_clairvoyant=stats.mean_ci(of_c, **kw) if not np.isnan(of_c).all() else _NAN_IV,
        )
    return ScenarioScore(
        sr.scenario, sr.seeds, sr.horizon_s, ref_name, out, sr.wall_s, recorded=recorded
    )


def suite_scores(
    results: Sequence[ScenarioRuns],
    scores: Sequence[ScenarioScore],
    policies: Sequence[str],
    *,
    level: float = stats.LEVEL,
    n_boot: int = stats.N_BOOT,
    seed: int = stats.SEED,
    skipped: Sequence[str] = (),
) -> dict[str, SuiteScore]:
    """Each policy's geometric mean of its scenario ratios, with a bootstrap interval
    (module docstring: seeds resampled within each scenario, jointly for its policies).

    Scenario k's resamples use seed ``seed + k``. In each, a policy's ratio is the ratio of
    means over the resampled seeds where both it and the reference have a value; a
    replicate in which some scenario's ratio is not positive is dropped before the
    quantiles.

    Args:
        results: the scenarios' episodes.
        scores: their scores (``score_scenario``), in the same order: the references.
        policies: the policies to score.
        level: confidence level of the interval.
        n_boot: bootstrap resamples.
        seed: the first scenario's bootstrap seed.
        skipped: scenarios of the split not played: each policy misses them (so none
            has a score), as a policy that did not run on a scenario.
    """
    log_pt = {p: np.zeros(0) for p in policies}
    log_boot = {p: np.zeros((0, n_boot)) for p in policies}
    missing: dict[str, list[str]] = {p: list(skipped) for p in policies}
    for k, (sr, sc) in enumerate(zip(results, scores, strict=True)):
        by_name = {r.name: r for r in sr.runs}
        ref = by_name.get(sc.reference) if sc.reference is not None else None
        idx = stats.resample_indices(len(sr.seeds), n_boot, seed + k)  # this scenario's draws
        for p in policies:
            if ref is None or p not in by_name:
                missing[p].append(sc.scenario)
                continue
            x, r = by_name[p].values(HEADLINE), ref.values(HEADLINE)
            ok = ~(np.isnan(x) | np.isnan(r))
            point = float(x[ok].mean() / r[ok].mean()) if ok.any() else math.nan
            if not (point > 0 and math.isfinite(point)):
                missing[p].append(sc.scenario)
                continue
            # a resample's ratio of means over the seeds where both have a value
            xw, rw = np.where(ok, x, 0.0)[idx], np.where(ok, r, 0.0)[idx]
            cnt = ok[idx].sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                boot = (xw.sum(axis=1) / cnt) / (rw.sum(axis=1) / cnt)
                log_b = np.where(boot > 0, np.log(boot), np.nan)
            log_pt[p] = np.append(log_pt[p], math.log(point))
            log_boot[p] = np.vstack([log_boot[p], log_b])
    out = {}
    for p in policies:
        if missing[p] or log_pt[p].size == 0:
            out[p] = SuiteScore(p, math.nan, math.nan, math.nan, missing[p] or ["(no scenario)"])
            continue
        g = np.exp(log_boot[p].mean(axis=0))
        g = g[np.isfinite(g)]
        lo, hi = (
            np.quantile(g, [(1 - level) / 2, (1 + level) / 2]) if g.size else (math.nan, math.nan)
        )
        out[p] = SuiteScore(p, float(np.exp(log_pt[p].mean())), float(lo), float(hi), [])
    return out


@dataclass(frozen=True)
class Bootstrap:
    """The bootstrap settings of ``score_split``.

    Attributes:
        level: confidence level of the intervals.
        n_boot: replications of the per-scenario and suite intervals.
        seed: seed of every bootstrap.
        agg_reps: replications of the aggregates (``mtgym.benchmark.aggregates``).
    """

    level: float = stats.LEVEL
    n_boot: int = stats.N_BOOT
    seed: int = stats.SEED
    agg_reps: int = aggregates.REPS


def score_matrices(
    results: Sequence[ScenarioRuns],
    scores: Sequence[ScenarioScore],
    policies: Sequence[str],
    normalisation: str,
    skipped: Sequence[str] = (),
) -> aggregates.Matrices:
    """Per policy its ``(num_seeds, num_scenarios)`` matrix of normalised scores, or why it
    has none: ``(matrices, reasons)``, each policy in exactly one of them.

    Column k is scenario k of ``results``, row s its s-th seed; every scenario must have
    the same number of seeds (else no policy gets a matrix).

    Args:
        results: the scenarios' episodes.
        scores: their scores, in the same order (the references).
        policies: the policies.
        normalisation: ``"reference"`` (headline / the reference's headline on the same
            seed), ``"bound"`` (the rows' ``bound_fraction``) or ``"clairvoyant"`` (the
            rows' ``of_clairvoyant``: headline / the clairvoyant's on the same seed).
        skipped: scenarios of the split that were not played; any makes every policy's
            reason ``partial_reason`` (nothing is computed over part of a split).

    Raises:
        ValueError: an unknown normalisation.
    """
    if normalisation not in aggregates.NORMALISATIONS:
        known = aggregates.NORMALISATIONS
        raise ValueError(f"unknown normalisation {normalisation!r}; known: {known}")
    if skipped:
        why = aggregates.partial_reason(len(results), len(skipped))
        return {}, dict.fromkeys(policies, why)
    reasons: dict[str, str] = {}
    if not results:
        return {}, {p: f"{aggregates.NOT_AVAILABLE}: no scenario" for p in policies}
    n_seeds = {len(sr.seeds) for sr in results}
    if len(n_seeds) != 1 or 0 in n_seeds:
        why = f"{aggregates.NOT_AVAILABLE}: the scenarios do not share a (non-zero) number of seeds"
        return {}, dict.fromkeys(policies, why)
    for p in policies:
        absent = [sr.scenario for sr in results if p not in {r.name for r in sr.runs}]
        if absent:
            reasons[p] = f"{aggregates.NOT_DEFINED} {', '.join(absent)}"
        elif normalisation == "reference":
            no_ref = [sc.scenario for sc in scores if sc.reference is None]
            if no_ref:
                reasons[p] = f"not defined: no baseline ran on {', '.join(no_ref)}"
    mats: dict[str, np.ndarray] = {}
    for p in policies:
        if p in reasons:
            continue
        cols = []
        for sr, sc in zip(results, scores, strict=True):
            by_name = {r.name: r for r in sr.runs}
            run = by_name[p]
            if normalisation == "reference":
                assert sc.reference is not None
                with np.errstate(divide="ignore", invalid="ignore"):
                    col = run.values(HEADLINE) / by_name[sc.reference].values(HEADLINE)
            else:
                key = aggregates.ROW_KEYS[normalisation]
                if not all(key in row for row in run.per_seed):
                    reasons[p] = f"{aggregates.NOT_AVAILABLE}: the rows carry no {key}"
                    break
                col = run.values(key)
            bad = np.flatnonzero(~np.isfinite(col))
            if bad.size:
                reasons[p] = (
                    f"{aggregates.NOT_AVAILABLE}: non-finite normalised score on {sr.scenario} "
                    f"seed {sr.seeds[int(bad[0])]}"
                )
                break
            cols.append(col)
        if p not in reasons:
            mats[p] = np.column_stack(cols)
    return mats, reasons


def score_split(
    split: Split,
    results: Sequence[ScenarioRuns],
    policies: Sequence[str],
    *,
    quick: bool = False,
    bootstrap: Bootstrap | None = None,
    references: dict[str, str] | None = None,
    skipped: Sequence[str] = (),
) -> BenchmarkResult:
    """Per-scenario scores, the suite score of every policy and its aggregates
    (``mtgym.benchmark.aggregates``), with the ``bootstrap`` settings (the defaults when
    None). ``references``: scenario -> its recorded reference
    (``mtgym.benchmark.references``).

    Args:
        split: the split played (its name is reported).
        results: the scenarios' episodes (``run_split``).
        policies: every policy, in report order.
        quick: whether the quick seeds were played (reported).
        bootstrap: the bootstrap settings.
        references: scenario -> its recorded reference; a scenario without one, or whose
            reference did not run, takes the best baseline that ran.
        skipped: the split's scenarios not played (``mtgym benchmark --scenario``): the
            others are scored, and no suite score or aggregate is defined.
    """
    b = bootstrap or Bootstrap()
    level, n_boot, seed = b.level, b.n_boot, b.seed
    kw = {"level": level, "n_boot": n_boot, "seed": seed}
    refs = references or {}
    scores = [score_scenario(sr, policies, reference=refs.get(sr.scenario), **kw) for sr in results]
    return BenchmarkResult(
        split=split.name,
        quick=quick,
        policies=list(policies),
        scenarios=scores,
        suite=suite_scores(results, scores, policies, skipped=skipped, **kw),
        level=level,
        n_boot=n_boot,
        boot_seed=seed,
        aggregates=aggregates.compute(
            {
                norm: score_matrices(results, scores, policies, norm, skipped)
                for norm in aggregates.NORMALISATIONS
            },
            policies,
            num_seeds=len(results[0].seeds) if results else 0,
            num_scenarios=len(results),
            level=level,
            reps=b.agg_reps,
            seed=seed,
        ),
        skipped=list(skipped),
    )
