"""The benchmark plays the clairvoyant beside the references: every row carries the seed's
clairvoyant headline, its share of the bound and the row's share of it; the clairvoyant is
never the reference nor ranked; its episodes are reused from the registry like the
references'; the headroom table splits each scenario's gap."""

from __future__ import annotations

import json
import math

import pytest

from mtgym.benchmark.runner import CLAIRVOYANT, add_clairvoyant, is_baseline, is_reference_point
from mtgym.cli import main
from mtgym.results import store
from mtgym.results.renderers import renderer
from mtgym.testing.benchmark import bench_argv


def test_add_clairvoyant__every_row_gets_the_bracket():
    rows = {
        "greedy": [{"normalized_throughput": 2.0}, {"normalized_throughput": 3.0}, None],
        CLAIRVOYANT: [
            {"normalized_throughput": 4.0, "hindsight_bound": 5.0},
            None,
            {"normalized_throughput": 1.0, "hindsight_bound": 2.0},
        ],
    }
    add_clairvoyant(rows)
    g, c = rows["greedy"], rows[CLAIRVOYANT]
    assert (g[0]["clairvoyant"], g[0]["clairvoyant_fraction"], g[0]["of_clairvoyant"]) == (
        4.0,
        0.8,
        0.5,
    )
    assert math.isnan(g[1]["clairvoyant"]) and math.isnan(g[1]["of_clairvoyant"])
    assert c[0]["of_clairvoyant"] == 1.0 and c[2]["clairvoyant_fraction"] == 0.5
    assert not is_baseline(CLAIRVOYANT) and is_reference_point(CLAIRVOYANT)
    assert is_baseline("greedy") and not is_reference_point("agent")


def _argv(tmp_path, out, *extra):
    argv = bench_argv(tmp_path, out, *extra)
    argv.remove("--no-clairvoyant")
    return argv


def test_benchmark__the_clairvoyant_brackets_every_episode_and_is_never_the_reference(
    one_split, tmp_path, capsys
):
    played, _ = one_split
    assert main(_argv(tmp_path, "a", "--record", "a")) == 0
    out = capsys.readouterr().out
    assert "| clairvoyant |" in out and "IQM (x clairvoyant)" in out
    res = store.read_result(tmp_path / "reg" / "a.json")
    assert res.aggregates["policies"][-1] == CLAIRVOYANT  # added after the references
    sc = res.aggregates["scenarios"][0]
    assert sc["reference"] == "freetrain"  # the recorded one, never the clairvoyant
    by = {(r["policy"], r["seed"]): r for r in res.rows}
    for seed in (9000, 9001):
        c = by[(CLAIRVOYANT, seed)]
        assert c["clairvoyant"] == c["normalized_throughput"] and c["of_clairvoyant"] == 1.0
        assert c["clairvoyant_fraction"] == c["bound_fraction"] <= 1.0 + 1e-9
        assert c["jct_common_mean"] is None and c["jobs_common"] == 0.0  # (NaN: null)
        for p in ("greedy", "freetrain"):
            r = by[(p, seed)]
            assert r["of_clairvoyant"] == r["normalized_throughput"] / c["normalized_throughput"]
            assert r["of_clairvoyant"] <= 1.0 + 1e-9  # both are its candidates
        # the online policies' common jobs: one set, which the clairvoyant does not cut
        assert by[("greedy", seed)]["jobs_common"] == by[("freetrain", seed)]["jobs_common"]
    agg = res.aggregates["aggregates"]["policies"]
    assert agg["greedy"]["iqm_clairvoyant"]["point"] <= 1.0 + 1e-9
    assert agg[CLAIRVOYANT]["iqm_clairvoyant"]["point"] == pytest.approx(1.0)
    assert sc["policies"]["greedy"]["of_clairvoyant"]["mean"] <= 1.0 + 1e-9
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    assert results["aggregates"]["policies"]["freetrain"]["iqm_clairvoyant"]["point"] > 0

    lines = renderer("headroom")(res, {})
    assert lines[2].startswith("| toy-two-jobs | `")
    cells = [c.strip() for c in lines[2].split("|")[1:-1]]
    best, clv = float(cells[2]), float(cells[3].split()[0])
    assert best <= clv + 1e-9 and float(cells[4]) == pytest.approx(clv - best, abs=2e-3)
    suite = renderer("suite")(res, {})
    assert any(line.startswith("| **IQM (x clairvoyant)** |") for line in suite)

    # the leaderboard lists it after the ranked policies, with a dash for a rank
    from mtgym.leaderboard.board import entries_of, rank, table

    _, cells_ = table(rank(entries_of(res, "reg/a.json")))
    assert [c[0] for c in cells_][-1] == "-" and cells_[-1][1] == CLAIRVOYANT
    assert cells_[0][0] == "1"

    # a second run reuses the clairvoyant's episodes from the registry, as the references'
    played.clear()
    assert main(_argv(tmp_path, "b")) == 0
    assert "reusing freetrain (2 episodes), clairvoyant (2 episodes)" in capsys.readouterr().out
    assert "ClairvoyantPolicy" not in played


def test_headroom__refuses_a_run_without_the_clairvoyant(one_split, tmp_path, capsys):
    assert main(bench_argv(tmp_path, "c", "--record", "c")) == 0
    res = store.read_result(tmp_path / "reg" / "c.json")
    assert CLAIRVOYANT not in res.aggregates["policies"]
    with pytest.raises(ValueError, match="no clairvoyant episodes"):
        renderer("headroom")(res, {})
    assert not any("clairvoyant" in line for line in renderer("suite")(res, {}))
