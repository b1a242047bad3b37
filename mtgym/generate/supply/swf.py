"""Idle windows left by an FCFS + EASY-backfilling replay of an SWF job log."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np

from mtgym.core.errors import ConfigError, DataError
from mtgym.core.instance import Supply
from mtgym.core.spec import Int, NonNeg, Strict, desc


class SWFSupplySpec(Strict):
    """An SWF job log replayed through FCFS + EASY backfilling."""

    kind: Literal["swf"] = desc("holes left by backfilling an SWF log")
    path: str = desc("the SWF log (may use ${MTGYM_DATA})", min_length=1)
    procs_per_node: Int | None = desc(
        "processors per node of the log (None: from its header)", None, ge=1
    )
    log_start_s: NonNeg = desc("log time of the episode start, s", 0.0)
    known_ends: bool = desc("windows ending at a reservation have known ends", True)


@dataclass(frozen=True)
class SWFSupply:
    """Idle windows an FCFS + EASY-backfilling scheduler leaves when it replays an SWF log.

    The log runs on a machine of ``num_nodes`` nodes (``mtgym.generate.backfill``); log time
    ``log_start_s`` becomes episode time 0. ``known_ends`` marks the windows whose end a
    reservation fixed when they opened.

    Attributes:
        path: the SWF log (``mtgym.readers.swf.read_swf``), read and replayed at each call.
        procs_per_node: processors per node of the log (None: ``MaxProcs / MaxNodes`` from
            its header, else 1).
        log_start_s: log time of the episode start, seconds after the log's start.
        known_ends: announce the ends fixed by a reservation (``backfill`` module).
    """

    path: str | Path
    procs_per_node: int | None = None
    log_start_s: float = 0.0
    known_ends: bool = True

    Spec: ClassVar[type[Strict]] = SWFSupplySpec  # (``kind: swf`` in scenario files)

    @classmethod
    def from_spec(cls, spec: SWFSupplySpec, resolve: Callable[[str], Path]) -> SWFSupply:
        """The source a scenario file's spec describes (``resolve`` expands data paths).

        Args:
            spec: the scenario file's ``supply`` section.
            resolve: turns the spec's path (``${MTGYM_DATA}`` and all) into a file path.
        """
        return cls(resolve(spec.path), spec.procs_per_node, spec.log_start_s, spec.known_ends)

    def generate(self, rng: np.random.Generator, num_nodes: int, t0: float, t1: float) -> Supply:
        """Replay the log and return its idle windows on [t0, t1) (episode time).

        Args:
            rng: unused (the replay is deterministic).
            num_nodes: nodes of the machine the log is replayed on.
            t0: span start, seconds of episode time.
            t1: span end.
        """
        return self.windows(num_nodes, t0, t1)

    def windows(
        self, num_nodes: int | None = None, t0: float | None = None, t1: float | None = None
    ) -> Supply:
        """The idle windows on [t0, t1) of episode time.

        Args:
            num_nodes: Nodes of the machine (default: the header's ``MaxNodes``).
            t0: Span start (default: the log start, 0, or the first submit if earlier). Jobs
                submitted before ``t0`` are replayed too, so the machine is warm at ``t0``.
            t1: Span end (default: the last submit time; after it the log has no more jobs
                and the machine only drains).

        Raises:
            DataError: the log is malformed, or has no ``MaxNodes`` and ``num_nodes`` is None.
            ConfigError: a bad span or node count.
        """
        from mtgym.generate.backfill import easy_backfill, idle_windows
        from mtgym.readers.swf import read_swf

        log = read_swf(self.path, procs_per_node=self.procs_per_node)
        off = self.log_start_s
        if num_nodes is None:
            num_nodes = log.max_nodes
            if num_nodes is None:
                raise DataError(
                    self.path, "MaxNodes", "missing", "a '; MaxNodes: N' header, or num_nodes"
                )
        if t0 is None:
            t0 = min(0.0, float(log.submit_s[0]) - off) if log.num_jobs else 0.0
        if t1 is None:
            t1 = float(log.submit_s[-1]) - off if log.num_jobs else t0
        if not (np.isfinite(t0) and np.isfinite(t1) and t1 > t0):
            raise ConfigError("t0/t1", (t0, t1), "finite, t0 < t1")
        sched = easy_backfill(log, num_nodes, t0=None, t1=off + t1)
        sup = idle_windows(sched, num_nodes, off + t0, off + t1, known_ends=self.known_ends)
        return Supply.from_windows(
            sup.node, sup.start_s - off, sup.end_s - off, sup.end_known, num_nodes=num_nodes
        )
