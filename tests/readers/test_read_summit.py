from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mtgym.core.errors import DataError
from mtgym.readers import (
    IdleWindowTable,
    parse_summit_name,
    read_idle_windows,
    read_summit_nodes,
)

WINDOWS = """\
node_name,node_index,start_s,end_s,censored
b01n02,1,100,250,0
a01n01,0,10,100,0
a01n01,0,100,400,1
b01n02,1,10,50,0
"""

NODES = """\
node_index,node_name,row,cabinet,node_in_cabinet,n_windows
2,b02n01,b,b02,1,5
0,a01n01,a,a01,1,0
1,a01n02,a,a01,2,7
3,a10n18,a,a10,18,1
"""


def _assert_fixture_windows(w: IdleWindowTable) -> None:
    assert len(w) == 4
    assert w.start_s.tolist() == [10, 10, 100, 100]
    assert w.node_index.tolist() == [0, 1, 0, 1]
    assert w.end_s.tolist() == [100, 50, 400, 250]
    assert w.censored.tolist() == [False, False, True, False]
    assert w.node_name.tolist() == ["a01n01", "b01n02", "a01n01", "b01n02"]
    assert w.node_index.dtype == np.int32
    assert w.start_s.dtype == w.end_s.dtype == np.float64
    assert w.censored.dtype == bool


def test_read_idle_windows__sorts_by_start_then_node(write):
    _assert_fixture_windows(read_idle_windows(write("w.csv", WINDOWS)))


def test_read_idle_windows__reads_gzip_the_same(write):
    _assert_fixture_windows(read_idle_windows(str(write("w.csv.gz", WINDOWS))))


def test_read_idle_windows__arrays_are_read_only_and_dataclass_frozen(write):
    w = read_idle_windows(write("w.csv", WINDOWS))
    with pytest.raises(ValueError, match="read-only"):
        w.start_s[0] = 5
    with pytest.raises(AttributeError):
        w.start_s = np.zeros(4)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("line", "field", "value"),
    [
        ("a01n01,0,abc,500,0", "start_s", "abc"),
        ("a01n01,0,500,400,0", "end_s", "400"),
        ("a01n01,-3,500,600,0", "node_index", "-3"),
        ("a01n01,0,500,600,2", "censored", "2"),
        ("a01n01,0,500,inf,0", "end_s", "inf"),
        ("zz,0,500,600,0", "node_name", "zz"),
        ("a01n01,0,500,600", "fields", "4 fields"),
    ],
)
def test_read_idle_windows__bad_row_names_field_value_and_row(write, line, field, value):
    path = write("w.csv", WINDOWS + line + "\n")
    with pytest.raises(DataError) as info:
        read_idle_windows(path)
    err = info.value
    assert (err.field, err.value, err.row) == (field, value, 6)
    assert f"'{field}'" in str(err) and repr(value) in str(err) and "row 6" in str(err)


def test_read_idle_windows__overlap_names_node_and_both_windows(write):
    path = write("w.csv", WINDOWS + "b01n02,1,200,300,0\n")
    with pytest.raises(DataError) as info:
        read_idle_windows(path)
    msg = str(info.value)
    assert info.value.field == "start_s"
    assert info.value.row == 6
    assert "b01n02" in msg and "[200, 300)" in msg and "[100, 250)" in msg and "row 2" in msg


def test_read_idle_windows__missing_column_and_missing_file(write, tmp_path):
    path = write("w.csv", WINDOWS.replace("censored", "cens"))
    with pytest.raises(DataError) as info:
        read_idle_windows(path)
    assert info.value.field == "censored"
    assert "node_name" in info.value.allowed
    with pytest.raises(DataError) as info:
        read_idle_windows(tmp_path / "absent.csv.gz")
    assert info.value.field == "path"


def test_read_summit_nodes__sorts_and_codes_rows_and_cabinets(write):
    n = read_summit_nodes(write("n.csv", NODES))
    assert n.node_index.tolist() == [0, 1, 2, 3]
    assert n.node_name.tolist() == ["a01n01", "a01n02", "b02n01", "a10n18"]
    assert n.row.tolist() == ["a", "a", "b", "a"]
    assert n.cabinet.tolist() == ["a01", "a01", "b02", "a10"]
    assert n.node_in_cabinet.tolist() == [1, 2, 1, 18]
    assert n.row_id.tolist() == [0, 0, 1, 0]
    assert n.cabinet_id.tolist() == [0, 0, 2, 1]
    assert n.cabinet_names.tolist() == ["a01", "a10", "b02"]
    assert n.node_in_cabinet.dtype == n.row_id.dtype == n.cabinet_id.dtype == np.int32
    assert not n.cabinet_id.flags.writeable


@pytest.mark.parametrize(
    ("old", "new", "field", "value"),
    [
        ("3,a10n18", "4,a10n18", "node_index", "4"),
        ("3,a10n18", "1,a10n18", "node_index", "1"),
        ("a10n18,a,a10,18", "a01n02,a,a01,2", "node_name", "a01n02"),
        ("a10n18,a,a10,18", "a10x18,a,a10,18", "node_name", "a10x18"),
        ("a10n18,a,a10,18", "a10n18,a,a11,18", "cabinet", "a11"),
        ("a10n18,a,a10,18", "a10n18,b,a10,18", "row", "b"),
        ("a10n18,a,a10,18", "a10n18,a,a10,1.5", "node_in_cabinet", "1.5"),
    ],
)
def test_read_summit_nodes__bad_row_raises(write, old, new, field, value):
    with pytest.raises(DataError) as info:
        read_summit_nodes(write("n.csv", NODES.replace(old, new)))
    assert (info.value.field, info.value.value, info.value.row) == (field, value, 5)
    assert repr(value) in str(info.value)


def test_read_summit_nodes__missing_column(write):
    with pytest.raises(DataError) as info:
        read_summit_nodes(write("n.csv", NODES.replace("node_in_cabinet", "slot")))
    assert info.value.field == "node_in_cabinet"
    assert "cabinet" in info.value.allowed


def test_parse_summit_name__splits_valid_names():
    assert parse_summit_name("a01n01") == ("a", "a01", 1)
    assert parse_summit_name("h50n18") == ("h", "h50", 18)


@pytest.mark.parametrize("bad", ["", "a1n01", "A01n01", "a01n1", "a01x01", "a01n012", " a01n01"])
def test_parse_summit_name__rejects_bad_names(bad):
    with pytest.raises(ValueError, match="allowed"):
        parse_summit_name(bad)


@given(st.sampled_from("abcdefgh"), st.integers(0, 99), st.integers(0, 99))
def test_parse_summit_name__roundtrips(row, cab, slot):
    assert parse_summit_name(f"{row}{cab:02d}n{slot:02d}") == (row, f"{row}{cab:02d}", slot)


# ----- the real files ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_windows(shared_data):
    start = time.perf_counter()
    windows = read_idle_windows(shared_data / "summit-idle-fragments.csv.gz")
    return windows, time.perf_counter() - start


@pytest.fixture(scope="module")
def real_nodes(shared_data):
    return read_summit_nodes(shared_data / "summit-nodes.csv")


def test_read_idle_windows__real_file_matches_readme(real_windows):
    w, _ = real_windows
    length = w.end_s - w.start_s
    assert len(w) == 423_502
    assert int(w.censored.sum()) == 148
    assert length.sum() == 504_656_231
    assert np.median(length) == 475
    assert length.min() == 50 and length.max() == 271_990
    assert length[~w.censored].min() == 70
    assert np.all(w.end_s[w.censored] == 1_289_437)
    assert np.all(np.diff(w.start_s) >= 0)


def test_read_summit_nodes__real_file_matches_readme(real_nodes, real_windows):
    n = real_nodes
    assert len(n) == 4_734
    assert len(n.cabinet_names) == 263
    assert n.row_names.tolist() == list("abcdefgh")
    assert np.all(np.bincount(n.cabinet_id) == 18)
    assert np.bincount(n.row_id).tolist() == [648, 648, 468, 630, 468, 666, 666, 540]
    w, _ = real_windows
    assert np.array_equal(n.node_name[w.node_index], w.node_name)
    assert len(np.unique(w.node_index)) == 4_734 - 54
