"""``mtgym.benchmark.cache``: a benchmark reuses the references' episodes and the bounds of
an earlier result file of the same code, scenario and tuning, plays only the other
policies' episodes, and reports exactly what a run that played everything reports."""

from __future__ import annotations

import json

from mtgym.benchmark import cache as episode_cache
from mtgym.cli import main
from mtgym.results import store
from mtgym.testing.benchmark import ONE
from mtgym.testing.benchmark import bench_argv as _argv
from mtgym.testing.benchmark import untimed as _untimed


def test_cache__a_warm_registry_plays_no_reference_and_no_bound_and_reports_the_same(
    one_split, tmp_path, capsys
):
    played, bounds = one_split
    assert main(_argv(tmp_path, "cold", "--record", "cold")) == 0
    cold_log = capsys.readouterr().out
    assert "toy-two-jobs: playing 2 reference episodes and 2 bounds: no result file in" in cold_log
    assert sorted(played) == ["FreeTrainPolicy"] * 2 + ["GreedyPolicy"] * 2 and len(bounds) == 2
    played.clear()
    bounds.clear()

    assert main(_argv(tmp_path, "warm", "--record", "warm")) == 0
    log = capsys.readouterr().out
    assert "toy-two-jobs: reusing freetrain (2 episodes) and 2 bounds from reg/cold.json\n" in log
    assert played == ["GreedyPolicy"] * 2 and bounds == []  # only the judged policy's episodes

    cold = store.read_result(tmp_path / "reg" / "cold.json")
    warm = store.read_result(tmp_path / "reg" / "warm.json")
    assert _untimed(warm.rows) == _untimed(cold.rows)
    assert [r for r in warm.rows if r["policy"] == "freetrain"] == [
        r for r in cold.rows if r["policy"] == "freetrain"
    ]  # reused as recorded, timing included
    assert cold.aggregates["cache"] == {}  # nothing to reuse
    assert warm.aggregates["cache"] == {  # what was reused, and that its timing is not now
        "toy-two-jobs": {
            "sources": ["reg/cold.json"],
            "episodes": 2,
            "bounds": 2,
            "seeds": {"freetrain": [9000, 9001]},
            "timing": episode_cache.TIMING_NOTE,
        }
    }
    assert "decision_ms" in episode_cache.TIMING_NOTE and "wall_s" in episode_cache.TIMING_NOTE

    def report(agg):
        return {k: v for k, v in agg.items() if k not in ("cache", "resumed")}

    assert _untimed(report(warm.aggregates)) == _untimed(report(cold.aggregates))
    assert report(warm.aggregates) == json.loads((tmp_path / "warm" / "results.json").read_text())
    assert warm.code_sha256 == cold.code_sha256 and len(cold.code_sha256) == 64
    assert {r["horizon_s"] for r in cold.rows} == {None}
    assert {r["decision_interval_s"] for r in cold.rows} == {None}

    played.clear()
    assert main(_argv(tmp_path, "off", "--no-cache", "--record", "off")) == 0
    assert "cache: off (--no-cache)" in capsys.readouterr().out
    assert sorted(played) == ["FreeTrainPolicy"] * 2 + ["GreedyPolicy"] * 2
    assert store.read_result(tmp_path / "reg" / "off.json").aggregates["cache"] == {}


def test_cache__other_code_or_another_decision_interval_replays_and_says_why(
    one_split, tmp_path, monkeypatch, capsys
):
    played, bounds = one_split
    assert main(_argv(tmp_path, "cold", "--record", "cold")) == 0
    capsys.readouterr()
    played.clear()
    bounds.clear()

    assert main(_argv(tmp_path, "dt", "--decision-interval", "600")) == 0
    log = capsys.readouterr().out
    assert "toy-two-jobs: reusing 2 bounds from reg/cold.json; playing 2 reference episodes " in log
    assert "(seeds, horizon or decision interval differ)" in log
    assert played.count("FreeTrainPolicy") == 2 and bounds == []  # a bound has no interval

    from mtgym.results import hashes

    monkeypatch.setattr(hashes, "code_sha256", lambda root=None: "0" * 64)
    played.clear()
    assert main(_argv(tmp_path, "other")) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("toy-two-jobs:"))
    assert line == (
        "toy-two-jobs: playing 2 reference episodes and 2 bounds: reg/cold.json: made by "
        "other code (its code_sha256 is not this checkout's)"
    )
    assert played.count("FreeTrainPolicy") == 2 and len(bounds) == 2


def _result(scenarios, rows, *, code="c" * 64, version="0.1.0"):
    prov = {
        "command": "mtgym benchmark",
        "mtgym_version": version,
        "git": {"commit": None, "dirty": None},
        "code_sha256": code,
        "date_utc": "2025-01-01T00:00:00+00:00",
        "machine": {"cpu_model": None, "cores": 1, "load_avg": None},
    }
    return store.build(
        "benchmark", prov, seeds=[1], scenarios=scenarios, wall_s=1.0, rows=rows, aggregates={}
    )


def test_cache__each_refusal_names_its_file_and_reason(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    entry = {"name": "s", "source": "code", "path": None, "sha256": "a" * 64, "tuning_sha256": None}
    row = {
        "scenario": "s",
        "policy": "ref",
        "seed": 1,
        "horizon_s": None,
        "decision_interval_s": None,
        "normalized_throughput": 2.0,
        "jct_mean": None,
        "hindsight_bound": 4.0,
    }
    reg = tmp_path / "reg"
    store.write_result(_result([entry], [row]), reg / "a-good")
    store.write_result(_result([{**entry, "sha256": "b" * 64}], [row]), reg / "b-scenario")
    store.write_result(_result([{**entry, "tuning_sha256": "t" * 64}], [row]), reg / "c-tuning")
    store.write_result(_result([entry], [row], version="0.0.9"), reg / "d-version")
    store.write_result(_result([entry], [row], code=None), reg / "e-nocode")
    (reg / "f-broken.json").write_text("{")
    current = episode_cache.Current("0.1.0", "c" * 64, {"s": ("a" * 64, None)})
    cache = episode_cache.load(reg, current, ["ref"])
    assert cache.files == 6
    assert cache.refused["s"][:4] == [
        "reg/b-scenario.json: the scenario has changed since (its sha256 differs)",
        "reg/c-tuning.json: the scenario's tuning record has changed since (its "
        "tuning_sha256 differs)",
        "reg/d-version.json: made by mtgym 0.0.9 (this is 0.1.0)",
        "reg/e-nocode.json: records no code_sha256 (written before the cache)",
    ]
    assert cache.refused["s"][4].startswith("reg/f-broken.json: unreadable")
    got = cache.row("s", "ref", 1, None, None)
    assert got["seed"] == 1 and got["normalized_throughput"] == 2.0
    assert got["jct_mean"] != got["jct_mean"]  # null back to NaN
    assert "scenario" not in got and "horizon_s" not in got
    assert cache.row("s", "other", 1, None, None) is None  # not a reference
    assert cache.row("s", "ref", 1, 3600.0, None) is None  # another horizon
    assert cache.bound("s", 1, None) == 4.0 and cache.bound("s", 2, None) is None
    ep = episode_cache.Episodes("s", ["new", "ref"], [1, 2], None, None)
    line = episode_cache.describe(cache, ep)
    assert line.startswith(
        "s: reusing ref (1 episode) and 1 bounds from reg/a-good.json; playing 1 reference "
        "episodes and 1 bounds: reg/b-scenario.json: the scenario has changed since"
    )


class _FakeRay:
    """``ray.remote(num_cpus=1)(fn).remote(*args)`` recorded, nothing run."""

    def __init__(self):
        self.submitted = []

    def remote(self, **_options):
        def wrap(fn):
            class Task:
                @staticmethod
                def remote(*args):
                    self.submitted.append((fn.__name__, *args))
                    return object()

            return Task

        return wrap


def test_cache__ray_submits_only_what_the_cache_lacks(tmp_path):
    from mtgym.benchmark.runner import NO_REUSE, Reuse, _submit

    cache = episode_cache.EpisodeCache(tmp_path, frozenset({"freetrain"}))
    src = tmp_path / "r.json"
    for seed in (9000, 9001):
        cache.rows[("toy-two-jobs", "freetrain", seed, None, None)] = ({"seed": seed}, src)
    cache.bounds[("toy-two-jobs", 9000, None)] = (3.0, src)
    ray = _FakeRay()
    pending, rows, bounds = _submit(
        ray, ONE, ["greedy", "freetrain"], quick=True, decision_interval_s=None, reuse=Reuse(cache)
    )
    assert sorted(ray.submitted) == [
        ("bound_one", "toy-two-jobs", 9001, None),
        ("run_one", "toy-two-jobs", "greedy", 9000, None, None),
        ("run_one", "toy-two-jobs", "greedy", 9001, None, None),
    ]
    assert len(pending) == 3 and bounds["toy-two-jobs"] == [3.0, None]
    assert rows["toy-two-jobs"]["freetrain"] == [{"seed": 9000}, {"seed": 9001}]
    assert rows["toy-two-jobs"]["greedy"] == [None, None]
    assert episode_cache.reused(cache) == {  # what the run took, noted as handed out
        "toy-two-jobs": {
            "sources": [str(src)],
            "episodes": 2,
            "bounds": 1,
            "seeds": {"freetrain": [9000, 9001]},
            "timing": episode_cache.TIMING_NOTE,
        }
    }
    assert episode_cache.reused(None) == {}
    ray = _FakeRay()
    _submit(ray, ONE, ["greedy", "freetrain"], quick=True, decision_interval_s=None, reuse=NO_REUSE)
    assert len(ray.submitted) == 2 + 4  # every bound and episode
