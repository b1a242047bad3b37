"""Same seed, same episode, bit for bit; different seeds, different episodes."""

from __future__ import annotations

import hashlib

import numpy as np

from mtgym.core.rng import stream
from mtgym.generate.default import default_generator
from mtgym.policy.equal_share import EqualShare
from mtgym.policy.play import play
from mtgym.sim.state import ClusterState
from mtgym.testing import RawRandomPolicy


def digest(state: ClusterState) -> str:
    h = hashlib.sha256()
    for k, v in sorted(vars(state).items()):
        if isinstance(v, np.ndarray):
            h.update(k.encode())
            h.update(v.tobytes())
        elif isinstance(v, int | float):
            h.update(f"{k}={v!r}".encode())
    return h.hexdigest()


def trajectory(seed: int, policy_factory) -> list[str]:
    inst = default_generator()(seed)
    steps: list[str] = []
    play(inst, policy_factory(), on_step=lambda s, info: steps.append(digest(s)))
    return steps


def instance_arrays(inst) -> dict[str, np.ndarray]:
    out = {}
    for part in ("cluster", "supply", "jobs"):
        obj = getattr(inst, part)
        for k, v in vars(obj).items():
            if isinstance(v, np.ndarray):
                out[f"{part}.{k}"] = v
    return out


def test_generator__same_seed_same_instance_bit_for_bit():
    a, b = instance_arrays(default_generator()(5)), instance_arrays(default_generator()(5))
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].tobytes() == b[k].tobytes(), k


def test_generator__different_seed_different_instance():
    a, b = default_generator()(1), default_generator()(2)
    assert not np.array_equal(a.supply.start_s, b.supply.start_s)
    assert not np.array_equal(a.cluster.slowdown, b.cluster.slowdown)


def test_episode__same_seed_same_trajectory_bit_for_bit():
    t1 = trajectory(11, EqualShare)
    t2 = trajectory(11, EqualShare)
    assert len(t1) > 100
    assert t1 == t2


def test_episode__random_policy_same_seed_same_trajectory():
    assert trajectory(3, lambda: RawRandomPolicy(9)) == trajectory(3, lambda: RawRandomPolicy(9))


def test_episode__different_seeds_differ():
    assert trajectory(1, EqualShare)[-1] != trajectory(2, EqualShare)[-1]


def test_rng__named_streams_are_independent_and_stable():
    a = stream(42, "supply").random(5)
    # drawing from another stream does not shift this one
    stream(42, "arrivals").random(1000)
    assert np.array_equal(a, stream(42, "supply").random(5))
    assert not np.array_equal(a, stream(42, "arrivals").random(5))
    assert not np.array_equal(a, stream(43, "supply").random(5))
