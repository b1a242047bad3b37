"""The leaderboard: a synthetic but self-consistent full-test-split result file (every
scenario, policy and seed 9000-9009, the recorded references among the policies, aggregates
by the benchmark's own scoring) is ranked by suite score and accepted by ``--check``; a seed
missing, a changed scenario hash, a missing or replaced reference, other code, a reference
row or bound that differs from the registry's and a tampered aggregate are refused, one line
each; the ``leaderboard`` block of the marker system renders it, and says so while its
source is not committed (``optional=1``).

The bootstrap is cut (``FAST``) in both the fabrication and the check, so a scoring takes
well under a second instead of the benchmark's ~6 s. Every test runs with an empty registry
folder (``$MTGYM_RESULTS``), so a committed full run never enters the cross-check.
"""

from __future__ import annotations

import copy
import functools
import json
import math

import numpy as np
import pytest

from mtgym.benchmark import report
from mtgym.benchmark.references import recorded_references
from mtgym.benchmark.runner import ScenarioRuns
from mtgym.benchmark.scoring import Bootstrap, score_split
from mtgym.benchmark.splits import TEST
from mtgym.cli import main
from mtgym.core.paths import CHECKOUT
from mtgym.evaluate import PolicyRun
from mtgym.leaderboard import submission  # (importing it registers the leaderboard renderer)
from mtgym.leaderboard.board import collect, rank
from mtgym.leaderboard.training import agent_folder, read_training, seed_span
from mtgym.results import hashes, rows, store
from mtgym.results.provenance import capture
from mtgym.results.render import check_tree, render_tree
from mtgym.results.schema import ResultFile

FAST = Bootstrap(n_boot=100, agg_reps=20)
#: the recorded references of the test split's scenarios, each once
REFERENCES = list(dict.fromkeys(recorded_references(TEST).values()))
#: policy -> its headline's level (the agent's folder is the fixture's): the agent, then
#: freetrain, then each recorded reference a step lower than the one before
QUALITY = {"agent": 1.10, "freetrain": 1.0} | {
    p: 0.95 - 0.05 * k for k, p in enumerate(REFERENCES) if p not in ("agent", "freetrain")
}
#: the ranking QUALITY gives, names without ``:PATH``
ORDER = sorted(QUALITY, key=lambda p: -QUALITY[p])


@pytest.fixture(autouse=True)
def empty_registry(tmp_path, monkeypatch):
    """An empty registry folder: ``--check`` cross-checks with nothing committed."""
    folder = tmp_path / "registry"
    monkeypatch.setenv(store.ENV_VAR, str(folder))
    return folder


def _row(seed: int, quality: float, bound: float, rng: np.random.Generator) -> dict:
    """One episode's row with the fields a benchmark row has (``episode_row``, the bound,
    the common-jobs metrics), at a made-up level.
    """
    head = quality * 70.0 * (1.0 + 0.05 * rng.standard_normal())
    return {
        "normalized_throughput": head,
        "hindsight_bound": bound,
        "bound_fraction": head / bound,
        "jct_mean": 4000.0 / quality,
        "jct_common_mean": 3600.0 / quality * (1.0 + 0.02 * rng.standard_normal()),
        "jobs_completed": float(round(20 * quality)),
        "jobs_common": 15.0,
        "fairness_jain": 0.8,
        "decision_ms": 2.5 / quality,
        "wall_s": 1.5,
        "seed": seed,
        "job_finish_s": [100.0, None],
        "job_submit_s": [0.0, 10.0],
    }


def _fabricate(policies: dict[str, float]) -> ResultFile:
    """A full-test-split benchmark result: every scenario x policy x seed, scored by
    ``score_split`` with the recorded references, as ``mtgym benchmark`` does (it holds
    them when ``policies`` does: ``QUALITY`` has them all).
    """
    rng = np.random.default_rng(46)
    seeds = TEST.seeds()
    results = []
    for sc in TEST.scenarios:
        bounds = {s: 100.0 + (s % 7) for s in seeds}
        runs = [
            PolicyRun(p, [_row(s, q, bounds[s], rng) for s in seeds]) for p, q in policies.items()
        ]
        results.append(ScenarioRuns(sc.name, seeds, None, runs, {}, 12.0))
    res = score_split(
        TEST, results, list(policies), bootstrap=FAST, references=recorded_references(TEST)
    )
    return store.build(
        "benchmark",
        capture(["benchmark", *(f"--policy={p}" for p in policies)]),
        seeds=seeds,
        scenarios=hashes.scenario_entries(TEST.names),
        wall_s=3600.0,
        rows=rows.benchmark_rows(results),
        aggregates=report.to_json(res),
    )


@pytest.fixture(scope="module")
def agent_dir(tmp_path_factory):
    """A trained agent's folder: ``train.json`` and ``args.json`` as ``mtgym train``
    writes them."""
    d = tmp_path_factory.mktemp("agent")
    (d / "train.json").write_text(
        json.dumps({"timesteps": 500000, "wall_s": 2400.0, "kept": "ppo"})
    )
    args = {"seed": 3, "bc_expert": "freetrain", "bc_seeds": [11, 12, 13], "dagger_rounds": 2}
    (d / "args.json").write_text(json.dumps({**args, "eval_seeds": list(range(2000, 2008))}))
    return d


@pytest.fixture(scope="module")
def full_run(agent_dir):
    """The fabricated file, its learned policy named by its folder (``agent:PATH``)."""
    q = {f"agent:{agent_dir}" if p == "agent" else p: v for p, v in QUALITY.items()}
    return _fabricate(q)


def _problems(result: ResultFile) -> list[str]:
    return submission.problems(result, bootstrap=FAST)


def test_leaderboard__ranks_by_suite_score(full_run, tmp_path, capsys, agent_dir):
    folder = tmp_path / "results"
    store.record(full_run, folder, "benchmark-full")
    entries, left = collect(folder)
    assert left == []
    assert [e.policy.split(":")[0] for e in entries] == ORDER
    scores = [e.suite[0] for e in entries]
    assert scores == sorted(scores, reverse=True) and all(math.isfinite(s) for s in scores)
    top = entries[0]
    assert top.training is not None and top.training.timesteps == 500000
    assert top.training.selected_on == "2000-2007"
    assert top.decision_ms == pytest.approx(2.5 / 1.10, rel=0.1)
    assert entries[1].training is None  # a baseline
    assert rank(list(reversed(entries))) == entries

    assert main(["leaderboard", "--results-dir", str(folder), "--markdown"]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.startswith("| ")]
    assert lines[0].startswith("| # | policy | suite score | IQM (x reference)")
    assert [ln.split(" | ")[1].split(":")[0] for ln in lines[2:]] == ORDER
    assert (
        "500,000 steps, 40 min, kept ppo" in out
        and "seed 3; BC 11-13; 2 DAgger rounds; 2000-2007" in out
    )
    assert main(["leaderboard", "--results-dir", str(folder)]) == 0  # the rich table
    assert "mtgym leaderboard" in capsys.readouterr().out


def test_check__accepts_the_full_run(full_run, tmp_path, monkeypatch, capsys):
    assert _problems(full_run) == []
    path = store.record(full_run, tmp_path, "mine")
    monkeypatch.setattr(
        submission, "check_file", functools.partial(submission.check_file, bootstrap=FAST)
    )
    assert main(["leaderboard", "--check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "accepted" in out
    assert "note: reference rows were not cross-checked: no result file in" in out


def test_check__refuses_a_file_without_the_recorded_references(agent_dir):
    mine = _fabricate({f"agent:{agent_dir}": 1.1, "random": 0.5})  # the review's example
    reasons = _problems(mine)
    refs = recorded_references(TEST)
    assert len(reasons) == len(TEST.names)  # one line per scenario, nothing else
    for name, line in zip(TEST.names, reasons, strict=True):
        assert line.startswith(
            f"scenario {name}: no episode of its recorded reference {refs[name]} and its "
            f"aggregates' reference is 'random', not the recorded {refs[name]}"
        )


def test_check__refuses_another_reference_in_the_aggregates(full_run):
    sc = full_run.aggregates["scenarios"][0]["scenario"]

    def swap(d):
        d["aggregates"]["scenarios"][0]["reference"] = "freetrain"

    reasons = _problems(_edited(full_run, swap))
    ref = recorded_references(TEST)[sc]
    assert reasons == [
        f"scenario {sc}: its aggregates' reference is 'freetrain', not the recorded {ref} "
        f"(scenarios/tuning/{sc}.json): every ratio is to {ref}; run the benchmark with it "
        "(mtgym benchmark adds it)"
    ]


def test_check__refuses_other_code_and_a_file_without_a_code_hash(full_run):
    other = _problems(_edited(full_run, lambda d: d.update(code_sha256="0" * 64)))
    assert len(other) == 1
    assert other[0].startswith("made by other code: re-run the benchmark on this checkout")
    none = _problems(_edited(full_run, lambda d: d.update(code_sha256=None)))
    assert len(none) == 1 and none[0].startswith("records no code_sha256")


def test_check__refuses_rows_that_do_not_say_how_they_were_played(full_run):
    bad = _edited(full_run, lambda d: d["rows"][0].pop("horizon_s"))
    reasons = _problems(bad)
    assert len(reasons) == 1 and reasons[0].startswith(
        "1 row(s) without horizon_s or decision_interval_s"
    )


def _reference_row(data: dict, k: int = 0) -> dict:
    """The k-th row of the first scenario's recorded reference in a result file's JSON."""
    sc = TEST.names[0]
    ref = recorded_references(TEST)[sc]
    return [r for r in data["rows"] if r["scenario"] == sc and r["policy"] == ref][k]


def test_check__cross_checks_the_references_with_the_registry(full_run, empty_registry, tmp_path):
    committed = store.record(full_run, empty_registry, "benchmark-full")
    notes: list[str] = []
    assert submission.problems(full_run, bootstrap=FAST, notes=notes) == []
    assert notes[0].startswith(
        f"cross-checked {len(TEST.names) * 10} reference episodes and "
        f"{len(TEST.names) * 10} hindsight bounds with "
    ) and notes[0].endswith(committed.name)

    def timing(d):  # measured, so never compared
        _reference_row(d).update(decision_ms=99.0, wall_s=99.0)

    mine = _edited(full_run, timing)
    assert _problems(mine) == []

    def fairness(d):  # an episode's outcome: never differs between deterministic runs
        _reference_row(d, 3)["fairness_jain"] = 0.5

    ref = recorded_references(TEST)[TEST.names[0]]
    reasons = _problems(_edited(full_run, fairness))
    assert reasons == [
        f"scenario {TEST.names[0]}, policy {ref}, seed 9003: fairness_jain 0.5 here, 0.8 in "
        f"{committed}: deterministic episodes agree bit for bit; re-run on this checkout"
    ]


def test_check__refuses_bounds_that_differ_from_the_registry(full_run, empty_registry):
    sc = TEST.names[1]

    def bound(d):
        for r in d["rows"]:
            if r["scenario"] == sc and r["seed"] == 9004:
                r["hindsight_bound"] += 1.0

    store.record(_edited(full_run, bound), empty_registry, "benchmark-full")
    reasons = _problems(full_run)
    assert len(reasons) == len(QUALITY)  # one line per row of the (scenario, seed)
    assert all(
        f"scenario {sc}, policy " in r and ", seed 9004: hindsight_bound" in r for r in reasons
    )


def test_check__leaves_itself_out_of_the_registry(full_run, empty_registry, monkeypatch, capsys):
    path = store.record(full_run, empty_registry, "mine")  # recorded, then checked
    monkeypatch.setattr(
        submission, "check_file", functools.partial(submission.check_file, bootstrap=FAST)
    )
    assert main(["leaderboard", "--check", str(path)]) == 0
    assert "note: reference rows were not cross-checked" in capsys.readouterr().out  # not itself


def test_board__decision_ms_leaves_out_reused_episodes(full_run):
    from mtgym.benchmark.cache import TIMING_NOTE
    from mtgym.leaderboard.board import entries_of, markdown

    ref = recorded_references(TEST)[TEST.names[0]]

    def reuse(names):
        def edit(d):
            d["aggregates"]["cache"] = {
                sc: {
                    "sources": ["results/old.json"],
                    "episodes": 10,
                    "bounds": 10,
                    "seeds": {ref: TEST.seeds()},
                    "timing": TIMING_NOTE,
                }
                for sc in names
            }
            for r in d["rows"]:
                if r["policy"] == ref and r["scenario"] in names:
                    r["decision_ms"] = 1000.0  # measured by another run, on another machine

        return edit

    part = _edited(full_run, reuse(TEST.names[:1]))
    assert _problems(part) == []  # the cache record is not an aggregate the rows give
    got = {e.policy: e for e in entries_of(part, "")}[ref]
    assert got.decision_ms == pytest.approx(2.5 / QUALITY[ref]) and got.reused == 10
    every = _edited(full_run, reuse(TEST.names))
    got = {e.policy: e for e in entries_of(every, "")}[ref]
    assert math.isnan(got.decision_ms)
    text = "\n".join(markdown(rank(entries_of(every, ""))))
    assert "decision ms leaves out the episodes a run reused" in text
    assert "every episode reused" in text


def _edited(result: ResultFile, edit) -> ResultFile:
    data = copy.deepcopy(result.to_json())
    edit(data)
    return ResultFile.model_validate(data)


def test_check__refuses_a_missing_seed(full_run, tmp_path, monkeypatch, capsys):
    def drop(d):
        d["seeds"].remove(9003)
        d["rows"] = [r for r in d["rows"] if r["seed"] != 9003]

    bad = _edited(full_run, drop)
    reasons = _problems(bad)
    assert len(reasons) == 1 and "seed 9003 missing" in reasons[0]
    path = store.record(bad, tmp_path, "no-9003")
    monkeypatch.setattr(
        submission, "check_file", functools.partial(submission.check_file, bootstrap=FAST)
    )
    assert main(["leaderboard", "--check", str(path)]) == 1
    assert "refused: seed 9003 missing" in capsys.readouterr().out


def test_check__refuses_an_episode_missing_from_the_rows(full_run):
    bad = _edited(full_run, lambda d: d["rows"].pop(5))
    reasons = _problems(bad)
    assert len(reasons) == 1 and "1 episode(s) missing" in reasons[0] and "polaris/" in reasons[0]


def test_check__refuses_episodes_on_another_decision_schedule(full_run):
    bad = _edited(full_run, lambda d: d["rows"][0].update(decision_interval_s=600.0))
    reasons = _problems(bad)
    assert len(reasons) == 1 and "decision_interval_s=600.0" in reasons[0]


def test_check__refuses_a_changed_scenario_hash(full_run):
    bad = _edited(full_run, lambda d: d["scenarios"][1].update(sha256="f" * 64))
    reasons = _problems(bad)
    assert len(reasons) == 1
    assert reasons[0].startswith("scenario nas-campaign: played with scenario hash ffffffffffff")


def test_check__refuses_a_tampered_aggregate(full_run):
    p = next(iter(full_run.aggregates["policies"]))

    def tamper(d):
        d["aggregates"]["suite"][p]["score"] *= 1.001

    reasons = _problems(_edited(full_run, tamper))
    assert len(reasons) == 1 and f"suite.{p}.score: file " in reasons[0]
    assert _problems(_edited(full_run, lambda d: d["aggregates"]["suite"][p].update(score=None)))


def test_check__refuses_an_agent_selected_on_test_seeds(full_run, agent_dir, tmp_path):
    bad_dir = tmp_path / "peeked"
    bad_dir.mkdir()
    (bad_dir / "args.json").write_text(json.dumps({"seed": 0, "eval_seeds": [2000, 9001]}))
    name = f"agent:{agent_dir}"

    def rename(d):
        for r in d["rows"]:
            r["policy"] = f"agent:{bad_dir}" if r["policy"] == name else r["policy"]
        d["aggregates"]["policies"] = [
            f"agent:{bad_dir}" if p == name else p for p in d["aggregates"]["policies"]
        ]

    reasons = submission.seed_problems(_edited(full_run, rename))
    assert reasons == [
        f"policy agent:{bad_dir}: its args.json eval_seeds holds test seeds 9001: no training "
        "or selection may touch the test split (9000-9009)"
    ]


def test_check__refuses_a_quick_run_and_another_kind(full_run):
    assert any(
        "quick run" in r
        for r in _problems(_edited(full_run, lambda d: d["aggregates"].update(quick=True)))
    )
    assert _problems(_edited(full_run, lambda d: d.update(kind="evaluate"))) == [
        "kind 'evaluate': a submission is a benchmark result file"
    ]


def test_collect__leaves_out_files_that_fail_the_seed_episode_or_reference_checks(
    full_run, agent_dir, tmp_path
):
    peeked = tmp_path / "peeked"
    peeked.mkdir()
    (peeked / "args.json").write_text(json.dumps({"seed": 0, "eval_seeds": [9001]}))
    name = f"agent:{agent_dir}"

    def rename(d):
        for r in d["rows"]:
            r["policy"] = f"agent:{peeked}" if r["policy"] == name else r["policy"]
        d["aggregates"]["policies"] = [
            f"agent:{peeked}" if p == name else p for p in d["aggregates"]["policies"]
        ]

    folder = tmp_path / "reg"
    store.record(_edited(full_run, rename), folder, "a-peeked")
    store.record(_edited(full_run, lambda d: d["rows"].pop(5)), folder, "b-short")
    ref = recorded_references(TEST)[TEST.names[0]]
    no_ref = _edited(
        full_run, lambda d: d.update(rows=[r for r in d["rows"] if r["policy"] != ref])
    )
    store.record(no_ref, folder, "c-noref")
    entries, left = collect(folder)
    assert entries == [] and len(left) == 3
    assert (
        "a-peeked.json" in left[0] and "its args.json eval_seeds holds test seeds 9001" in left[0]
    )
    assert "b-short.json" in left[1] and "1 episode(s) missing" in left[1]
    assert "c-noref.json" in left[2] and f"no episode of its recorded reference {ref}" in left[2]


def test_collect__leaves_out_stale_and_partial_files(full_run, tmp_path):
    store.record(
        _edited(full_run, lambda d: d["scenarios"][0].update(tuning_sha256=None)), tmp_path, "stale"
    )
    store.record(_edited(full_run, lambda d: d["seeds"].pop()), tmp_path, "partial")
    entries, left = collect(tmp_path)
    assert entries == [] and len(left) == 2
    assert "partial.json" in left[0] and "seed 9009 missing" in left[0]
    assert "stale.json" in left[1] and "tuning-record hash" in left[1]


def test_training__the_shipped_agent_and_seed_spans():
    assert agent_folder("agent") == CHECKOUT / "agents" / "pretrained" / "default"
    assert agent_folder("freetrain") is None and read_training("greedy") is None
    assert agent_folder("agent:runs/x/model.zip").name == "x"
    assert seed_span([3, 1, 2, 7, 9, 8]) == "1-3, 7-9" and seed_span([]) == "none"
    missing = read_training("agent:/no/such/folder")
    assert missing is not None and not missing.found


DOC = """# Leaderboard

<!-- results:begin lb source=results/benchmark-full.json kind=leaderboard optional=1 -->
<!-- results:end lb -->
"""


def test_render__the_leaderboard_block_waits_for_its_file_then_renders(full_run, tmp_path):
    (tmp_path / "docs").mkdir()
    doc = tmp_path / "docs" / "leaderboard.md"
    doc.write_text(DOC)
    assert render_tree(tmp_path) == ([doc], 1)
    assert "_No result file `results/benchmark-full.json` yet" in doc.read_text()
    assert check_tree(tmp_path) == ([], 1)  # the placeholder is what --check expects
    doc.write_text(DOC.replace(" optional=1", ""))
    assert "cannot render" in check_tree(tmp_path)[0][0]  # not optional: an error

    doc.write_text(DOC)
    store.record(full_run, tmp_path / "results", "benchmark-full")
    problems, _ = check_tree(tmp_path)
    assert len(problems) == 1 and "differs" in problems[0]  # the file came: render it
    render_tree(tmp_path)
    text = doc.read_text()
    assert "| 1 | agent:" in text and "| 2 | freetrain |" in text
    assert f"| 3 | {ORDER[2]} |" in text and f"| {len(ORDER)} | {ORDER[-1]} |" in text
    assert "_Generated by `mtgym results render` from `results/benchmark-full.json`" in text
    assert check_tree(tmp_path) == ([], 1)
