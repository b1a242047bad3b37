"""The scale-free ``shares`` action mode: its grid, mask and decoding agree; every job that
fits the machine can be started; the baselines' allocations are expressible; its
observation keys mean the same on any machine."""

from __future__ import annotations

from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest

import mtgym  # noqa: F401  (registers the id)
from mtgym.env import ScavengeEnv
from mtgym.env.actions.shares import CHOICES, KEEP, LEVELS, STOP, level_counts
from mtgym.env.slots import MAX_AUTO_SLOTS, slot_rule
from mtgym.evaluate import configure_policy, scenario_defaults
from mtgym.policy.mapped import ModeMapped
from mtgym.policy.play import play
from mtgym.policy.registry import make_policy
from mtgym.scenario.registry import get_generator, preset_names
from mtgym.testing.presets import TWINS

#: the train split's twin of summit-manyjobs (same machine, workload and code; another day)
#: is left out of the per-preset sweeps below: its test-split twin covers it
PRESETS = [p for p in preset_names() if p not in TWINS]
#: the plain Summit replays share summit-replay-2d's machine, slots and env code: the
#: API checkers (seconds each at 4,734 slots) run on the test split's two Summit presets
SAME_MACHINE = {"summit-replay", "summit-hps"}


@pytest.mark.parametrize(("lo", "hi"), [(1, 1), (1, 16), (6, 24), (1, 32), (1, 64), (3, 4734)])
def test_shares__grid_spans_the_range_in_order(lo, hi):
    g = level_counts(lo, hi)
    assert g.shape == (LEVELS,) and g[0] == lo and g[-1] == hi
    assert np.all(np.diff(g) >= 0)
    if hi - lo + 1 <= LEVELS:  # short ranges: every count, once, from the bottom
        assert np.array_equal(np.unique(g), np.arange(lo, hi + 1))
    else:  # exact at the bottom, relative spacing bounded above
        assert np.array_equal(g[:9], np.arange(lo, lo + 9))
        r = (hi - lo + 1) ** (1 / (LEVELS - 1))  # the geometric part's spacing
        assert np.all(np.diff(g) <= np.maximum(1, np.ceil((r - 1) * g[1:])) + 1)


def _env(scenario="default", **kw):
    return ScavengeEnv(scenario, action_mode="shares", **kw)


def test_shares__space_does_not_depend_on_the_machine():
    small, large = _env("default"), _env("summit-replay-2d")
    assert set(small.action_space.nvec) == set(large.action_space.nvec) == {CHOICES}
    for key in ("job_scale", "job_shape", "global_scale"):
        assert small.observation_space[key].shape[1:] == large.observation_space[key].shape[1:]


def test_shares__noop_keeps_everything_and_mask_matches_decode():
    env = _env()
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(40):
        n0 = env.state.n_nodes.copy()
        _, _, term, trunc, info = env.step(env.noop())
        assert not info["repaired"]
        # keep gives every slot job the count it had (reclaims aside)
        assert np.all(env.state.n_nodes <= n0) or info["reclaimed_nodes"] == 0
        mask = env.action_masks().reshape(env.num_slots, CHOICES)
        assert mask[:, KEEP].all()
        job = env.slots.job
        for s in np.flatnonzero(job >= 0):
            j = job[s]
            cur = int(env.state.n_nodes[j])
            assert mask[s, STOP] == (cur > 0)
            grid = level_counts(
                max(int(env.instance.jobs.min_nodes[j]), 1), int(env.instance.jobs.max_nodes[j])
            )
            idle = int(env.state.available.sum())
            for k in np.flatnonzero(mask[s, 2:]):
                assert grid[k] != cur and grid[k] <= idle and (k == 0 or grid[k] != grid[k - 1])
        assert not mask[job < 0, 1:].any()
        _, _, term, trunc, info = env.step(env.sample_valid(rng))
        assert not info["repaired"]
        if term or trunc:
            break


def test_shares__a_level_sets_that_count_and_oversubscription_is_repaired_fcfs():
    env = _env()
    env.reset(seed=5)
    for _ in range(30):  # until two jobs wait in slots and nodes are idle
        if (env.slots.job >= 0).sum() >= 2 and env.state.available.sum() >= 4:
            break
        env.step(env.noop())
    jobs = env.instance.jobs
    s = int(np.flatnonzero(env.slots.job >= 0)[0])
    j = int(env.slots.job[s])
    grid = level_counts(max(int(jobs.min_nodes[j]), 1), int(jobs.max_nodes[j]))
    idle = int(env.state.available.sum())
    k = int(np.flatnonzero(grid <= idle)[-1])
    a = env.noop()
    a[s] = k + 2
    _, _, _, _, info = env.step(a)
    assert env.state.n_nodes[j] == grid[k] or info["reclaimed_nodes"] > 0
    a = np.full(env.num_slots, CHOICES - 1)  # every slot asks its maximum
    _, _, _, _, info = env.step(a)
    held = int(env.state.n_nodes.sum())
    assert held <= env.state.available.sum()
    if info["repaired"]:
        assert info["repair"]["oversubscribed"] + info["repair"]["empty_slot"] > 0


@pytest.mark.parametrize("scenario", PRESETS)
def test_shares__every_job_that_fits_can_be_started(scenario):
    env = _env(scenario)
    env.reset(seed=9000)
    jobs, N = env.instance.jobs, env.num_nodes
    fits = np.flatnonzero(jobs.min_nodes <= N)
    assert fits.size == env.instance.num_jobs  # (the presets' jobs all fit)
    for j in fits:  # its own maximum (at most N) is a level, and the top one
        lo, hi = max(int(jobs.min_nodes[j]), 1), int(jobs.max_nodes[j])
        assert level_counts(lo, hi)[-1] == hi and min(hi, N) == hi


def test_shares__pal_philly_starts_its_24_gpu_jobs_and_finishes_every_job():
    """A policy that always starts the first waiting job at its (rigid) size: the 24-GPU
    jobs run, and the episode ends with every job completed, as with the baselines."""
    env = _env("pal-philly-64gpu")
    env.reset(seed=9000)
    jobs = env.instance.jobs
    big = set(np.flatnonzero(jobs.min_nodes == 24).tolist())
    assert big
    started = set()
    for _ in range(20_000):
        a = env.noop()
        mask = env.action_masks().reshape(env.num_slots, CHOICES)
        for s in np.flatnonzero(env.slots.job >= 0):
            if env.state.n_nodes[env.slots.job[s]] == 0 and mask[s, 2:].any():
                a[s] = 2 + int(np.flatnonzero(mask[s, 2:])[-1])
                break
        _, _, term, trunc, info = env.step(a)
        started |= set(np.flatnonzero(env.state.n_nodes > 0).tolist()) & big
        if term or trunc:
            break
    assert started == big
    assert term and info["metrics"]["jobs_completed"] == env.instance.num_jobs


@pytest.mark.parametrize(
    "scenario", [p for p in PRESETS if p != "toy-two-jobs" and p not in SAME_MACHINE]
)
def test_shares__passes_gymnasium_and_sb3_checkers(scenario):
    """(``toy-two-jobs`` ends after one step, which Gymnasium's checker refuses.)"""
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    env = gym.make("mtgym/Scavenge-v0", scenario=scenario, action_mode="shares")
    check_env(env.unwrapped, skip_render_check=True)
    sb3_check(env.unwrapped, warn=False)


def test_shares__slot_rule_scales_with_the_machine():
    # one per node on Summit too (issue [refs]: 1,024 slots capped the agent there)
    assert [slot_rule(n) for n in (4, 64, 256, 4734)] == [4, 64, 256, 4734]
    assert slot_rule(10**5) == MAX_AUTO_SLOTS == 8192
    assert _env("summit-replay-2d").num_slots == 4734
    assert _env("pal-philly-64gpu").num_slots == 64
    assert _env("default", max_jobs=16).num_slots == 16  # the keyword wins


@pytest.mark.parametrize("scenario", ["default", "summit-replay-2d"])
def test_shares__scale_free_features_are_fractions(scenario):
    env = _env(scenario)
    obs, _ = env.reset(seed=9000)
    rng = np.random.default_rng(1)
    for _ in range(25):
        obs, *_ = env.step(env.sample_valid(rng))
    f = env.features["job_scale"]
    present = obs["job_mask"] > 0
    idle = int(env.state.available.sum())
    held = env.state.n_nodes[env.slots.job[present]]
    np.testing.assert_allclose(
        obs["job_scale"][present, f["held_idle"]].ravel(),
        np.minimum(held / max(idle, 1), 8),
        rtol=1e-6,
    )
    pos = obs["job_scale"][present, f["range_pos"]].ravel()
    assert np.all((pos >= 0) & (pos <= 1)) and np.all((pos > 0) == (held > 0))
    shape = obs["job_shape"][present]
    assert np.allclose(shape[:, -1], 1.0) and np.all(np.diff(shape, axis=1) >= -1e-6)


# -- what the baselines do is expressible ---------------------------------------------
#: (scenario, policy) -> why its mapped run keeps less than 0.98 (measured, not hidden)
KNOWN_MISSES = {
    ("pal-philly-64gpu", "packed"): (
        "placement, not the mode: every count is expressed, but the env's placement "
        "(most-free group first) spreads jobs over hosts where Blox's packer picks the "
        "best-fitting host (0.954 on seed 9000)"
    ),
}
#: hours of each episode played (whole episodes: ``scripts/mode_resolution.py``); the
#: 4,734-node presets are cut to their first 12 hours
MAPPING_HOURS = {"summit-hps": 12.0, "summit-replay-2d": 12.0, "summit-manyjobs": 12.0}


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["packed", "freetrain"])
# (summit-replay: summit-replay-2d's jobs and trace, without its per-GPU variability)
@pytest.mark.parametrize("scenario", [p for p in PRESETS if p != "summit-replay"])
def test_shares__mapped_baselines_keep_98_percent(scenario, policy):
    if (scenario, policy) in KNOWN_MISSES:
        pytest.xfail(KNOWN_MISSES[scenario, policy])
    gen = get_generator(scenario)
    inst = gen(9000)
    hours = MAPPING_HOURS.get(scenario, 48.0)
    inst = replace(inst, t_end=min(inst.t_end, inst.t_start + 3600 * hours))
    defaults = scenario_defaults(gen)
    base = play(inst, configure_policy(make_policy(policy), defaults)).metrics
    mapped = ModeMapped(configure_policy(make_policy(policy), defaults), "shares")
    got = play(inst, mapped).metrics
    assert got.normalized_throughput >= 0.98 * base.normalized_throughput
