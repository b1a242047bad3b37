"""Helpers shared by the bridge tests (a plain module: tests/ has no packages)."""

from __future__ import annotations

import os


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
