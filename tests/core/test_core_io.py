"""Atomic writes and ``--out`` checks (mtgym.core.io)."""

from __future__ import annotations

import json
import math
import os

import pytest

from mtgym.core import io as cio


def _names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_atomic_write__json_text_bytes_round_trip(tmp_path):
    p = cio.atomic_write_json(tmp_path / "sub" / "r.json", {"a": 1, "b": [1.5, None]})
    assert json.loads(p.read_text()) == {"a": 1, "b": [1.5, None]}
    assert p.read_text().endswith("}\n")
    cio.atomic_write_text(tmp_path / "t.md", "héllo")
    assert (tmp_path / "t.md").read_text(encoding="utf-8") == "héllo"
    cio.atomic_write_bytes(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert _names(tmp_path) == ["b.bin", "sub", "t.md"]  # no temporary file left


def test_atomic_write__failure_mid_write_keeps_old_file(tmp_path, monkeypatch):
    p = tmp_path / "results.json"
    cio.atomic_write_json(p, {"old": True})

    real_fsync = os.fsync

    def boom(fd):  # the disk fills up after part of the payload was written
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="No space left"):
        cio.atomic_write_json(p, {"new": list(range(1000))})
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert json.loads(p.read_text()) == {"old": True}
    assert _names(tmp_path) == ["results.json"]

    def no_replace(src, dst):
        raise OSError("rename failed")

    monkeypatch.setattr(os, "replace", no_replace)
    with pytest.raises(OSError, match="rename failed"):
        cio.atomic_write_text(p, "new")
    monkeypatch.undo()
    assert json.loads(p.read_text()) == {"old": True}
    assert _names(tmp_path) == ["results.json"]


def test_atomic_write__unserialisable_json_touches_nothing(tmp_path):
    p = tmp_path / "r.json"
    cio.atomic_write_json(p, [1])
    with pytest.raises(ValueError, match="Out of range float"):
        cio.atomic_write_json(p, [math.nan], allow_nan=False)
    with pytest.raises(TypeError):
        cio.atomic_write_json(p, {"x": object()})
    assert json.loads(p.read_text()) == [1] and _names(tmp_path) == ["r.json"]


def test_atomic_open__exception_in_block_keeps_old_file(tmp_path):
    p = tmp_path / "table.csv"
    p.write_text("old\n")
    with pytest.raises(RuntimeError, match="writer crashed"), cio.atomic_open(p, newline="") as f:
        f.write("half a ro")
        raise RuntimeError("writer crashed")
    assert p.read_text() == "old\n" and _names(tmp_path) == ["table.csv"]
    with cio.atomic_open(p, newline="") as f:
        f.write("new\n")
    assert p.read_text() == "new\n" and _names(tmp_path) == ["table.csv"]


def test_atomic_path__keeps_suffix_and_replaces(tmp_path):
    p = tmp_path / "model.zip"
    p.write_bytes(b"old model")
    with pytest.raises(RuntimeError), cio.atomic_path(p) as tmp:
        assert tmp.suffix == ".zip" and tmp.parent == tmp_path and tmp != p
        tmp.write_bytes(b"half")
        raise RuntimeError("save crashed")
    assert p.read_bytes() == b"old model" and _names(tmp_path) == ["model.zip"]
    with pytest.raises(FileNotFoundError, match="left no file"), cio.atomic_path(p):
        pass  # a writer that wrote nothing must not count as a save
    assert p.read_bytes() == b"old model"
    with cio.atomic_path(p) as tmp:
        tmp.write_bytes(b"new model")
    assert p.read_bytes() == b"new model" and _names(tmp_path) == ["model.zip"]


def test_remove_stale_tmp(tmp_path):
    (tmp_path / f"{cio.TMP_PREFIX}x.1-ab.json").write_text("torn")
    (tmp_path / "keep.json").write_text("{}")
    assert cio.remove_stale_tmp(tmp_path) == 1 and _names(tmp_path) == ["keep.json"]


def test_prepare_out_dir__creates_and_rejects(tmp_path):
    d = cio.prepare_out_dir(tmp_path / "a" / "b")
    assert d.is_dir() and _names(d) == []  # the probe file is gone
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(cio.OutDirError, match=r"--out .*file: exists and is not a folder"):
        cio.prepare_out_dir(f)
    with pytest.raises(cio.OutDirError, match=r"--out .*file/sub: cannot create the folder"):
        cio.prepare_out_dir(f / "sub")
    # /proc refuses new folders even to root (chmod does not stop root)
    with pytest.raises(cio.OutDirError, match=r"--to /proc/mtgym-out: cannot create"):
        cio.prepare_out_dir("/proc/mtgym-out", option="--to")


def test_cli__unwritable_out_fails_before_any_work(tmp_path, monkeypatch, capsys):
    """`mtgym evaluate --out` under a file: exit 2 naming the path, nothing simulated."""
    import mtgym.evaluate
    from mtgym.cli import main

    def never(*a, **k):
        raise AssertionError("the sweep ran before --out was checked")

    monkeypatch.setattr(mtgym.evaluate, "evaluate", never)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    rc = main(
        ["evaluate", "--policy", "equal-share", "--seeds", "1", "--out", str(blocker / "res")]
    )
    assert rc == 2
    assert blocker.read_text() == "a file, not a folder"  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker"]  # nothing written
    err = capsys.readouterr().err
    assert f"--out {blocker / 'res'}: cannot create the folder" in err
    assert err.count("\n") == 1  # one line, no traceback
