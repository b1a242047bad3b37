"""A dedicated cluster: every node idle for the whole episode."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np

from mtgym.core.instance import Supply
from mtgym.core.spec import Strict, desc


def always_idle(num_nodes: int, t0: float, t1: float) -> Supply:
    """One window per node, [t0, t1): a dedicated cluster.

    Args:
        num_nodes: nodes of the machine.
        t0: when every node becomes idle, seconds.
        t1: when every window ends (not announced: ``end_known`` False).
    """
    return Supply.from_windows(
        np.arange(num_nodes), np.full(num_nodes, t0), np.full(num_nodes, t1), num_nodes=num_nodes
    )


class AlwaysIdleSpec(Strict):
    """Every node idle for the whole episode (a dedicated cluster)."""

    kind: Literal["always-idle"] = desc("every node idle all the time")


@dataclass(frozen=True)
class AlwaysIdle:
    """Every node idle for the whole episode (a dedicated cluster, as in PAL's experiments)."""

    Spec: ClassVar[type[Strict]] = AlwaysIdleSpec  # (``kind: always-idle`` in scenario files)

    @classmethod
    def from_spec(cls, spec: AlwaysIdleSpec, resolve: Callable[[str], Path]) -> AlwaysIdle:
        """The source a scenario file's spec describes.

        Args:
            spec: the scenario file's ``supply`` section (it has no parameter).
            resolve: expands data paths (unused: no file is read).
        """
        return cls()

    def generate(self, rng: np.random.Generator, num_nodes: int, t0: float, t1: float) -> Supply:
        """One window per node, [t0, t1).

        Args:
            rng: unused (nothing is random).
            num_nodes: nodes of the machine.
            t0: span start, seconds.
            t1: span end.
        """
        return always_idle(num_nodes, t0, t1)
