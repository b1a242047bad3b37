"""numba's cache folder is keyed by the sources the kernels depend on: an edit there gives a
new one (numba alone would load a kernel compiled against another file's old kernels)."""

from __future__ import annotations

import os
import time

from numba.core import config

from mtgym import _kernel_cache


def test_kernel_cache__hash_follows_kernels_and_their_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "kern.py").write_text("import numba\nfrom pkg.sub import consts\n")
    (pkg / "sub" / "consts.py").write_text("from pkg.deep import K\n")
    (pkg / "deep.py").write_text("K = 1\n")
    (pkg / "cli.py").write_text("def main():\n    from pkg import kern\n")
    names = {p.relative_to(pkg).as_posix() for p in _kernel_cache.kernel_sources(pkg)}
    assert names == {"__init__.py", "kern.py", "sub/__init__.py", "sub/consts.py", "deep.py"}
    h0 = _kernel_cache.sources_hash(pkg)
    assert _kernel_cache.sources_hash(pkg) == h0 and len(h0) == 16
    (pkg / "cli.py").write_text("def main():\n    pass\n")  # no kernel reads it
    assert _kernel_cache.sources_hash(pkg) == h0
    (pkg / "deep.py").write_text("K = 2\n")  # a constant two imports away changes
    h1 = _kernel_cache.sources_hash(pkg)
    (pkg / "kern2.py").write_text("from numba import njit\n")  # a new kernel file
    assert len({h0, h1, _kernel_cache.sources_hash(pkg)}) == 3


def test_kernel_cache__folder_under_numba_cache_dir_and_old_ones_pruned(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(config, "CACHE_DIR", config.CACHE_DIR)  # restored afterwards
    for i in range(5):  # folders of older source versions, oldest first
        old = tmp_path / f"{i:016d}"
        old.mkdir()
        os.utime(old, (time.time() - 100 + i, time.time() - 100 + i))
    folder = _kernel_cache.configure()
    pkg = os.path.dirname(_kernel_cache.__file__)
    assert folder == tmp_path / _kernel_cache.sources_hash(type(tmp_path)(pkg))
    assert str(folder) == config.CACHE_DIR and folder.is_dir()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert folder.name in left and len(left) == _kernel_cache.KEEP + 1
    assert "0000000000000000" not in left and "0000000000000004" in left  # oldest went first


def test_kernel_cache__a_cold_folder_prints_one_line_on_stderr(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(config, "CACHE_DIR", config.CACHE_DIR)  # restored afterwards
    folder = _kernel_cache.configure()
    err = capsys.readouterr().err
    assert err == _kernel_cache.COLD_NOTE.format(folder=folder) + "\n"
    assert "NUMBA_CACHE_DIR" in err and str(folder) in err
    index = folder / "mtgym_sim" / "engine._run-12.py311.nbi"  # (PackageCacheLocator)
    index.parent.mkdir(parents=True)
    index.touch()
    assert _kernel_cache.configure() == folder and capsys.readouterr().err == ""


COPY_RUN = """
import sys
from pathlib import Path
from numba.core import config
from mtgym import _kernel_cache
root = Path(sys.argv[1]).resolve()
config.CACHE_DIR = sys.argv[2]
_kernel_cache._install_locator(root)
sys.path.insert(0, str(root.parent))
from kpkg.sub.k import f
assert f(1) == 2
print(f.stats.cache_hits.most_common(1), f.stats.cache_misses.most_common(1))
"""


def test_kernel_cache__copies_of_the_same_sources_share_their_kernels(tmp_path):
    """A kernel compiled in one copy of a package (a checkout) loads in another (a wheel
    installed elsewhere): filed by its path inside the package, not its absolute folder."""
    import subprocess
    import sys

    src = "from numba import njit\n\n\n@njit(cache=True)\ndef f(x):\n    return x + 1\n"
    for copy in ("a", "b"):
        (tmp_path / copy / "kpkg" / "sub").mkdir(parents=True)
        (tmp_path / copy / "kpkg" / "__init__.py").write_text("")
        (tmp_path / copy / "kpkg" / "sub" / "__init__.py").write_text("")
        (tmp_path / copy / "kpkg" / "sub" / "k.py").write_text(src)
    cache = tmp_path / "cache"

    def run(copy: str) -> str:
        argv = [sys.executable, "-c", COPY_RUN, str(tmp_path / copy / "kpkg"), str(cache)]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert run("a") == "[] [((int64,), 1)]"  # compiled
    assert run("b") == "[((int64,), 1)] []"  # loaded: the other copy's kernel
    assert [p.name for p in cache.iterdir()] == ["kpkg_sub"]
    (tmp_path / "b" / "kpkg" / "sub" / "k.py").write_text(src.replace("x + 1", "x + 1 + 0"))
    assert run("b") == "[] [((int64,), 1)]"  # other content: numba's own check compiles
