"""Does the quick run rank policies as the full run does?

A quick run (``mtgym benchmark --quick``) is worth having only if optimising against it
optimises against the full run. ``agreement(quick, full)`` compares two ``results.json``
(the same split and policies): the Spearman rank correlation of the policies' suite scores
(baselines only: learned agents are what one iterates on, not what is measured), and per
scenario whether the best baseline is the same. The targets (issue 34): Spearman >= 0.9 and
the same best baseline on at least 7 of 8 scenarios. ``docs/benchmark.md`` records the
figures; ``scripts/quick_agreement.py`` computes them, and a test marked ``benchmark``
re-runs both (hours; not in ``make test``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mtgym.benchmark.runner import is_baseline
from mtgym.metrics import HEADLINE

#: targets of the quick run's agreement with the full run
MIN_SPEARMAN = 0.9
MIN_SAME_BEST = 7


@dataclass(frozen=True)
class Agreement:
    """How the quick run's ranking compares with the full run's.

    Attributes:
        spearman: Spearman's rank correlation of the two runs' suite scores over
            ``policies``.
        policies: the baselines both runs scored, sorted by name.
        best: scenario -> (quick's best baseline, full's best baseline), each None when no
            baseline has a mean headline there.
    """

    spearman: float
    policies: list[str]
    best: dict[str, tuple[str | None, str | None]]

    @property
    def same_best(self) -> int:
        """Scenarios whose best baseline is the same in both runs."""
        return sum(q == f for q, f in self.best.values())

    @property
    def met(self) -> bool:
        """Whether both targets hold.

        The same-best target is capped at the number of scenarios, so a split of fewer
        than ``MIN_SAME_BEST`` scenarios needs all of them.
        """
        return self.spearman >= MIN_SPEARMAN and self.same_best >= min(
            MIN_SAME_BEST, len(self.best)
        )


def best_by_scenario(results: dict[str, Any]) -> dict[str, str | None]:
    """Scenario -> the baseline with the highest mean headline in a ``results.json``.

    Learned agents, unsupported policies and null means are skipped; the first of equal
    means wins.

    Args:
        results: a ``results.json`` as loaded (``mtgym.benchmark.report.to_json``).
    """
    out: dict[str, str | None] = {}
    for sc in results["scenarios"]:
        best, best_v = None, -math.inf
        for name, p in sc["policies"].items():
            v = (p.get(HEADLINE) or {}).get("mean")
            if is_baseline(name) and v is not None and v > best_v:
                best, best_v = name, v
        out[sc["scenario"]] = best
    return out


def suite_scores(results: dict[str, Any]) -> dict[str, float]:
    """Baseline -> its suite score, where defined.

    Args:
        results: a ``results.json`` as loaded; learned agents and null scores are left
            out.
    """
    return {
        p: s["score"]
        for p, s in results["suite"].items()
        if is_baseline(p) and s.get("score") is not None
    }


def agreement(quick: dict[str, Any], full: dict[str, Any]) -> Agreement:
    """Compare a quick and a full ``results.json`` (module docstring).

    Args:
        quick: the quick run's ``results.json``, as loaded.
        full: the full run's, on the same split.

    Raises:
        ValueError: fewer than three baselines scored in both, or the scenarios differ.
    """
    from scipy.stats import spearmanr

    q, f = suite_scores(quick), suite_scores(full)
    common = sorted(set(q) & set(f))
    if len(common) < 3:
        raise ValueError(f"need >= 3 baselines scored in both runs, got {common}")
    qb, fb = best_by_scenario(quick), best_by_scenario(full)
    if set(qb) != set(fb):
        raise ValueError("the two runs have different scenarios")
    rho = float(spearmanr([q[p] for p in common], [f[p] for p in common]).statistic)
    return Agreement(rho, common, {sc: (qb[sc], fb[sc]) for sc in fb})


def markdown(a: Agreement, quick: dict[str, Any], full: dict[str, Any]) -> str:
    """The agreement as the markdown table of ``docs/benchmark.md``.

    A summary line against both targets, the suite scores of both runs (by full score,
    best first) and each scenario's best baseline in both, marking those that differ.

    Args:
        a: the agreement (``agreement``).
        quick: the quick run's ``results.json``.
        full: the full run's.
    """
    q, f = suite_scores(quick), suite_scores(full)
    lines = [
        f"Spearman of suite scores over {len(a.policies)} baselines: **{a.spearman:.3f}** "
        f"(target >= {MIN_SPEARMAN}); same best baseline on **{a.same_best} of "
        f"{len(a.best)}** scenarios (target >= {MIN_SAME_BEST}).",
        "",
        "| baseline | quick suite score | full suite score |",
        "|---|---:|---:|",
    ]
    for p in sorted(a.policies, key=lambda p: -f[p]):
        lines.append(f"| {p} | {q[p]:.3f} | {f[p]:.3f} |")
    lines += ["", "| scenario | quick's best | full's best |", "|---|---|---|"]
    for sc, (qb, fb) in a.best.items():
        mark = "" if qb == fb else " (differs)"
        lines.append(f"| {sc} | {qb} | {fb}{mark} |")
    return "\n".join(lines) + "\n"


def seed_prefix(full: dict[str, Any], k: int) -> dict[str, Any]:
    """What a quick run of the full run's first ``k`` seeds, played whole, would report
    (headline means and suite scores; the reference of each scenario as in ``full``),
    recomputed from ``full``'s per-seed headlines: quick designs of that kind are measured
    without playing anything again.

    Each scenario's mean is over those of the first ``k`` seeds with a value; a policy's ratio
    is the ratio of means over the seeds where both it and the reference have one. A
    policy without a ratio on every scenario gets a null score, as in ``results.json``.

    Args:
        full: the full run's ``results.json`` (with ``per_seed`` headlines).
        k: the number of leading seeds kept.

    Returns:
        A dict with the ``scenarios`` and ``suite`` parts of a ``results.json``, enough for
        ``agreement`` and ``best_by_scenario``.
    """
    import numpy as np

    scen = []
    logs: dict[str, list[float]] = {}
    for sc in full["scenarios"]:
        per = {
            n: np.array([np.nan if v is None else v for v in p["per_seed"][HEADLINE][:k]])
            for n, p in sc["policies"].items()
            if "per_seed" in p
        }
        pol = {n: {HEADLINE: {"mean": float(np.nanmean(v))}} for n, v in per.items()}
        scen.append({"scenario": sc["scenario"], "policies": pol})
        ref = per.get(sc["reference"])
        for n, v in per.items():
            if ref is not None:
                ok = ~(np.isnan(v) | np.isnan(ref))
                logs.setdefault(n, []).append(math.log(v[ok].mean() / ref[ok].mean()))
    n_sc = len(full["scenarios"])
    suite = {
        n: {"score": math.exp(sum(v) / len(v)) if len(v) == n_sc else None} for n, v in logs.items()
    }
    return {"scenarios": scen, "suite": suite}
