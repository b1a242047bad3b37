"""Where and from what a result was measured: mtgym's version, git commit and code hash,
the versions of the packages its numbers rest on (``packages``), the date (UTC), and the
machine (CPU model, cores, load average).

Nothing here fails: a value that cannot be found (no git, not a checkout, no
``/proc/cpuinfo``) is None, so a result file is always written.
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mtgym.core.paths import CHECKOUT

#: seconds each git query may take before the commit is recorded as unknown
GIT_TIMEOUT_S = 10.0
#: the distributions whose versions a result records (``packages``): the arrays and the
#: compiled kernels, the MILP and LP solvers, the learned agents' stack; a different
#: solver version may take other decisions under the same code hash
PACKAGES = ("numpy", "numba", "highspy", "pulp", "torch", "gymnasium", "stable-baselines3")


def _git(args: list[str], root: Path) -> str | None:
    """``git ARGS`` run in ``root``: its stdout stripped, or None on any failure."""
    try:
        out = subprocess.run(
            ["git", *args],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_state(root: Path = CHECKOUT) -> dict[str, Any]:
    """The checkout's commit and whether tracked files differ from it.

    Args:
        root: the source checkout; a folder that is not a git work tree's top (an
            installed wheel) gives nulls rather than an enclosing repository's commit.

    Returns:
        ``{"commit": 40 hex digits or None, "dirty": bool or None}``; ``dirty`` counts
        modified and staged tracked files, not untracked ones (run folders, new results).
    """
    if not (root / ".git").exists():
        return {"commit": None, "dirty": None}
    commit = _git(["rev-parse", "HEAD"], root)
    status = _git(["status", "--porcelain", "--untracked-files=no"], root)
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def cpu_model() -> str | None:
    """The CPU's model name (``/proc/cpuinfo``'s first ``model name``), else
    ``platform.processor()``, else None.
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine() -> dict[str, Any]:
    """This machine now: ``cpu_model``, ``cores`` (``os.cpu_count``), ``cores_usable``
    (the process's CPU affinity), ``load_avg`` (1, 5 and 15 minutes), ``python`` and
    ``platform``.
    """
    try:
        usable: int | None = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = None
    try:
        load: list[float] | None = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": usable,
        "load_avg": load,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def packages(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """The installed version of each distribution (``importlib.metadata``); None for one
    not installed.

    Args:
        names: distribution names (``PACKAGES``).
    """
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def utc_now() -> str:
    """The date and time now, UTC, ISO 8601 to the second (``2025-01-31T12:00:00+00:00``)."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def command_line(argv: list[str], prog: str = "mtgym") -> str:
    """The command as a shell would take it back (``shlex.join``), ``prog`` first.

    Args:
        argv: the arguments after the program's name.
        prog: the program's name.
    """
    return shlex.join([prog, *argv])


def capture(argv: list[str]) -> dict[str, Any]:
    """The provenance of a run that starts now: call it before the first episode, so the
    load average is the one the run started under.

    Args:
        argv: the command's arguments after ``mtgym``.

    Returns:
        ``command``, ``mtgym_version``, ``git`` (``git_state``), ``code_sha256``
        (``mtgym.results.hashes.code_sha256``), ``packages`` (``packages``),
        ``date_utc`` (``utc_now``) and ``machine`` (``machine``): the keys of
        ``schema.ResultFile`` with those names.
    """
    from mtgym import __version__
    from mtgym.results.hashes import code_sha256

    return {
        "command": command_line(argv),
        "mtgym_version": __version__,
        "git": git_state(),
        "code_sha256": code_sha256(),
        "packages": packages(),
        "date_utc": utc_now(),
        "machine": machine(),
    }
