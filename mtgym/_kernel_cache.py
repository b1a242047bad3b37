"""Where numba keeps mtgym's compiled kernels: one folder per version of the sources.

numba keys a cached kernel by its own file's time stamp only, so a kernel that calls
kernels from other files (the engine, the env's compiled step) would be loaded stale after
those files change, silently running the old code. A folder named by a hash of the
sources a kernel can depend on avoids that: an edit there gives a fresh folder (one
compilation, about a minute). Those sources are every file that uses numba plus, taken
transitively, the package modules they import at module level (their constants are frozen
into the compiled code); an edit to a CLI, a reader or a report leaves the kernels cached.
Older folders beyond the newest few are removed.

**First use.** A fresh folder (a new install, a new mtgym version, a new
``$NUMBA_CACHE_DIR``) holds no compiled kernel: the first simulation compiles them, about
20-60 s (a first ``reset`` and ``step`` about 30 s on 2 cores, every action mode and a
baseline about 55 s: ``scripts/bench_cold_start.py``), once. Importing
mtgym then prints one line on stderr saying so (``COLD_NOTE``), so a silent first call is
not mistaken for a hang. Point ``$NUMBA_CACHE_DIR`` at a folder that persists (a home
folder on a cluster, a volume in a container) to compile once per version.

**One cache for every copy of the same sources.** numba files a kernel under a hash of its
source file's absolute folder, so a second checkout, a wheel installed in another
environment or a copy in a container compiled everything again though its sources were the
same. mtgym's kernels are filed by their path inside the package instead
(``PackageCacheLocator``): the hash folder already names the sources, and numba still
checks each file's content hash, so every copy of one version shares its compiled kernels.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

#: Folders of earlier source versions kept (switching branches back and forth).
KEEP = 3
#: The line printed on stderr when the kernels are not compiled yet (module docstring).
COLD_NOTE = (
    "mtgym: first use of this version: its numba kernels compile on the first simulation "
    "(about 20-60 s, once; cached in {folder}; set NUMBA_CACHE_DIR to keep them elsewhere)"
)


def _module_file(root: Path, dotted: str) -> Path | None:
    """The file of ``pkg.a.b`` under ``root`` (the package folder), or None.

    ``pkg.a.b`` is ``root/a/b.py`` or, for a package, ``root/a/b/__init__.py``; the
    top-level name itself maps to ``root/__init__.py``. None: not a module of ``root``
    (an attribute imported with ``from pkg.a import name``).
    """
    parts = dotted.split(".")[1:]
    base = root.joinpath(*parts)
    for cand in ((base.with_suffix(".py"),) if parts else ()) + (base / "__init__.py",):
        if cand.is_file():
            return cand
    return None


def _top_level_imports(path: Path, pkg: str) -> list[str]:
    """Modules of ``pkg`` that ``path`` imports at module level (``from m import x`` gives
    both ``m`` and ``m.x``, which may be a module).

    Only statements at the module's top level count (the names a kernel's globals can
    come from), and relative imports are skipped.

    Args:
        path: a source file.
        pkg: the package name (``mtgym``); imports outside it are dropped.
    """
    out: list[str] = []
    for node in ast.parse(path.read_bytes()).body:
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return [m for m in out if m == pkg or m.startswith(pkg + ".")]


def kernel_sources(root: Path) -> list[Path]:
    """The files whose edits can change a compiled kernel: those that use numba, and the
    package modules they import at module level, transitively (with their packages'
    ``__init__`` files, which run on import).

    A file "uses numba" when its bytes contain ``numba``, a comment included: a false
    positive only costs a recompilation.

    Args:
        root: the package folder (``mtgym/``); its name is the package name.

    Returns:
        The files, sorted.
    """
    pkg = root.name
    todo = [p for p in sorted(root.rglob("*.py")) if b"numba" in p.read_bytes()]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        rel = path.relative_to(root).parent
        todo += [root / q / "__init__.py" for q in (rel, *rel.parents)]
        todo = [p for p in todo if p.is_file()]
        todo += [f for m in _top_level_imports(path, pkg) if (f := _module_file(root, m))]
    return sorted(seen)


def sources_hash(root: Path) -> str:
    """A short hash of the sources the kernels depend on (paths and contents).

    Returns:
        16 hex digits of the SHA-256 over each file's path relative to ``root`` and its
        bytes, in sorted order; also the length by which ``_prune`` recognises the folders.
    """
    h = hashlib.sha256()
    for path in kernel_sources(root):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _writable(path: Path) -> bool:
    """Whether ``path`` can be created (with its parents) and a file written in it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".probe"
        probe.touch()
        probe.unlink()
    except OSError:
        return False
    return True


def is_cold(folder: Path) -> bool:
    """Whether ``folder`` holds no compiled kernel yet: no numba index file (``*.nbi``)
    anywhere under it (numba nests them by the sources' folders). Stops at the first one.

    Args:
        folder: a kernel folder (``configure``'s).
    """
    return next(folder.rglob("*.nbi"), None) is None


def _package_locator(root: Path) -> type | None:
    """A numba cache locator that files the kernels of the files under ``root`` by their
    path relative to it (module docstring), or None where this numba has no
    ``UserProvidedCacheLocator`` to build it on (numba's own locators are then kept).

    Args:
        root: the package folder (``mtgym/``), resolved.
    """
    try:
        from numba.core.caching import UserProvidedCacheLocator
    except ImportError:  # pragma: no cover - another numba layout: its default locators
        return None

    class PackageCacheLocator(UserProvidedCacheLocator):
        """``UserProvidedCacheLocator`` with the sub-folder named by the file's folder
        inside the package, not by a hash of its absolute folder.
        """

        package_root = root

        @classmethod
        def get_suitable_cache_subpath(cls, py_file: str) -> str:
            rel = Path(py_file).resolve().parent.relative_to(root)
            return "_".join((root.name, *rel.parts))

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            if not Path(py_file).resolve().is_relative_to(root):
                return None  # another package's kernel: numba's locators
            return super().from_function(py_func, py_file)

    return PackageCacheLocator


def _install_locator(root: Path) -> None:
    """Put ``_package_locator(root)`` first among numba's cache locators (once)."""
    from numba.core import caching

    loc = _package_locator(root)
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    if loc is None or not isinstance(classes, list):  # pragma: no cover - another numba
        return
    if not any(getattr(c, "package_root", None) == root for c in classes):
        classes.insert(0, loc)


def configure() -> Path | None:
    """Point numba's cache at ``<base>/<sources hash>`` before any kernel is decorated.

    ``<base>``: ``$NUMBA_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/mtgym/numba`` (default
    ``~/.cache``), else a temporary folder. Returns the folder, or None when none is writable
    (numba then keeps its default, beside the sources).

    Side effects: sets ``numba.core.config.CACHE_DIR``, puts the package's locator first
    among numba's (``_install_locator``: kernels filed by their path in the package),
    removes old hash folders under the chosen base (``_prune``) and, when the folder holds
    no kernel yet (``is_cold``), prints ``COLD_NOTE`` on stderr. Hashing reads every package
    source. A base that is not writable falls back to the temporary one.
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
            _install_locator(pkg)
            _prune(base, keep=folder)
            if is_cold(folder):
                print(COLD_NOTE.format(folder=folder), file=sys.stderr)
            return folder
    return None


def _prune(base: Path, keep: Path) -> None:
    """Remove the oldest hash folders beyond ``KEEP`` (never ``keep``).

    Hash folders are the sub-folders of ``base`` with 16-character names, ordered by
    modification time; errors (a folder in use, a race with another process) are ignored.
    """
    try:
        folders = [p for p in base.iterdir() if p.is_dir() and len(p.name) == 16]
    except OSError:
        return
    folders.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in [p for p in folders if p != keep][KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
