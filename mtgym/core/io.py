"""Atomic file writes and output-folder checks: a crash never leaves a torn result file.

Every JSON, report and model file mtgym writes goes through here. A write goes to a
temporary file in the target's folder (same file system), which is flushed, ``fsync``-ed
and renamed over the final name with ``os.replace`` (atomic on POSIX); the folder is then
``fsync``-ed so the rename survives a power cut. A reader sees the whole old file or the
whole new one, never a mix; a failure mid-write leaves the old file as it was and removes
the temporary file.

- ``atomic_write_bytes`` / ``atomic_write_text`` / ``atomic_write_json``: whole payloads;
  ``atomic_write_json`` serialises *before* touching the disk, so a value that does not
  serialise (NaN with ``allow_nan=False``, an unknown type) leaves nothing behind.
- ``atomic_open``: a file object for streaming writers (``csv.writer``); replaced on a
  clean exit of the ``with`` block only.
- ``atomic_path``: a temporary path for writers that insist on a file name (a model's
  ``save(path)``); the file it leaves there replaces the target on a clean exit.
- ``prepare_out_dir``: create an ``--out`` folder and prove it writable before any work.

Standard library only: the bridge's workers load this module by path without importing
the ``mtgym`` package (``mtgym.bridge.checkpoint``).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

#: Prefix of the temporary files; ``remove_stale_tmp`` deletes those of dead writers.
TMP_PREFIX = ".tmp-"


class OutDirError(OSError):
    """An output folder cannot be created or written (the message names it and why)."""


def fsync_dir(folder: str | Path) -> None:
    """``fsync`` a folder so that a rename inside it is durable (no-op where unsupported)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def tmp_path_for(path: str | Path, prefix: str = TMP_PREFIX) -> Path:
    """A fresh temporary name beside ``path`` that keeps its suffix (``.zip``, ``.json``).

    The name is ``<prefix><stem>.<pid>-<8 hex digits><suffix>``: unique per process and
    call. Writers that add a missing suffix themselves (stable-baselines3's ``save``) then write
    exactly this name.
    """
    p = Path(path)
    return p.parent / f"{prefix}{p.stem}.{os.getpid()}-{secrets.token_hex(4)}{p.suffix}"


def _replace(tmp: Path, path: Path, *, fsync: bool) -> None:
    """Rename ``tmp`` over ``path`` (atomic on POSIX) and, with ``fsync``, sync the folder."""
    os.replace(tmp, path)
    if fsync:
        fsync_dir(path.parent)


@contextlib.contextmanager
def atomic_open(
    path: str | Path,
    mode: str = "w",
    *,
    fsync: bool = True,
    tmp_prefix: str = TMP_PREFIX,
    **kwargs: Any,
) -> Iterator[IO[Any]]:
    """Open a temporary file that replaces ``path`` when the ``with`` block ends cleanly.

    On an exception the temporary file is removed and ``path`` is left untouched.
    ``mode`` is ``"w"`` or ``"wb"``; ``kwargs`` go to ``open`` (``newline``, ``encoding``).

    Args:
        path: The target file; its folder is created when missing.
        mode: ``"w"`` (text, UTF-8 unless ``encoding`` is given) or ``"wb"``.
        fsync: Flush the file and its folder to disk (durable across a power cut);
            False is faster and still atomic against a crash of the process.
        tmp_prefix: Prefix of the temporary file's name.
        **kwargs: Passed to ``open``.

    Raises:
        ValueError: another ``mode``.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open mode must be 'w' or 'wb', got {mode!r}")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_for(p, tmp_prefix)
    if mode == "w":
        kwargs.setdefault("encoding", "utf-8")
    try:
        with open(tmp, mode, **kwargs) as f:
            yield f
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        _replace(tmp, p, fsync=fsync)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


@contextlib.contextmanager
def atomic_path(path: str | Path, *, fsync: bool = True) -> Iterator[Path]:
    """A temporary path (same folder and suffix) that replaces ``path`` on a clean exit.

    For writers that take a file name (``model.save(tmp)``). The file must exist at the
    end of the block; on an exception it is removed and ``path`` is left untouched.

    Args:
        path: The target file; its folder is created when missing.
        fsync: ``fsync`` the file before the rename and its folder after it.

    Raises:
        FileNotFoundError: the block ended without writing the temporary file.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_for(p)
    try:
        yield tmp
        if not tmp.is_file():
            raise FileNotFoundError(f"{tmp}: the writer left no file to move to {p}")
        if fsync:
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        _replace(tmp, p, fsync=fsync)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def atomic_write_bytes(
    path: str | Path, data: bytes, *, fsync: bool = True, tmp_prefix: str = TMP_PREFIX
) -> Path:
    """Write ``data`` to ``path`` atomically (see module doc); returns ``path``.

    Args:
        path: The target file; its folder is created when missing.
        data: The whole content.
        fsync: Make the write durable (``atomic_open``).
        tmp_prefix: Prefix of the temporary file's name.
    """
    with atomic_open(path, "wb", fsync=fsync, tmp_prefix=tmp_prefix) as f:
        f.write(data)
    return Path(path)


def atomic_write_text(
    path: str | Path, text: str, *, encoding: str = "utf-8", fsync: bool = True
) -> Path:
    """Write ``text`` to ``path`` atomically (see module doc); returns ``path``.

    Args:
        path: The target file; its folder is created when missing.
        text: The whole content.
        encoding: Its encoding.
        fsync: Make the write durable (``atomic_open``).
    """
    return atomic_write_bytes(path, text.encode(encoding), fsync=fsync)


def atomic_write_json(
    path: str | Path,
    obj: Any,
    *,
    indent: int | None = 2,
    allow_nan: bool = True,
    default: Callable[[Any], Any] | None = None,
    sort_keys: bool = False,
    fsync: bool = True,
) -> Path:
    """Serialise ``obj`` (``json.dumps`` options) and write it atomically with a final
    newline. Serialisation happens first: a value that does not serialise raises before
    the disk is touched.

    Args:
        path: The target file; its folder is created when missing.
        obj: The value to serialise.
        indent: ``json.dumps``'s indent (None: one line).
        allow_nan: Write NaN/Infinity (not strict JSON); False raises on them.
        default: Converts values ``json`` cannot (``json.dumps``'s ``default``).
        sort_keys: Sort the keys of every mapping.
        fsync: Make the write durable (``atomic_open``).

    Raises:
        TypeError, ValueError: ``obj`` does not serialise (nothing is written).
    """
    text = json.dumps(obj, indent=indent, allow_nan=allow_nan, default=default, sort_keys=sort_keys)
    return atomic_write_text(path, text + "\n", fsync=fsync)


def remove_stale_tmp(folder: str | Path, prefix: str = TMP_PREFIX) -> int:
    """Delete temporary files left in ``folder`` by writers that died mid-write.

    Every file whose name starts with ``prefix`` goes, a live writer's included: call it
    only when no writer is working in ``folder``. Files that cannot be deleted are skipped.

    Args:
        folder: The folder (a missing one has nothing to delete).
        prefix: The temporary files' prefix.

    Returns:
        How many files were deleted.
    """
    n = 0
    folder = Path(folder)
    if folder.is_dir():
        for p in folder.glob(f"{prefix}*"):
            with contextlib.suppress(OSError):
                p.unlink()
                n += 1
    return n


def prepare_out_dir(path: str | Path, *, option: str = "--out") -> Path:
    """Create the output folder ``path`` (with its parents) and prove it writable.

    Called before any work, so that a sweep never runs for an hour and then fails to save.
    The probe file it writes is removed again.

    Args:
        path: The folder (``~`` is expanded).
        option: The command-line option named in the errors.

    Returns:
        The folder's path, ``~`` expanded.

    Raises:
        OutDirError: the path is a file, a parent is a file, the folder cannot be created,
            or a file cannot be written in it; the message names the option, the path and
            the reason.
    """
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise OutDirError(f"{option} {p}: exists and is not a folder; give a folder path")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutDirError(
            f"{option} {p}: cannot create the folder ({exc.strerror or exc}); "
            "give a writable folder path"
        ) from None
    probe = p / f"{TMP_PREFIX}probe.{os.getpid()}-{secrets.token_hex(4)}"
    try:
        with open(probe, "wb") as f:
            f.write(b"ok")
    except OSError as exc:
        raise OutDirError(
            f"{option} {p}: the folder is not writable ({exc.strerror or exc}); "
            "give a writable folder path"
        ) from None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    return p
