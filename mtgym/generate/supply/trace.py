"""Replay of a recorded idle-window trace (``summit-idle-fragments.csv.gz`` format)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np

from mtgym.core.instance import Supply
from mtgym.core.spec import NonNeg, Strict, desc
from mtgym.generate.supply.base import supply_from_windows


class TraceSupplySpec(Strict):
    """Replay of recorded idle windows (``summit-idle-fragments.csv.gz`` format)."""

    kind: Literal["trace"] = desc("recorded idle windows")
    path: str = desc("the windows CSV (may use ${MTGYM_DATA})", min_length=1)
    trace_start_s: NonNeg = desc("trace time of the episode start, s", 0.0)


@dataclass(frozen=True)
class TraceSupply:
    """Replay a recorded idle-window table (``summit-idle-fragments.csv.gz`` format).

    The first ``num_nodes`` nodes in the trace's column order are kept (the BFTrainer
    Replayer's ``-nN``); trace time ``trace_start_s`` becomes episode time 0.

    Attributes:
        path: the windows CSV (``mtgym.readers.read_idle_windows``), read at each
            ``generate``.
        trace_start_s: trace time of the episode start, seconds.
    """

    path: str | Path
    trace_start_s: float = 0.0

    Spec: ClassVar[type[Strict]] = TraceSupplySpec  # (``kind: trace`` in scenario files)

    @classmethod
    def from_spec(cls, spec: TraceSupplySpec, resolve: Callable[[str], Path]) -> TraceSupply:
        """The source a scenario file's spec describes (``resolve`` expands data paths).

        Args:
            spec: the scenario file's ``supply`` section.
            resolve: turns the spec's path (``${MTGYM_DATA}`` and all) into a file path.
        """
        return cls(resolve(spec.path), spec.trace_start_s)

    def generate(self, rng: np.random.Generator, num_nodes: int, t0: float, t1: float) -> Supply:
        """Windows of the first ``num_nodes`` trace nodes, shifted and clipped to [t0, t1).

        Window ends are not announced (``end_known`` False); a node beyond the trace's
        nodes is never idle.

        Args:
            rng: unused (the trace is the truth).
            num_nodes: nodes kept, trace node indices 0..num_nodes-1.
            t0: span start, seconds of episode time.
            t1: span end.

        Raises:
            DataError: the trace file is missing or malformed.
        """
        from mtgym.readers import read_idle_windows

        win = read_idle_windows(self.path)
        off = self.trace_start_s
        supply, _ = supply_from_windows(
            win.node_index,
            win.start_s - off,
            win.end_s - off,
            nodes=np.arange(num_nodes),
            t0=t0,
            t1=t1,
        )
        return supply
