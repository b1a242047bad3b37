"""The Gymnasium environment: ``ScavengeEnv`` and its pieces (spaces, codec, rewards)."""

from mtgym.env.env import ScavengeEnv

__all__ = ["ScavengeEnv"]
