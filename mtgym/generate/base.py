"""The generator protocol: a seeded callable that returns a validated ``Instance``."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from mtgym.core.instance import Instance


@runtime_checkable
class Generator(Protocol):
    """``generator(seed) -> Instance``.

    All randomness flows from ``seed`` through the named streams of ``mtgym.core.rng.stream``
    ("variability", "supply", "arrivals", "declarations", ...), so the same seed gives the same
    instance bit for bit, and changing one stream's draws never shifts another's.
    """

    name: str

    def __call__(self, seed: int) -> Instance:
        """Build the instance for ``seed``."""
        ...
