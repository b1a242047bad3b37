"""Every registered policy plays a tiny scenario with every invariant checked after each step
(a policy added by entry point is covered without editing this file)."""

from __future__ import annotations

import pytest

from mtgym.policy.base import Policy
from mtgym.policy.registry import available_policies, make_policy
from mtgym.scenario.registry import get_generator
from mtgym.testing import checked_rollout

#: Policies whose factory needs an argument or a trained model file (``rllib-agent``: an
#: RLlib run, tests/agents/test_rllib.py).
NEEDS_ARGUMENT = {"agent", "rllib-agent"}


@pytest.mark.parametrize("name", sorted(available_policies()))
def test_registered_policy__checked_rollout_on_a_tiny_scenario(name):
    if name in NEEDS_ARGUMENT:  # (the shipped agent is sized for the default scenario)
        pytest.skip(f"{name} needs a model: covered by tests/agents")
    instance = get_generator("toy-two-jobs")(0)
    policy = make_policy(name)
    assert isinstance(policy, Policy)
    traj = checked_rollout(instance, policy, max_steps=2_000)
    final, _ = traj[-1]
    assert final.progress.sum() > 0, f"{name} made no progress"
    assert final.time > instance.t_start


def test_make_policy__every_form_checks_that_it_built_a_policy(monkeypatch, tmp_path):
    """A registered name, ``name:ARG`` and ``module:factory`` each raise ``TypeError``
    naming what was asked when the factory builds something that is not a ``Policy``."""
    import sys
    from types import SimpleNamespace

    from mtgym.policy import registry

    fake = SimpleNamespace(name="fake", value="fakepkg:make", load=lambda: lambda *a: object())
    monkeypatch.setattr(registry, "entry_points", lambda group: [fake])
    for asked in ("fake", "fake:some-arg"):
        with pytest.raises(TypeError, match="fake"):
            registry.make_policy(asked)
    (tmp_path / "notapolicy.py").write_text("def make():\n    return 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("notapolicy", None)
    with pytest.raises(TypeError, match="notapolicy:make"):
        registry.make_policy("notapolicy:make")
