"""The journal file format: a header checked on resume, synced entries, torn lines skipped."""

import json

import pytest

from mtgym.results import jsonl


class RefusedError(ValueError):
    pass


IDENT = {"seeds": [0, 1], "scenarios": {"a": ["h1", None], "b": ["h2", "t2"]}}


def test_jsonl__entries_come_back_in_order_and_a_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "sub" / "j.jsonl"
    jsonl.start(path, "k", IDENT)
    jsonl.append(path, {"n": 1})
    jsonl.append(path, {"n": 2})
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"n": 3')  # killed mid-write
    assert jsonl.read(path, "k", IDENT, what="run", error=RefusedError) == [{"n": 1}, {"n": 2}]
    assert json.loads(path.read_text().splitlines()[0]) == {"kind": "k", "identity": IDENT}


def test_jsonl__another_runs_journal_is_refused_naming_the_first_difference(tmp_path):
    path = tmp_path / "j.jsonl"
    jsonl.start(path, "k", IDENT)
    other = {**IDENT, "scenarios": {"a": ["h1", None], "b": ["h2", "t3"]}}
    with pytest.raises(
        RefusedError, match=r"another run \(scenarios\[b\] differs \(\['h2', 't2'\]"
    ):
        jsonl.read(path, "k", other, what="run", error=RefusedError)
    with pytest.raises(RefusedError, match=r"\(seeds differs \(\[0, 1\] then, \[0\] now\)\)"):
        jsonl.read(path, "k", {**IDENT, "seeds": [0]}, what="run", error=RefusedError)
    with pytest.raises(RefusedError, match="is not the journal of a run"):
        jsonl.read(path, "other-kind", IDENT, what="run", error=RefusedError)
    with pytest.raises(RefusedError, match="does not exist; run without --resume"):
        jsonl.read(tmp_path / "none.jsonl", "k", IDENT, what="run", error=RefusedError)


def test_jsonl__identity_is_compared_as_json(tmp_path):
    """A tuple and a list, or a numpy scalar through ``default``, are the same identity."""
    import numpy as np

    path = tmp_path / "j.jsonl"
    jsonl.start(path, "k", {"seeds": (0, 1), "x": np.float64(2.5)}, default=lambda o: o.item())
    got = jsonl.read(path, "k", {"seeds": [0, 1], "x": 2.5}, what="run", error=RefusedError)
    assert got == []
