from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from mtgym.core.errors import ConfigError, DataError
from mtgym.readers.swf import SWF_FIELDS, SWFLog, read_swf


def job(
    num: int,
    submit: float,
    run: float,
    alloc: int,
    *,
    wait: float = -1,
    req_procs: int = -1,
    req_time: float = -1,
    status: int = 1,
    extra: str = "",
) -> str:
    """One SWF job line (18 fields, plus ``extra`` trailing text)."""
    fields = [num, submit, wait, run, alloc, -1, -1, req_procs, req_time, -1, status]
    fields += [-1] * 7
    return " ".join(str(f) for f in fields) + (f" {extra}" if extra else "")


def write(tmp_path: Path, *lines: str, name: str = "log.swf") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


# -- the standard format ----------------------------------------------------------------
def test_read_swf__standard_18_fields(tmp_path):
    p = write(
        tmp_path,
        "; Version: 2",
        "; MaxNodes: 8",
        "; MaxRuntime: 100",
        job(1, 0, 50, 2, wait=3, req_procs=2, req_time=60),
        job(2, 10, 20, 1, req_procs=1, req_time=30, status=0),
        job(3, 25, 100, 8, req_procs=8, req_time=100),
    )
    log = read_swf(p)
    assert log.num_jobs == 3
    assert log.dropped == 0
    assert log.job_id.tolist() == [1, 2, 3]
    assert log.line.tolist() == [4, 5, 6]
    assert log.submit_s.tolist() == [0.0, 10.0, 25.0]
    assert log.wait_s.tolist() == [3.0, -1.0, -1.0]
    assert log.run_s.tolist() == [50.0, 20.0, 100.0]
    assert log.alloc_procs.tolist() == [2, 1, 8]
    assert log.req_procs.tolist() == [2, 1, 8]
    assert log.req_time_s.tolist() == [60.0, 30.0, 100.0]
    assert log.status.tolist() == [1, 0, 1]
    assert log.nodes.tolist() == [2, 1, 8]
    assert log.procs_per_node == 1
    assert log.time_offset_s == 0.0
    assert log.header["Version"] == "2"
    assert log.max_nodes == 8
    assert log.max_procs is None
    assert len(SWF_FIELDS) == 18


def test_read_swf__arrays_are_read_only(tmp_path):
    log = read_swf(write(tmp_path, job(1, 0, 5, 1)))
    for name in ("job_id", "submit_s", "run_s", "nodes", "req_time_s", "alloc_procs"):
        with pytest.raises(ValueError):
            getattr(log, name)[0] = 0
    with pytest.raises(TypeError):
        log.header["MaxNodes"] = "3"  # type: ignore[index]


def test_read_swf__extra_trailing_columns_ignored(tmp_path):
    p = write(tmp_path, job(1, 0, 5, 2, extra="7 8 9 partition-x"), job(2, 4, 6, 1, extra="1"))
    log = read_swf(p)
    assert log.run_s.tolist() == [5.0, 6.0]
    assert log.nodes.tolist() == [2, 1]


def test_read_swf__absolute_unix_submit_times_made_relative(tmp_path):
    u = 1_600_000_000
    p = write(
        tmp_path,
        f"; UnixStartTime: {u}",
        "; TimeZoneString: Europe/Paris",
        job(1, u + 100, 10, 1),
        job(2, u + 250, 10, 1),
    )
    log = read_swf(p)
    assert log.submit_s.tolist() == [100.0, 250.0]
    assert log.time_offset_s == float(u)
    assert log.header["TimeZoneString"] == "Europe/Paris"


def test_read_swf__relative_submit_times_kept_despite_unix_start_time(tmp_path):
    p = write(tmp_path, "; UnixStartTime: 1600000000", job(1, 100, 10, 1), job(2, 86400, 10, 1))
    log = read_swf(p)
    assert log.submit_s.tolist() == [100.0, 86400.0]
    assert log.time_offset_s == 0.0


def test_read_swf__alloc_minus_one_uses_requested_processors(tmp_path):
    p = write(tmp_path, job(1, 0, 10, -1, req_procs=6), job(2, 1, 10, 3, req_procs=-1))
    log = read_swf(p)
    assert log.alloc_procs.tolist() == [6, 3]
    assert log.req_procs.tolist() == [6, 3]
    assert log.nodes.tolist() == [6, 3]


def test_read_swf__unknown_requested_time_uses_run_time(tmp_path):
    p = write(tmp_path, job(1, 0, 10, 1, req_time=-1), job(2, 1, 7, 1, req_time=0))
    assert read_swf(p).req_time_s.tolist() == [10.0, 7.0]


def test_read_swf__cancelled_and_empty_jobs_dropped_and_counted(tmp_path):
    p = write(
        tmp_path,
        job(1, 0, 10, 2),
        job(2, 1, 10, 2, status=5),  # cancelled
        job(3, 2, 0, 2),  # no run time
        job(4, 3, -1, 2),  # unknown run time
        job(5, 4, 10, -1, req_procs=-1),  # no processors
        job(6, 5, 10, 0, req_procs=0),  # zero processors
        job(7, 6, 10, 1, status=0),  # failed, but it ran: kept
    )
    log = read_swf(p)
    assert log.job_id.tolist() == [1, 7]
    assert log.dropped == 5


def test_read_swf__comments_anywhere_and_blank_lines(tmp_path):
    p = write(
        tmp_path,
        "",
        "; MaxNodes: 4",
        job(1, 0, 10, 1),
        ";",
        "; a free-text comment: not a header key",
        "   ",
        "; Note: first",
        job(2, 5, 10, 2),
        "; Note: second",
        "",
    )
    log = read_swf(p)
    assert log.job_id.tolist() == [1, 2]
    assert log.line.tolist() == [3, 8]
    assert log.header["Note"] == "first\nsecond"
    assert "a free-text comment" not in log.header
    assert log.max_nodes == 4


def test_read_swf__crlf_line_endings(tmp_path):
    p = tmp_path / "crlf.swf"
    p.write_bytes(("; MaxNodes: 2\r\n" + job(1, 0, 3, 2) + "\r\n").encode())
    log = read_swf(p)
    assert log.nodes.tolist() == [2]
    assert log.max_nodes == 2


def test_read_swf__gzip_transparent(tmp_path):
    text = "\n".join(["; MaxNodes: 4", job(1, 0, 10, 3), job(2, 2, 5, 1)]) + "\n"
    p = tmp_path / "log.swf.gz"
    p.write_bytes(gzip.compress(text.encode()))
    log = read_swf(p)
    assert log.nodes.tolist() == [3, 1]
    assert log.max_nodes == 4


def test_read_swf__procs_to_nodes_via_header(tmp_path):
    p = write(
        tmp_path,
        "; MaxNodes: 16",
        "; MaxProcs: 64",
        job(1, 0, 10, 1),
        job(2, 1, 10, 4),
        job(3, 2, 10, 5),
        job(4, 3, 10, 64),
    )
    log = read_swf(p)
    assert log.procs_per_node == 4
    assert log.alloc_procs.tolist() == [1, 4, 5, 64]
    assert log.nodes.tolist() == [1, 1, 2, 16]


def test_read_swf__procs_to_nodes_via_flag_overrides_header(tmp_path):
    p = write(tmp_path, "; MaxNodes: 16", "; MaxProcs: 64", job(1, 0, 10, 9), job(2, 1, 10, 8))
    log = read_swf(p, procs_per_node=8)
    assert log.procs_per_node == 8
    assert log.nodes.tolist() == [2, 1]


def test_read_swf__max_nodes_without_max_procs_counts_nodes(tmp_path):
    p = write(tmp_path, "; MaxNodes: 16", job(1, 0, 10, 9))
    log = read_swf(p)
    assert log.procs_per_node == 1
    assert log.nodes.tolist() == [9]


def test_read_swf__unsorted_submits_sorted_stably(tmp_path):
    p = write(
        tmp_path,
        job(1, 30, 1, 1),
        job(2, 10, 1, 1),
        job(3, 20, 1, 1),
        job(4, 10, 1, 1),
    )
    log = read_swf(p)
    assert log.job_id.tolist() == [2, 4, 3, 1]
    assert log.submit_s.tolist() == [10.0, 10.0, 20.0, 30.0]
    assert log.line.tolist() == [2, 4, 3, 1]


def test_read_swf__decimal_fields_accepted(tmp_path):
    p = write(tmp_path, "1 0.5 -1 10.25 2 3.75 -1 2 12.5 -1 1 -1 -1 -1 -1 -1 -1 -1")
    log = read_swf(p)
    assert log.submit_s.tolist() == [0.5]
    assert log.run_s.tolist() == [10.25]
    assert log.req_time_s.tolist() == [12.5]


# -- malformed logs -------------------------------------------------------------------
GOOD = job(1, 0, 10, 1)


@pytest.mark.parametrize(
    ("lines", "field", "row", "value"),
    [
        pytest.param([GOOD, "2 5 -1 10 1 -1 -1 1 -1 -1 1"], "fields", 2, "11 fields", id="short"),
        pytest.param(
            [GOOD, job(2, 5, 10, 1).replace(" 10 ", " ten ", 1)], "run_time", 2, "ten", id="text"
        ),
        pytest.param(
            ["; MaxNodes: 4", GOOD, job(3, "nan", 1, 1)], "submit_time", 3, "nan", id="nan"
        ),
        pytest.param([GOOD, job(2, 5, "inf", 1)], "run_time", 2, "inf", id="inf"),
        pytest.param([GOOD, job(2, 5, 10, 1.5)], "allocated_processors", 2, 1.5, id="frac-procs"),
        pytest.param([GOOD, job(2, 5, 10, 1, status=1.5)], "status", 2, 1.5, id="frac-status"),
        pytest.param([GOOD, job(2, -1, 10, 1)], "submit_time", 2, -1, id="neg-submit"),
        pytest.param([job("1a", 0, 10, 1)], "job_number", 1, "1a", id="job-number"),
        pytest.param(["; MaxNodes: many", GOOD], "MaxNodes", None, "many", id="header-int"),
        pytest.param(["; MaxNodes: 3", "; MaxProcs: 8", GOOD], "MaxProcs", None, 8, id="ppn"),
        pytest.param(["; MaxNodes: 0", "; MaxProcs: 8", GOOD], "MaxNodes", None, 0, id="no-nodes"),
        pytest.param(["; only comments", ""], "jobs", None, 0, id="no-jobs"),
    ],
)
def test_read_swf__malformed_raises_data_error(tmp_path, lines, field, row, value):
    p = write(tmp_path, *lines)
    with pytest.raises(DataError) as info:
        read_swf(p)
    err = info.value
    assert err.field == field
    assert err.row == row
    assert err.value == value
    assert str(p) in str(err)
    if row is not None:
        assert f"row {row}" in str(err)


def test_read_swf__missing_file_raises_data_error(tmp_path):
    with pytest.raises(DataError) as info:
        read_swf(tmp_path / "nope.swf")
    assert info.value.field == "path"


def test_read_swf__truncated_gzip_raises_data_error(tmp_path):
    p = tmp_path / "bad.swf.gz"
    p.write_bytes(gzip.compress((GOOD + "\n").encode())[:-8])
    with pytest.raises(DataError) as info:
        read_swf(p)
    assert info.value.field == "gzip"


def test_read_swf__bad_procs_per_node_flag_raises_config_error(tmp_path):
    with pytest.raises(ConfigError):
        read_swf(write(tmp_path, GOOD), procs_per_node=0)


# -- SWFLog.from_arrays -----------------------------------------------------------------
def test_swf_log_from_arrays__sorts_and_defaults_requested_time():
    log = SWFLog.from_arrays(np.array([5.0, 1.0]), np.array([2.0, 3.0]), np.array([1, 4]))
    assert log.submit_s.tolist() == [1.0, 5.0]
    assert log.job_id.tolist() == [2, 1]
    assert log.nodes.tolist() == [4, 1]
    assert log.req_time_s.tolist() == [3.0, 2.0]
    assert log.dropped == 0


def test_swf_log_from_arrays__rejects_non_positive_run_time():
    with pytest.raises(ConfigError) as info:
        SWFLog.from_arrays(np.array([0.0, 1.0]), np.array([2.0, 0.0]), np.array([1, 1]))
    assert info.value.field == "run_s[1]"


# -- the real Lublin log ----------------------------------------------------------------
def test_read_swf__lublin_log(shared_data):
    path = shared_data / "swf" / "lublin_256.swf"
    log = read_swf(path)
    assert log.num_jobs == 10_000
    assert log.dropped == 0
    assert log.max_nodes == 256
    assert log.procs_per_node == 1
    assert log.job_id[0] == 1 and log.submit_s[0] == 5094.0 and log.run_s[0] == 12072.0
    assert log.nodes[0] == 16
    assert np.all(np.diff(log.submit_s) >= 0)
    assert log.nodes.min() >= 1 and log.nodes.max() <= 256
    # The log gives no requested times: estimates are perfect.
    assert np.array_equal(log.req_time_s, log.run_s)
    assert np.all(log.wait_s == -1)
