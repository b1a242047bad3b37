"""The cost line before a run: the episodes to play and, from the registry's measured
episodes (the newest file that played each policy there), about how long they take."""

from __future__ import annotations

from mtgym.results import store
from mtgym.results.estimate import cost_line, measured
from mtgym.results.provenance import capture

ENTRY = {"name": "sc-a", "source": "code", "path": None, "sha256": "0" * 64, "tuning_sha256": None}


def _write(folder, name, date, walls):
    rows = [
        {"scenario": sc, "policy": p, "seed": i, "wall_s": w}
        for (sc, p), ws in walls.items()
        for i, w in enumerate(ws)
    ]
    res = store.build(
        "evaluate",
        capture(["evaluate"]),
        seeds=[0, 1],
        scenarios=[ENTRY],
        wall_s=1.0,
        rows=rows,
        aggregates={},
    )
    store.write_result(res.model_copy(update={"date_utc": date}), folder / name)


def test_estimate__the_newest_file_that_played_a_policy_gives_its_mean(tmp_path):
    _write(tmp_path, "a", "2026-01-01T00:00:00Z", {("sc-a", "greedy"): [2.0, 4.0]})
    _write(
        tmp_path,
        "b",
        "2026-02-01T00:00:00Z",
        {("sc-a", "greedy"): [10.0, 10.0], ("sc-b", "agent"): [1.0]},
    )
    (tmp_path / "junk.json").write_text("{not json")
    got = measured(tmp_path, "sc-a", ["greedy", "agent"])
    assert list(got) == ["greedy"] and got["greedy"].mean_s == 10.0  # b is newer
    assert got["greedy"].episodes == 2 and got["greedy"].source.name.startswith("b")
    line = cost_line(tmp_path, "sc-a", {"greedy": 12}, workers=2, extra="and 6 bound(s)")
    assert line.startswith("to play: 12 episode(s) (greedy 12) and 6 bound(s); about 60 s in 2")
    line = cost_line(tmp_path, "sc-a", {"greedy": 3, "agent": 3})
    assert line.endswith("no measured episode of agent on sc-a to estimate")
    assert cost_line(tmp_path / "none", "sc-a", {"greedy": 0}) == "to play: 0 episode(s) (greedy 0)"
