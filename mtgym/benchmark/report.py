"""The benchmark's outputs: a markdown report (printed and ``results.md``), ``results.json``
and TensorBoard scalars (``tb/<policy>/``).

Per scenario, one row per policy: the headline (``normalized_throughput``, best-node
equivalents) mean [95 % interval]; its paired ratio to the scenario's best baseline
[interval]; its fraction of the episode's hindsight bound (``mtgym.hindsight``; n/a when not
computed) [interval] and of the clairvoyant planner's headline on the same seed (n/a in a
run without it) [interval]; the mean JCT of the jobs every online policy that ran completed,
and its ratio to the reference's; the jobs completed. A policy that could not run shows its
one-line reason instead. Then the suite table: each policy's geometric mean of ratios
[interval], or why it has none. Then the aggregates (``mtgym.benchmark.aggregates``): per
policy the IQM of its episodes normalised by the best baseline, by the hindsight bound and
by the clairvoyant, and the probability that it beats each other policy, each [interval];
their plot is ``performance_profile.png``. A run of part of its split (``--scenario``) has,
instead of the suite and aggregate tables, one line each: "not defined: ran N of M
scenarios". Intervals from fewer than 5 seeds per scenario (``--quick``) come with a warning
under the header (``mtgym.stats.few_seeds_warning``).

TensorBoard (stable-baselines3's logger, like ``mtgym evaluate``): per policy, for each
scenario ``benchmark/<scenario>/normalized_throughput``, ``.../ratio`` and
``.../jct_common_mean`` (and ``.../of_clairvoyant``, ``.../clairvoyant_fraction`` where
defined), ``benchmark/suite_score``, ``benchmark/iqm``, ``benchmark/iqm_bound`` and
``benchmark/iqm_clairvoyant``, all at step 0.

The reference of a scenario is its recorded best tuned baseline when ``mtgym tune``
recorded one and it ran, else the best baseline that ran; each scenario's heading says
which. Undefined numbers print as ``n/a`` in markdown and are ``null`` in JSON.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from mtgym.benchmark.aggregates import (
    Aggregates,
    Estimate,
    partial_reason,
    write_performance_profile,
)
from mtgym.benchmark.runner import CLAIRVOYANT
from mtgym.benchmark.scoring import BenchmarkResult
from mtgym.metrics import HEADLINE
from mtgym.naming import safe_name, safe_names
from mtgym.stats import few_seeds_warning

UNDEFINED_SCORE = "not defined: did not run on"


def _num(v: float, digits: int = 3) -> str:
    """A number for a table: ``n/a`` if undefined, from 1,000 as ``1,234``, from 100 to 999
    with ``digits`` significant digits, below 100 with ``digits`` decimals (``0.912``).

    Args:
        v: the number (None or non-finite prints ``n/a``).
        digits: decimals below 100, significant digits from 100.
    """
    if v is None or not math.isfinite(v):
        return "n/a"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}" if abs(v) >= 100 else f"{v:.{digits}f}"


def _iv(mean: float, lo: float, hi: float, digits: int = 3) -> str:
    """``mean [lo, hi]`` (``_num`` each); the mean alone when the interval is undefined."""
    if not math.isfinite(lo):
        return _num(mean, digits)
    return f"{_num(mean, digits)} [{_num(lo, digits)}, {_num(hi, digits)}]"


def _cell(text: str) -> str:
    """``text`` with ``|`` escaped, safe in a markdown table cell (policy names, reasons)."""
    return text.replace("|", "\\|")


def markdown(res: BenchmarkResult) -> str:
    """The report as markdown (module docstring).

    Args:
        res: the scored run.

    Returns:
        The whole report, ending with a newline: printed by ``mtgym benchmark`` and
        written as ``results.md``.
    """
    pct = f"{res.level:.0%}"
    lines = _header(res)
    for sc in res.scenarios:
        span = "its own horizon" if sc.horizon_s is None else f"first {sc.horizon_s / 3600:g} h"
        seeds = f"seeds {sc.seeds[0]}-{sc.seeds[-1]}" if sc.seeds else "no seeds"
        ref = sc.reference or "none (no baseline ran)"
        how = "best tuned baseline, recorded" if sc.recorded else "best baseline that ran"
        lines += [
            f"## {sc.scenario}",
            "",
            f"{seeds}, {span}, reference ({how}): `{ref}`, {sc.wall_s:.0f} s",
            "",
            "| policy | headline | ratio to reference | of hindsight bound | of clairvoyant "
            "| JCT common s (x ref) | done |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for name, ps in sc.policies.items():
            if ps.unsupported is not None:
                lines.append(f"| {_cell(name)} | {_cell(ps.unsupported)} | | | | | |")
                continue
            h = ps.headline
            r = ps.ratio
            ratio = "n/a" if r is None else _iv(r.ratio, r.ratio_ci_low, r.ratio_ci_high)
            j = ps.jct_common
            jct = _num(j.mean)
            if math.isfinite(j.mean) and math.isfinite(ps.jct_common_ratio):
                jct += f" ({ps.jct_common_ratio:.2f}x)"
            d = ps.jobs_completed
            b, c = ps.bound_fraction, ps.of_clairvoyant
            lines.append(
                f"| {_cell(name)} | {_iv(h.mean, h.ci_low, h.ci_high)} | {ratio} | "
                f"{_iv(b.mean, b.ci_low, b.ci_high)} | {_iv(c.mean, c.ci_low, c.ci_high)} | "
                f"{jct} | "
                f"{_num(d.mean, 1) if abs(d.mean) < 100 else _num(d.mean)} |"
            )
        lines.append("")
    if res.skipped:
        return "\n".join([*lines, *_partial_markdown(res)]) + "\n"
    lines += [
        "## Suite score",
        "",
        f"Geometric mean over the {len(res.scenarios)} scenarios of each policy's ratio to the "
        f"scenario's reference [{pct} interval: seeds resampled within each scenario, "
        f"{res.n_boot:,} resamples]. Defined only for a policy that ran on every scenario.",
        "",
        "| policy | suite score |",
        "| --- | --- |",
    ]
    for name in res.policies:
        s = res.suite[name]
        text = (
            _iv(s.score, s.ci_low, s.ci_high)
            if s.complete
            else f"{UNDEFINED_SCORE} {', '.join(s.missing)}"
        )
        lines.append(f"| {_cell(name)} | {text} |")
    if res.aggregates is not None:
        lines += ["", *_aggregates_markdown(res.aggregates)]
    return "\n".join(lines) + "\n"


def _header(res: BenchmarkResult) -> list[str]:
    """The report's title and legend, and the few-seeds warning when the scenarios were
    played on fewer than 5 seeds (``mtgym.stats.few_seeds_warning``: a quick run's 2).

    Args:
        res: the scored run.
    """
    pct = f"{res.level:.0%}"
    kind = "quick" if res.quick else "full"
    lines = [
        f"# mtgym benchmark: split `{res.split}` ({kind} run)",
        "",
        f"Headline: `{HEADLINE}` (best-node equivalents of training, higher is better), "
        f"mean over seeds [{pct} bootstrap interval]. Ratio: paired, mean / the scenario's "
        "reference's mean (its best tuned baseline, recorded by `mtgym tune` before any test "
        "seed; else the best baseline that ran; never a learned agent). Of hindsight bound: "
        "the headline / the episode's hindsight bound. Of clairvoyant: the headline / the "
        "clairvoyant planner's on the same seed (it knows the whole episode; its own row's "
        "fraction of the bound is how much of the bound a schedule is known to reach). JCT "
        "common: mean JCT (s) of the jobs every online policy that ran completed (x the "
        "reference's). Done: jobs completed.",
        "",
    ]
    n_seeds = len(res.scenarios[0].seeds) if res.scenarios else 0
    note = few_seeds_warning(n_seeds, "a full run (without --quick: 10 seeds)")
    if res.scenarios and note:
        lines += [f"**{note[0].upper()}{note[1:]}.**", ""]
    return lines


def _partial_markdown(res: BenchmarkResult) -> list[str]:
    """The suite and aggregates sections of a run of part of its split (``--scenario``):
    one line each saying they are not defined, and which scenarios were left out.

    Args:
        res: a result with ``skipped`` scenarios.
    """
    why = partial_reason(len(res.scenarios), len(res.skipped))
    left = ", ".join(res.skipped)
    return [
        "## Suite score",
        "",
        f"{why[0].upper()}{why[1:]} of the `{res.split}` split (`--scenario`; not run: {left}): "
        "the suite score is a geometric mean over every scenario of the split, never over "
        "fewer.",
        "",
        "## Aggregates",
        "",
        f"{why[0].upper()}{why[1:]}, as the suite score.",
    ]


def _est(e: Estimate) -> str:
    """An aggregate's cell: ``point [low, high]``, or the reason it is undefined."""
    return _iv(e.point, e.ci_low, e.ci_high) if e.defined else _cell(e.reason or "n/a")


def _aggregates_markdown(agg: Aggregates) -> list[str]:
    """The aggregates section: IQMs (or why not), then P(row > column) among the policies
    whose IQM by best baseline is defined.

    The probability table is left out when fewer than two policies have that IQM.

    Args:
        agg: the aggregates.

    Returns:
        Markdown lines, starting with the ``## Aggregates`` heading.
    """
    pct = f"{agg.level:.0%}"
    names = list(agg.policies)
    lines = [
        "## Aggregates",
        "",
        f"Over all {agg.num_scenarios * agg.num_seeds} (scenario, seed) episodes "
        f"({agg.num_scenarios} scenarios x {agg.num_seeds} seeds). IQM: interquartile mean "
        "(mean of the middle 50 %) of the per-episode scores, normalised by the scenario's "
        "best baseline on the same seed, by the episode's hindsight bound, or by the "
        "clairvoyant's headline on the same seed. P(row > "
        "column): probability of improvement, the chance that an episode of the row beats "
        "one of the column on the same scenario (baseline-normalised scores), averaged over "
        f"scenarios; 0.5 is a tie. [{pct} stratified bootstrap interval: seeds "
        f"resampled within each scenario, {agg.reps:,} resamples; plot: "
        "`performance_profile.png`.]",
        "",
        "| policy | IQM (x best baseline) | IQM (x hindsight bound) | IQM (x clairvoyant) |",
        "| --- | --- | --- | --- |",
    ]
    for name, pa in agg.policies.items():
        clv = _est(pa.iqm_clairvoyant) if pa.iqm_clairvoyant is not None else "n/a"
        lines.append(f"| {_cell(name)} | {_est(pa.iqm)} | {_est(pa.iqm_bound)} | {clv} |")
    defined = [n for n in names if agg.policies[n].iqm.defined]
    if len(defined) > 1:
        lines += [
            "",
            "| P(row > column) | " + " | ".join(_cell(n) for n in defined) + " |",
            "| --- |" + " --- |" * len(defined),
        ]
        for x in defined:
            cells = [
                "" if y == x else _est(agg.policies[x].probability_of_improvement[y])
                for y in defined
            ]
            lines.append(f"| {_cell(x)} | " + " | ".join(cells) + " |")
    return lines


def _f(v: float) -> float | None:
    """``v``, or None when it is None, NaN or infinite (JSON has no NaN)."""
    return v if v is not None and math.isfinite(v) else None


def _iv_json(iv: Any) -> dict[str, Any]:
    """A ``stats.Interval`` as ``{mean, ci_low, ci_high, n}`` with undefined numbers null."""
    return {k: _f(v) if k != "n" else v for k, v in iv.as_dict().items()}


def _policy_json(ps: Any) -> dict[str, Any]:
    """One policy's entry of a scenario in ``results.json`` (``to_json``).

    Args:
        ps: its ``mtgym.benchmark.scoring.PolicyScore``.
    """
    if ps.unsupported is not None:
        return {"unsupported": ps.unsupported}
    r = ps.ratio
    return {
        HEADLINE: {k: _f(v) if k != "n" else v for k, v in ps.headline.as_dict().items()},
        "ratio": None
        if r is None
        else {
            "reference": r.reference,
            "ratio": _f(r.ratio),
            "ci_low": _f(r.ratio_ci_low),
            "ci_high": _f(r.ratio_ci_high),
            "n": r.n,
        },
        "jct_common_mean": {
            k: _f(v) if k != "n" else v for k, v in ps.jct_common.as_dict().items()
        },
        "jct_common_ratio": _f(ps.jct_common_ratio),
        "jobs_completed": {
            k: _f(v) if k != "n" else v for k, v in ps.jobs_completed.as_dict().items()
        },
        "hindsight_bound": _iv_json(ps.hindsight_bound),
        "bound_fraction": _iv_json(ps.bound_fraction),
        "of_clairvoyant": _iv_json(ps.of_clairvoyant),
        "per_seed": {HEADLINE: [_f(v) for v in ps.per_seed]},
    }


def to_json(res: BenchmarkResult) -> dict[str, Any]:
    """``results.json``: JSON-safe (undefined numbers are null).

    Top level: ``split``, ``quick``, ``headline``, ``ci`` (level, method, resamples and
    seed), ``policies``, ``scenarios`` and ``suite``, plus ``aggregates``
    (``aggregates_json``) when computed and ``skipped`` (the split's scenarios not run,
    ``--scenario``) when some were. Per scenario and policy: the headline, its ratio
    to the reference (with the reference's name), the common-jobs JCT and its ratio, the
    jobs completed, the hindsight bound and the fraction of it, and the headline per seed
    (``per_seed``: ``mtgym.benchmark.agreement.seed_prefix`` reads it); or only
    ``unsupported`` with the reason.

    Args:
        res: the scored run.
    """
    scen = [
        {
            "scenario": sc.scenario,
            "seeds": sc.seeds,
            "horizon_s": sc.horizon_s,
            "reference": sc.reference,
            "reference_recorded": sc.recorded,
            "wall_s": sc.wall_s,
            "policies": {name: _policy_json(ps) for name, ps in sc.policies.items()},
        }
        for sc in res.scenarios
    ]
    return {
        "split": res.split,
        "quick": res.quick,
        "headline": HEADLINE,
        "ci": {
            "level": res.level,
            "method": "percentile bootstrap over seeds (paired; suite: seeds resampled "
            "within each scenario)",
            "n_boot": res.n_boot,
            "bootstrap_seed": res.boot_seed,
        },
        "policies": res.policies,
        "scenarios": scen,
        "suite": {
            name: {
                "score": _f(s.score),
                "ci_low": _f(s.ci_low),
                "ci_high": _f(s.ci_high),
                "complete": s.complete,
                "missing": s.missing,
            }
            for name, s in res.suite.items()
        },
        **({} if res.aggregates is None else {"aggregates": aggregates_json(res.aggregates)}),
        # (only when some were: a whole run's results.json is as before)
        **({"skipped": res.skipped} if res.skipped else {}),
    }


def _est_json(e: Estimate) -> dict[str, Any]:
    """An ``Estimate`` as ``{point, ci_low, ci_high, reason}`` (numbers null if undefined)."""
    return {
        "point": _f(e.point),
        "ci_low": _f(e.ci_low),
        "ci_high": _f(e.ci_high),
        "reason": e.reason,
    }


def aggregates_json(agg: Aggregates) -> dict[str, Any]:
    """``results.json``'s ``aggregates``: the bootstrap's settings and, per policy, ``iqm``,
    ``iqm_bound`` and ``probability_of_improvement`` {other: ...}, each ``{point, ci_low,
    ci_high, reason}`` (numbers null and ``reason`` set when undefined).

    The profiles are not in it: they are drawn to ``performance_profile.png``.

    Args:
        agg: the aggregates.
    """
    return {
        "method": "rliable stratified percentile bootstrap (seeds resampled within each "
        "scenario; probability of improvement: the two policies resampled independently)",
        "level": agg.level,
        "reps": agg.reps,
        "bootstrap_seed": agg.seed,
        "num_seeds": agg.num_seeds,
        "num_scenarios": agg.num_scenarios,
        "policies": {
            name: {
                "iqm": _est_json(pa.iqm),
                "iqm_bound": _est_json(pa.iqm_bound),
                "iqm_clairvoyant": None
                if pa.iqm_clairvoyant is None
                else _est_json(pa.iqm_clairvoyant),
                "probability_of_improvement": {
                    other: _est_json(e) for other, e in pa.probability_of_improvement.items()
                },
            }
            for name, pa in agg.policies.items()
        },
    }


def tb_name(policy: str) -> str:
    """A folder name for a policy (``agent:/a/b/model.zip`` -> ``agent_a_b_model.zip``):
    ``mtgym.naming.safe_name``, shared with ``mtgym evaluate``.

    Args:
        policy: the policy's label.
    """
    return safe_name(policy)


def write_tensorboard(out: Path, res: BenchmarkResult) -> None:
    """``out/tb/<policy>/`` event files (module docstring).

    Only finite values are logged, so an unsupported policy or an undefined suite score
    leaves its tag out rather than logging NaN.

    Args:
        out: the output folder.
        res: the scored run.
    """
    from stable_baselines3.common.logger import configure

    folders = safe_names(res.policies)  # unique too (mtgym.naming)
    for name in res.policies:
        logger = configure(str(out / "tb" / folders[name]), ["tensorboard"])
        for sc in res.scenarios:
            ps = sc.policies[name]
            vals = {
                HEADLINE: ps.headline.mean,
                "ratio": math.nan if ps.ratio is None else ps.ratio.ratio,
                "jct_common_mean": ps.jct_common.mean,
                "of_clairvoyant": ps.of_clairvoyant.mean,
                "clairvoyant_fraction": sc.policies[CLAIRVOYANT].bound_fraction.mean
                if CLAIRVOYANT in sc.policies
                else math.nan,
            }
            for k, v in vals.items():
                if math.isfinite(v):
                    logger.record(f"benchmark/{sc.scenario}/{k}", v)
        s = res.suite[name]
        if s.complete and math.isfinite(s.score):
            logger.record("benchmark/suite_score", s.score)
        pa = None if res.aggregates is None else res.aggregates.policies.get(name)
        if pa is not None:
            tags = [("benchmark/iqm", pa.iqm), ("benchmark/iqm_bound", pa.iqm_bound)]
            if pa.iqm_clairvoyant is not None:
                tags.append(("benchmark/iqm_clairvoyant", pa.iqm_clairvoyant))
            for tag, e in tags:
                if e.defined and math.isfinite(e.point):
                    logger.record(tag, e.point)
        logger.dump(0)
        logger.close()


def write(out: str | Path, res: BenchmarkResult) -> None:
    """``out/results.md``, ``out/results.json``, ``out/tb/`` and (with aggregates)
    ``out/performance_profile.png``.

    The markdown and JSON files are written atomically; ``out`` is created if missing.

    Args:
        out: the output folder.
        res: the scored run.
    """
    from mtgym.core.io import atomic_write_json, atomic_write_text

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "results.md", markdown(res))
    atomic_write_json(out / "results.json", to_json(res))
    write_tensorboard(out, res)
    if res.aggregates is not None:
        write_performance_profile(out, res.aggregates)
