"""Content hashes of what a result depends on besides the code: each scenario and its
tuning record.

A scenario given as a file (a preset such as ``polaris``, or a path) is hashed by its
file's bytes. A scenario built in code (``default``, ``toy-two-jobs``, ...) is hashed by
the ``repr`` of its generator, a dataclass listing every parameter (its resolved spec),
followed by the bytes of the preset file of the same name when there is one (its
``episode`` section is that scenario's defaults: ``mtgym.evaluate.scenario_defaults``).
Data files a preset reads (traces, node lists) are not hashed: ``mtgym.datasets`` pins
them by checksum. A tuning record (``mtgym.scenario.tuning.record_path`` of the
scenario's name) is hashed by its file's bytes; a scenario never tuned has a null hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def sha256_bytes(data: bytes) -> str:
    """The SHA-256 of ``data``, hex."""
    return hashlib.sha256(data).hexdigest()


def file_hash(path: Path | None) -> str | None:
    """The SHA-256 of a file's bytes; None when ``path`` is None or not a file."""
    return sha256_bytes(path.read_bytes()) if path is not None and path.is_file() else None


def scenario_entry(name: str) -> dict[str, Any]:
    """One ``schema.ScenarioEntry`` (module docstring).

    Args:
        name: a scenario name or file path, as the command was given it.

    Returns:
        ``name``, ``source`` (``file`` or ``code``), ``path`` (the file, relative to the
        checkout when inside it; null for code), ``sha256`` and ``tuning_sha256``.

    Raises:
        KeyError: an unknown scenario; ``ScenarioError``: a file that does not load.
    """
    from mtgym.scenario.registry import get_generator, preset_path
    from mtgym.scenario.tuning import record_path

    gen = get_generator(name, allow_large=True)
    label = str(getattr(gen, "name", name))
    path = getattr(gen, "source", None)
    if isinstance(path, Path):
        digest = sha256_bytes(path.read_bytes())
    else:
        preset = preset_path(label)
        tail = b"\0" + preset.read_bytes() if preset.is_file() else b""
        digest = sha256_bytes(repr(gen).encode("utf-8") + tail)
    return {
        "name": name,
        "source": "file" if isinstance(path, Path) else "code",
        "path": _shown(path) if isinstance(path, Path) else None,
        "sha256": digest,
        "tuning_sha256": file_hash(record_path(label)),
    }


def scenario_entries(names: Iterable[str]) -> list[dict[str, Any]]:
    """``scenario_entry`` of each scenario, each once, in the order given.

    Args:
        names: scenario names or file paths.
    """
    return [scenario_entry(n) for n in dict.fromkeys(names)]


def _shown(path: Path) -> str:
    """``path`` relative to the checkout when inside it (``scenarios/polaris.yaml``), so a
    result file names no machine's folders; else as given.
    """
    from mtgym.core.paths import CHECKOUT

    try:
        return path.resolve().relative_to(CHECKOUT).as_posix()
    except ValueError:
        return str(path)
