from __future__ import annotations

import json

import pytest

from mtgym.core.errors import DataError
from mtgym.readers import UnknownThroughputError, read_gavel_throughputs

SMALL = {
    "k80": {
        "('A3C', 1)": {"null": 3.0, "('A3C', 1)": [1.5, 1.5]},
        "('LM (batch size 5)', 2)": {"null": 10, "('LM (batch size 5)', 2)": [0.0, 0.0]},
    },
    "v100": {"('A3C', 1)": {"null": 7.25}},
}


def _write_json(write, obj, name="t.json"):
    return write(name, json.dumps(obj))


def test_read_gavel_throughputs__isolated_rates(write):
    g = read_gavel_throughputs(_write_json(write, SMALL))
    assert g.worker_types == ("k80", "v100")
    assert g.job_types == ("A3C", "LM (batch size 5)")
    assert g.isolated == {
        ("k80", "A3C", 1): 3.0,
        ("k80", "LM (batch size 5)", 2): 10.0,
        ("v100", "A3C", 1): 7.25,
    }
    assert g.rate("v100", "A3C") == 7.25
    assert g.rate("k80", "LM (batch size 5)", 2) == 10.0


def test_read_gavel_throughputs__reads_gzip(write):
    g = read_gavel_throughputs(write("t.json.gz", json.dumps(SMALL)))
    assert g.rate("k80", "A3C", 1) == 3.0


@pytest.mark.parametrize(
    ("args", "field", "allowed_part"),
    [
        (("p100", "A3C"), "worker_type", "'k80', 'v100'"),
        (("k80", "GNMT"), "job_type", "'A3C', 'LM (batch size 5)'"),
        (("v100", "LM (batch size 5)", 2), "scale_factor", "[]"),
        (("k80", "LM (batch size 5)", 1), "scale_factor", "[2]"),
    ],
)
def test_gavel_rate__unknown_key_is_data_error_and_key_error(write, args, field, allowed_part):
    g = read_gavel_throughputs(_write_json(write, SMALL))
    with pytest.raises(UnknownThroughputError) as info:
        g.rate(*args)
    assert isinstance(info.value, DataError) and isinstance(info.value, KeyError)
    assert info.value.field == field
    assert allowed_part in info.value.allowed
    assert str(info.value).startswith(str(g.source))


def _with(worker_jobs):
    return {"k80": worker_jobs}


@pytest.mark.parametrize(
    ("obj", "field", "value"),
    [
        (_with({"A3C, 1": {"null": 1.0}}), "k80 job key", "A3C, 1"),
        (_with({"('A3C', '1')": {"null": 1.0}}), "k80 job key", "('A3C', '1')"),
        (_with({"('A3C', 0)": {"null": 1.0}}), "k80 job key", "('A3C', 0)"),
        (_with({"__import__('os')": {"null": 1.0}}), "k80 job key", "__import__('os')"),
        (_with({"('A3C', 1)": {"null": -1.0}}), "k80 ('A3C', 1) null", -1.0),
        (_with({"('A3C', 1)": {"null": "fast"}}), "k80 ('A3C', 1) null", "fast"),
        (_with({"('A3C', 1)": {"null": True}}), "k80 ('A3C', 1) null", True),
        (
            _with({"('A3C', 1)": {"null": 1.0, "('A3C' 1)": [1, 1]}}),
            "k80 ('A3C', 1) pair key",
            "('A3C' 1)",
        ),
        (
            _with({"('A3C', 1)": {"null": 1.0, "('A3C', 1)": [1, 1, 1]}}),
            "k80 ('A3C', 1) ('A3C', 1)",
            [1, 1, 1],
        ),
        (
            _with({"('A3C', 1)": {"null": 1.0, "('A3C', 1)": [1, -2]}}),
            "k80 ('A3C', 1) ('A3C', 1)",
            -2,
        ),
        (_with({"('A3C', 1)": {"('A3C', 1)": [1, 1]}}), "k80 ('A3C', 1)", ["('A3C', 1)"]),
        (_with({"('A3C', 1)": 4.0}), "k80 ('A3C', 1)", "float"),
        ({"k80": []}, "k80", "list"),
        ([1, 2], "file", "list"),
    ],
)
def test_read_gavel_throughputs__malformed_structure(write, obj, field, value):
    with pytest.raises(DataError) as info:
        read_gavel_throughputs(_write_json(write, obj))
    assert (info.value.field, info.value.value) == (field, value)
    assert repr(field) in str(info.value) and repr(value) in str(info.value)


def test_read_gavel_throughputs__invalid_json_and_missing_file(write, tmp_path):
    with pytest.raises(DataError) as info:
        read_gavel_throughputs(write("t.json", '{"k80": {\n  "x": }'))
    assert info.value.field == "json" and info.value.row == 2
    with pytest.raises(DataError, match="'path'"):
        read_gavel_throughputs(tmp_path / "none.json")


def test_read_gavel_throughputs__real_file_matches_readme(shared_data):
    g = read_gavel_throughputs(shared_data / "gavel-throughputs.json")
    assert len(g.worker_types) == 6 and {"k80", "p100", "v100"} <= set(g.worker_types)
    assert len(g.job_types) == 26
    # README rounds 4.3948 to "4.40"
    assert g.rate("v100", "ResNet-50 (batch size 64)", 1) == pytest.approx(4.40, abs=0.01)
    assert g.rate("k80", "ResNet-50 (batch size 64)") == pytest.approx(0.62, abs=0.005)
    assert g.rate("p100", "Transformer (batch size 64)") == pytest.approx(5.09, abs=0.005)
    assert g.rate("k80", "ResNet-50 (batch size 128)", 4) == 0.0
    assert len(g.isolated) == 5 * 83 + 77
    with pytest.raises(KeyError):
        g.rate("k80_unconsolidated", "ResNet-50 (batch size 64)", 8)
