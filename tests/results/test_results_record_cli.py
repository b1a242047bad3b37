"""``--record NAME`` on the measuring commands: the result file lands in ``--out`` and in
the registry with every metadata key; a taken name is refused before any episode."""

from __future__ import annotations

import json

import numpy as np

from mtgym.benchmark.splits import Split, SuiteScenario
from mtgym.cli import main
from mtgym.results import store
from mtgym.results.provenance import PACKAGES
from mtgym.results.schema import ResultFile

KEYS = {
    "schema",
    "kind",
    "command",
    "mtgym_version",
    "git",
    "code_sha256",
    "packages",
    "date_utc",
    "machine",
    "seeds",
    "scenarios",
    "wall_s",
    "rows",
    "aggregates",
}


def _check_metadata(data: dict, kind: str, argv: list[str]) -> None:
    assert set(data) == KEYS and data["schema"] == 1 and data["kind"] == kind
    assert data["command"] == "mtgym " + " ".join(argv)
    assert set(data["git"]) == {"commit", "dirty"}
    assert data["git"]["commit"] is None or len(data["git"]["commit"]) == 40
    assert len(data["code_sha256"]) == 64
    assert set(data["packages"]) == set(PACKAGES) and data["packages"]["numpy"] == np.__version__
    assert data["date_utc"].endswith("+00:00")
    m = data["machine"]
    assert m["cores"] >= 1 and len(m["load_avg"]) == 3 and "cpu_model" in m
    sc = data["scenarios"][0]
    assert set(sc) == {"name", "source", "path", "sha256", "tuning_sha256"}
    assert len(sc["sha256"]) == 64 and data["wall_s"] > 0
    ResultFile.model_validate(data)


def test_record__evaluate_writes_out_and_registry_with_every_key(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(store.ENV_VAR, str(tmp_path / "registry"))
    argv = [
        "evaluate",
        "--scenario",
        "toy-two-jobs",
        "--seeds",
        "1",
        "--policy",
        "equal-share",
        "--policy",
        "greedy",
        "--no-progress",
        "--out",
        str(tmp_path / "out"),
        "--record",
        "toy",
    ]
    assert main(argv) == 0
    data = json.loads((tmp_path / "out" / "result.json").read_text())
    _check_metadata(data, "evaluate", argv)
    assert data["seeds"] == [0] and data["scenarios"][0]["name"] == "toy-two-jobs"
    assert [(r["policy"], r["seed"]) for r in data["rows"]] == [("equal-share", 0), ("greedy", 0)]
    assert "normalized_throughput" in data["rows"][0] and "job_finish_s" in data["rows"][0]
    assert set(data["aggregates"]["policies"]) == {"equal-share", "greedy"}
    assert "per_seed" not in data["aggregates"]["policies"]["greedy"]  # they are the rows
    assert (tmp_path / "registry" / "toy.json").read_bytes() == (
        tmp_path / "out" / "result.json"
    ).read_bytes()

    capsys.readouterr()
    assert main(argv) == 2  # taken: refused, before any episode
    assert "toy.json exists: a record is never overwritten" in capsys.readouterr().err
    assert main([*argv, "--force", "--results-dir", str(tmp_path / "other")]) == 0
    assert (tmp_path / "other" / "toy.json").is_file()


def test_record__benchmark_writes_its_rows_and_report(tmp_path, monkeypatch):
    from mtgym.benchmark import splits

    one = Split(
        name="one",
        description="one toy scenario",
        scenarios=(SuiteScenario("toy-two-jobs", None),),
        seed_start=9000,
        quick_seeds=1,
    )
    monkeypatch.setitem(splits.SPLITS, "one", one)
    argv = [
        "benchmark",
        "--split",
        "one",
        "--quick",
        "--no-progress",
        "--policy",
        "greedy",
        "--out",
        str(tmp_path / "out"),
        "--record",
        "b",
        "--results-dir",
        str(tmp_path / "reg"),
    ]
    assert main(argv) == 0
    res = store.read_result(tmp_path / "reg" / "b.json")
    _check_metadata(res.to_json(), "benchmark", argv)
    report = {k: v for k, v in res.aggregates.items() if k not in ("cache", "resumed")}
    assert report == json.loads((tmp_path / "out" / "results.json").read_text())
    assert res.aggregates["cache"] == {}  # an empty registry: nothing reused
    assert {(r["scenario"], r["seed"]) for r in res.rows} == {("toy-two-jobs", 9000)}
    assert "greedy" in {r["policy"] for r in res.rows}
    assert (tmp_path / "out" / "result.json").is_file()


def test_record__tune_records_its_sweep(tmp_path):
    argv = [
        "tune",
        "--policy",
        "pal",
        "--scenario",
        "toy-two-jobs",
        "--horizon",
        "600",
        "--out",
        str(tmp_path / "rec.json"),
        "--record",
        "t",
        "--results-dir",
        str(tmp_path / "reg"),
    ]
    assert main(argv) == 0
    res = store.read_result(tmp_path / "reg" / "t.json")
    _check_metadata(res.to_json(), "tune", argv)
    assert (
        res.seeds == [6000, 6001, 6002]
        and res.aggregates["records"]["toy-two-jobs"]["reference"] == "pal"
    )
    assert {r["seed"] for r in res.rows} == {6000, 6001, 6002} and {
        r["policy"] for r in res.rows
    } == {"pal"}
    from mtgym.results.hashes import file_hash

    assert res.scenarios[0].tuning_sha256 == file_hash(tmp_path / "rec.json")
