"""``mtgym dataset from-trace``: bridge traces (and what their replays measured) as Minari
episodes of the same format as collected ones."""

import json

import numpy as np
import pytest

minari = pytest.importorskip("minari")

from mtgym.bridge.record import record_episode  # noqa: E402
from mtgym.bridge.trace import INTERVAL_KEY, read_trace  # noqa: E402
from mtgym.cli import main  # noqa: E402
from mtgym.dataset.episode import EnvSettings  # noqa: E402
from mtgym.dataset.trace import (  # noqa: E402
    TraceMismatchError,
    measured_progress,
    trace_episode,
)
from mtgym.evaluate import configure_policy, scenario_defaults  # noqa: E402
from mtgym.policy.registry import make_policy  # noqa: E402
from mtgym.scenario.registry import get_generator  # noqa: E402

SEED = 2**30 + 50


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return tmp_path / "minari"


def _record(path, policy="freetrain-speedup", seed=SEED, interval=120.0, until=3600.0):
    gen = get_generator("default")
    pol = configure_policy(make_policy(policy), scenario_defaults(gen))
    record_episode(
        gen(seed),
        pol,
        path,
        scenario="default",
        seed=seed,
        until=until,
        decision_interval_s=interval,
    )
    return path


def _fake_replay(folder, t0=1000.0, scale=10.0):
    """A replay folder of jobs 0 and 2 (job 1 not run): progress reports on the wall clock."""
    folder.mkdir()
    meta = {
        "t0_wall": t0,
        "sim0": 0.0,
        "config": {"time_scale": scale},
        "jobs": {"0": {"job_dir": "job-0"}, "2": {"job_dir": "job-2"}},
    }
    (folder / "replay.json").write_text(json.dumps(meta))
    reports = {
        "0": [(t0 + 5, 100, False), (t0 + 20, 300, False), (t0 + 30, 200, True)],
        "2": [(t0 + 50, 1000, False)],
    }
    for j, rows in reports.items():
        (folder / f"job-{j}").mkdir()
        lines = [{"event": "start", "t": t0, "gen": 0}] + [
            {"event": "step", "t": t, "samples": s, "step": i, "gen": 0, "redo": r}
            for i, (t, s, r) in enumerate(rows)
        ]
        (folder / f"job-{j}" / "progress.jsonl").write_text(
            "\n".join(json.dumps(x) for x in lines) + "\n"
        )
    return folder


def test_measured_progress__reads_the_replay_clock_and_skips_redone_steps(tmp_path):
    at = measured_progress(_fake_replay(tmp_path / "run"), num_jobs=3)
    # simulated t -> wall 1000 + t / 10
    np.testing.assert_array_equal(at(0.0), [0.0, np.nan, 0.0])
    np.testing.assert_array_equal(at(50.0), [100.0, np.nan, 0.0])
    np.testing.assert_array_equal(at(250.0), [300.0, np.nan, 0.0])
    np.testing.assert_array_equal(at(400.0), [300.0, np.nan, 0.0])  # the redone step: no
    np.testing.assert_array_equal(at(1e4), [300.0, np.nan, 1000.0])


def test_record__the_header_says_the_schedule_it_decided_on(tmp_path):
    tr = read_trace(_record(tmp_path / "t.jsonl", interval=120.0, until=600.0))
    assert tr.header.extra[INTERVAL_KEY] == 120.0
    pal = configure_policy(make_policy("pal"), scenario_defaults(get_generator("default")))
    assert getattr(pal, "round_s", None)  # PAL decides in rounds: the trace says so
    gen = get_generator("default")
    record_episode(gen(SEED), pal, tmp_path / "p.jsonl", scenario="default", seed=SEED, until=600)
    assert read_trace(tmp_path / "p.jsonl").header.extra[INTERVAL_KEY] == pal.round_s


def test_from_trace__an_episode_that_replays_in_its_env_with_measured_samples(root, tmp_path):
    trace = _record(tmp_path / "t.jsonl")
    run = _fake_replay(tmp_path / "run")
    argv = ["dataset", "from-trace", str(trace), "--replay", str(run), "--root", str(root)]
    assert main(argv) == 0
    ds = minari.load_dataset("mtgym/default/trace-freetrain-speedup-v0")
    assert ds.total_episodes == 1
    ep = next(ds.iterate_episodes())
    times = ep.infos["time"]
    assert times[-1] >= 3600.0 > times[-2] and ep.truncations[-1]  # the trace stopped there
    assert len(ep.actions) == 30  # a decision every 120 s, the trace's own
    env = ds.recover_environment()
    assert env.unwrapped.decision_interval_s == 120.0
    obs, _ = env.reset(seed=SEED)
    for t in range(len(ep.actions)):
        obs, reward, *_ = env.step(ep.actions[t])
        assert reward == ep.rewards[t]
        np.testing.assert_array_equal(obs["node_job"], ep.observations["node_job"][t + 1])
    measured, sim = ep.infos["measured_samples"], ep.infos["sim_samples"]
    for k in range(len(times)):
        np.testing.assert_array_equal(measured[k][:3], measured_progress(run, 3)(times[k]))
    assert np.isnan(measured[:, 3:]).all()  # jobs the replay did not run
    assert (np.diff(sim, axis=0) >= 0).all() and sim[-1].sum() > 0
    # the trace's decisions drive the env: the jobs it never ran made no progress there
    tr = read_trace(trace)
    ran = {int(e.job) for e in tr.events if e.nodes}
    never = [j for j in range(sim.shape[1]) if j not in ran]
    assert never and (sim[-1, never] == 0).all() and (sim[-1, sorted(ran)] > 0).any()
    # the reference played the same seed up to the same time: the trace (the reference's
    # own decisions, placed by the env) lands near it
    score = float(minari.get_normalized_score(ds, ep.rewards.sum()))
    assert 0.5 < score < 1.5


def test_from_trace__refuses_a_foreign_trace_and_a_test_seed(root, tmp_path, capsys):
    trace = read_trace(_record(tmp_path / "t.jsonl", until=600.0))
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    head = json.loads(lines[0])
    head["jobs"]["3"]["name"] = "someone-else"
    (tmp_path / "x.jsonl").write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    with pytest.raises(TraceMismatchError, match="job '3' \\(someone-else\\) is not a job of"):
        trace_episode(tmp_path / "x.jsonl", EnvSettings())
    assert trace.header.seed == SEED
    _record(tmp_path / "test.jsonl", seed=9003, until=600.0)
    assert main(["dataset", "from-trace", str(tmp_path / "test.jsonl"), "--root", str(root)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "9003" in err[0] and "test split" in err[0]
