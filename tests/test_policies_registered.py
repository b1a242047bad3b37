"""Every registered policy plays a tiny scenario with every invariant checked after each step
(a policy added by entry point is covered without editing this file)."""

from __future__ import annotations

import pytest

from mtgym.policy.base import Policy
from mtgym.policy.registry import available_policies, make_policy
from mtgym.scenario.registry import get_generator
from mtgym.testing import checked_rollout

#: Policies whose factory needs an argument or a trained model file.
NEEDS_ARGUMENT = {"agent"}


@pytest.mark.parametrize("name", sorted(available_policies()))
def test_registered_policy__checked_rollout_on_a_tiny_scenario(name):
    if name in NEEDS_ARGUMENT:  # the shipped agent is sized for the default scenario
        pytest.skip(f"{name} is covered by tests/agents with its shipped model")
    instance = get_generator("toy-two-jobs")(0)
    policy = make_policy(name)
    assert isinstance(policy, Policy)
    traj = checked_rollout(instance, policy, max_steps=2_000)
    final, _ = traj[-1]
    assert final.progress.sum() > 0, f"{name} made no progress"
    assert final.time > instance.t_start
