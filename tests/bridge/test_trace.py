"""The trace format and the recorder (fast: no torch jobs)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mtgym.bridge.record import RecordDecisions, record_episode, trace_header
from mtgym.bridge.trace import (
    Trace,
    TraceError,
    TraceEvent,
    TraceWriter,
    read_trace,
    write_trace,
)
from mtgym.policy.play import play
from mtgym.policy.registry import make_policy
from mtgym.testing import ScriptPolicy, linear_job, tiny_instance


def two_job_instance():
    """Nodes 0, 1 idle on [0, 300); nodes 2, 3 only on [100, 200): equal share gives each
    job 1 -> 2 -> 1 nodes, and the shrink at 200 is a reclaim."""
    rows = [linear_job("a", 100, 2, 1e9), linear_job("b", 50, 2, 1e9)]
    windows = [(0, 0, 300), (1, 0, 300), (2, 100, 200), (3, 100, 200)]
    return tiny_instance(4, rows, windows=windows, t_end=300)


def test_record__equal_share_one_two_one_with_reclaim(tmp_path):
    inst = two_job_instance()
    res, path = record_episode(
        inst, make_policy("equal-share"), tmp_path / "t.jsonl", scenario="tiny", seed=0
    )
    tr = read_trace(path)
    assert tr.header.scenario == "tiny" and tr.header.policy == "equal-share"
    assert tr.t_end == 300.0
    assert [(e.t, e.job, e.world_size, e.reason) for e in tr.events] == [
        (0.0, "0", 1, "decision"),
        (0.0, "1", 1, "decision"),
        (100.0, "0", 2, "decision"),
        (100.0, "1", 2, "decision"),
        (200.0, "0", 1, "reclaim"),
        (200.0, "1", 1, "reclaim"),
    ]
    # the simulator's predicted rates ride along
    assert tr.events[2].rate == pytest.approx(200.0) and tr.events[3].rate == pytest.approx(100)
    assert tr.jobs["1"].curve == {1: 50.0, 2: 100.0}
    assert tr.predicted_rate("0", 2) == pytest.approx(200.0)
    assert tr.world_sizes("0") == [(0.0, 1), (100.0, 2), (200.0, 1)]
    segs = tr.segments("0")
    assert [(s.t0, s.t1, s.world_size) for s in segs] == [(0, 100, 1), (100, 200, 2), (200, 300, 1)]
    # the recorder does not change what the simulator does
    plain = play(inst, make_policy("equal-share"))
    assert plain.metrics.as_dict()["samples"] == res.metrics.as_dict()["samples"]


def test_record__reclaim_time_exact_with_decision_interval(tmp_path):
    inst = two_job_instance()
    _, path = record_episode(
        inst,
        make_policy("equal-share"),
        tmp_path / "t.jsonl",
        scenario="tiny",
        decision_interval_s=70.0,
    )
    tr = read_trace(path)
    times = [(e.t, e.world_size, e.reason) for e in tr.events if e.job == "0"]
    # grows at the first decision after 100 (140), shrinks exactly when the host reclaims
    assert times == [(0.0, 1, "decision"), (140.0, 2, "decision"), (200.0, 1, "reclaim")]


def test_record__completion_and_release(tmp_path):
    # job a finishes at t = 100 (1e4 samples at 100/s); job b then takes its node
    rows = [linear_job("a", 100, 1, 1e4), linear_job("b", 100, 2, 1e9)]
    inst = tiny_instance(2, rows, t_end=300)
    _, path = record_episode(
        inst, make_policy("equal-share"), tmp_path / "t.jsonl", scenario="tiny"
    )
    tr = read_trace(path)
    a = [(e.t, e.world_size, e.reason) for e in tr.events if e.job == "0"]
    assert a == [(0.0, 1, "decision"), (100.0, 0, "complete")]
    b = [(e.t, e.world_size) for e in tr.events if e.job == "1"]
    assert b == [(0.0, 1), (100.0, 2)]


def test_record__script_policy_plan(tmp_path):
    rows = [linear_job("a", 100, 2, 1e9), linear_job("b", 100, 2, 1e9)]
    windows = [(0, 0, 400), (1, 0, 300), (1, 310, 400), (2, 100, 150), (2, 200, 250)]
    inst = tiny_instance(3, rows, windows=windows, t_end=400)
    plan = [(0, {0: 0, 1: 1}), (100, {0: 0, 1: 0}), (200, {0: 1, 1: 1}), (300, {0: 1, 1: 0})]
    _, path = record_episode(inst, ScriptPolicy(plan), tmp_path / "t.jsonl", scenario="s")
    tr = read_trace(path)
    assert tr.world_sizes("0") == [(0.0, 1), (100.0, 2), (200.0, 0), (310.0, 1)]
    assert tr.world_sizes("1") == [(0.0, 1), (100.0, 0), (200.0, 2), (300.0, 1)]
    assert [e.reason for e in tr.events if e.job == "1" and e.t == 300.0] == ["reclaim"]


def _write(tmp_path, lines):
    p = tmp_path / "bad.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return p


def _header(**over):
    h = trace_header(two_job_instance(), scenario="tiny", policy="p", seed=0).to_json()
    h.update(over)
    return h


def test_trace__round_trip(tmp_path):
    h = trace_header(two_job_instance(), scenario="tiny", policy="p", seed=3)
    evs = [TraceEvent(0.0, "0", (0,), rate=100.0), TraceEvent(5.0, "0", (0, 1), rate=200.0)]
    p = write_trace(tmp_path / "t.jsonl", Trace(h, evs, 10.0))
    tr = read_trace(p)
    assert tr.events == evs and tr.t_end == 10.0 and tr.header.seed == 3
    assert tr.jobs["0"].to_json() == h.jobs["0"].to_json()
    sub = tr.restricted(["0"], until=4.0)
    assert list(sub.jobs) == ["0"] and sub.t_end == 4.0 and len(sub.events) == 1
    with pytest.raises(KeyError, match="unknown trace jobs"):
        tr.restricted(["9"])


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        ([{"format": "mtgym-trace", "version": 2}], "version.*2.*reads trace version 1 only"),
        ([{"format": "something-else", "version": 1}], "not an mtgym trace"),
        ([_header(), {"t": 0, "job": "0", "nodes": [0], "world_size": 1}], "truncated"),
        (
            [_header(), {"t": 5, "job": "0", "nodes": [0]}, {"t": 1, "job": "0", "nodes": []}],
            "previous time",
        ),
        ([_header(), {"t": 0, "job": "7", "nodes": [0]}], "one of"),
        ([_header(), {"t": 0, "job": "0", "nodes": [0], "world_size": 2}], "len\\(nodes\\)"),
        ([_header(), {"t": 0, "job": "0", "nodes": [9]}], "distinct indices"),
        (
            [
                _header(),
                {"t": 0, "job": "0", "nodes": [0]},
                {"t": 0, "job": "1", "nodes": [0]},
                {"t": 1, "end": True},
            ],
            "held by one job at a time",
        ),
        ([_header(), {"t": 0, "job": "0", "nodes": [0], "reason": "whim"}], "reason"),
        ([_header(jobs={"0": {"name": "x", "app_class": "Z"}})], "jobs.0.app_class"),
        # the hardening reproducers (issue 17): each gets an error naming field and value
        ([_header(t_start=float("nan"))], r"'t_start' has value nan"),
        ([_header(t_start=10.0, t_end=5.0)], r"'t_end' has value 5.0.*>= 10"),
        ([_header(), {"t": float("nan"), "job": "0", "nodes": [0]}], r"'t' has value nan"),
        ([_header(gpus_per_node=0)], r"'gpus_per_node' has value 0.*integer >= 1"),
        ([_header(num_nodes=2.5)], r"'num_nodes' has value 2.5.*not a fraction"),
        ([_header(num_nodes=True)], r"'num_nodes' has value True"),
        (
            [_header(jobs={"0": {"name": "x", "min_nodes": 1, "max_nodes": 1.5}})],
            r"'jobs.0.max_nodes' has value 1.5",
        ),
        ([_header(jobs={"0": {"name": "x", "work": -5}})], r"'jobs.0.work' has value -5"),
        ([_header(jobs={"0": {"name": "x", "r_up_s": -1}})], r"'jobs.0.r_up_s' has value -1"),
        (
            [_header(jobs={"0": {"name": "x", "curve": {"1": -100.0}}})],
            r"'jobs.0.curve.1' has value -100.0",
        ),
        (
            [_header(jobs={"0": {"name": "x", "curve": {"1": float("nan")}}})],
            r"'jobs.0.curve.1' has value nan",
        ),
        ([_header(jobs={"0": {"name": "x", "model": 7}})], r"'jobs.0.model' has value 7"),
        ([_header(), {"t": 0, "job": "0", "nodes": [0], "rate": -3.0}], r"'rate' has value -3.0"),
        (
            [_header(), {"t": 0, "job": "0", "nodes": [0, 1, 2]}],
            r"'nodes'.*at most job 0's max_nodes = 2",
        ),
        ([_header(), {"t": 0, "job": "0", "nodes": [True]}], r"'nodes'.*list of node indices"),
        ([_header(jobs={"../evil": {"name": "x"}})], r"'jobs' has value '../evil'.*safe|folder"),
        ([_header(jobs={"/etc": {"name": "x"}})], r"'jobs' has value '/etc'"),
        ([_header(jobs={"a/b": {"name": "x"}})], r"'jobs' has value 'a/b'"),
        ([_header(jobs={"..": {"name": "x"}})], r"'jobs' has value '..'"),
        ([_header(jobs={"": {"name": "x"}})], r"'jobs' has value ''"),
    ],
)
def test_trace__rejects_bad_files(tmp_path, lines, match):
    with pytest.raises(TraceError, match=match):
        read_trace(_write(tmp_path, lines))


def test_trace__same_instant_handover_is_fine(tmp_path):
    lines = [
        _header(),
        {"t": 0, "job": "0", "nodes": [0]},
        {"t": 5, "job": "0", "nodes": []},
        {"t": 5, "job": "1", "nodes": [0]},
        {"t": 9, "end": True},
    ]
    tr = read_trace(_write(tmp_path, lines))
    assert [s.job for s in tr.segments()] == ["0", "1"]


def test_trace__writer_refuses_time_going_back(tmp_path):
    h = trace_header(two_job_instance(), scenario="tiny", policy="p", seed=0)
    with TraceWriter(tmp_path / "t.jsonl", h) as w:
        w.event(TraceEvent(5.0, "0", (0,)))
        with pytest.raises(ValueError, match="out of order"):
            w.event(TraceEvent(1.0, "0", ()))


def test_record__wrapper_is_a_policy():
    inst = two_job_instance()
    pol = make_policy("equal-share")
    from mtgym.policy.base import Policy

    class Sink:
        def event(self, ev):
            self.last = ev

    rec = RecordDecisions(pol, inst, Sink())  # type: ignore[arg-type]
    assert isinstance(rec, Policy) and rec.name == "equal-share"
    np.testing.assert_array_equal(rec._cur, -1)


def test_trace__bad_field_message_names_file_line_field(tmp_path):
    p = _write(tmp_path, [_header(gpus_per_node=0)])
    with pytest.raises(TraceError) as ei:
        read_trace(p)
    assert ei.value.path == str(p) and ei.value.row == 1 and ei.value.field == "gpus_per_node"
    assert str(ei.value).startswith(f"{p}, row 1: field 'gpus_per_node' has value 0")


def test_trace__model_name_is_free_text(tmp_path):
    """The trace's ``model`` is the simulator's name (table workloads use any name); the
    torch model a replay trains comes from the app class or ``--model``, both checked."""
    from mtgym.bridge.controller import ReplayConfig

    lines = [_header(jobs={"0": {"name": "x", "model": "my-table-model"}}), {"t": 1, "end": True}]
    assert read_trace(_write(tmp_path, lines)).jobs["0"].model == "my-table-model"
    with pytest.raises(ValueError, match="unknown model 'transfomer'; known: cnn, mlp"):
        ReplayConfig(model="transfomer")


def test_trace__integral_float_counts_are_fine(tmp_path):
    lines = [
        _header(num_nodes=4.0, jobs={"0": {"name": "x", "min_nodes": 1.0, "max_nodes": 2.0}}),
        {"t": 0, "job": "0", "nodes": [0, 1]},
        {"t": 1, "end": True},
    ]
    tr = read_trace(_write(tmp_path, lines))
    assert tr.header.num_nodes == 4 and tr.jobs["0"].max_nodes == 2
    assert isinstance(tr.header.num_nodes, int)
