"""ScavengeEnv's keywords, action values, masks and episode edges (issue 17, hardening)."""

from __future__ import annotations

import numpy as np
import pytest

from mtgym.core.names import ACTION_MODES
from mtgym.env.env import ScavengeEnv


@pytest.mark.parametrize(
    ("kw", "exc", "text"),
    [
        ({"decision_interval_s": "60"}, TypeError, "decision_interval_s must be a number"),
        ({"decision_interval_s": 1e-9}, ValueError, "decision_interval_s must be finite"),
        ({"decision_interval_s": float("nan")}, ValueError, "decision_interval_s must be finite"),
        ({"decision_interval_s": 0}, ValueError, "decision_interval_s"),
        ({"horizon_s": float("inf")}, ValueError, "horizon_s must be finite"),
        ({"horizon_s": -1.0}, ValueError, "horizon_s"),
        ({"horizon_s": "1h"}, TypeError, "horizon_s"),
        ({"max_jobs": 0}, ValueError, "max_jobs must be in 1..8192; got 0"),
        ({"max_jobs": 2.5}, TypeError, "max_jobs must be an int"),
        ({"max_jobs": True}, TypeError, "max_jobs must be an int"),
        ({"max_count": 1000}, ValueError, "max_count=1000 is above the scenario's 64 nodes"),
        ({"max_count": 0}, ValueError, "max_count must be in"),
        ({"action_mode": "count"}, ValueError, "action_mode 'count' is not one of"),
        ({"action_mode": 1}, TypeError, "action_mode must be a str"),
        ({"reward": "money"}, ValueError, "reward 'money' is not one of"),
        ({"info_mode": None, "reward": None, "render_mode": "human"}, ValueError, "render_mode"),
        ({"debug": "yes"}, TypeError, "debug must be a bool"),
    ],
)
def test_env__bad_keyword_names_itself(kw, exc, text):
    with pytest.raises(exc, match=None) as err:
        ScavengeEnv("default", **kw)
    assert text in str(err.value)


def test_env__bad_scenario_type():
    with pytest.raises(TypeError, match="scenario must be"):
        ScavengeEnv(3.5)  # type: ignore[arg-type]


def test_env__max_count_within_nodes_is_kept_and_default_is_capped():
    assert ScavengeEnv("default", max_count=64).max_count == 64
    assert ScavengeEnv("default", max_count=5).max_count == 5
    env = ScavengeEnv("default")
    probe = env._generator(0)
    assert env.max_count == min(int(probe.jobs.max_nodes.max()), 64)


def test_env__noop_and_sample_valid_before_reset_raise():
    env = ScavengeEnv("default")
    with pytest.raises(RuntimeError, match="call reset"):
        env.noop()
    with pytest.raises(RuntimeError, match="call reset"):
        env.sample_valid(0)


def test_env__reset_options_unknown_key_raises():
    env = ScavengeEnv("default")
    with pytest.raises(ValueError, match=r"unknown reset option\(s\) \['horizon'\]"):
        env.reset(seed=0, options={"horizon": 5})
    env.reset(seed=0, options={})  # (empty: accepted)
    env.reset(seed=0, options=None)


@pytest.mark.parametrize(
    ("action", "shown"),
    [
        (np.array([1e300] + [0] * 15), "1e+300"),
        (np.array([2**64 - 1] + [0] * 15, dtype=np.uint64), str(2**64 - 1)),
        ([2**63] + [0] * 15, str(2**63)),
        ([2**70] + [0] * 15, str(2**70)),
        (np.array([-3] + [0] * 15, dtype=np.int8), "-3"),
    ],
)
def test_env__out_of_range_action_reports_the_real_value(action, shown):
    env = ScavengeEnv("default", max_jobs=16)
    env.reset(seed=0)
    with pytest.raises(ValueError) as err:
        env.step(action)
    assert f"= {shown} is out of range" in str(err.value)


def test_env__nan_action_is_refused():
    env = ScavengeEnv("default", max_jobs=16)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="not a finite number"):
        env.step(np.array([np.nan] + [0.0] * 15))


@pytest.mark.parametrize("mode", ["counts", "delta"])
def test_env__step_after_the_end_raises(mode):
    env = ScavengeEnv("toy-two-jobs", action_mode=mode)
    env.reset(seed=0)
    done, steps = False, 0
    while not done:
        _, _, term, trunc, info = env.step(env.noop())
        done, steps = term or trunc, steps + 1
        assert steps < 10_000
    assert "metrics" in info
    with pytest.raises(RuntimeError, match="the episode has ended"):
        env.step(env.noop())
    env.reset(seed=1)  # a reset starts a new episode
    env.step(env.noop())


@pytest.mark.parametrize("mode", ACTION_MODES)
def test_env__sample_valid_never_needs_repair(mode):
    """``sample_valid`` never needs repair over 10^4 draws (per mode), while sampling each
    slot from ``action_masks()`` does (the masks cannot express the shared node budget).
    """
    env = ScavengeEnv("default", action_mode=mode, horizon_s=4 * 3600.0)
    rng = np.random.default_rng(7)
    draws = repaired = episode = 0
    env.reset(seed=0)
    while draws < 10_000:
        a = env.sample_valid(rng)
        assert env.action_space.contains(a)
        _, _, term, trunc, info = env.step(a)
        draws += 1
        repaired += bool(info["repaired"])
        if term or trunc:
            episode += 1
            env.reset(seed=episode)
    assert repaired == 0, f"{repaired} of {draws} draws needed repair"


def test_names__one_list_each_and_the_kernels_follow_it():
    from mtgym.core import names
    from mtgym.env.actions import BUILT_IN
    from mtgym.env.reward import BUILT_IN as REWARDS_BUILT_IN
    from mtgym.env.reward import REWARDS
    from mtgym.sim.view import InfoMode

    assert tuple(cls.name for cls in REWARDS_BUILT_IN) == names.REWARD_NAMES
    assert tuple(REWARDS)[: len(names.REWARD_NAMES)] == names.REWARD_NAMES
    # every mode a learner or the env may ask for; the clairvoyant's is the planner's only
    assert tuple(m.value for m in InfoMode if m is not InfoMode.CLAIRVOYANT) == names.INFO_MODES
    assert InfoMode.CLAIRVOYANT.value not in names.INFO_MODES
    assert tuple(cls.name for cls in BUILT_IN) == names.ACTION_MODES
    from mtgym.scenario.schema import EpisodeSpec

    ep = EpisodeSpec()
    assert (ep.reward, ep.info_mode, ep.action_mode) == (
        names.DEFAULT_REWARD,
        names.DEFAULT_INFO_MODE,
        names.DEFAULT_ACTION_MODE,
    )
