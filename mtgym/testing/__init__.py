"""Test kit shipped with the package: tiny instances, a random policy, checked rollouts.

Baselines, agents and third-party policies reuse these to test against the same invariants.
"""

from mtgym.testing.kit import (
    RandomPolicy,
    ScriptPolicy,
    checked_rollout,
    linear_job,
    tiny_instance,
)

__all__ = ["RandomPolicy", "ScriptPolicy", "checked_rollout", "linear_job", "tiny_instance"]
