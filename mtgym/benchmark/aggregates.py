"""Aggregates of a benchmark run over all its episodes, after Agarwal et al., "Deep
Reinforcement Learning at the Edge of the Statistical Precipice" (NeurIPS 2021), with their
library ``rliable``.

The geometric-mean suite score (``mtgym.benchmark.runner``) is kept; these sit beside it
because a handful of seeds on a handful of scenarios is the regime that paper studies: a
mean over scenarios is dragged by one outlier scenario, a median over scenario means throws
most episodes away, and a point estimate without an interval over the seeds invites reading
noise as progress. What is computed, per policy, from the episodes of a split:

- **normalised scores**: one per (scenario, seed), arranged as rliable's matrix
  ``(num_seeds, num_scenarios)``. Two normalisations:

  * ``reference``: the policy's headline on seed s / the scenario's reference (best
    baseline, ``ScenarioScore.reference``) on the same seed s: paired, so the seed's own
    difficulty cancels and the reference scores 1 on every episode;
  * ``bound``: the row's ``bound_fraction`` (headline / the episode's hindsight bound):
    an absolute scale that does not move when the set of baselines changes. Rows that do
    not carry it make this normalisation *not available* (a reason, never an error).
  * ``clairvoyant``: the row's ``of_clairvoyant`` (headline / the clairvoyant planner's on
    the same seed, ``mtgym.benchmark.runner.add_clairvoyant``): the share of a schedule
    known to be reachable; not available in a run without the clairvoyant.

- **IQM** (``iqm``, ``iqm_bound``, ``iqm_clairvoyant``): the interquartile mean over all
  (scenario, seed) of a normalisation: the mean of the middle 50 % of the episodes
  (``rliable.metrics.aggregate_iqm``, a 25 % trimmed mean). It uses half of the episodes, so
  it is far less noisy than the median, and it ignores the worst and best quarter, so one
  failed or lucky scenario does not decide it as it does a mean.
- **Probability of improvement** of X over Y: per scenario, the probability that an episode
  of X (its reference-normalised score) beats one of Y (the Mann-Whitney U statistic over
  the seed pairs, ties counted half), averaged over scenarios
  (``rliable.metrics.probability_of_improvement``). It says how often, not by how much: 0.5 is a
  tie, 1.0 is X better on every pair of episodes of every scenario. ``P(Y > X) = 1 -
  P(X > Y)`` exactly, so each unordered pair is bootstrapped once and the reverse is
  derived.
- **Intervals**: stratified percentile bootstrap (``rliable.library.get_interval_estimates``):
  resample the seeds *within each scenario* (runs within tasks), recompute the aggregate,
  take the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles. For the probability of
  improvement the two policies' episodes are resampled independently
  (``StratifiedIndependentBootstrap``, rliable's choice for that statistic).
- **Performance profile**: per normalisation and policy, the fraction of all episodes whose
  normalised score is above tau, for a grid of tau, with a stratified-bootstrap band
  (``rliable.library.create_performance_profile``): the whole score distribution, so a policy that
  is better on some scenarios and much worse on others shows it where an aggregate hides it.

A policy that did not run on every scenario (unsupported), or on a scenario with no
reference, gets no aggregate ("not defined", as the suite score): it is never computed over
fewer scenarios. Nor is any policy's when the run played part of its split (``skipped``:
``mtgym benchmark --scenario``; "not defined: ran N of M scenarios"). A non-finite
normalised score (a NaN headline, a reference at 0) makes that aggregate not available,
with the episode named.

**Determinism.** rliable draws its bootstrap indices from numpy's *global* RNG
(``np.random.choice`` in ``StratifiedBootstrap.update_indices``); its ``random_state``
argument does not reach those draws (and arch 7 deprecates it). So every bootstrap runs
with the global RNG seeded to ``seed`` and restored afterwards (``_global_numpy_seed``):
the same inputs give the same numbers bit for bit, whatever else ran before and whichever
other policies are in the run (each policy and each pair gets the same fresh seed, so the
draws are common random numbers across policies). Not thread-safe with other users of the
global RNG during the call.

**Cost.** The number of bootstrap replications is ``reps`` (``REPS`` = 2,000, rliable's
default for profiles, not the suite score's 10,000): an IQM is 0.3 s, a pair's probability
of improvement 0.1 s with the vectorised statistic below (scipy's ``mannwhitneyu`` per
scenario per replicate, as ``rliable.metrics.probability_of_improvement`` does, takes 12 s a pair).
The point estimate is rliable's own function; the replicates use ``_poi_vectorised``, the
same statistic (tests check they agree).
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mtgym import stats

#: bootstrap replications of every aggregate (module docstring, "Cost")
REPS = 2000
#: the normalisations: by the scenario's reference baseline (paired), by the hindsight
#: bound, by the clairvoyant planner's headline on the same seed
NORMALISATIONS = ("reference", "bound", "clairvoyant")
#: the row key carrying headline / hindsight bound
BOUND_KEY = "bound_fraction"
#: the row key of each normalisation read from the rows (``reference`` is computed)
ROW_KEYS = {"bound": BOUND_KEY, "clairvoyant": "of_clairvoyant"}
#: how the reason for an undefined aggregate starts (as the suite score's)
NOT_DEFINED = "not defined: did not run on"
#: the reason of every aggregate (and suite score) of a run of part of a split
#: (``mtgym benchmark --scenario``)
NOT_DEFINED_PARTIAL = "not defined: ran {ran} of {total} scenarios"
NOT_AVAILABLE = "not available"
#: per policy its score matrix, or why it has none: ``(matrices, reasons)``, each policy in
#: exactly one (the runner's ``score_matrices``)
Matrices = tuple[dict[str, np.ndarray], dict[str, str]]
#: tau grid points of a performance profile
PROFILE_POINTS = 101
PROFILE_FILE = "performance_profile.png"


def partial_reason(ran: int, skipped: int) -> str:
    """``NOT_DEFINED_PARTIAL`` for a run of ``ran`` scenarios that left ``skipped`` out.

    Args:
        ran: scenarios played.
        skipped: scenarios of the split not played.
    """
    return NOT_DEFINED_PARTIAL.format(ran=ran, total=ran + skipped)


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its bootstrap interval, or why there is none (then all NaN).

    Attributes:
        point: the aggregate on the episodes as run.
        ci_low: the ``(1 - level) / 2`` quantile of the bootstrap replicates.
        ci_high: the ``(1 + level) / 2`` quantile.
        reason: why there is no estimate (starts with ``NOT_DEFINED`` or
            ``NOT_AVAILABLE``); None: defined.
    """

    point: float
    ci_low: float
    ci_high: float
    reason: str | None = None

    @property
    def defined(self) -> bool:
        """Whether there is a number (no reason given)."""
        return self.reason is None

    @classmethod
    def missing(cls, reason: str) -> Estimate:
        """No estimate, for ``reason`` (every number NaN).

        Args:
            reason: the one-line reason shown instead of the numbers.
        """
        return cls(math.nan, math.nan, math.nan, reason)


@dataclass(frozen=True)
class ProfileCurve:
    """One policy's performance profile: fraction of episodes above each tau, with its band.

    Each tuple has one entry per tau of its ``Profile.taus``.

    Attributes:
        fraction: the fraction of all (scenario, seed) episodes whose score exceeds tau.
        ci_low: the band's low end (stratified bootstrap).
        ci_high: the band's high end.
    """

    fraction: tuple[float, ...]
    ci_low: tuple[float, ...]
    ci_high: tuple[float, ...]


@dataclass(frozen=True)
class Profile:
    """The performance profiles of one normalisation (only the policies it is defined for);
    ``reason`` says why no policy has one.

    Attributes:
        normalisation: ``"reference"`` or ``"bound"``.
        taus: the x grid (``tau_grid``); empty when no policy has a profile.
        curves: policy -> its curve, for the policies with a score matrix.
        reason: why ``curves`` is empty (the distinct reasons, joined); None otherwise.
    """

    normalisation: str
    taus: tuple[float, ...]
    curves: dict[str, ProfileCurve]
    reason: str | None = None


@dataclass(frozen=True)
class PolicyAggregates:
    """One policy's aggregates: IQM by each normalisation, P(this policy > other).

    Attributes:
        policy: the policy's name.
        iqm: IQM of its reference-normalised scores.
        iqm_bound: IQM of its scores as fractions of the hindsight bound.
        probability_of_improvement: other policy -> P(this policy > other), on
            reference-normalised scores; an entry for every other policy of the run.
        iqm_clairvoyant: IQM of its scores as fractions of the clairvoyant's.
    """

    policy: str
    iqm: Estimate
    iqm_bound: Estimate
    probability_of_improvement: dict[str, Estimate]
    iqm_clairvoyant: Estimate | None = None


@dataclass(frozen=True)
class Aggregates:
    """Every policy's aggregates and the profiles, with the bootstrap's settings.

    Attributes:
        policies: policy -> its aggregates, in the run's policy order.
        profiles: normalisation -> its performance profiles.
        level: confidence level of every interval.
        reps: bootstrap replications.
        seed: the global-RNG seed of every bootstrap.
        num_seeds: seeds per scenario (0 without scenarios).
        num_scenarios: scenarios of the run.
    """

    policies: dict[str, PolicyAggregates]
    profiles: dict[str, Profile]
    level: float
    reps: int
    seed: int
    num_seeds: int
    num_scenarios: int


# -- bootstrap ------------------------------------------------------------------------------
@contextlib.contextmanager
def _global_numpy_seed(seed: int) -> Iterator[None]:
    """Run the block with numpy's global RNG seeded to ``seed``; restore its state after."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def _iqm(scores: np.ndarray) -> np.ndarray:
    """The IQM of a ``(num_seeds, num_scenarios)`` matrix (rliable's), as a 1-element array
    (the shape ``get_interval_estimates`` expects of an aggregate function).
    """
    from rliable import metrics

    return np.array([metrics.aggregate_iqm(scores)])


def _poi_vectorised(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``metrics.probability_of_improvement(x, y)`` without scipy per scenario: per column,
    the fraction of (run of x, run of y) pairs where x wins, ties counted half (the U
    statistic / (n_x n_y)); identical columns give 0.5 as rliable's; mean over columns.

    Broadcasting builds an (n_x, n_y, num_scenarios) comparison at once, so a replicate
    costs one vectorised pass instead of one scipy call per scenario.

    Args:
        x: (n_x, num_scenarios) the scores of X.
        y: (n_y, num_scenarios) the scores of Y.

    Returns:
        A 1-element array: P(X > Y).
    """
    gt = (x[:, None, :] > y[None, :, :]).mean(axis=(0, 1))
    eq = (x[:, None, :] == y[None, :, :]).mean(axis=(0, 1))
    p = gt + 0.5 * eq
    if x.shape == y.shape:
        p = np.where(np.all(x == y, axis=0), 0.5, p)
    return np.array([p.mean()])


def _interval(
    scores: np.ndarray | list[np.ndarray],
    func: Callable[..., np.ndarray],
    *,
    level: float,
    reps: int,
    seed: int,
) -> tuple[float, float]:
    """The stratified percentile-bootstrap interval of ``func`` (rliable; seeded, module doc).

    A list of matrices is resampled independently (rliable's
    ``StratifiedIndependentBootstrap``); a single matrix with ``StratifiedBootstrap``.

    Args:
        scores: a ``(num_seeds, num_scenarios)`` matrix, or a list of them.
        func: the aggregate, returning a 1-element array.
        level: confidence level.
        reps: bootstrap replications.
        seed: the global-RNG seed for the draws.

    Returns:
        The ``(low, high)`` quantiles.
    """
    from rliable import library

    with _global_numpy_seed(seed):
        _, ci = library.get_interval_estimates(
            {"x": scores},
            func,
            reps=reps,
            confidence_interval_size=level,
        )
    lo, hi = np.asarray(ci["x"], dtype=np.float64).reshape(2)
    return float(lo), float(hi)


def iqm_estimate(
    scores: np.ndarray, *, level: float = stats.LEVEL, reps: int = REPS, seed: int = stats.SEED
) -> Estimate:
    """IQM of a ``(num_seeds, num_scenarios)`` matrix with its stratified-bootstrap interval.

    Args:
        scores: the normalised scores (finite).
        level: confidence level.
        reps: bootstrap replications.
        seed: the global-RNG seed for the draws.
    """
    point = float(_iqm(scores)[0])
    lo, hi = _interval(scores, _iqm, level=level, reps=reps, seed=seed)
    return Estimate(point, lo, hi)


def poi_estimate(
    x: np.ndarray,
    y: np.ndarray,
    *,
    level: float = stats.LEVEL,
    reps: int = REPS,
    seed: int = stats.SEED,
) -> Estimate:
    """P(X > Y) (rliable's ``rliable.metrics.probability_of_improvement``) with its interval (the
    two matrices resampled independently within each scenario).

    Args:
        x: ``(num_seeds, num_scenarios)`` reference-normalised scores of X.
        y: those of Y, the same scenarios in the same column order.
        level: confidence level.
        reps: bootstrap replications.
        seed: the global-RNG seed for the draws.
    """
    from rliable import metrics

    point = float(metrics.probability_of_improvement(x, y))
    lo, hi = _interval([x, y], _poi_vectorised, level=level, reps=reps, seed=seed)
    return Estimate(point, lo, hi)


def _reverse(e: Estimate, x: np.ndarray, y: np.ndarray) -> Estimate:
    """P(Y > X) given ``e`` = P(X > Y): rliable's point for (Y, X), the interval mirrored
    (each replicate's P(Y > X) is 1 - its P(X > Y), so its quantiles are too).

    Args:
        e: P(X > Y) with its interval (``poi_estimate``).
        x: X's score matrix.
        y: Y's score matrix.
    """
    from rliable import metrics

    point = float(metrics.probability_of_improvement(y, x))
    return Estimate(point, 1.0 - e.ci_high, 1.0 - e.ci_low)


def _profile_func(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """Fraction of all entries of ``scores`` above each tau (rliable's score distribution,
    ``rliable.library.run_score_deviation``, vectorised over tau).

    Args:
        scores: a score matrix, any shape (flattened: every episode counts once).
        taus: the thresholds, shape (T,).

    Returns:
        (T,) the fractions.
    """
    return (scores.reshape(-1)[:, None] > np.asarray(taus)[None, :]).mean(axis=0)


def tau_grid(mats: Mapping[str, np.ndarray], points: int = PROFILE_POINTS) -> np.ndarray:
    """0 to a bit beyond the largest score (at least 1): the profile's x axis.

    One grid for every policy of a normalisation, so that their curves share an axis; it
    ends at 1.05 x max(1, the largest score).

    Args:
        mats: the score matrices of the normalisation's policies.
        points: grid points, evenly spaced.
    """
    top = max([1.0, *(float(m.max()) for m in mats.values())])
    return np.linspace(0.0, top * 1.05, points)


def performance_profile(
    normalisation: str,
    mats: Mapping[str, np.ndarray],
    reasons: Mapping[str, str],
    *,
    level: float = stats.LEVEL,
    reps: int = REPS,
    seed: int = stats.SEED,
) -> Profile:
    """The score distributions of the policies that have a matrix, with bootstrap bands
    (``rliable.library.create_performance_profile``, one seeded call per policy).

    Seeding each policy's call alike keeps a curve the same whichever other policies run.

    Args:
        normalisation: ``"reference"`` or ``"bound"``.
        mats: policy -> its score matrix (``score_matrices``).
        reasons: policy -> why it has none; joined into ``Profile.reason`` when ``mats`` is
            empty.
        level: confidence level of the bands.
        reps: bootstrap replications.
        seed: the global-RNG seed for the draws.
    """
    from rliable import library

    if not mats:
        why = "; ".join(sorted(set(reasons.values()))) or NOT_AVAILABLE
        return Profile(normalisation, (), {}, why)
    taus = tau_grid(mats)
    curves = {}
    for p, m in mats.items():
        with _global_numpy_seed(seed):
            prof, ci = library.create_performance_profile(
                {p: m},
                taus,
                custom_profile_func=_profile_func,
                reps=reps,
                confidence_interval_size=level,
            )
        band = np.asarray(ci[p], dtype=np.float64)
        curves[p] = ProfileCurve(
            tuple(float(v) for v in prof[p]),
            tuple(float(v) for v in band[0]),
            tuple(float(v) for v in band[1]),
        )
    return Profile(normalisation, tuple(float(t) for t in taus), curves)


# -- all of it ------------------------------------------------------------------------------
def compute(
    matrices: Mapping[str, Matrices],
    policies: Sequence[str],
    *,
    num_seeds: int,
    num_scenarios: int,
    level: float = stats.LEVEL,
    reps: int = REPS,
    seed: int = stats.SEED,
) -> Aggregates:
    """Every policy's IQMs and probabilities of improvement, and the performance profiles
    (module docstring), from its score matrices (the runner's ``score_matrices``).

    A pair's probability is computed once (in sorted name order) and the reverse derived.
    Where X or Y has no reference matrix, P(X > Y) gets X's own reason, or else
    ``"<Y>: <Y's reason>"``.

    Args:
        matrices: normalisation (``NORMALISATIONS``) -> per policy its ``(num_seeds,
            num_scenarios)`` matrix of scores so normalised, or why it has none;
            ``reference`` and ``bound`` are needed, ``clairvoyant`` may be missing (then
            not available for any policy).
        policies: the policies, in report order; each in exactly one part of each.
        num_seeds: seeds per scenario (recorded).
        num_scenarios: scenarios (recorded).
        level: confidence level.
        reps: bootstrap replications of every aggregate.
        seed: the global-RNG seed of every bootstrap.
    """
    kw = {"level": level, "reps": reps, "seed": seed}
    ref_m, ref_why = matrices["reference"]
    bnd_m, bnd_why = matrices["bound"]
    clv_m, clv_why = matrices.get("clairvoyant") or ({}, dict.fromkeys(policies, NOT_AVAILABLE))

    def iqm_of(p: str, mats: dict[str, np.ndarray], why: dict[str, str]) -> Estimate:
        return iqm_estimate(mats[p], **kw) if p in mats else Estimate.missing(why[p])

    poi: dict[str, dict[str, Estimate]] = {p: {} for p in policies}
    for i, a in enumerate(policies):
        for b in policies[i + 1 :]:
            x, y = sorted((a, b))  # once per pair, the reverse derived; the same whatever order
            if x in ref_m and y in ref_m:
                poi[x][y] = poi_estimate(ref_m[x], ref_m[y], **kw)
                poi[y][x] = _reverse(poi[x][y], ref_m[x], ref_m[y])
    for x in policies:
        for y in policies:
            if y != x and y not in poi[x]:
                poi[x][y] = Estimate.missing(ref_why[x] if x in ref_why else f"{y}: {ref_why[y]}")
    out = {
        p: PolicyAggregates(
            p,
            iqm_of(p, ref_m, ref_why),
            iqm_of(p, bnd_m, bnd_why),
            {q: poi[p][q] for q in policies if q != p},
            iqm_of(p, clv_m, clv_why),
        )
        for p in policies
    }
    profiles = {
        "reference": performance_profile("reference", ref_m, ref_why, **kw),
        "bound": performance_profile("bound", bnd_m, bnd_why, **kw),
        "clairvoyant": performance_profile("clairvoyant", clv_m, clv_why, **kw),
    }
    return Aggregates(
        policies=out,
        profiles=profiles,
        level=level,
        reps=reps,
        seed=seed,
        num_seeds=num_seeds,
        num_scenarios=num_scenarios,
    )


# -- the plot -------------------------------------------------------------------------------
_XLABEL = {
    "reference": "normalised score tau (headline / the scenario's reference, same seed)",
    "bound": "normalised score tau (headline / hindsight bound)",
    "clairvoyant": "normalised score tau (headline / the clairvoyant's)",
}


_TITLE = {"reference": "reference", "bound": "hindsight bound", "clairvoyant": "clairvoyant"}


def plot_performance_profile(agg: Aggregates) -> bytes:
    """The profiles as a PNG: one panel per normalisation, one curve per policy with its
    bootstrap band; a panel with no policy says why. matplotlib's Agg canvas, no pyplot.

    A policy keeps its colour in every panel (``C0``-``C9``, dashed from the eleventh on);
    the reference panel marks tau = 1 (as good as the reference).

    Args:
        agg: the aggregates.

    Returns:
        The PNG's bytes (90 dpi).
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6 * len(NORMALISATIONS), 4.5), layout="constrained")
    axes = fig.subplots(1, len(NORMALISATIONS), squeeze=False)[0]
    pct = f"{agg.level:.0%}"
    # the same colour in both panels; past ten policies the dashes tell them apart
    colors = {p: f"C{k % 10}" for k, p in enumerate(agg.policies)}
    dashes = {p: "-" if k < 10 else "--" for k, p in enumerate(agg.policies)}
    for ax, norm in zip(axes, NORMALISATIONS, strict=True):
        prof = agg.profiles[norm]
        ax.set_title(f"by {_TITLE[norm]}")
        ax.set_xlabel(_XLABEL[norm], fontsize=8)
        ax.set_ylabel("fraction of episodes with score > tau")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        if not prof.curves:
            ax.text(0.5, 0.5, prof.reason or NOT_AVAILABLE, ha="center", va="center",
                    wrap=True, transform=ax.transAxes, fontsize=9)  # fmt: skip
            continue
        for p, c in prof.curves.items():
            color = colors[p]
            ax.plot(prof.taus, c.fraction, color=color, ls=dashes[p], label=p, lw=1.5)
            ax.fill_between(prof.taus, c.ci_low, c.ci_high, color=color, alpha=0.2, lw=0)
        if norm in ("reference", "clairvoyant"):
            ax.axvline(1.0, color="0.5", ls="--", lw=0.8)
        ax.legend(fontsize=8)
    fig.suptitle(
        f"Performance profiles over {agg.num_scenarios} scenarios x {agg.num_seeds} seeds "
        f"({pct} stratified bootstrap bands, {agg.reps:,} resamples)",
        fontsize=10,
    )
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def write_performance_profile(out: str | Path, agg: Aggregates) -> Path:
    """``out/performance_profile.png`` (atomic); returns its path.

    Args:
        out: the output folder (created if missing).
        agg: the aggregates.
    """
    from mtgym.core.io import atomic_write_bytes

    return atomic_write_bytes(Path(out) / PROFILE_FILE, plot_performance_profile(agg))
