r"""Atomic, checksummed checkpoints: a torn or corrupt file is never loaded.

File layout (``ckpt-<step:09d>.pt``)::

    MTGYMCKPT1 <sha256 of the payload, hex> <payload length>\\n
    <payload: torch.save bytes>

A checkpoint is written to a temporary file in the same folder, flushed and ``fsync``-ed,
then renamed over its final name (``os.replace``, atomic on POSIX) and the folder is
``fsync``-ed, so a reader sees either the whole new file or nothing. On load the length and
the checksum are verified *before* ``torch.load``; a file that fails either check is skipped
and the next newest valid one is used (``load_latest``).

Only the standard library is needed to write, list and verify checkpoints; ``torch`` is
imported lazily to (de)serialise payloads.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAGIC = b"MTGYMCKPT1"
NAME = re.compile(r"^ckpt-(\d{9})\.pt$")
TMP_PREFIX = ".tmp-ckpt-"


class CheckpointError(Exception):
    """A checkpoint file is torn, corrupt or not a checkpoint."""


@dataclass(frozen=True)
class CheckpointInfo:
    """One checkpoint file on disk.

    Attributes:
        path: the file (``<folder>/ckpt-<step:09d>.pt``).
        step: the global training step it holds, read from the name (not from the file).
    """

    path: Path
    step: int


def checkpoint_path(folder: str | Path, step: int) -> Path:
    """The final name of the checkpoint of ``step``.

    Args:
        folder: the job's checkpoint folder.
        step: the global step (zero-padded to 9 digits, so names sort by step).
    """
    return Path(folder) / f"ckpt-{int(step):09d}.pt"


def list_checkpoints(folder: str | Path) -> list[CheckpointInfo]:
    """Checkpoints in ``folder`` by name, newest step first (validity not checked).

    Only names matching ``ckpt-<9 digits>.pt`` count; temporary files are ignored.

    Args:
        folder: the checkpoint folder; a missing one gives ``[]``.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    out = []
    for p in folder.iterdir():
        m = NAME.match(p.name)
        if m:
            out.append(CheckpointInfo(p, int(m.group(1))))
    return sorted(out, key=lambda c: c.step, reverse=True)


def _io() -> Any:
    """``mtgym.core.io`` (atomic writes), loaded by path when this file is (the workers)."""
    if __package__:
        from mtgym.core import io as core_io

        return core_io
    import importlib.util
    import sys

    name = "_mtgym_core_io"
    if name in sys.modules:
        return sys.modules[name]
    where = Path(__file__).resolve().parents[1] / "core" / "io.py"
    spec = importlib.util.spec_from_file_location(name, where)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def write_bytes_atomic(path: str | Path, payload: bytes, *, fsync: bool = True) -> Path:
    """Write ``payload`` as a checksummed checkpoint at ``path``, atomically
    (``mtgym.core.io.atomic_open``: temporary file, ``fsync``, ``os.replace``, folder
    ``fsync``; a failed write leaves no temporary file and the old checkpoints as they were).

    Args:
        path: the final file name (``checkpoint_path``); its folder is created if needed.
        payload: the bytes to store after the ``MAGIC <sha256> <length>`` header line.
        fsync: flush to disk before and after the rename (False only in tests: faster, but
            not durable across a machine crash).

    Returns:
        ``path``.
    """
    path = Path(path)
    digest = hashlib.sha256(payload).hexdigest()
    header = MAGIC + b" " + digest.encode() + b" " + str(len(payload)).encode() + b"\n"
    with _io().atomic_open(path, "wb", fsync=fsync, tmp_prefix=TMP_PREFIX) as f:
        f.write(header)
        f.write(payload)
    return path


def read_verified_bytes(path: str | Path) -> bytes:
    """The payload of a checkpoint file after checking its length and sha256.

    Args:
        path: the checkpoint file.

    Returns:
        The payload (the ``torch.save`` bytes), header removed.

    Raises:
        CheckpointError: unreadable file, missing header (no newline in the first 200
            bytes), wrong magic, wrong length (torn) or checksum.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read ({exc})") from exc
    nl = data.find(b"\n")
    if nl < 0 or nl > 200:
        raise CheckpointError(f"{path}: no header line (torn or not a checkpoint)")
    parts = data[:nl].split(b" ")
    if len(parts) != 3 or parts[0] != MAGIC:
        raise CheckpointError(f"{path}: bad header {data[:nl][:80]!r}")
    try:
        digest, length = parts[1].decode(), int(parts[2])
    except (UnicodeDecodeError, ValueError) as exc:
        raise CheckpointError(f"{path}: bad header {data[:nl][:80]!r}") from exc
    payload = data[nl + 1 :]
    if len(payload) != length:
        raise CheckpointError(
            f"{path}: payload is {len(payload)} bytes, header says {length} (truncated)"
        )
    if hashlib.sha256(payload).hexdigest() != digest:
        raise CheckpointError(f"{path}: sha256 mismatch (corrupt)")
    return payload


def save_checkpoint(
    folder: str | Path, step: int, state: dict[str, Any], *, keep: int = 3, fsync: bool = True
) -> Path:
    """Serialise ``state`` with ``torch.save`` and write it atomically; prune old ones.

    The newest ``keep`` checkpoints are kept (at least 2, so a bad newest file always has a
    fallback). Stale temporary files of dead writers are not removed here: the worker calls
    ``remove_stale_tmp`` when it resumes.

    Args:
        folder: the job's checkpoint folder.
        step: the global step the state is at (names the file).
        state: what to save (model and optimiser state dicts, counters); tensors only, as
            ``load_checkpoint`` reads with ``weights_only=True``.
        keep: how many of the newest checkpoints to keep (at least 2).
        fsync: as in ``write_bytes_atomic``.

    Returns:
        The path written.
    """
    import torch

    buf = io.BytesIO()
    torch.save(state, buf)
    path = write_bytes_atomic(checkpoint_path(folder, step), buf.getvalue(), fsync=fsync)
    for old in list_checkpoints(folder)[max(keep, 2) :]:
        with contextlib.suppress(OSError):
            old.path.unlink()
    return path


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load one checkpoint after verifying it (raises ``CheckpointError``).

    Tensors are mapped to the CPU and unpickled with ``weights_only=True`` (no arbitrary
    objects).

    Args:
        path: the checkpoint file.

    Returns:
        The saved state dict.

    Raises:
        CheckpointError: the file fails verification, or its verified payload does not load.
    """
    import torch

    payload = read_verified_bytes(path)
    try:
        return torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)
    except Exception as exc:  # a payload that verifies but does not unpickle
        raise CheckpointError(f"{path}: payload does not load ({exc})") from exc


def latest_valid(folder: str | Path) -> tuple[CheckpointInfo | None, list[tuple[Path, str]]]:
    """The newest checkpoint whose checksum verifies, and the (path, reason) of bad ones.

    Verifies without unpickling (no torch needed). Only files newer than the valid one are
    checked, so ``bad`` lists the ones skipped on the way.

    Args:
        folder: the checkpoint folder.

    Returns:
        ``(info, bad)``: ``info`` is None when no file verifies.
    """
    bad: list[tuple[Path, str]] = []
    for info in list_checkpoints(folder):
        try:
            read_verified_bytes(info.path)
        except CheckpointError as exc:
            bad.append((info.path, str(exc)))
            continue
        return info, bad
    return None, bad


def load_latest(
    folder: str | Path,
) -> tuple[dict[str, Any] | None, CheckpointInfo | None, list[tuple[Path, str]]]:
    """Load the newest valid checkpoint: (state, info, skipped bad files).

    ``(None, None, bad)`` when there is none (a fresh start). A file that verifies but
    does not unpickle is skipped like a torn one.

    Args:
        folder: the checkpoint folder.
    """
    bad: list[tuple[Path, str]] = []
    for info in list_checkpoints(folder):
        try:
            return load_checkpoint(info.path), info, bad
        except CheckpointError as exc:
            bad.append((info.path, str(exc)))
    return None, None, bad


def remove_stale_tmp(folder: str | Path) -> int:
    """Delete temporary files left by writers that died mid-write; returns how many.

    Only files named with ``TMP_PREFIX`` are removed; call it when no writer is active in
    ``folder`` (a live writer's temporary file would go too).

    Args:
        folder: the checkpoint folder (a missing one gives 0).
    """
    return int(_io().remove_stale_tmp(folder, TMP_PREFIX))
