"""Generated tables: a tiny benchmark result and a tiny doc render, ``--check`` agrees,
and a cell edited by hand makes ``--check`` fail; the repository's own docs are as their
result files render them."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from mtgym.cli import main
from mtgym.results import store
from mtgym.results.provenance import capture
from mtgym.results.render import RenderError, check_tree, find_blocks, render_tree

REPO = Path(__file__).resolve().parents[2]


def _iv(m, lo=None, hi=None):
    return {"mean": m, "ci_low": lo, "ci_high": hi, "n": 2}


def _policy(ratio, jct, jct_ratio, done):
    return {
        "normalized_throughput": _iv(ratio),
        "ratio": {
            "reference": "greedy",
            "ratio": ratio,
            "ci_low": ratio - 0.1,
            "ci_high": ratio + 0.1,
            "n": 2,
        },
        "jct_common_mean": _iv(jct),
        "jct_common_ratio": jct_ratio,
        "jobs_completed": _iv(done),
    }


def _est(p):
    return {"point": p, "ci_low": p - 0.05, "ci_high": p + 0.05, "reason": None}


def _fake_benchmark():
    """A benchmark result with made-up numbers: two scenarios, two policies."""
    scenarios = [
        {
            "scenario": "sc-a",
            "seeds": [9000, 9001],
            "reference": "greedy",
            "policies": {
                "greedy": _policy(1.0, 100.0, 1.0, 12.0),
                "agent": _policy(1.25, 80.0, 0.8, 13.5),
            },
        },
        {
            "scenario": "sc-b",
            "seeds": [9000, 9001],
            "reference": "greedy",
            "policies": {
                "greedy": _policy(1.0, 50.0, 1.0, 4.0),
                "agent": {"unsupported": "too big"},
            },
        },
    ]
    agg = {
        "split": "test",
        "quick": False,
        "policies": ["greedy", "agent"],
        "scenarios": scenarios,
        "suite": {
            "greedy": {
                "score": 1.0,
                "ci_low": 1.0,
                "ci_high": 1.0,
                "complete": True,
                "missing": [],
            },
            "agent": {
                "score": None,
                "ci_low": None,
                "ci_high": None,
                "complete": False,
                "missing": ["sc-b"],
            },
        },
        "aggregates": {"policies": {"greedy": {"iqm": _est(1.0), "iqm_bound": _est(0.8)}}},
    }
    rows = [
        {"scenario": "sc-a", "policy": p, "seed": s, "fairness_jain": j}
        for p, j in (("greedy", 0.5), ("agent", 0.75))
        for s in (9000, 9001)
    ]
    prov = capture(["benchmark", "--policy", "agent", "--all-baselines"])
    entries = [
        {"name": n, "source": "code", "path": None, "sha256": "0" * 64, "tuning_sha256": None}
        for n in ("sc-a", "sc-b")
    ]
    return store.build(
        "benchmark",
        prov,
        seeds=[9000, 9001],
        scenarios=entries,
        wall_s=4000.0,
        rows=rows,
        aggregates=agg,
    )


DOC = """# Results

Some prose.

<!-- results:begin main source=results/bench.json kind=suite -->
stale content
<!-- results:end main -->

<!-- results:begin trade source=results/bench.json kind=scenario-trade-offs policies=agent,greedy -->
<!-- results:end trade -->

```
<!-- results:begin not-a-block source=x kind=suite -->
```
"""


@pytest.fixture
def tree(tmp_path):
    store.record(_fake_benchmark(), tmp_path / "results", "bench")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "r.md").write_text(DOC)
    (tmp_path / "README.md").write_text("# Readme, no blocks\n")
    return tmp_path


def test_render__renders_checks_and_catches_a_hand_edit(tree, capsys):
    doc = tree / "docs" / "r.md"
    problems, n = check_tree(tree)
    assert n == 2 and len(problems) == 2 and "block 'main': differs" in problems[0]
    changed, n = render_tree(tree)
    assert changed == [doc] and n == 2
    text = doc.read_text()
    assert "stale content" not in text and text.startswith("# Results\n\nSome prose.\n\n")
    assert "| sc-a | greedy | 1.000 [0.900, 1.100] | 1.250 [1.150, 1.350] |" in text
    assert "| sc-b | greedy | 1.000 [0.900, 1.100] | unsupported |" in text
    assert "| **suite score** | | 1.000 [1.000, 1.000] | n/a |" in text
    assert "| **IQM (x best baseline)** | | 1.000 [0.950, 1.050] | n/a |" in text
    assert "| sc-a | agent | 80 (0.80x) | 13.5 | 0.750 |" in text
    assert (
        "from `results/bench.json`, written by `mtgym benchmark --policy agent --all-baselines`"
        in text
    )
    assert "1 h 06 min" in text
    assert check_tree(tree) == ([], 2)
    assert render_tree(tree) == ([], 2)  # rendering again changes nothing
    assert main(["results", "render", "--check", "--root", str(tree)]) == 0

    doc.write_text(text.replace("1.250 [1.150, 1.350]", "1.300 [1.150, 1.350]"))
    problems, _ = check_tree(tree)
    assert (
        len(problems) == 1 and "r.md:5 block 'main': differs from results/bench.json" in problems[0]
    )
    capsys.readouterr()
    assert main(["results", "render", "--check", "--root", str(tree)]) == 1
    out = capsys.readouterr().out
    assert "block 'main'" in out and "2 results block(s) checked; 1 differ" in out
    assert main(["results", "render", "--root", str(tree)]) == 0
    assert check_tree(tree) == ([], 2)


def test_render__a_missing_source_or_kind_is_reported(tree):
    doc = tree / "docs" / "r.md"
    doc.write_text(DOC.replace("results/bench.json kind=suite", "results/gone.json kind=suite"))
    problems, _ = check_tree(tree)
    assert "block 'main': cannot render" in problems[0] and "gone.json" in problems[0]
    with pytest.raises(RenderError, match=r"gone\.json"):
        render_tree(tree)
    doc.write_text(DOC.replace("kind=suite -->", "kind=nope -->"))
    assert "unknown kind 'nope'" in check_tree(tree)[0][0]
    doc.write_text(DOC.replace("kind=suite -->", "kind=tuning -->"))
    assert "needs a tune result" in check_tree(tree)[0][0]


def test_render__register_renderer_adds_a_kind_and_guards_it(tree, monkeypatch):
    """A package's kind comes through ``register_renderer``; an unknown kind lists the known
    ones (an ``optional=1`` block's too, before its file exists); a kind is not taken twice."""
    from mtgym.results import renderers

    monkeypatch.setattr(renderers, "RENDERERS", dict(renderers.RENDERERS))
    doc = tree / "docs" / "r.md"
    doc.write_text(DOC.replace("kind=suite -->", "kind=mine optional=1 -->"))
    problems, _ = check_tree(tree)
    assert "unknown kind 'mine'; known: " in problems[0]
    assert "scenario-trade-offs, select-agent, suite, tuning" in problems[0]  # (and leaderboard
    # once imported)
    doc.write_text(DOC.replace("results/bench.json kind=suite", "results/gone.json kind=mine"))
    assert "unknown kind 'mine'" in check_tree(tree)[0][0]  # optional=1 or not

    def mine(result, options):
        return [f"| {result.kind} | {options.get('x', '-')} |"]

    renderers.register_renderer("mine", mine)
    renderers.register_renderer("mine", mine)  # the same function again: a no-op
    with pytest.raises(ValueError, match="taken by"):
        renderers.register_renderer("mine", renderers.suite)
    with pytest.raises(ValueError, match="letters, digits"):
        renderers.register_renderer("a b", mine)
    doc.write_text(DOC.replace("kind=suite -->", "kind=mine x=1 -->"))
    render_tree(tree)
    assert "| benchmark | 1 |" in doc.read_text()
    renderers.register_renderer("mine", renderers.suite, replace=True)
    assert renderers.renderer("mine") is renderers.suite


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("<!-- results:begin a source=x kind=suite -->\n", "no '<!-- results:end a -->'"),
        ("<!-- results:end a -->\n", "not a results marker"),
        ("<!-- results:begin a kind=suite -->\n<!-- results:end a -->\n", "has no source"),
        (
            "<!-- results:begin a source=x kind=k -->\n<!-- results:begin b source=x kind=k -->\n",
            "inside 'a'",
        ),
        ("<!-- results:begin a source=x kind=k -->\n<!-- results:end a -->\n" * 2, "used twice"),
        ("<!-- results:begn a source=x kind=k -->\n", "not a results marker"),
    ],
)
def test_render__malformed_markers_are_errors(text, match):
    with pytest.raises(RenderError, match=match):
        find_blocks(text, Path("d.md"))


def test_render__the_repository_docs_are_as_their_result_files_render_them():
    """Every block of README.md and docs/ (none until the first results are committed).

    ``docs/leaderboard.md``'s block is of the ``leaderboard`` kind, which ``mtgym.leaderboard``
    registers when imported (as ``mtgym results render`` imports it): import it here.
    """
    importlib.import_module("mtgym.leaderboard")
    problems, n = check_tree(REPO)
    assert problems == [], "\n".join(problems)
    blocks = [
        b
        for doc in (REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")))
        for b in find_blocks(doc.read_text(), doc)
    ]
    assert n == len(blocks)
    for b in blocks:
        if b.options.get("optional") == "1":
            continue  # a run still to come (docs/leaderboard.md); rendered as a placeholder
        assert (REPO / b.source).is_file(), f"{b.where}: {b.source} is not committed"


def test_render__suite_rows_summary_and_score(tree):
    doc = tree / "docs" / "r.md"
    doc.write_text(
        "<!-- results:begin s source=results/bench.json kind=suite rows=summary -->\n"
        "<!-- results:end s -->\n"
        "<!-- results:begin q source=results/bench.json kind=suite rows=score -->\n"
        "<!-- results:end q -->\n"
    )
    render_tree(tree)
    summary, score = doc.read_text().split("<!-- results:end s -->")
    assert "| sc-a |" not in summary and "| **suite score** | | 1.000 [1.000, 1.000]" in summary
    assert "| **IQM (x hindsight bound)** |" in summary
    assert "| **suite score** |" in score and "IQM" not in score and "| sc-a |" not in score
    doc.write_text(
        "<!-- results:begin s source=results/bench.json kind=suite rows=some -->\n"
        "<!-- results:end s -->\n"
    )
    with pytest.raises(ValueError, match="rows='some': use all, summary or score"):
        render_tree(tree)


def test_render__cap_check_table_marks_each_seed_and_the_verdict():
    from mtgym.results.renderers import cap_check

    def row(seed, cap, tput, done, wall):
        return {
            "scenario": "sc",
            "policy": "freetrain",
            "seed": seed,
            "cap": cap,
            "normalized_throughput": tput,
            "jobs_completed": done,
            "wall_s": wall,
            "jct_mean": float("nan"),
        }

    rows = [
        row(9000, None, 12.5, 7.0, 1.0),
        row(9000, 4096, 12.5, 7.0, 2.0),  # timing aside
        row(9001, None, 11.0, 6.0, 1.0),
        row(9001, 4096, 11.5, 7.0, 1.0),
    ]
    agg = {
        "cap": 4096,
        "tuned": True,
        "ratio": 0.978,
        "ratio_ci": [0.95, 1.01],
        "identical_episodes": 1,
        "within_tolerance": False,
        "tolerance": 0.02,
    }
    prov = capture(["scripts/cap_check.py", "--record", "x"])
    res = store.build(
        "cap_check", prov, seeds=[9000, 9001], scenarios=[], wall_s=3.0, rows=rows, aggregates=agg
    )
    lines = cap_check(res, {})
    assert lines[0].startswith("| seed | headline | with max_jobs=4096 |")
    assert lines[2] == "| 9000 | 12 | 12 | 7 | 7 | yes |"
    assert lines[3] == "| 9001 | 11 | 12 | 6 | 7 | no |"
    assert lines[-1] == (
        "Paired ratio 0.9780 [0.9500, 1.0100] of `max_jobs=4096` over 2 seeds; 1 of 2 "
        "episodes identical; **not within** 2%."
    )
    with pytest.raises(ValueError, match="needs a cap_check result"):
        cap_check(_fake_benchmark(), {})


def test_render__benchmark_cost_splits_played_from_reused():
    from mtgym.results.renderers import benchmark_cost

    res = _fake_benchmark()
    assert benchmark_cost(res, {})[2] == "| 2 | 2 x 2 | 4 | 0 | 0 | 0 | 1 h 06 min |"
    bounded = [{**r, "hindsight_bound": 10.0} for r in res.rows]
    agg = {
        **res.aggregates,
        "cache": {"sc-a": {"sources": ["results/full.json.gz"], "episodes": 2, "bounds": 2}},
    }
    prov = capture(["benchmark", "--policy", "agent"])
    cached = store.build(
        "benchmark", prov, seeds=[9000, 9001], scenarios=[], wall_s=30.0, rows=bounded,
        aggregates=agg,
    )  # fmt: skip
    lines = benchmark_cost(cached, {})
    assert lines[2] == "| 2 | 2 x 2 | 2 | 2 | 0 | 2 | 30 s |"
    assert lines[-1] == "Reused from `results/full.json.gz`."


def test_render__select_agent_table_names_draws_and_repairs():
    from mtgym.results.renderers import select_agent

    def row(cand, draws, score, share):
        r = {"ratio": score, "ratio_ci_low": score - 0.01, "ratio_ci_high": score + 0.01}
        out = {"candidate": cand, "temperature": 1.0, "score": score, "sets": {"default": r}}
        if draws:
            out["draws"] = draws
        return {**out, "decisions": 1200, "repaired_share": share}

    rows = [row("runs/B1", "budget", 0.97, 0.0), row("runs/B0", None, 0.96, 0.25)]
    agg = {"reference": "freetrain-speedup", "seeds": {"default": [1000]}, "ranking": []}
    prov = capture(["scripts/select_agent.py", "--record", "x"])
    res = store.build(
        "select_agent", prov, seeds=[1000], scenarios=[], wall_s=3.0, rows=rows, aggregates=agg
    )
    lines = select_agent(res, {"labels": "runs/B1:B1"})
    assert lines[0] == (
        "| candidate | temperature | draws | score | default (x freetrain-speedup) | "
        "repaired decisions |"
    )
    assert lines[2] == "| B1 | 1 | budget | 0.970 | 0.970 [0.960, 0.980] | 0.0% of 1,200 |"
    assert lines[3] == (
        "| `runs/B0` | 1 | as trained | 0.960 | 0.960 [0.950, 0.970] | 25.0% of 1,200 |"
    )
    with pytest.raises(ValueError, match="needs a select_agent result"):
        select_agent(_fake_benchmark(), {})


def test_render__bench_vec_table_picks_a_table_and_formats_its_cells():
    from mtgym.results.renderers import bench_vec

    rows = [
        {"table": "env", "B": 1, "batched": 12345, "batched / Sync": 1.4, "note": ""},
        {"table": "env", "B": 8, "batched": 45487.0, "batched / Sync": 2.75, "note": "n/a"},
        {"table": "train", "vec": "batched", "steps/s": 6234},
    ]
    agg = {"tables": ["env", "train"], "memory": None, "train_rates": None, "options": {}}
    prov = capture(["scripts/bench_vec.py", "--record", "x"])
    res = store.build(
        "bench_vec", prov, seeds=[0], scenarios=[], wall_s=3.0, rows=rows, aggregates=agg
    )
    lines = bench_vec(res, {})
    assert lines[0] == "env:"
    assert lines[2] == "| B | batched | batched / Sync | note |"
    assert lines[4:] == ["| 1 | 12,345 | 1.40x |  |", "| 8 | 45,487 | 2.75x | n/a |"]
    assert bench_vec(res, {"table": "1"})[4:] == ["| batched | 6,234 |"]
    with pytest.raises(ValueError, match="table=2: the file has 2 table"):
        bench_vec(res, {"table": "2"})


def test_render__bench_vec_vs_columns_are_ratios_and_the_memory_line_is_optional():
    from mtgym.results.renderers import bench_vec

    rows = [{"table": "t", "trainer": "slot", "steps/s": 1942, "vs CartPole": 1.1}]
    agg = {"tables": ["t"], "memory": "memory: 1 MiB", "train_rates": None, "options": {}}
    prov = capture(["scripts/bench_vec.py", "--record", "x"])
    res = store.build(
        "bench_vec", prov, seeds=[0], scenarios=[], wall_s=3.0, rows=rows, aggregates=agg
    )
    assert bench_vec(res, {})[4:] == ["| slot | 1,942 | 1.10x |"]
    assert bench_vec(res, {"memory": "1"})[-1] == "Memory: 1 MiB."
