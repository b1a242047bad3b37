"""The clairvoyant planner: the whole episode is its information and no one else's; on
every small preset it is at least every candidate it simulated and at most the hindsight
bound; the episode it plays is the verified replay of its plan."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from baselines.clairvoyant import CANDIDATES, ClairvoyantPolicy, Plan, Recorder, Replay
from mtgym.core.errors import PolicyUnsupportedError
from mtgym.evaluate import configure_policy, scenario_defaults
from mtgym.hindsight import hindsight_bound
from mtgym.policy.play import play
from mtgym.policy.registry import make_policy
from mtgym.scenario.registry import get_generator, preset_names
from mtgym.sim.dynamics import initial_state
from mtgym.sim.view import InfoMode, ViewBuilder, may_see_the_future
from mtgym.testing.presets import BIG, REAL_DATA, TWINS

REL = 1e-9
#: candidates of the sweep over presets: the cheap ones, one told variant
SWEEP = ("freetrain", "packed", "equal-share", "told")


@functools.cache
def _instance(preset: str, seed: int):
    gen = get_generator(preset)
    return gen, gen(seed)


def _clairvoyant(gen, candidates=SWEEP, **kw):
    return configure_policy(ClairvoyantPolicy(candidates, **kw), scenario_defaults(gen))


def test_the_information_mode_is_the_clairvoyants_only():
    _, inst = _instance("toy-two-jobs", 0)
    with pytest.raises(PolicyUnsupportedError, match="the clairvoyant planner's only"):
        ViewBuilder(inst, InfoMode.CLAIRVOYANT)
    with pytest.raises(PolicyUnsupportedError, match="'freetrain'"):
        ViewBuilder(inst, "clairvoyant", policy_name="freetrain")
    view = ViewBuilder(inst, "clairvoyant", policy_name="clairvoyant")(initial_state(inst))
    assert view.instance is inst
    np.testing.assert_array_equal(view.slowdown, inst.cluster.slowdown)  # the true ones
    assert ViewBuilder(inst, "oracle")(initial_state(inst)).instance is None
    assert may_see_the_future("clairvoyant/told") and not may_see_the_future("agent")

    class Peeker:  # any other policy asking for it, through the one driver
        name = "peeker"
        info_mode = InfoMode.CLAIRVOYANT

        def reset(self, view):
            pass

        def decide(self, view):
            return np.full(view.num_nodes, -1)

    with pytest.raises(PolicyUnsupportedError, match="policy 'peeker' cannot run on scenario"):
        play(inst, Peeker())


def test_the_env_and_training_refuse_the_mode():
    import gymnasium as gym

    import mtgym  # noqa: F401
    from mtgym.core.names import INFO_MODES

    assert "clairvoyant" not in INFO_MODES
    with pytest.raises(ValueError, match="info_mode"):
        gym.make("mtgym/Scavenge-v0", scenario="toy-two-jobs", info_mode="clairvoyant")


def test_plan__reads_forwards_and_rewinds():
    p = Plan(3)
    p.record(0.0, np.array([0, -1, -1]))
    p.record(10.0, np.array([0, 1, 1]))
    p.record(20.0, np.array([-1, 1, 1]))
    np.testing.assert_array_equal(p.at(5.0), [0, -1, -1])
    np.testing.assert_array_equal(p.at(10.0), [0, 1, 1])
    np.testing.assert_array_equal(p.at(99.0), [-1, 1, 1])
    np.testing.assert_array_equal(p.at(0.0), [0, -1, -1])  # back in time: rewound
    assert p.at(-1.0).tolist() == [-1, -1, -1]


def test_a_replayed_event_driven_plan_is_the_same_episode():
    gen, inst = _instance("default", 0)
    rec = Recorder(configure_policy(make_policy("freetrain"), scenario_defaults(gen)), 64)
    own = play(inst, rec)
    again = play(inst, Replay(rec.plan))
    assert again.metrics.as_dict() == own.metrics.as_dict()
    np.testing.assert_array_equal(again.state.progress, own.state.progress)


def test_on_default__it_plays_its_best_verified_plan_and_beats_every_candidate():
    gen, inst = _instance("default", 1)
    pol = _clairvoyant(gen, CANDIDATES)
    res = play(inst, pol)
    got = res.metrics.normalized_throughput
    assert set(pol.scores) == set(CANDIDATES)
    assert got == pol.replayed[pol.choice]  # the episode is the verified replay
    assert got >= max(pol.scores.values()) * (1 - REL)  # event-driven winners replay exactly
    for name in ("freetrain-speedup", "freetrain-aware", "pal", "malletrain"):
        own = play(inst, configure_policy(make_policy(name), scenario_defaults(gen)))
        assert own.metrics.normalized_throughput == pol.scores[name]  # as evaluate plays it
    assert got <= hindsight_bound(inst).value * (1 + REL)
    assert pol.plan_s > 0


#: the presets cheap enough for many seeds (a clairvoyant episode in well under a second)
MANY = {"toy-linear": range(12), "toy-two-jobs": range(12), "default": range(6)}


def _cases():
    for preset in preset_names():
        if preset in BIG or preset in TWINS:
            continue  # (4,734 nodes: minutes per clairvoyant episode; measured by the benchmark)
        for seed in MANY.get(preset, (0, 1)):
            yield pytest.param(preset, seed, id=f"{preset}-{seed}")


@pytest.mark.parametrize(("preset", "seed"), list(_cases()))
def test_never_above_the_bound_never_below_its_candidates(preset, seed, request):
    if preset in REAL_DATA:
        request.getfixturevalue("shared_data")  # skips without the real data
    gen, inst = _instance(preset, seed)
    pol = _clairvoyant(gen)
    got = play(inst, pol).metrics.normalized_throughput
    b = hindsight_bound(inst)
    assert math.isfinite(b.value) and got <= b.value * (1 + REL), (got, b)
    assert got >= max(pol.replayed.values()) * (1 - REL)
    assert got >= pol.scores[pol.choice] * (1 - REL) or len(pol.replayed) > 1


def test_refuses_bad_settings_and_a_view_without_the_episode():
    with pytest.raises(ValueError, match="at least one candidate"):
        ClairvoyantPolicy(())
    with pytest.raises(ValueError, match="verify"):
        ClairvoyantPolicy(verify=0)
    with pytest.raises(ValueError):
        ClairvoyantPolicy(("told-wsoon",))
    _, inst = _instance("toy-two-jobs", 0)
    with pytest.raises(PolicyUnsupportedError, match="carry no instance"):
        ClairvoyantPolicy().reset(ViewBuilder(inst, "oracle")(initial_state(inst)))
