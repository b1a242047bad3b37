"""Checkpoints: atomic, checksummed, and a torn or corrupt one is never loaded."""

from __future__ import annotations

import os

import pytest
import torch

from mtgym.bridge import checkpoint as ck


def _state(step: int) -> dict:
    return {"step": step, "samples": 64 * step, "model": {"w": torch.full((3,), float(step))}}


def test_checkpoint__save_load_and_prune(tmp_path):
    for s in (10, 20, 30, 40):
        ck.save_checkpoint(tmp_path, s, _state(s), keep=3)
    assert [c.step for c in ck.list_checkpoints(tmp_path)] == [40, 30, 20]
    state, info, bad = ck.load_latest(tmp_path)
    assert info.step == 40 and state["samples"] == 2560 and not bad
    assert torch.equal(state["model"]["w"], torch.full((3,), 40.0))
    # header: magic, sha256, length
    head = ck.checkpoint_path(tmp_path, 40).read_bytes().split(b"\n", 1)[0].split()
    assert head[0] == ck.MAGIC and len(head[1]) == 64


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_checkpoint__damaged_newest_falls_back(tmp_path, damage):
    ck.save_checkpoint(tmp_path, 10, _state(10))
    ck.save_checkpoint(tmp_path, 20, _state(20))
    p = ck.checkpoint_path(tmp_path, 20)
    data = p.read_bytes()
    if damage == "truncate":
        p.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        b = bytearray(data)
        b[-10] ^= 0xFF
        p.write_bytes(bytes(b))
    elif damage == "empty":
        p.write_bytes(b"")
    else:
        p.write_bytes(b"not a checkpoint at all\n" * 3)
    with pytest.raises(ck.CheckpointError):
        ck.load_checkpoint(p)
    state, info, bad = ck.load_latest(tmp_path)
    assert info.step == 10 and state["step"] == 10
    assert [b[0] for b in bad] == [p]
    info2, bad2 = ck.latest_valid(tmp_path)
    assert info2.step == 10 and len(bad2) == 1


def test_checkpoint__nothing_valid_is_a_fresh_start(tmp_path):
    assert ck.load_latest(tmp_path / "none") == (None, None, [])
    ck.save_checkpoint(tmp_path, 5, _state(5))
    ck.checkpoint_path(tmp_path, 5).write_bytes(b"x")
    state, info, bad = ck.load_latest(tmp_path)
    assert state is None and info is None and len(bad) == 1


def test_checkpoint__atomic_write_leaves_no_partial_file(tmp_path, monkeypatch):
    ck.save_checkpoint(tmp_path, 1, _state(1))

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        ck.save_checkpoint(tmp_path, 2, _state(2))
    monkeypatch.undo()
    # the final name never appeared, and the failed writer removed its temporary file
    assert [c.step for c in ck.list_checkpoints(tmp_path)] == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == [ck.checkpoint_path(".", 1).name]
    assert ck.load_latest(tmp_path)[1].step == 1
    # the temporary file of a writer killed mid-write (no cleanup ran) is deleted later
    (tmp_path / f"{ck.TMP_PREFIX}ckpt-000000002.1234-dead.pt").write_bytes(b"torn")
    assert ck.remove_stale_tmp(tmp_path) == 1
    assert ck.load_latest(tmp_path)[1].step == 1


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_checkpoint__payload_verified_before_unpickling(tmp_path):
    # a valid envelope around a bad payload is rejected too (never half-loaded)
    ck.write_bytes_atomic(ck.checkpoint_path(tmp_path, 3), b"\x80\x04garbage")
    with pytest.raises(ck.CheckpointError, match="does not load"):
        ck.load_checkpoint(ck.checkpoint_path(tmp_path, 3))
