"""``mtgym.results.hashes.code_sha256``: changes with the source behind an episode (the
benchmark's runner included), and only with it: a researcher's own registered policy leaves
it alone. The package versions it does not cover are recorded beside it
(``mtgym.results.provenance.packages``)."""

from __future__ import annotations

from mtgym.results.hashes import code_sha256


def test_code_sha256__follows_the_episode_source_only(tmp_path):
    (tmp_path / "mtgym" / "sim").mkdir(parents=True)
    (tmp_path / "baselines").mkdir()
    (tmp_path / "mtgym" / "sim" / "a.py").write_text("x = 1\n")
    (tmp_path / "baselines" / "b.py").write_text("y = 2\n")
    first = code_sha256(tmp_path)
    assert len(first) == 64 and code_sha256(tmp_path) == first
    (tmp_path / "mtgym" / "env").mkdir()
    (tmp_path / "mtgym" / "env" / "c.py").write_text("z = 3\n")  # not an episode's code
    (tmp_path / "mtgym" / "sim" / "__pycache__").mkdir()
    (tmp_path / "mtgym" / "sim" / "__pycache__" / "a.cpython-312.pyc").write_bytes(b"\0")
    assert code_sha256(tmp_path) == first
    (tmp_path / "baselines" / "b.py").write_text("y = 3\n")
    assert code_sha256(tmp_path) != first
    (tmp_path / "baselines" / "b.py").write_text("y = 2\n")
    (tmp_path / "mtgym" / "sim" / "a.py").rename(tmp_path / "mtgym" / "sim" / "a2.py")
    assert code_sha256(tmp_path) != first  # a renamed file counts


def test_code_sha256__covers_the_benchmark_runner(tmp_path):
    (tmp_path / "mtgym" / "benchmark").mkdir(parents=True)
    first = code_sha256(tmp_path)
    (tmp_path / "mtgym" / "benchmark" / "report.py").write_text("x = 1\n")  # scoring only
    assert code_sha256(tmp_path) == first
    (tmp_path / "mtgym" / "benchmark" / "runner.py").write_text("def _until(): ...\n")
    assert code_sha256(tmp_path) != first  # horizons and how the bound is called


def test_code_sha256__hashes_only_this_repository_s_entry_points(tmp_path, monkeypatch):
    from mtgym.policy import registry

    ours = {"greedy": "baselines.heuristics:GreedyPolicy", "agent": "agents.policy:AgentPolicy"}
    monkeypatch.setattr(registry, "available_policies", lambda: dict(ours))
    first = code_sha256(tmp_path)
    mine = {**ours, "mine": "my_lab.policies:Mine"}  # a researcher's own registered policy
    monkeypatch.setattr(registry, "available_policies", lambda: mine)
    assert code_sha256(tmp_path) == first
    extra = {**ours, "new": "baselines.new:NewPolicy"}  # a baseline of this repository
    monkeypatch.setattr(registry, "available_policies", lambda: extra)
    assert code_sha256(tmp_path) != first


def test_packages__records_the_versions_the_numbers_rest_on():
    import numpy as np

    from mtgym.results.provenance import PACKAGES, capture, packages

    got = packages()
    assert tuple(got) == PACKAGES and got["numpy"] == np.__version__
    assert {"numba", "highspy", "pulp", "torch", "gymnasium", "stable-baselines3"} <= set(got)
    assert packages(("no-such-distribution-xyz",)) == {"no-such-distribution-xyz": None}
    assert capture(["x"])["packages"] == got
