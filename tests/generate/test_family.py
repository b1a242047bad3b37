"""The train split's family: one scenario per seed, drawn reproducibly, sized per generator."""

from __future__ import annotations

import numpy as np
import pytest

from mtgym.core.errors import ConfigError
from mtgym.generate.family import GPU_TYPES, MODELS, DefaultFamily
from mtgym.scenario.registry import get_generator

SEEDS = range(2**30, 2**30 + 24)


def test_family__same_seed_same_instance_bit_for_bit():
    fam = DefaultFamily(num_nodes=96)
    a, b = fam(2**30 + 5), fam(2**30 + 5)
    assert np.array_equal(a.cluster.gpu_type, b.cluster.gpu_type)
    assert np.array_equal(a.cluster.slowdown, b.cluster.slowdown)
    assert np.array_equal(a.jobs.work, b.jobs.work)
    assert np.array_equal(a.jobs.submit_s, b.jobs.submit_s)
    assert np.array_equal(a.supply.start_s, b.supply.start_s)


def test_family__varies_depth_gpu_mix_and_jobs_but_not_node_count():
    fam = DefaultFamily(num_nodes=128)
    variants = [fam.variant(s) for s in SEEDS]
    assert {v.num_nodes for v in variants} == {128}
    assert {len(v.sizes) for v in variants} == {1, 2}  # 3- and 4-level machines
    assert len({len(v.gpu_types) for v in variants}) >= 2
    assert {t for v in variants for t in v.gpu_types} <= set(GPU_TYPES)
    assert len({v.jobs.num_jobs for v in variants}) >= 5
    assert {m for v in variants for m in v.jobs.models} <= set(MODELS)
    for v in variants:
        assert all(128 % k == 0 for k in v.sizes)
    insts = [fam(s) for s in list(SEEDS)[:4]]
    assert all(i.num_nodes == 128 for i in insts)


def test_family__odd_node_count_falls_back_to_one_group():
    v = DefaultFamily(num_nodes=37).variant(2**30)
    assert v.sizes == (37,) and v.num_nodes == 37


def test_family__registered_and_checked():
    assert isinstance(get_generator("default-family"), DefaultFamily)
    with pytest.raises(ConfigError, match="num_nodes"):
        DefaultFamily(num_nodes=0)


def test_family__an_env_plays_it_with_the_default_widths():
    from mtgym.env.env import ScavengeEnv

    env = ScavengeEnv(DefaultFamily(num_nodes=64), max_count=16, decision_interval_s=600.0)
    widths = set()
    for s in (2**30, 2**30 + 1, 2**30 + 3):
        obs, _ = env.reset(seed=s)
        widths.add(obs["nodes"].shape[1])
        obs, r, *_ = env.step(env.sample_valid(np.random.default_rng(0)))
        assert np.isfinite(r)
    assert widths == {11}
