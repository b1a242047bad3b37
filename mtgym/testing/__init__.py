"""Test kit shipped with the package: tiny instances, a random policy, checked rollouts.

Baselines, agents and third-party policies reuse these to test against the same invariants.
"""

from mtgym.testing.kit import (
    RawRandomPolicy,
    ScriptPolicy,
    checked_rollout,
    linear_job,
    tiny_instance,
)

__all__ = ["RawRandomPolicy", "ScriptPolicy", "checked_rollout", "linear_job", "tiny_instance"]
