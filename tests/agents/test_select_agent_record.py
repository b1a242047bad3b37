"""``scripts/select_agent.py --record NAME``: the selection's figures as a result file (kind
``select_agent``) in the registry; without ``--record`` nothing is written there."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from agents.policy import PRETRAINED
from mtgym.results import store

SELECT = Path(__file__).resolve().parents[2] / "scripts" / "select_agent.py"


@pytest.fixture
def select(monkeypatch):
    spec = importlib.util.spec_from_file_location("select_agent_record", SELECT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from mtgym.generate.default import default_generator

    monkeypatch.setattr(mod, "SETS", (("default", default_generator(), [1000, 1001]),))
    return mod


@pytest.mark.skipif(not (PRETRAINED / "model.zip").is_file(), reason="no shipped agent")
def test_select_agent__record_writes_the_ranking_as_a_result_file(select, tmp_path, monkeypatch):
    reg, out = tmp_path / "reg", tmp_path / "sel.json"
    args = [str(PRETRAINED), "--limit", "1", "--out", str(out), "--results-dir", str(reg)]
    args += ["--draws", "per-slot", "budget"]
    monkeypatch.setattr(sys, "argv", ["scripts/select_agent.py", *args, "--record", "sel"])
    select.main()
    res = store.read_result(reg / "sel.json")
    summary = json.loads(out.read_text())
    assert res.kind == "select_agent"
    assert res.command == "python scripts/select_agent.py " + " ".join([*args, "--record", "sel"])
    assert res.seeds == [1000] and [s.name for s in res.scenarios] == ["default"]
    assert len(res.scenarios[0].sha256) == 64 and res.scenarios[0].tuning_sha256 is not None
    assert res.rows == store.json_safe(summary["rows"]) and len(res.rows) == 2  # NaN: null
    assert res.aggregates["reference"] == "freetrain-speedup"
    assert res.aggregates["ref_per_seed"] == summary["ref_per_seed"]
    by_draws = {r["draws"]: r for r in res.aggregates["ranking"]}
    assert sorted(by_draws) == ["budget", "per-slot"]
    for r in res.rows:
        assert by_draws[r["draws"]] == {
            "candidate": str(PRETRAINED),
            "temperature": 1.0,
            "draws": r["draws"],
            "score": r["score"],
            "repaired_share": r["repaired_share"],
        }
        assert r["decisions"] > 100
    # the shipped agent draws each slot from its own mask: the codec repairs some of its
    # actions; drawn in order within the budget, none
    assert by_draws["per-slot"]["repaired_share"] > 0.05
    assert by_draws["budget"]["repaired_share"] == 0.0
    assert res.wall_s > 0

    monkeypatch.setattr(sys, "argv", ["scripts/select_agent.py", *args, "--record", "sel"])
    monkeypatch.setattr(select, "headline", lambda *a: pytest.fail("an episode was played"))
    with pytest.raises(SystemExit, match=r"^error: .*sel\.json exists: a record is never"):
        select.main()  # a taken name: refused in one line, before any episode
