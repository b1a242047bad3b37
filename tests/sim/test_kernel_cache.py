"""numba's cache folder is keyed by the package's sources: an edit anywhere gives a new one
(numba alone would load a kernel compiled against another file's old kernels)."""

from __future__ import annotations

import os
import time

from numba.core import config

from mtgym import _kernel_cache


def test_kernel_cache__hash_follows_every_source_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    h0 = _kernel_cache.sources_hash(tmp_path)
    assert _kernel_cache.sources_hash(tmp_path) == h0 and len(h0) == 16
    (tmp_path / "sub" / "b.py").write_text("y = 3\n")  # a callee's file changes
    h1 = _kernel_cache.sources_hash(tmp_path)
    (tmp_path / "c.py").write_text("")  # a new file
    assert len({h0, h1, _kernel_cache.sources_hash(tmp_path)}) == 3


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
