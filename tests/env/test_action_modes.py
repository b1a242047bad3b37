"""Action modes are registered codecs: a mode defined in one file (here, at test time) runs
in the env, through its compiled step, with no change anywhere else."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from mtgym.core.names import ACTION_MODES
from mtgym.env import ScavengeEnv
from mtgym.env.actions import CODECS, ActionCodec, make_codec, register, unregister
from mtgym.env.actions.pack import REPAIR_KEYS, first_above, idle_count, place_targets


# -- a toy mode: per slot, 0 = stop the job, 1 = run it on its minimum node count --------
@njit(cache=True)
def _toy_decode(frame, a):  # pragma: no cover - jit
    bad = first_above(a, 1)
    if bad >= 0:
        return bad, np.empty(0, dtype=np.int32), 0, 0
    target = np.zeros(a.shape[0], dtype=np.int64)
    for s in range(a.shape[0]):
        j = frame.slot_job[s]
        if a[s] == 1 and j >= 0:
            target[s] = frame.min_nodes[j]
    return place_targets(frame, target)


@njit(cache=True)
def _toy_mask(frame):  # pragma: no cover - jit
    idle = idle_count(frame.available)
    for s in range(frame.slot_job.shape[0]):
        j = frame.slot_job[s]
        frame.mask[2 * s] = 1
        ok = j >= 0 and frame.min_nodes[j] <= min(frame.max_count, idle)
        frame.mask[2 * s + 1] = 1 if ok else 0


class OnOff(ActionCodec):
    name = "toy-on-off"
    repair_keys = REPAIR_KEYS
    decode_kernel = _toy_decode
    mask_kernel = _toy_mask

    @classmethod
    def nvec_of(cls, num_nodes, num_slots, max_count):
        return np.full(num_slots, 2, dtype=np.int64)

    def noop(self, state, instance, slots):
        out = np.zeros(self.S, dtype=np.int64)
        out[slots.present] = state.n_nodes[slots.job[slots.present]] > 0
        return out

    def sample_valid(self, state, instance, slots, rng):
        out, left = np.zeros(self.S, dtype=np.int64), int(np.count_nonzero(state.available))
        for s in rng.permutation(np.flatnonzero(slots.present)):
            need = int(instance.jobs.min_nodes[slots.job[s]])
            if need <= min(left, self.C) and rng.random() < 0.7:
                out[s], left = 1, left - need
        return out


@pytest.fixture
def on_off():
    register(OnOff)
    yield OnOff.name
    unregister(OnOff.name)


def test_action_modes__a_mode_in_one_file_runs_an_episode(on_off):
    env = ScavengeEnv("default", action_mode=on_off, horizon_s=6 * 3600.0, debug=True)
    assert env.action_space.nvec.tolist() == [2] * env.num_slots
    obs, info = env.reset(seed=1)
    assert obs["action_mask"].shape == (2 * env.num_slots,)
    rng = np.random.default_rng(0)
    steps = ran = 0
    done = False
    while not done and steps < 400:
        a = env.sample_valid(rng) if steps % 3 else rng.integers(0, 2, env.num_slots)
        obs, _, term, trunc, info = env.step(a)
        done = term or trunc
        steps += 1
        assert list(info["repair"])[:4] == list(REPAIR_KEYS)
        slots, s = env.slots, env.state
        held = s.n_nodes[slots.job[slots.present]]
        mins = env.instance.jobs.min_nodes[slots.job[slots.present]]
        # every job runs on 0 or its minimum (jobs admitted this step hold nothing yet)
        assert np.all((held == 0) | (held == mins))
        ran += int(held.sum() > 0)
        m = env.action_masks().reshape(env.num_slots, 2)
        assert m[:, 0].all() and not m[~slots.present, 1].any()
    assert steps > 10 and ran > 0
    assert np.array_equal(env.noop()[env.slots.present], held > 0)


def test_action_modes__the_registry_checks_names(on_off):
    assert tuple(CODECS)[:3] == ("counts", "assign", "delta") and on_off in CODECS
    assert isinstance(make_codec(on_off, 8, 3, 4), OnOff)
    register(OnOff)  # the same class again: a no-op
    twin = type("Twin", (OnOff,), {})
    with pytest.raises(ValueError, match="registered already"):
        register(twin)
    with pytest.raises(ValueError, match="is not one of"):
        make_codec("no-such-mode", 8, 3, 4)
    with pytest.raises(ValueError, match="action_mode 'no-such-mode' is not one of"):
        ScavengeEnv("default", action_mode="no-such-mode")


@pytest.mark.parametrize("mode", ACTION_MODES)
def test_action_modes__the_current_map_encodes_to_the_no_op(mode):
    env = ScavengeEnv("default", action_mode=mode)
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(30):
        env.step(env.sample_valid(rng))
        s, codec = env.state, env.codec
        assert np.array_equal(codec.encode(s.node_job, s, env.instance, env.slots), env.noop())
