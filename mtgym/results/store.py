"""Result files on disk: build one, write it (atomically, gzip-compressed when large), read
it back, and copy it into the registry folder under a name (never over an existing one
without ``force``).

A file is ``<stem>.json``, or ``<stem>.json.gz`` when its JSON would be over
``GZIP_ABOVE`` bytes (the whole file compressed, with a zero timestamp so equal content
gives equal bytes). ``read_result`` tells the two apart by their first bytes.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mtgym.core.io import atomic_write_bytes
from mtgym.results.schema import SCHEMA, ResultFile, ResultFileError

#: above this many bytes of JSON, a result file is written gzip-compressed (``.json.gz``)
GZIP_ABOVE = 1_000_000
#: the name of the result file a command writes into its ``--out`` folder
RESULT_STEM = "result"
#: the environment variable naming the registry folder (``--results-dir`` wins over it)
ENV_VAR = "MTGYM_RESULTS"
#: the registry folder when neither ``--results-dir`` nor ``ENV_VAR`` is given
DEFAULT_DIR = "results"
#: the suffixes of a result file, plain and compressed
SUFFIXES = (".json", ".json.gz")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_GZIP_MAGIC = b"\x1f\x8b"


def json_safe(x: Any) -> Any:
    """``x`` as plain JSON values: NaN and infinities become None, tuples lists, numpy
    scalars and arrays Python numbers and lists (their ``tolist``), through dicts and
    lists.
    """
    if hasattr(x, "tolist"):
        x = x.tolist()
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_safe(v) for v in x]
    return x


def build(
    kind: str,
    provenance: dict[str, Any],
    *,
    seeds: Sequence[int],
    scenarios: list[dict[str, Any]],
    wall_s: float,
    rows: list[dict[str, Any]],
    aggregates: dict[str, Any],
) -> ResultFile:
    """A validated result file.

    Args:
        kind: the command (``benchmark``, ``evaluate``, ``tune``, ...).
        provenance: ``mtgym.results.provenance.capture``'s dict, taken at the start.
        seeds: the seeds played.
        scenarios: ``mtgym.results.hashes.scenario_entries`` of the scenarios played.
        wall_s: the command's wall seconds.
        rows: one dict per episode (NaN allowed: written as null).
        aggregates: the command's report (NaN allowed: written as null).

    Raises:
        ResultFileError: the pieces do not make a valid file (a bug in the caller).
    """
    data = {
        "schema": SCHEMA,
        "kind": kind,
        **provenance,
        "seeds": [int(s) for s in seeds],
        "scenarios": scenarios,
        "wall_s": float(wall_s),
        "rows": json_safe(rows),
        "aggregates": json_safe(aggregates),
    }
    return _validate(data, f"the {kind} result")


def _validate(data: Any, where: object) -> ResultFile:
    """``ResultFile.model_validate(data)``; ``ResultFileError`` naming ``where`` and at
    most three problems otherwise.
    """
    try:
        return ResultFile.model_validate(data)
    except ValidationError as exc:
        errs = exc.errors()
        shown = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in errs[:3]
        )
        more = f" (and {len(errs) - 3} more)" if len(errs) > 3 else ""
        raise ResultFileError(
            f"{where}: not a result file of schema {SCHEMA}: {shown}{more}"
        ) from None


def encode(result: ResultFile) -> tuple[bytes, str]:
    """The file's bytes and suffix: ``.json`` (indented JSON, a final newline), or
    ``.json.gz`` when that is over ``GZIP_ABOVE`` bytes.
    """
    data = (json.dumps(result.to_json(), indent=1, allow_nan=False) + "\n").encode("utf-8")
    if len(data) > GZIP_ABOVE:
        return gzip.compress(data, mtime=0), ".json.gz"
    return data, ".json"


def _write(data: bytes, suffix: str, stem: Path) -> Path:
    """Write ``stem + suffix`` atomically and remove a file of the other suffix there (an
    earlier, now stale, result of the same stem); returns the path written.
    """
    path = stem.with_name(stem.name + suffix)
    atomic_write_bytes(path, data)
    for other in SUFFIXES:
        if other != suffix:
            stem.with_name(stem.name + other).unlink(missing_ok=True)
    return path


def write_result(result: ResultFile, stem: str | Path) -> Path:
    """Write ``result`` to ``stem.json`` or ``stem.json.gz`` (``encode``), atomically.

    Args:
        result: the result file.
        stem: the path without suffix (``OUT/result``); its folder is created.

    Returns:
        The path written.
    """
    return _write(*encode(result), Path(stem))


def read_result(path: str | Path) -> ResultFile:
    """A result file read back and validated (plain or gzip-compressed).

    Args:
        path: a ``.json`` or ``.json.gz`` file.

    Raises:
        FileNotFoundError: no such file.
        ResultFileError: a broken gzip stream, invalid JSON, or not the schema (the
            message names the file and the problems).
    """
    p = Path(path)
    raw = p.read_bytes()
    try:
        if raw[:2] == _GZIP_MAGIC:
            raw = gzip.decompress(raw)
        data = json.loads(raw.decode("utf-8"))
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise ResultFileError(f"{p}: not a readable result file ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ResultFileError(f"{p}: not valid JSON ({exc})") from None
    return _validate(data, p)


def results_dir(option: str | Path | None = None) -> Path:
    """The registry folder: ``option`` (``--results-dir``), else ``$MTGYM_RESULTS``, else
    ``./results``.
    """
    return Path(option or os.environ.get(ENV_VAR) or DEFAULT_DIR).expanduser()


def existing(folder: Path, name: str) -> Path | None:
    """The record ``name`` in ``folder`` (``name.json`` or ``name.json.gz``), or None."""
    for suffix in SUFFIXES:
        p = folder / f"{name}{suffix}"
        if p.exists():
            return p
    return None


def check_record(folder: Path, name: str, *, force: bool = False) -> None:
    """Refuse a record name that is not a plain file name, or that is taken (unless
    ``force``). Call it before any work, so a long run is not lost at the end.

    Args:
        folder: the registry folder.
        name: the record's name (``--record NAME``), without suffix.
        force: allow replacing an existing record.

    Raises:
        ValueError: ``name`` is not letters, digits, ``.``, ``_`` and ``-`` (starting with
            a letter or digit), or ends in ``.json``.
        FileExistsError: the record exists and ``force`` is False.
    """
    if not _NAME.fullmatch(name) or name.endswith((".json", ".gz")):
        raise ValueError(
            f"--record {name!r}: give a plain name (letters, digits, '.', '_', '-'; no "
            "folder, no suffix): the file becomes NAME.json or NAME.json.gz"
        )
    taken = existing(folder, name)
    if taken is not None and not force:
        raise FileExistsError(
            f"{taken} exists: a record is never overwritten; give another --record NAME, "
            "or --force to replace it"
        )


def record(result: ResultFile, folder: Path, name: str, *, force: bool = False) -> Path:
    """Write ``result`` into the registry as ``folder/name.json[.gz]``.

    Args:
        result: the result file.
        folder: the registry folder (created).
        name: the record's name.
        force: replace an existing record of that name (of either suffix).

    Returns:
        The path written.

    Raises:
        ValueError, FileExistsError: as ``check_record``.
    """
    check_record(folder, name, force=force)
    return _write(*encode(result), folder / name)
