"""ScavengeEnv: checkers, determinism, masks, repairs, leakage, rendering, vector envs, SB3."""

from __future__ import annotations

import warnings
from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import mtgym
import mtgym.env.observation as cols
from mtgym.core.names import ACTION_MODES
from mtgym.env import ScavengeEnv
from mtgym.generate.default import default_generator
from mtgym.testing import linear_job, tiny_instance

MODES = ACTION_MODES  # every built-in mode, ``shares`` included


def random_valid_action(env: ScavengeEnv, rng: np.random.Generator) -> np.ndarray:
    m = env.action_masks()
    out, off = [], 0
    for k in env.action_space.nvec:
        ok = np.flatnonzero(m[off : off + k])
        assert ok.size > 0, "a dimension has no legal action"
        out.append(rng.choice(ok))
        off += int(k)
    return np.array(out, dtype=np.int64)


def same(a, b) -> bool:
    """Exact equality, NaN equal to NaN, through dicts and arrays."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, float) and np.isnan(a):
        return isinstance(b, float) and np.isnan(b)
    return a == b


@pytest.fixture(scope="module")
def small_gen():
    g = default_generator()
    return replace(
        g,
        num_nodes=16,
        group_size=4,
        horizon_s=3 * 3600.0,
        jobs=replace(g.jobs, num_jobs=6),
        campaigns=(),
    )


@pytest.mark.parametrize("env_id", mtgym.ENV_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_env__gymnasium_and_sb3_checkers_pass(env_id, mode):
    from stable_baselines3.common.env_checker import check_env as sb3_check

    env = gym.make(env_id, action_mode=mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SB3 recommends flat obs; our 2-D rows are deliberate
        check_env(env.unwrapped)
        sb3_check(env.unwrapped, warn=False)


@pytest.mark.parametrize("info_mode", ["user", "profiled", "oracle"])
@pytest.mark.parametrize("reward", ["progress", "throughput", "jct"])
def test_env__keyword_overrides_build(info_mode, reward):
    env = gym.make(
        "mtgym/Scavenge-v0",
        info_mode=info_mode,
        reward=reward,
        horizon_s=1800.0,
        decision_interval_s=300.0,
    )
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    done, steps = False, 0
    while not done:
        obs, _, term, trunc, info = env.step(env.unwrapped.noop())
        done = term or trunc
        steps += 1
    assert steps == 6  # 1,800 s / 300 s ticks
    assert info["time"] == pytest.approx(1800.0) and trunc and not term
    assert "metrics" in info


def test_env__bad_keywords_raise():
    for kw in (
        {"action_mode": "x"},
        {"reward": "x"},
        {"info_mode": "x"},
        {"horizon_s": 0},
        {"decision_interval_s": -1},
        {"max_jobs": 0},
    ):
        with pytest.raises(ValueError, match=next(iter(kw))):
            ScavengeEnv(**kw)
    with pytest.raises(KeyError, match="unknown scenario"):
        ScavengeEnv("no-such-scenario")


@pytest.mark.parametrize("mode", MODES)
def test_env__lockstep_determinism(mode, small_gen):
    a, b = ScavengeEnv(small_gen, action_mode=mode), ScavengeEnv(small_gen, action_mode=mode)
    oa, ia = a.reset(seed=7)
    ob, ib = b.reset(seed=7)
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    for _ in range(150):
        for k in oa:
            assert np.array_equal(oa[k], ob[k]), k
        act_a, act_b = random_valid_action(a, rng_a), random_valid_action(b, rng_b)
        assert np.array_equal(act_a, act_b)
        oa, ra, ta, ua, ia = a.step(act_a)
        ob, rb, tb, ub, ib = b.step(act_b)
        assert ra == rb and ta == tb and ua == ub
        assert ia.keys() == ib.keys()
        for k in ia:
            assert same(ia[k], ib[k]), k
        if ta or ua:
            break


def test_env__different_seeds_differ(small_gen):
    env = ScavengeEnv(small_gen)
    o1, _ = env.reset(seed=1)
    o2, _ = env.reset(seed=2)
    assert not np.array_equal(o1["nodes"], o2["nodes"])


@pytest.mark.parametrize("mode", MODES)
def test_env__masks_never_empty_and_random_episode_invariants(mode, small_gen):
    env = ScavengeEnv(small_gen, action_mode=mode, reward="progress", debug=True)
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    total = 0.0
    for _ in range(2000):
        assert np.array_equal(obs["action_mask"], env.action_masks().astype(np.int8))
        assert np.array_equal(info["action_mask"], obs["action_mask"])
        obs, r, term, trunc, info = env.step(random_valid_action(env, rng))
        # Per-dimension masks cannot express joint limits (sum of counts <= idle nodes in
        # counts/delta; a job's max/min over many node choices in assign): only those repairs
        # may happen for masked actions.
        joint = {
            "counts": {"oversubscribed"},
            "delta": {"oversubscribed"},
            "shares": {"oversubscribed"},
            "assign": {"dyn_over_max_nodes", "dyn_below_min_jobs"},
        }[mode]
        assert not {k for k, v in info["repair"].items() if v} - joint, info["repair"]
        total += r
        if term or trunc:
            break
    assert term or trunc
    m = info["metrics"]
    # progress reward sums to each job's done fraction
    inst = env.instance
    assert total == pytest.approx(float(np.sum(env.state.progress / inst.jobs.work)), rel=1e-9)
    assert 0 <= m["utilisation"] <= 1


@pytest.mark.parametrize(
    ("mode", "action", "msg"),
    [
        (
            "counts",
            lambda env: np.full(env.num_slots, env.max_count + 1),
            r"action\[0\] \(slot 0\) = \d+ is out of range; allowed 0\.\.\d+",
        ),
        ("counts", lambda env: np.zeros(env.num_slots + 1, dtype=int), "expected"),
        ("assign", lambda env: np.full(env.num_nodes, -1), r"action\[0\] \(node 0\) = -1"),
        ("delta", lambda env: np.full(env.num_slots, 3), "allowed 0..2"),
        ("delta", lambda env: np.full(env.num_slots, 0.5), "non-integer"),
    ],
)
def test_env__out_of_space_action_raises(mode, action, msg, small_gen):
    env = ScavengeEnv(small_gen, action_mode=mode)
    env.reset(seed=0)
    before = env.state.copy()
    with pytest.raises(ValueError, match=msg):
        env.step(action(env))
    assert np.array_equal(env.state.node_job, before.node_job) and env.state.time == before.time


def test_env__infeasible_counts_are_repaired_and_reported():
    rows = [linear_job("a", 10.0, 4, 1e7, min_nodes=2), linear_job("b", 10.0, 4, 1e7)]
    inst = tiny_instance(4, rows, t_end=1e4)
    env = ScavengeEnv(
        inst, action_mode="counts", max_jobs=3, max_count=4, decision_interval_s=100.0
    )
    env.reset(seed=0)
    # slot 0 (a): 1 < min 2 -> 0; slot 2 is empty -> 0
    _, _, _, _, info = env.step(np.array([1, 3, 2]))
    assert (
        info["repaired"] and info["repair"]["below_min"] == 1 and info["repair"]["empty_slot"] == 1
    )
    assert env.state.n_nodes.tolist() == [0, 3]
    # over-subscription: 4 + 4 > 4 idle nodes: FCFS, a gets 4, b gets 0
    _, _, _, _, info = env.step(np.array([4, 4, 0]))
    assert info["repair"]["oversubscribed"] == 1
    assert env.state.n_nodes.tolist() == [4, 0]


def test_env__observation_does_not_leak_hidden_truth():
    """Changing the true curves and costs (not the declarations) leaves user/profiled
    observations unchanged; the oracle sees the change."""
    inst = default_generator()(0)
    jobs = inst.jobs
    fake = replace(
        jobs,
        curve_tput=jobs.curve_tput * 3.0,
        r_up_s=jobs.r_up_s + 7.0,
        r_down_s=jobs.r_down_s + 7.0,
    )
    twin = replace(inst, jobs=fake)
    for mode, same in (("user", True), ("profiled", True), ("oracle", False)):
        a, b = ScavengeEnv(inst, info_mode=mode), ScavengeEnv(twin, info_mode=mode)
        oa, _ = a.reset(seed=0)
        ob, _ = b.reset(seed=0)
        equal = all(np.array_equal(oa[k], ob[k]) for k in ("jobs", "job_curve"))
        assert equal == same, mode
    # work is declared (BFTrainer's Pmax): user sees it, profiled does not
    twin_work = replace(inst, jobs=replace(jobs, work=jobs.work * 2.0))
    for mode, same in (("user", False), ("profiled", True)):
        oa, _ = ScavengeEnv(inst, info_mode=mode).reset(seed=0)
        ob, _ = ScavengeEnv(twin_work, info_mode=mode).reset(seed=0)
        assert np.array_equal(oa["jobs"], ob["jobs"]) == same, mode
    # profiled mode shows no work, no costs and no curve before anything ran
    env = ScavengeEnv(inst, info_mode="profiled")
    obs, _ = env.reset(seed=0)
    assert (
        not obs["job_curve_known"].any()
        and not obs["jobs"][:, cols.JOB_REMAINING : cols.JOB_INFO].any()
    )
    # true slowdowns never appear: nodes carry the profiled ones
    assert np.allclose(
        obs["nodes"][:, cols.NODE_SLOWDOWN : cols.NODE_SLOWDOWN + 4],
        np.clip(inst.cluster.profiled_slowdown, -1, 8),
    )
    assert not np.allclose(
        obs["nodes"][:, cols.NODE_SLOWDOWN : cols.NODE_SLOWDOWN + 4], inst.cluster.slowdown
    )


def test_env__profiled_mode_learns_curves_from_running():
    env = ScavengeEnv(default_generator(), info_mode="profiled", decision_interval_s=600.0)
    obs, _ = env.reset(seed=0)
    for _ in range(12):
        obs, *_ = env.step(env.noop())
        a = np.where(obs["job_mask"] > 0, 2, 0)  # 2 nodes for every present job
        obs, *_ = env.step(a)
    assert obs["job_curve_known"].any()


def test_env__render_ansi_and_rgb_array(small_gen):
    env = ScavengeEnv(small_gen, render_mode="rgb_array", decision_interval_s=300.0)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    frames = []
    for _ in range(12):
        env.step(random_valid_action(env, rng))
        frames.append(env.render())
    f = frames[-1]
    assert f.shape == (480, 640, 3) and f.dtype == np.uint8
    assert not np.array_equal(frames[2], frames[-1])  # the Gantt changes as allocations change
    text = ScavengeEnv(small_gen, render_mode="ansi")
    text.reset(seed=0)
    text.step(text.noop())
    s = text.render()
    assert s.startswith("t=") and "idle nodes" in s


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_env__make_vec(mode):
    envs = gym.make_vec(
        "mtgym/Scavenge-v0",
        num_envs=2,
        vectorization_mode=mode,
        horizon_s=1200.0,
        decision_interval_s=300.0,
    )
    try:
        obs, info = envs.reset(seed=[1, 2])
        assert obs["nodes"].shape[0] == 2
        acts = envs.action_space.sample()
        acts[:] = 0
        obs, r, _, _, info = envs.step(acts)
        assert r.shape == (2,) and info["action_mask"].shape[0] == 2
    finally:
        envs.close()


def test_env__maskable_ppo_smoke():
    """A short MaskablePPO run end to end (no learning claim)."""
    from sb3_contrib import MaskablePPO

    env = gym.make("mtgym/Scavenge-v0", horizon_s=3600.0)
    model = MaskablePPO(
        "MultiInputPolicy", env, n_steps=256, batch_size=64, n_epochs=1, seed=0, device="cpu"
    )
    model.learn(total_timesteps=512)  # two rollouts, two updates
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(), deterministic=True)
    assert env.action_space.contains(action)


def test_env__named_observation_columns_match_the_state():
    env = ScavengeEnv("default")
    obs, _ = env.reset(seed=3)
    for _ in range(5):
        obs, *_ = env.step(env.noop())
    s, inst = env.state, env.instance
    assert cols.NODE_COORDS == env.builder.NODE_BASE == 10 and cols.JOB_DIM == 16
    assert np.array_equal(obs["nodes"][:, cols.NODE_AVAILABLE], s.available.astype(np.float32))
    assert np.array_equal(obs["nodes"][:, cols.NODE_HELD], (s.node_job >= 0).astype(np.float32))
    present = obs["job_mask"] > 0
    jobs = env.slots.job[present]
    assert np.all(obs["jobs"][present, cols.JOB_PRESENT] == 1.0)
    one_hot = obs["jobs"][present, cols.JOB_CLASS : cols.JOB_CLASS + 4]
    assert np.array_equal(one_hot.argmax(axis=1), inst.jobs.app_class[jobs])
    assert np.allclose(obs["jobs"][present, cols.JOB_NODES], s.n_nodes[jobs] / env.max_count)
    assert obs["global"][cols.G_IDLE] == np.float32(s.available.sum() / env.num_nodes)


@pytest.mark.parametrize("mode", ["counts", "shares"])
def test_env__features_name_every_column_once(mode):
    env = ScavengeEnv("default", action_mode=mode)
    obs, _ = env.reset(seed=0)
    assert env.features == {k: v for k, v in cols.FEATURES.items() if k in obs}
    assert ("job_scale" in obs) == (mode == "shares")  # the scale-free keys: shares only
    for key, named in env.features.items():
        width = obs[key].shape[-1]
        covered = np.concatenate([np.arange(width)[sl] for sl in named.values()])
        assert np.array_equal(np.sort(covered), np.arange(width)), key
    assert env.features["jobs"]["nodes"] == slice(cols.JOB_NODES, cols.JOB_NODES + 1)
    assert env.features["nodes"]["slowdown"] == slice(cols.NODE_SLOWDOWN, cols.NODE_SLOWDOWN + 4)
