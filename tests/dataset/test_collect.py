"""``mtgym dataset collect``: a Minari dataset that opens, recovers its env and replays,
normalised between random and the reference, the same whatever the workers."""

import numpy as np
import pytest

minari = pytest.importorskip("minari")

from mtgym.cli import main  # noqa: E402
from mtgym.dataset.collect import collect, scenario_reference  # noqa: E402
from mtgym.dataset.episode import (  # noqa: E402
    DECISION_INTERVAL_S,
    UNIFORM_RANDOM,
    EnvSettings,
    play_episode,
)
from mtgym.dataset.store import dataset_id  # noqa: E402

SEED = 2**30
#: a decision every 2 minutes: 180 steps an episode, under a second each
SETTINGS = EnvSettings(decision_interval_s=120.0)


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return tmp_path / "minari"


def _argv(root, *extra):
    return [
        "dataset",
        "collect",
        "--policy",
        "equal-share",
        "--episodes",
        "2",
        "--decision-interval",
        "120",
        "--root",
        str(root),
        *extra,
    ]


def _same_obs(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_collect__the_dataset_opens_and_its_recovered_env_replays_episode_0(root, capsys):
    assert main(_argv(root)) == 0
    out = capsys.readouterr().out
    ds_id = "mtgym/default/equal-share-v0"
    assert out.startswith(f"{ds_id}: 2 episodes, ")
    ds = minari.load_dataset(ds_id)
    assert ds.total_episodes == 2
    ep = next(iter(ds.iterate_episodes([0])))
    seed = int(next(iter(ds.storage.get_episode_metadata([0])))["seed"])
    assert seed == SEED
    env = ds.recover_environment()
    assert env.unwrapped.action_mode == "shares"
    assert env.unwrapped.decision_interval_s == 120.0
    obs, info = env.reset(seed=seed)
    _same_obs({k: v[0] for k, v in ep.observations.items()}, obs)
    for t, action in enumerate(ep.actions):
        obs, reward, term, trunc, info = env.step(action)
        _same_obs({k: v[t + 1] for k, v in ep.observations.items()}, obs)
        assert reward == ep.rewards[t]
        assert (term, trunc) == (ep.terminations[t], ep.truncations[t])
        assert bool(info["repaired"]) == bool(ep.infos["repaired"][t + 1])
    assert term or trunc
    # the action masks in the infos are the observations' own
    np.testing.assert_array_equal(ep.infos["action_mask"], ep.observations["action_mask"])


def test_collect__scores_normalise_between_random_and_the_reference(root):
    seeds = [SEED, SEED + 1]
    ref = scenario_reference("default")
    got = collect("default", "equal-share", seeds, SETTINGS)
    assert got.reference == ref == "freetrain-speedup"
    rnd = [play_episode("default", UNIFORM_RANDOM, s, SETTINGS).episode_return for s in seeds]
    best = [play_episode("default", ref, s, SETTINGS).episode_return for s in seeds]
    assert got.ref_min_score == pytest.approx(np.mean(rnd), rel=1e-12)
    assert got.ref_max_score == pytest.approx(np.mean(best), rel=1e-12)
    from mtgym.dataset.store import write_dataset

    ds = write_dataset(
        dataset_id("default", "equal-share"),
        "default",
        "equal-share",
        got,
        SETTINGS,
    )
    norm = minari.get_normalized_score
    assert float(norm(ds, np.mean(rnd))) == pytest.approx(0.0, abs=1e-12)
    assert float(norm(ds, np.mean(best))) == pytest.approx(1.0, abs=1e-12)
    mine = np.mean([e.episode_return for e in got.episodes])
    assert got.ref_min_score < mine < got.ref_max_score  # equal share lies between them
    assert 0.0 < float(norm(ds, mine)) < 1.0


def test_collect__the_episodes_are_the_same_in_any_number_of_processes():
    seeds = [SEED + 5, SEED + 6]
    one = collect("default", "freetrain-speedup", seeds, SETTINGS, workers=1)
    two = collect("default", "freetrain-speedup", seeds, SETTINGS, workers=2)
    assert [e.seed for e in two.episodes] == seeds
    for a, b in zip(one.episodes, two.episodes, strict=True):
        _same_obs(a.observations, b.observations)
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.rewards, b.rewards)
    assert (one.ref_min_score, one.ref_max_score) == (two.ref_min_score, two.ref_max_score)


def test_collect__refuses_a_test_seed_and_an_existing_id_in_one_line(root, capsys):
    assert main(_argv(root, "--seed-start", "9000")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "seeds 9000, 9001 are in the test split" in err[0]
    assert main(_argv(root)) == 0
    capsys.readouterr()
    assert main(_argv(root)) == 2
    assert "mtgym/default/equal-share-v0 exists; --force replaces it" in capsys.readouterr().err
    assert main(_argv(root, "--force")) == 0
    assert main(["dataset", "list", "--root", str(root)]) == 0
    assert "mtgym/default/equal-share-v0: 2 episodes" in capsys.readouterr().out


def test_dataset_id__names_scenario_policy_and_version():
    assert dataset_id("default-family", "freetrain-speedup") == (
        "mtgym/default-family/freetrain-speedup-v0"
    )
    assert dataset_id("scenarios/x.yaml", "agent:/runs/a/model.zip", 2) == (
        "mtgym/x/agent_runs_a_model.zip-v2"
    )


def test_dataset__the_default_interval_is_the_training_recipes():
    from agents.cli import TRAIN_DECISION_INTERVAL_S

    assert DECISION_INTERVAL_S == TRAIN_DECISION_INTERVAL_S


def test_collect__ray_gives_the_local_runs_episodes():
    pytest.importorskip("ray")
    seeds = [SEED + 7]
    local = collect("default", "freetrain-speedup", seeds, SETTINGS)
    ray = collect("default", "freetrain-speedup", seeds, SETTINGS, backend="ray", workers=2)
    for a, b in zip(local.episodes, ray.episodes, strict=True):
        _same_obs(a.observations, b.observations)
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.rewards, b.rewards)
    assert (local.ref_min_score, local.ref_max_score) == (ray.ref_min_score, ray.ref_max_score)
