"""``obs_layout`` (issue 39): the ``"flat"`` and ``"masked"`` layouts carry exactly the
``"dict"`` layout's numbers, pass Gymnasium's checker on every preset, batch the same in the
vector env, and the env builds from an RLlib-style ``env_config`` mapping and from the
module-qualified id in a process that never imported mtgym.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from mtgym.core.names import ACTION_MODES
from mtgym.env import ScavengeEnv
from mtgym.env.layout import MASK_KEY, OBS_LAYOUTS, OBSERVATIONS_KEY, ObsLayout
from mtgym.scenario.registry import get_generator, preset_names

#: Gymnasium's checker refuses this preset in every layout ("truncates after 1 step": its two
#: jobs finish at the first decision), so it is not a layout's failure.
ONE_STEP = {"toy-two-jobs"}


class FirstInstance:
    """A preset's generator whose every seed plays instance 0, built once: the layouts do
    not depend on the instance, and a Summit replay takes ~1 s per instance (the checker
    resets six times). Keeps the preset's ``episode`` section."""

    def __init__(self, name: str) -> None:
        gen = get_generator(name)
        self.episode = getattr(gen, "episode", None)
        self._first = functools.cache(lambda: gen(0))

    def __call__(self, seed: int):
        return self._first()


@pytest.mark.parametrize("layout", OBS_LAYOUTS)
@pytest.mark.parametrize("preset", sorted(set(preset_names()) - ONE_STEP))
def test_layout__passes_gymnasium_checker_on_every_preset(preset, layout):
    env = ScavengeEnv(FirstInstance(preset), obs_layout=layout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the checker's advice on Box bounds, 2-D rows)
        check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)


def episode(layout: str, mode: str, seed: int = 3, steps: int = 40):
    """Observations, rewards and infos of ``steps`` random valid decisions."""
    env = ScavengeEnv("default", action_mode=mode, obs_layout=layout, horizon_s=4 * 3600.0)
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    out = [(obs, 0.0, info)]
    for _ in range(steps):
        obs, r, term, trunc, info = env.step(env.sample_valid(rng))
        out.append((obs, r, info))
        if term or trunc:
            break
    return env, out


@pytest.mark.parametrize("mode", ACTION_MODES)
def test_layouts__carry_the_same_numbers(mode):
    denv, dicts = episode("dict", mode)
    fenv, flats = episode("flat", mode)
    menv, masked = episode("masked", mode)
    layout = fenv.layout
    assert len(dicts) == len(flats) == len(masked) > 5
    assert layout.keys == tuple(k for k in sorted(denv.observation_space.spaces) if k != MASK_KEY)
    for (d, rd, idict), (f, rf, iflat), (m, rm, _) in zip(dicts, flats, masked, strict=True):
        assert f.dtype == np.float32 and f.shape == (layout.size,)
        for key, value in layout.unflatten(f).items():
            np.testing.assert_array_equal(value, d[key], err_msg=key)
        np.testing.assert_array_equal(m[OBSERVATIONS_KEY], f)
        assert m[MASK_KEY].dtype == np.float32
        np.testing.assert_array_equal(m[MASK_KEY], d[MASK_KEY])
        np.testing.assert_array_equal(iflat["action_mask"], d[MASK_KEY])  # flat: in info
        assert rd == rf == rm and set(idict) == set(iflat)
        assert idict.get("repair") == iflat.get("repair")
    np.testing.assert_array_equal(fenv.action_masks(), denv.action_masks())
    np.testing.assert_array_equal(menv.action_masks(), denv.action_masks())
    # the slices tile the vector, in the Dict's key order
    starts = [layout.slices[k].start for k in layout.keys]
    assert starts[0] == 0 and starts == sorted(starts)
    assert layout.slices[layout.keys[-1]].stop == layout.size


@pytest.mark.parametrize("layout", ["flat", "masked"])
def test_layout__vector_entry_point_batches_what_sync_vector_env_gives(layout):
    kw = {"action_mode": "shares", "obs_layout": layout, "horizon_s": 3 * 3600.0}
    fast = gym.make_vec("mtgym/Scavenge-v0", 3, vectorization_mode="vector_entry_point", **kw)
    slow = gym.make_vec("mtgym/Scavenge-v0", 3, vectorization_mode="sync", **kw)
    assert fast.single_observation_space == slow.single_observation_space
    a, b = fast.reset(seed=5)[0], slow.reset(seed=5)[0]
    rng = np.random.default_rng(0)
    for _ in range(30):
        if layout == "flat":
            np.testing.assert_array_equal(a, b)
        else:
            for key in (MASK_KEY, OBSERVATIONS_KEY):
                np.testing.assert_array_equal(a[key], b[key])
        acts = np.stack([e.sample_valid(rng) for e in fast.unwrapped.envs])
        a, ra, ta, tra, _ = fast.step(acts)
        b, rb, tb, trb, _ = slow.step(acts)
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_array_equal(ta | tra, tb | trb)
    assert fast.observation_space.contains(a)


@pytest.mark.parametrize("layout", ["flat", "masked"])
def test_layout__same_step_autoreset_lays_out_the_final_observation(layout):
    kw = {"obs_layout": layout, "horizon_s": 1800.0, "decision_interval_s": 300.0}
    mode = {"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}
    fast = gym.make_vec("mtgym/Scavenge-v0", 2, "vector_entry_point", **mode, **kw)
    slow = gym.make_vec("mtgym/Scavenge-v0", 2, "sync", vector_kwargs=mode, **kw)
    fast.reset(seed=0), slow.reset(seed=0)
    ended = 0
    for _ in range(12):  # (episodes of 6 decisions: each ends twice)
        acts = np.stack(fast.call("noop"))
        _, _, ta, tra, ia = fast.step(acts)
        _, _, tb, trb, ib = slow.step(acts)
        np.testing.assert_array_equal(ta | tra, tb | trb)
        for i in np.flatnonzero(ta | tra):
            a, b = ia["final_obs"][i], ib["final_obs"][i]
            assert fast.single_observation_space.contains(a)
            if layout == "flat":
                np.testing.assert_array_equal(a, b)
            else:
                for key in (MASK_KEY, OBSERVATIONS_KEY):
                    np.testing.assert_array_equal(a[key], b[key])
            ended += 1
    assert ended >= 2


def test_layout__names_and_bad_values():
    with pytest.raises(ValueError, match="obs_layout 'tuple' is not one of"):
        ScavengeEnv(obs_layout="tuple")
    with pytest.raises(TypeError, match="obs_layout must be a str"):
        ScavengeEnv(obs_layout=1)
    env = ScavengeEnv(obs_layout="flat")
    with pytest.raises(ValueError, match="has 2566 values, got 3"):
        env.layout.unflatten(np.zeros(3))
    with pytest.raises(ValueError, match="not one of"):
        ObsLayout("nested", env.builder.space)
    # a batch flattens row by row
    obs, _ = ScavengeEnv().reset(seed=0)
    batch = {k: np.stack([v, v]) for k, v in obs.items()}
    flat = env.layout.flatten(batch)
    assert flat.shape == (2, env.layout.size)
    np.testing.assert_array_equal(flat[1], env.layout.flatten(obs))


def test_env__builds_from_a_config_mapping_as_from_keywords():
    config = {"scenario": "default", "obs_layout": "masked", "action_mode": "shares"}
    a = ScavengeEnv(config)
    b = ScavengeEnv("default", obs_layout="masked", action_mode="shares")
    assert a.observation_space == b.observation_space and a.action_space == b.action_space
    oa, ob = a.reset(seed=2)[0], b.reset(seed=2)[0]
    np.testing.assert_array_equal(oa[OBSERVATIONS_KEY], ob[OBSERVATIONS_KEY])
    assert ScavengeEnv({}).obs_layout == "dict"  # (the default scenario and layout)
    # a vector of them from the mapping: every env gets its keywords
    envs = gym.make_vec("mtgym/Scavenge-v0", 2, "vector_entry_point", scenario=config)
    assert envs.single_observation_space == a.observation_space
    with pytest.raises(TypeError, match="'obs_layot'"):
        ScavengeEnv({"obs_layot": "flat"})
    with pytest.raises(TypeError, match="not both"):
        ScavengeEnv({"scenario": "default"}, obs_layout="flat")


def test_module_qualified_id__builds_in_a_process_that_never_imported_mtgym():
    code = (
        "import sys, gymnasium as gym\n"
        "assert 'mtgym' not in sys.modules\n"
        "env = gym.make('mtgym:mtgym/Scavenge-v0', obs_layout='flat')\n"
        "print(env.observation_space.shape, env.reset(seed=0)[0].dtype)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "(2566,) float32"
