from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mtgym.core.errors import DataError
from mtgym.readers import _csv


def test_read_text__plain_gzip_and_bom_read_the_same(write, tmp_path):
    plain = write("a.csv", "x,y\n1,2\n")
    gz = write("a.csv.gz", "x,y\n1,2\n")
    disguised = tmp_path / "gz-without-suffix.csv"
    disguised.write_bytes(gzip.compress(b"x,y\n1,2\n"))
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbfx,y\n1,2\n")
    texts = {_csv.read_text(p) for p in (plain, gz, str(gz), disguised, bom)}
    assert texts == {"x,y\n1,2\n"}


def test_read_text__missing_file_is_a_data_error(tmp_path):
    with pytest.raises(DataError) as info:
        _csv.read_text(tmp_path / "nope.csv")
    assert info.value.field == "path"
    assert "nope.csv" in str(info.value)


def test_read_text__directory_corrupt_gzip_and_bad_utf8_are_data_errors(tmp_path):
    bad_gz = tmp_path / "bad.csv.gz"
    bad_gz.write_bytes(gzip.compress(b"x,y\n1,2\n")[:-6])
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"x\n\xe9\n")
    for path, field in ((tmp_path, "path"), (bad_gz, "gzip"), (latin, "encoding")):
        with pytest.raises(DataError) as info:
            _csv.read_text(path)
        assert info.value.field == field


def test_read_table__keeps_required_optional_and_kept_columns(write):
    path = write("t.csv", 'a,b,"c,d",tput_n1,z\n1,"x,y",3,4.5,9\n2,w,5,6,9\n\n')
    t = _csv.read_table(path, ("a",), ("b", "absent"), keep=lambda h: h.startswith("tput"))
    assert set(t.columns) == {"a", "b", "tput_n1"}
    assert t.header == ("a", "b", "c,d", "tput_n1", "z")
    assert t.n_rows == 2
    assert list(t.raw("b")) == ["x,y", "w"]


def test_read_table__missing_column_names_it_and_the_required_list(write):
    path = write("t.csv", "a,b\n1,2\n")
    with pytest.raises(DataError) as info:
        _csv.read_table(path, ("a", "c"))
    assert info.value.field == "c"
    assert info.value.row == 1
    assert "['a', 'c']" in str(info.value)


def test_read_table__wrong_field_count_names_the_row(write):
    path = write("t.csv", "a,b\n1,2\n3\n")
    with pytest.raises(DataError) as info:
        _csv.read_table(path, ("a",))
    assert (info.value.field, info.value.row, info.value.value) == ("fields", 3, "1 fields")


def test_read_table__duplicate_column_empty_file_and_no_rows(write):
    cases = [
        (write("dup.csv", "a,a\n1,2\n"), "a"),
        (write("empty.csv", ""), "header"),
        (write("header-only.csv", "a,b\n"), "rows"),
    ]
    for path, field in cases:
        with pytest.raises(DataError) as info:
            _csv.read_table(path, ("a",))
        assert info.value.field == field


def test_read_table__csv_module_error_is_a_data_error(write):
    with pytest.raises(DataError) as info:  # a field over csv.field_size_limit()
        _csv.read_table(write("t.csv", "a\n1\n" + "9" * 200_000 + "\n"), ("a",))
    assert (info.value.field, info.value.row) == ("csv", 3)


def test_ints__parse_and_reject_with_row_and_value(write):
    t = _csv.read_table(write("t.csv", "n\n1\n -2 \n+3\n"), ("n",))
    out = _csv.ints(t, "n")
    assert out.dtype == np.int32
    assert out.tolist() == [1, -2, 3]
    for bad, row in (("n\n1\n1.0\n", 3), ("n\nx\n", 2), ("n\n1\n3000000000\n", 3)):
        t = _csv.read_table(write("bad.csv", bad), ("n",))
        with pytest.raises(DataError) as info:
            _csv.ints(t, "n")
        assert info.value.row == row
        assert info.value.field == "n"
        assert info.value.value == bad.split("\n")[row - 1]


def test_ints__int64_overflow_is_a_data_error(write):
    t = _csv.read_table(write("t.csv", "n\n99999999999999999999999\n"), ("n",))
    with pytest.raises(DataError, match="99999999999999999999999"):
        _csv.ints(t, "n", np.int64)


def test_floats__finite_by_default(write):
    t = _csv.read_table(write("t.csv", "x\n1.5\n1e3\nnan\n"), ("x",))
    assert np.isnan(_csv.floats(t, "x", finite=False)[2])
    with pytest.raises(DataError) as info:
        _csv.floats(t, "x")
    assert (info.value.row, info.value.value) == (4, "nan")
    with pytest.raises(DataError) as info:  # a blank line inside the file is a row, too
        _csv.read_table(write("u.csv", "x\n1.5\n\n2\n"), ("x",))
    assert (info.value.row, info.value.value) == (3, "0 fields")


def test_bools__accepts_spellings_and_rejects_others(write):
    t = _csv.read_table(write("t.csv", "b\n0\n1\nTrue\nfalse\nTRUE\n"), ("b",))
    assert _csv.bools(t, "b").tolist() == [False, True, True, False, True]
    t = _csv.read_table(write("u.csv", "b\n1\n2\n"), ("b",))
    with pytest.raises(DataError) as info:
        _csv.bools(t, "b")
    assert (info.value.field, info.value.value, info.value.row) == ("b", "2", 3)


def test_strs__strips_and_rejects_empty(write):
    t = _csv.read_table(write("t.csv", "s,k\n a ,1\n,2\n"), ("s",))
    assert _csv.strs(t, "s", nonempty=False).tolist() == ["a", ""]
    with pytest.raises(DataError) as info:
        _csv.strs(t, "s")
    assert info.value.row == 3


@given(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=20))
def test_ints__roundtrip_any_int32(values):
    t = _csv.Table(_csv.Path("mem.csv"), ("n",), {"n": [str(v) for v in values]}, len(values))
    assert _csv.ints(t, "n").tolist() == values


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=20))
def test_floats__roundtrip_any_finite_float(values):
    t = _csv.Table(_csv.Path("mem.csv"), ("x",), {"x": [repr(v) for v in values]}, len(values))
    assert _csv.floats(t, "x").tolist() == values
