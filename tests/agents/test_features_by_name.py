"""Observation features are versioned and read by name: an env that gains a feature leaves
both shipped agents playing bit for bit; one that lacks a feature they read is refused,
naming it; a new agent's ``agent.json`` records what it reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.policy import PRETRAINED, AgentPolicy
from agents.pooled import FEATURES_V1, current_features
from mtgym.core.errors import PolicyUnsupportedError
from mtgym.env.env import ScavengeEnv
from mtgym.env.observation import FEATURES_VERSION, FeatureMap

SHIPPED = (PRETRAINED, Path(PRETRAINED).parent / "counts")


def _with_column(obs, features, key, after, name="added", drop=None):
    """``obs`` with a new column ``name`` in ``key`` right after feature ``after`` (values
    that would change any action if read), and the matching feature map; ``drop``: remove
    that feature instead."""
    arr = obs[key]
    named = dict(features[key])
    if drop is not None:
        cols = named.pop(drop)
        new = np.delete(arr, np.arange(cols.start, cols.stop), axis=-1)
        shift, at = cols.stop - cols.start, cols.start
        moved = {
            n: c if c.start < at else slice(c.start - shift, c.stop - shift)
            for n, c in named.items()
        }
    else:
        at = named[after].stop
        noise = np.full((*arr.shape[:-1], 1), 123.0, dtype=arr.dtype)
        new = np.concatenate((arr[..., :at], noise, arr[..., at:]), axis=-1)
        moved = {}
        for n, c in named.items():
            moved[n] = c if c.start < at else slice(c.start + 1, c.stop + 1)
            if n == after:
                moved[name] = slice(at, at + 1)
    out = FeatureMap({**features, key: moved})
    out.version = features.version
    return {**obs, key: new}, out


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: Path(p).name)
def test_features__an_added_feature_leaves_the_shipped_agents_bit_for_bit(path):
    plain, wide = AgentPolicy(path), AgentPolicy(path)  # the same seeded draws
    env = ScavengeEnv("default", horizon_s=3 * 3600.0, **plain.config.env_kwargs())
    obs, _ = env.reset(seed=4)
    steps = 0
    while True:
        mask = env.action_masks()
        a = plain.act(obs, mask)
        more, feats = _with_column(obs, env.features, "jobs", "app_class")
        more, feats = _with_column(more, feats, "nodes", "held")
        assert np.array_equal(wide.act(more, mask, features=feats), a), steps
        obs, _, term, trunc, _ = env.step(a)
        steps += 1
        if term or trunc:
            break
    assert steps > 20
    assert wide.layout.columns  # the wide observation was read by name, not whole


def test_features__a_missing_feature_or_another_version_is_refused_by_name():
    pol = AgentPolicy(PRETRAINED)
    env = ScavengeEnv("default", **pol.config.env_kwargs())
    obs, _ = env.reset(seed=1)
    less, feats = _with_column(obs, env.features, "jobs", None, drop="rate")
    with pytest.raises(PolicyUnsupportedError, match="'jobs' has no feature 'rate'"):
        pol.act(less, env.action_masks(), features=feats)
    newer = FeatureMap(env.features)
    newer.version = FEATURES_VERSION + 1
    with pytest.raises(PolicyUnsupportedError, match="features version 1, the env's are version 2"):
        AgentPolicy(PRETRAINED).act(obs, env.action_masks(), features=newer)


def test_features__the_env_carries_a_version_and_agents_record_what_they_read():
    env = ScavengeEnv("default", action_mode="shares")
    assert env.features.version == FEATURES_VERSION == 1
    record, version = current_features(scale_free=True)
    assert version == FEATURES_VERSION
    # today's features are feature set 1 exactly (a new column needs no new version, but
    # the shipped agents' literal must stay what they were trained on)
    assert {k: [tuple(p) for p in v] for k, v in record.items()} == {
        k: list(v) for k, v in FEATURES_V1.items()
    }
    from agents.train import Args

    cfg = Args(action_mode="shares").config()
    assert cfg.features == record and cfg.features_version == FEATURES_VERSION
    assert AgentPolicy(PRETRAINED).config.wanted_features() == (dict(FEATURES_V1), 1)
