"""``mtgym.results.hashes.code_sha256``: changes with the source behind an episode, and only
with it."""

from __future__ import annotations

from mtgym.results.hashes import code_sha256


def test_code_sha256__follows_the_episode_source_only(tmp_path):
    (tmp_path / "mtgym" / "sim").mkdir(parents=True)
    (tmp_path / "baselines").mkdir()
    (tmp_path / "mtgym" / "sim" / "a.py").write_text("x = 1\n")
    (tmp_path / "baselines" / "b.py").write_text("y = 2\n")
    first = code_sha256(tmp_path)
    assert len(first) == 64 and code_sha256(tmp_path) == first
    (tmp_path / "mtgym" / "env").mkdir()
    (tmp_path / "mtgym" / "env" / "c.py").write_text("z = 3\n")  # not an episode's code
    (tmp_path / "mtgym" / "sim" / "__pycache__").mkdir()
    (tmp_path / "mtgym" / "sim" / "__pycache__" / "a.cpython-312.pyc").write_bytes(b"\0")
    assert code_sha256(tmp_path) == first
    (tmp_path / "baselines" / "b.py").write_text("y = 3\n")
    assert code_sha256(tmp_path) != first
    (tmp_path / "baselines" / "b.py").write_text("y = 2\n")
    (tmp_path / "mtgym" / "sim" / "a.py").rename(tmp_path / "mtgym" / "sim" / "a2.py")
    assert code_sha256(tmp_path) != first  # a renamed file counts
