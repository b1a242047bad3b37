"""Fuzz (issue 17): mutated preset files never crash or hang the loader, and random action
streams in every mode keep every invariant (``debug=True``). Hypothesis runs derandomized
(the same examples every run) and bounded to about a minute in all; ``scripts/fuzz.py`` is
the long run.
"""

from __future__ import annotations

import contextlib
import copy
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mtgym.core.names import ACTION_MODES
from mtgym.env.env import ScavengeEnv
from mtgym.scenario import ScenarioError, load_scenario
from mtgym.scenario.build import SpecGenerator
from mtgym.scenario.check import estimate_build_bytes
from mtgym.scenario.registry import PRESETS_DIR

PRESETS = sorted(PRESETS_DIR.glob("*.yaml"))
NASTY = [
    0,
    -1,
    1,
    True,
    None,
    "",
    "x",
    [],
    {},
    1e300,
    -1e300,
    1e-300,
    float("inf"),
    float("nan"),
    10**12,
    2**63,
    0.5,
    [0],
    {"kind": "nope"},
    "${NOT_SET_VAR}",
]
SETTINGS = settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def _leaves(d, path=()):
    """Every (key path) of a nested dict/list, inner nodes included."""
    if isinstance(d, dict):
        items = d.items()
    elif isinstance(d, list):
        items = enumerate(d)
    else:
        return
    for k, v in items:
        yield (*path, k)
        yield from _leaves(v, (*path, k))


def _set(d, path, value):
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value


@SETTINGS
@given(data=st.data())
def test_fuzz__mutated_presets_load_or_raise_scenario_error(data):
    preset = data.draw(st.sampled_from(PRESETS), label="preset")
    doc = yaml.safe_load(preset.read_text())
    paths = list(_leaves(doc))
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        path = data.draw(st.sampled_from(paths), label="field")
        value = data.draw(st.sampled_from(NASTY), label="value")
        with contextlib.suppress(KeyError, IndexError, TypeError):  # (a replaced parent)
            _set(doc, path, copy.deepcopy(value))  # a shared dict could nest in itself
        paths = list(_leaves(doc)) or paths
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / f"{preset.stem}.yaml"
        f.write_text(yaml.safe_dump(doc))
        try:
            spec = load_scenario(f)
        except ScenarioError as exc:
            assert str(f) in str(exc)
            return
        # accepted: a synthetic one must also build (or fail as a ScenarioError)
        if spec.generator.kind == "synthetic" and estimate_build_bytes(spec) < 64 * 2**20:
            try:
                inst = SpecGenerator(spec, PRESETS_DIR, f)(0)
            except ScenarioError as exc:
                assert str(f) in str(exc)
                return
            assert inst.num_nodes == spec.generator.cluster.num_nodes


@pytest.mark.parametrize("mode", ACTION_MODES)
def test_fuzz__random_action_streams_keep_invariants(mode):
    env = ScavengeEnv("default", action_mode=mode, horizon_s=3 * 3600.0, debug=True)

    @settings(max_examples=25, deadline=None, derandomize=True)
    @given(
        seed=st.integers(0, 2**31 - 1),
        plan=st.lists(st.sampled_from(["space", "mask", "valid", "noop"]), min_size=1, max_size=60),
    )
    def run(seed, plan):
        rng = np.random.default_rng(seed)
        obs, _ = env.reset(seed=seed)
        for kind in plan:
            if kind == "space":
                a = rng.integers(0, env.codec.nvec).astype(np.int64)
            elif kind == "valid":
                a = env.sample_valid(rng)
            elif kind == "noop":
                a = env.noop()
            else:
                m, off, a = env.action_masks(), 0, []
                for n in env.codec.nvec:
                    a.append(int(rng.choice(np.flatnonzero(m[off : off + n]))))
                    off += n
                a = np.asarray(a, dtype=np.int64)
            obs, r, term, trunc, info = env.step(a)  # debug=True: InvariantError on a break
            assert env.observation_space.contains(obs)
            assert math.isfinite(r)
            if kind == "valid":
                assert not info["repaired"], info["repair"]
            if term or trunc:
                break

    run()
