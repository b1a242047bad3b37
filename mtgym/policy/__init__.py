"""The one policy interface shared by MILPs, heuristics and learned agents."""

from mtgym.policy.base import Policy

__all__ = ["Policy"]
