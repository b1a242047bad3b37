"""Append-only JSON-lines journals that a killed run leaves readable: the file format of
``mtgym.benchmark.journal`` (episodes) and ``mtgym.tuning.journal`` (sweep points).

The first line is a header, ``{"kind": KIND, "identity": {...}}``, naming what the entries
depend on; every later line is one entry. Each line is flushed and ``fsync``-ed when written,
so a run killed at any moment leaves every finished entry and at worst a torn last line,
which ``read`` skips (that entry is played again). ``read`` refuses, in one line naming the
first difference, a journal whose header is not the resuming run's: entries of other code or
inputs are never mixed into a result.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

Default = Callable[[Any], Any] | None


def _write(path: Path, mode: str, item: dict[str, Any], default: Default) -> None:
    with open(path, mode, encoding="utf-8") as f:
        f.write(json.dumps(item, default=default) + "\n")
        f.flush()
        os.fsync(f.fileno())


def start(path: Path, kind: str, identity: dict[str, Any], *, default: Default = None) -> None:
    """Start a new journal at ``path`` (its folder created; an old file replaced) whose
    header is ``kind`` and ``identity``.
    """
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    _write(Path(path), "w", {"kind": kind, "identity": identity}, default)


def append(path: Path, item: dict[str, Any], *, default: Default = None) -> None:
    """Append one entry, synced before returning."""
    _write(Path(path), "a", item, default)


def first_difference(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """The first key (in sorted order) whose value differs, in words: ``"seeds differs
    ([0, 1] then, [0, 2] now)"``; for a dict value, the first differing entry is named
    (``"scenarios[summit] differs"``). None when equal.
    """
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            for name in sorted(set(a) | set(b)):
                if a.get(name) != b.get(name):
                    return f"{key}[{name}] differs ({a.get(name)!r} then, {b.get(name)!r} now)"
        return f"{key} differs ({a!r} then, {b!r} now)"
    return None


def read(
    path: Path,
    kind: str,
    identity: dict[str, Any],
    *,
    what: str,
    error: type[Exception],
    default: Default = None,
) -> list[dict[str, Any]]:
    """The entries of the journal at ``path`` (torn lines skipped), after checking that its
    header is ``kind`` and ``identity`` (compared as JSON, with ``default`` for values JSON
    does not know).

    Raises:
        error: no file, a header that is not ``kind``'s, or another run's identity (the
            message names the first difference and says to run without ``--resume``);
            ``what`` names the run in the messages (``"benchmark run"``, ``"sweep"``).
    """
    path = Path(path)
    if not path.is_file():
        raise error(f"--resume: {path} does not exist; run without --resume to start")
    lines = path.read_text(encoding="utf-8").splitlines()
    try:
        head = json.loads(lines[0]) if lines else {}
    except json.JSONDecodeError:
        head = {}
    if not isinstance(head, dict) or head.get("kind") != kind:
        raise error(f"--resume: {path} is not the journal of a {what}")
    ours = json.loads(json.dumps(identity, default=default))
    why = first_difference(head.get("identity") or {}, ours)
    if why is not None:
        raise error(
            f"--resume: {path} was written by another {what} ({why}); "
            "run without --resume to start over"
        )
    items = []
    for line in lines[1:]:
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line
        if isinstance(item, dict):
            items.append(item)
    return items
