"""Content hashes of what a result depends on: each scenario, its tuning record, and the
code that plays and scores an episode (``code_sha256``).

A scenario given as a file (a preset such as ``polaris``, or a path) is hashed by its
file's bytes. A scenario built in code (``default``, ``toy-two-jobs``, ...) is hashed by
the ``repr`` of its generator, a dataclass listing every parameter (its resolved spec),
followed by the bytes of the preset file of the same name when there is one (its
``episode`` section is that scenario's defaults: ``mtgym.evaluate.scenario_defaults``).
Data files a preset reads (traces, node lists) are not hashed: ``mtgym.datasets`` pins
them by checksum. A tuning record (``mtgym.scenario.tuning.record_path`` of the
scenario's name) is hashed by its file's bytes; a scenario never tuned has a null hash.

The code hash (``code_sha256``) covers the Python source that decides an episode's row and
hindsight bound: the simulator, the models, the generators and readers, the scenario
loader, the policy interface and the baselines, the metrics, the bound,
``mtgym.evaluate``, the benchmark's runner (each episode's horizon, ``_until``, and how
the bound is called, ``run_one``, ``bound_one``), the cache that turns a recorded row back
into a runner's row, and the rows a benchmark writes (``CODE_PATHS``), with the registered
policy names and what each loads (``mtgym.policy.registry.available_policies``) for the
entry points of this repository only (``OWN_PACKAGES``: a researcher's own registered
policy does not change the hash, so the cache still serves their runs). Two checkouts with
the same hash play the same baseline episodes (``mtgym.benchmark.cache`` reuses them on
that condition, and ``mtgym leaderboard --check`` refuses a file of another hash). The
versions of the packages the numbers rest on (numpy, numba, the solvers, torch, ...) are
not hashed: ``mtgym.results.provenance.packages`` records them beside it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: the source (folders and files, relative to the checkout) behind an episode's row and
#: bound; every ``*.py`` under them enters ``code_sha256``
CODE_PATHS = (
    "mtgym/core",
    "mtgym/generate",
    "mtgym/readers",
    "mtgym/scenario",
    "mtgym/model",
    "mtgym/sim",
    "mtgym/policy",
    "mtgym/hindsight",
    "mtgym/metrics.py",
    "mtgym/evaluate.py",
    "mtgym/benchmark/runner.py",
    "mtgym/benchmark/cache.py",
    "mtgym/results/rows.py",
    "baselines",
)
#: the top-level packages of this repository: only entry points whose module is in one of
#: them enter ``code_sha256``
OWN_PACKAGES = frozenset({"mtgym", "baselines", "agents"})


def sha256_bytes(data: bytes) -> str:
    """The SHA-256 of ``data``, hex."""
    return hashlib.sha256(data).hexdigest()


def file_hash(path: Path | None) -> str | None:
    """The SHA-256 of a file's bytes; None when ``path`` is None or not a file."""
    return sha256_bytes(path.read_bytes()) if path is not None and path.is_file() else None


def code_sha256(root: Path | None = None) -> str:
    """The SHA-256 of the code behind an episode (module docstring): each ``*.py`` file of
    ``CODE_PATHS`` (its path relative to ``root`` and its bytes, in path order), then each
    registered policy's ``name=module:attr`` whose module belongs to this repository
    (``own_entry_point``).

    Args:
        root: the folder holding ``mtgym/`` and ``baselines/``; None: this checkout (or
            the installed packages' folder).
    """
    from mtgym.core.paths import CHECKOUT
    from mtgym.policy.registry import available_policies

    base = CHECKOUT if root is None else Path(root)
    files: list[Path] = []
    for rel in CODE_PATHS:
        p = base / rel
        files.extend(sorted(p.rglob("*.py")) if p.is_dir() else [p] if p.is_file() else [])
    h = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.relative_to(base).as_posix()):
        h.update(f.relative_to(base).as_posix().encode("utf-8") + b"\0")
        h.update(sha256_bytes(f.read_bytes()).encode("ascii") + b"\n")
    for name, value in available_policies().items():
        if own_entry_point(value):
            h.update(f"{name}={value}\n".encode())
    return h.hexdigest()


def own_entry_point(value: str) -> bool:
    """Whether a registered policy's ``module:attr`` loads from this repository (its
    module's top-level package is one of ``OWN_PACKAGES``), not from a researcher's own
    package.

    Args:
        value: the entry point's value, ``module:attr``.
    """
    return value.split(":", 1)[0].split(".", 1)[0] in OWN_PACKAGES


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
    from mtgym.scenario.registry import get_generator

    return generator_entry(name, get_generator(name, allow_large=True))


def generator_entry(name: str, gen: Any) -> dict[str, Any]:
    """``scenario_entry`` of a generator already built (one a script builds in code, such
    as ``DefaultFamily(num_nodes=64)``, hashed by its ``repr``).

    Args:
        name: the name the result file gives the scenario.
        gen: its generator (its ``name`` and ``source`` attributes are read when present).
    """
    from mtgym.scenario.registry import preset_path
    from mtgym.scenario.tuning import record_path

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
