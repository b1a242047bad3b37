"""The result file: written and read back equal, compressed above the threshold, never
overwritten in the registry without force, a clear error on a broken file, and content
hashes that follow the scenario and tuning files."""

from __future__ import annotations

import gzip
import json
import math
import shutil

import pytest

from mtgym.results import hashes, store
from mtgym.results.provenance import capture
from mtgym.results.schema import SCHEMA, ResultFileError
from mtgym.scenario.registry import preset_path


def _result(rows: int = 2, **kw):
    prov = capture(["evaluate", "--scenario", "toy-two-jobs"])
    return store.build(
        "evaluate",
        prov,
        seeds=[1, 2],
        scenarios=hashes.scenario_entries(["toy-two-jobs"]),
        wall_s=1.5,
        rows=[
            {"scenario": "toy-two-jobs", "policy": "greedy", "seed": k, "x": math.nan, "v": 0.5}
            for k in range(rows)
        ],
        aggregates={"policies": {"greedy": {"normalized_throughput": 1.0}}, "t": (1, 2)},
        **kw,
    )


def test_store__round_trip_keeps_every_key_and_writes_nan_as_null(tmp_path):
    res = _result()
    path = store.write_result(res, tmp_path / "result")
    assert path.name == "result.json"
    data = json.loads(path.read_text())
    assert data["schema"] == SCHEMA and next(iter(data)) == "schema"
    assert data["rows"][0]["x"] is None and data["aggregates"]["t"] == [1, 2]
    back = store.read_result(path)
    assert back == res
    assert back.to_json() == data


def test_store__large_files_are_gzipped_and_read_back(tmp_path, monkeypatch):
    res = _result(rows=50)
    size = len(store.encode(res)[0])
    monkeypatch.setattr(store, "GZIP_ABOVE", size - 1)
    path = store.write_result(res, tmp_path / "result")
    assert path.name == "result.json.gz"
    assert json.loads(gzip.decompress(path.read_bytes()))["kind"] == "evaluate"
    assert store.read_result(path) == res
    assert store.encode(res)[0] == path.read_bytes()  # deterministic bytes (no timestamp)
    monkeypatch.setattr(store, "GZIP_ABOVE", size)  # at the threshold: plain again
    assert store.write_result(res, tmp_path / "result").name == "result.json"
    assert not (tmp_path / "result.json.gz").exists()  # the stale compressed one is gone


def test_store__a_record_is_never_overwritten_without_force(tmp_path, monkeypatch):
    res = _result()
    first = store.record(res, tmp_path, "run-1")
    assert first == tmp_path / "run-1.json"
    with pytest.raises(FileExistsError, match=r"run-1\.json exists.*--force"):
        store.record(res, tmp_path, "run-1")
    monkeypatch.setattr(store, "GZIP_ABOVE", 10)  # a compressed one counts as taken too
    with pytest.raises(FileExistsError):
        store.check_record(tmp_path, "run-1")
    assert store.record(res, tmp_path, "run-1", force=True) == tmp_path / "run-1.json.gz"
    assert not first.exists()
    for bad in ("a/b", "../x", "x.json", "", ".hidden"):
        with pytest.raises(ValueError, match="plain name"):
            store.check_record(tmp_path, bad)


def test_store__results_dir_option_then_env_then_default(monkeypatch, tmp_path):
    monkeypatch.delenv(store.ENV_VAR, raising=False)
    assert str(store.results_dir()) == "results"
    monkeypatch.setenv(store.ENV_VAR, str(tmp_path / "env"))
    assert store.results_dir() == tmp_path / "env"
    assert store.results_dir(tmp_path / "opt") == tmp_path / "opt"


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"{not json", "not valid JSON"),
        (b"\x1f\x8b broken gzip", "not a readable result file"),
        (b'{"schema": 1}', "not a result file of schema 1: kind: Field required"),
        (b"[]", "not a result file"),
    ],
)
def test_store__a_broken_file_names_itself_and_the_problem(tmp_path, content, match):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    with pytest.raises(ResultFileError, match=match) as err:
        store.read_result(p)
    assert str(p) in str(err.value)


def test_store__another_schema_or_an_unknown_key_is_refused(tmp_path):
    data = _result().to_json()
    for change in ({"schema": 2}, {"extra": 1}):
        p = tmp_path / "r.json"
        p.write_text(json.dumps({**data, **change}))
        with pytest.raises(ResultFileError):
            store.read_result(p)


def test_hashes__follow_the_scenario_file_and_its_tuning_record(tmp_path, monkeypatch):
    src = tmp_path / "sc.yaml"
    shutil.copy(preset_path("hetero-mix"), src)
    before = hashes.scenario_entry(str(src))
    assert before["source"] == "file" and before["path"] == str(src)
    assert before["sha256"] == hashes.scenario_entry(str(src))["sha256"]  # stable
    src.write_text(src.read_text().replace("description:", "description: changed", 1))
    assert hashes.scenario_entry(str(src))["sha256"] != before["sha256"]

    from mtgym.scenario import tuning

    monkeypatch.setattr(tuning, "tuning_dir", lambda: tmp_path / "tuning")
    assert hashes.scenario_entry("toy-two-jobs")["tuning_sha256"] is None
    (tmp_path / "tuning").mkdir()
    rec = tmp_path / "tuning" / "toy-two-jobs.json"
    rec.write_text("{}")
    one = hashes.scenario_entry("toy-two-jobs")["tuning_sha256"]
    rec.write_text("{ }")
    two = hashes.scenario_entry("toy-two-jobs")
    assert None is not one != two["tuning_sha256"]
    assert two["source"] == "code" and two["path"] is None


def test_hashes__a_preset_is_named_by_its_path_in_the_checkout():
    e = hashes.scenario_entry("hetero-mix")
    assert e["path"] == "scenarios/hetero-mix.yaml" and e["tuning_sha256"] is not None
