"""Where numba keeps mtgym's compiled kernels: one folder per version of the sources.

numba keys a cached kernel by its own file's time stamp only, so a kernel that calls
kernels from other files (the engine, the env's compiled step) would be loaded stale after
those files change, silently running the old code. A folder named by a hash of every
source file of the package avoids that: any edit gives a fresh folder (one compilation,
about a minute). Older folders beyond the newest few are removed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

KEEP = 3  # folders of earlier source versions kept (switching branches back and forth)


def sources_hash(root: Path) -> str:
    """A short hash of the package's Python sources (paths and contents)."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".probe"
        probe.touch()
        probe.unlink()
    except OSError:
        return False
    return True


def configure() -> Path | None:
    """Point numba's cache at ``<base>/<sources hash>`` before any kernel is decorated.

    ``<base>``: ``$NUMBA_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/mtgym/numba`` (default
    ``~/.cache``), else a temporary folder. Returns the folder, or None when none is writable
    (numba then keeps its default, beside the sources).
    """
    from numba.core import config

    pkg = Path(__file__).resolve().parent
    given = os.environ.get("NUMBA_CACHE_DIR")
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    bases = [Path(given)] if given else [Path(xdg) / "mtgym" / "numba"]
    bases.append(Path(tempfile.gettempdir()) / "mtgym-numba")
    key = sources_hash(pkg)
    for base in bases:
        folder = base / key
        if _writable(folder):
            config.CACHE_DIR = str(folder)
            _prune(base, keep=folder)
            return folder
    return None


def _prune(base: Path, keep: Path) -> None:
    """Remove the oldest hash folders beyond ``KEEP`` (never ``keep``)."""
    try:
        folders = [p for p in base.iterdir() if p.is_dir() and len(p.name) == 16]
    except OSError:
        return
    folders.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in [p for p in folders if p != keep][KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
