"""Helpers shared by the bridge tests (a plain module: tests/ has no packages)."""

from __future__ import annotations

import os

import numpy as np

from mtgym.sim.view import InfoMode
from mtgym.types import Allocation


def pids_mentioning(text: str) -> list[int]:
    """Live PIDs whose command line contains ``text`` (no psutil: /proc)."""
    out = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmd and state not in ("Z", "X"):
            out.append(int(entry))
    return out


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


class ScriptPolicy:
    """Plays a fixed plan: from time t on, node -> job (only nodes that are idle now)."""

    name = "script"
    info_mode = InfoMode.ORACLE

    def __init__(self, plan: list[tuple[float, dict[int, int]]]) -> None:
        self.plan = sorted(plan, key=lambda p: p[0])

    def reset(self, view) -> None:
        pass

    def decide(self, view) -> Allocation:
        m: dict[int, int] = {}
        for t, mapping in self.plan:
            if t <= view.time + 1e-9:
                m = mapping
        a = np.full(view.num_nodes, -1, dtype=np.int32)
        for n, j in m.items():
            if view.available[n]:
                a[n] = j
        return Allocation(a)
