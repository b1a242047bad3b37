"""The quick run ranks baselines as the full run does (issue 34, item 2).

The unit tests check the measure on hand-made results; ``test_quick_run_ranks_as_the_full_run``
(marker ``benchmark``: about an hour on 2 cores, not in ``make test``; run it with
``pytest -m benchmark tests/benchmark/test_agreement.py``) plays the full and the quick run of
every fast baseline and recomputes the figures recorded in ``docs/benchmark.md``.
"""

from __future__ import annotations

import math

import pytest

from mtgym.benchmark.agreement import MIN_SAME_BEST, MIN_SPEARMAN, agreement, seed_prefix


def _results(means: dict[str, dict[str, list[float]]], ref: dict[str, str]) -> dict:
    """A results.json-like dict: scenario -> policy -> per-seed headlines."""
    scen, logs = [], {}
    for sc, pols in means.items():
        pol = {}
        for p, v in pols.items():
            pol[p] = {
                "normalized_throughput": {"mean": sum(v) / len(v)},
                "per_seed": {"normalized_throughput": v},
            }
            r = pols[ref[sc]]
            logs.setdefault(p, []).append(math.log(sum(v) / sum(r)))
        scen.append({"scenario": sc, "reference": ref[sc], "policies": pol})
    suite = {p: {"score": math.exp(sum(v) / len(v))} for p, v in logs.items()}
    return {"scenarios": scen, "suite": suite}


FULL = _results(
    {
        "a": {"x": [3.0, 3.0, 1.0], "y": [2.0, 2.0, 2.0], "z": [1.0, 1.0, 1.0], "agent": [9, 9, 9]},
        "b": {"x": [1.0, 1.0, 1.0], "y": [2.0, 2.0, 2.0], "z": [0.5, 0.5, 3.0], "agent": [1, 1, 1]},
    },
    {"a": "x", "b": "y"},
)


def test_agreement_of_a_run_with_itself_is_perfect():
    a = agreement(FULL, FULL)
    assert a.spearman == pytest.approx(1.0) and a.same_best == 2 and a.met
    assert "agent" not in a.policies  # learned agents are not what the quick run must rank


def test_a_seed_prefix_recomputes_means_and_suite_scores():
    q = seed_prefix(FULL, 1)
    means = {sc["scenario"]: sc["policies"] for sc in q["scenarios"]}
    assert means["a"]["x"]["normalized_throughput"]["mean"] == 3.0
    # scenario a: z/x = 1/3, scenario b: z/y = 0.5/2
    assert q["suite"]["z"]["score"] == pytest.approx(math.sqrt(1 / 3 * 0.25))
    # on the first seed z is last everywhere, but over all seeds z beats x on b
    a = agreement(q, FULL)
    assert a.best == {"a": ("x", "x"), "b": ("y", "y")}


def test_a_reversed_ranking_misses_the_target():
    rev = {**FULL, "suite": {p: {"score": 1 / s["score"]} for p, s in FULL["suite"].items()}}
    a = agreement(rev, FULL)
    assert a.spearman == pytest.approx(-1.0) and not a.met


@pytest.mark.benchmark
def test_quick_run_ranks_as_the_full_run():
    from mtgym.benchmark.references import recorded_references, with_references
    from mtgym.benchmark.report import to_json
    from mtgym.benchmark.runner import run_split
    from mtgym.benchmark.scoring import score_split
    from mtgym.benchmark.splits import FAST_BASELINES, TEST

    refs = recorded_references(TEST)
    pols = with_references(list(FAST_BASELINES), TEST)
    out = {}
    for quick in (True, False):
        runs = run_split(TEST, pols, quick=quick, backend="ray")
        out[quick] = to_json(score_split(TEST, runs, pols, quick=quick, references=refs))
    a = agreement(out[True], out[False])
    assert a.spearman >= MIN_SPEARMAN, a
    assert a.same_best >= MIN_SAME_BEST, a
