"""The Ray backend: same rows as the local backend, clear errors, nothing left behind."""

from __future__ import annotations

import math
import os
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from mtgym.backends.ray_backend import (  # noqa: E402
    AUTH_ENV,
    TIMING_KEYS,
    RayOutput,
    RayUnavailableError,
    evaluate_ray,
    import_ray,
    ray_session,
    strip_timing,
)
from mtgym.evaluate import evaluate  # noqa: E402
from mtgym.policy.registry import make_policy  # noqa: E402
from mtgym.scenario.registry import PRESETS_DIR, get_generator  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
AUTH_TOKEN = Path.home() / ".ray" / "auth_token"
POLICIES = ["equal-share", "freetrain"]
USER_AUTH_MODE = os.environ.get("RAY_AUTH_MODE")
SEEDS = [0, 1]


def _pgrep(*args: str) -> set[int]:
    res = subprocess.run(["pgrep", *args], capture_output=True, text=True, check=False)
    return {int(p) for p in res.stdout.split()}


def _cluster_pids(r) -> set[int]:
    """Every process of the running local cluster: its daemons (their command lines name the
    session folder) and all their descendants (the ``ray::`` workers and agents). Exact even
    when other Ray clusters run on the machine (other tests, other users)."""
    session = r._private.worker._global_node.get_session_dir_path()
    found, todo = set(), list(_pgrep("-f", session))
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(_pgrep("-P", str(pid)))
    found.discard(os.getpid())
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def _assert_nothing_left(pids: dict[int, str], token_existed: bool) -> None:
    assert any(c.startswith("ray::") for c in pids.values()), f"no ray:: workers seen: {pids}"
    deadline = time.monotonic() + 15.0
    while (left := {p for p in pids if _alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.25)
    assert not left, f"Ray processes left after shutdown: {sorted(left)}"
    if not token_existed:
        assert not AUTH_TOKEN.exists(), "Ray wrote ~/.ray/auth_token"


@contextmanager
def _watch_shutdown(monkeypatch):
    """Record the cluster's processes just before ``ray.shutdown`` (whoever calls it)."""
    seen: dict[int, str] = {}
    real = ray.shutdown

    def shutdown(*a, **k):
        if ray.is_initialized():
            seen.update({p: _cmdline(p) for p in _cluster_pids(ray)})
        return real(*a, **k)

    monkeypatch.setattr(ray, "shutdown", shutdown)
    yield seen


@pytest.fixture(scope="module")
def ray_cluster():
    """One local 2-CPU Ray for the module; afterwards, check it is gone without a trace."""
    token_existed = AUTH_TOKEN.exists()
    with pytest.MonkeyPatch.context() as mp, _watch_shutdown(mp) as pids:
        with ray_session(num_cpus=2) as r:
            yield r
        assert not ray.is_initialized()
    assert pids, "no Ray processes were seen"
    _assert_nothing_left(pids, token_existed)


def _local_rows(scenario: str, policies, seeds):
    runs = evaluate(
        get_generator(scenario),
        [(n, lambda n=n: make_policy(n)) for n in policies],
        seeds,
        progress=False,
        scenario_name=scenario,
    )
    return {r.name: r.per_seed for r in runs}


def _same(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    return all(
        (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
        or x == y
        for x, y in ((a[k], b[k]) for k in a)
    )


def _assert_identical(scenario: str, ray_runs, local: dict) -> None:
    assert [r.name for r in ray_runs] == list(local)
    for run in ray_runs:
        assert [row["seed"] for row in run.per_seed] == SEEDS
        for got, want in zip(run.per_seed, local[run.name], strict=True):
            assert set(TIMING_KEYS) <= set(got)
            assert _same(strip_timing(got), strip_timing(want)), (scenario, run.name, got, want)


def test_evaluate_ray__starts_and_stops_its_own_cluster(monkeypatch):
    # runs first (no fixture yet): evaluate_ray starts a private Ray and shuts it down
    if ray.is_initialized():
        pytest.skip("a Ray is already running in this process (test order under xdist)")
    token_existed = AUTH_TOKEN.exists()
    env_before = {k: os.environ.get(k) for k in AUTH_ENV}
    with _watch_shutdown(monkeypatch) as pids:
        runs = evaluate_ray("toy-two-jobs", ["greedy"], [3], num_cpus=1)
    assert runs[0].name == "greedy" and runs[0].per_seed[0]["seed"] == 3
    assert not ray.is_initialized()
    assert {k: os.environ.get(k) for k in AUTH_ENV} == env_before  # auth env restored
    assert pids, "no Ray processes were seen"
    _assert_nothing_left(pids, token_existed)


def test_private_cluster_uses_token_auth_without_a_token_file(ray_cluster):
    from ray._raylet import AuthenticationMode, get_authentication_mode

    assert ray_cluster.cluster_resources().get("CPU") == 2
    if USER_AUTH_MODE is not None:
        pytest.skip(f"RAY_AUTH_MODE={USER_AUTH_MODE} set by the user: ray_session keeps it")
    assert os.environ.get("RAY_AUTH_MODE") == "token"
    assert len(os.environ.get("RAY_AUTH_TOKEN", "")) == 64  # random, per cluster, in memory
    assert get_authentication_mode() == AuthenticationMode.TOKEN


def test_missing_ray_is_a_clear_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(RayUnavailableError, match=r"pip install -e \.\[ray\]"):
        import_ray()
    with pytest.raises(RayUnavailableError):
        evaluate_ray("toy-two-jobs", ["equal-share"], [0])


def test_evaluate_ray__toy_rows_identical_to_local(ray_cluster, tmp_path):
    local = _local_rows("toy-two-jobs", POLICIES, SEEDS)
    runs = evaluate_ray("toy-two-jobs", POLICIES, SEEDS, output=RayOutput(out=tmp_path / "ev"))
    _assert_identical("toy-two-jobs", runs, local)
    assert (tmp_path / "ev" / "results.json").is_file()
    assert ray.is_initialized()  # an already running Ray is reused and left running


def test_evaluate_ray__default_short_horizon_identical_to_local(ray_cluster, tmp_path):
    text = (PRESETS_DIR / "default.yaml").read_text()
    assert "horizon_s: 21600.0" in text
    scenario = tmp_path / "default-short.yaml"
    scenario.write_text(text.replace("horizon_s: 21600.0", "horizon_s: 3600.0"))
    local = _local_rows(str(scenario), POLICIES, SEEDS)
    assert any(row["samples"] > 0 for rows in local.values() for row in rows)
    # a relative path works too: the driver makes it absolute for the workers
    rel = os.path.relpath(scenario)
    runs = evaluate_ray(rel, POLICIES, SEEDS)
    _assert_identical("default-short", runs, local)


def test_evaluate_ray__unknown_policy_is_a_clear_error(ray_cluster):
    with pytest.raises(KeyError, match=r"unknown policy 'nope'.*equal-share"):
        evaluate_ray("toy-two-jobs", ["equal-share", "nope"], [0])


def test_evaluate_ray__unknown_scenario_is_a_clear_error(ray_cluster):
    with pytest.raises(KeyError, match="no-such-scenario"):
        evaluate_ray("no-such-scenario", ["equal-share"], [0])


def test_evaluate_ray__task_error_is_the_original_exception(ray_cluster, tmp_path):
    # the driver checks names; an error raised inside a task comes back as itself
    with pytest.raises(ValueError, match="decision_interval_s must be > 0"):
        evaluate_ray("toy-two-jobs", ["equal-share"], [0], decision_interval_s=-1.0)


def test_train_ray__seed_sweep_matches_local_training(ray_cluster, tmp_path):
    import dataclasses
    import json

    pytest.importorskip("sb3_contrib")
    from agents.policy import load_model
    from agents.train import Args, train
    from mtgym.backends.ray_backend import train_ray

    args = Args(
        scenario="toy-two-jobs",
        max_count=4,  # (the toy has 4 nodes: a larger cap is an error, never clipped)
        timesteps=64,
        n_envs=2,
        n_steps=32,
        batch_size=32,
        n_epochs=1,
        eval_freq=0,
        checkpoint_freq=10_000,
        out=tmp_path / "sweep",
        progress=False,
        seed=5,
    )
    paths = train_ray(train, args, num_workers=2)
    assert paths == [
        tmp_path / "sweep" / "seed5" / "model.zip",
        tmp_path / "sweep" / "seed6" / "model.zip",
    ]
    assert all(p.is_file() and (p.parent / "agent.json").is_file() for p in paths)
    sweep = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert sweep["seeds"] == [5, 6] and [r["seed"] for r in sweep["runs"]] == [5, 6]
    # the same run in this process gives the same weights (the task is plain train(args))
    local = train(dataclasses.replace(args, seed=5, out=tmp_path / "local"))
    got, _ = load_model(paths[0])
    want, _ = load_model(local)
    for (k, a), (_, b) in zip(
        got.policy.state_dict().items(), want.policy.state_dict().items(), strict=True
    ):
        assert (a == b).all(), k
    with pytest.raises(ValueError, match="seeds must be distinct"):
        train_ray(train, args, seeds=[1, 1])


def test_evaluate_ray__runs_take_their_labels(ray_cluster, tmp_path):
    out = RayOutput(out=tmp_path / "ev", labels=["eq:label/one", "fair"])
    runs = evaluate_ray("toy-two-jobs", ["equal-share", "freetrain"], [0], output=out)
    assert [r.name for r in runs] == ["eq:label/one", "fair"]
    assert sorted(p.name for p in (tmp_path / "ev" / "tb").iterdir()) == ["eq_label_one", "fair"]
    with pytest.raises(ValueError, match="1 labels for 2 policies"):
        RayOutput(labels=["x"]).run_names(["equal-share", "freetrain"])
