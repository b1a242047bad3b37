"""Reader of HPC job logs in the Standard Workload Format (SWF) of the Parallel Workloads Archive.

A job line has 18 whitespace-separated fields (``SWF_FIELDS``); ``-1`` means unknown. Header
and comment lines start with ``;``; header lines read ``; Key: value`` (``MaxNodes``,
``MaxProcs``, ``UnixStartTime``, ...). The log feeds ``mtgym.generate.backfill``, which replays
it under FCFS + EASY backfilling to find the idle windows the batch scheduler leaves.

Real logs differ from the specification, and the reader tolerates what they do:

* ``;`` lines anywhere (not only at the top), blank lines, and extra trailing columns;
* absolute Unix submit times: when the header has ``UnixStartTime`` and the earliest submit
  time is at least half of it (relative times would need a log of decades), it is subtracted;
* allocated processors ``-1``: the requested ones are used (and the other way round);
* requested time ``-1`` (or 0): the run time is used, i.e. a perfect estimate;
* cancelled jobs (status 5), jobs with no run time (``<= 0``) and jobs with no processors
  are dropped and counted in ``SWFLog.dropped``, since they never occupied a node;
* submit times out of order: jobs are sorted by submit time (stably, so ties keep file order).

Processors become nodes by ``ceil(procs / procs_per_node)``: ``procs_per_node`` is the
caller's flag, else ``MaxProcs / MaxNodes`` from the header when both are present, else 1
(the log counts nodes, as the Lublin model's log does).
"""

from __future__ import annotations

import math
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mtgym.core.errors import ConfigError, DataError
from mtgym.readers._csv import read_text, readonly

#: The 18 standard fields of a job line, in order.
SWF_FIELDS: tuple[str, ...] = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
NUM_FIELDS = len(SWF_FIELDS)
#: SWF status code of a job cancelled by its user.
STATUS_CANCELLED = 5

_F = {name: i for i, name in enumerate(SWF_FIELDS)}
#: Fields that must hold whole numbers (a fractional processor count is a broken line).
_INTEGER_FIELDS = ("job_number", "allocated_processors", "requested_processors", "status")
_HEADER_LINE = re.compile(r";\s*([A-Za-z][\w-]*)\s*:\s*(.*?)\s*$")
_LEADING_INT = re.compile(r"[-+]?\d+")


@dataclass(frozen=True, eq=False)
class SWFLog:
    """The jobs of one SWF log that occupied nodes, sorted by submit time.

    All arrays are read-only and have one row per kept job.

    Attributes:
        path: The file read (``None`` for a log built from arrays).
        header: ``Key -> value`` of the ``; Key: value`` lines (repeated keys joined by
            newlines), e.g. ``MaxNodes``, ``MaxProcs``, ``UnixStartTime``.
        job_id: (J,) int64 job number from the log.
        line: (J,) int64 1-based line of the file the job came from (-1 when built).
        submit_s: (J,) float64 submit time, s after the log start, non-decreasing.
        wait_s: (J,) float64 wait time recorded by the log (-1 = unknown).
        run_s: (J,) float64 run time, > 0.
        alloc_procs: (J,) int64 allocated processors (the requested ones when the log
            gives -1).
        req_procs: (J,) int64 requested processors (the allocated ones when -1).
        req_time_s: (J,) float64 requested (estimated) run time, > 0 (the run time when the
            log gives -1 or 0).
        status: (J,) int64 SWF status (1 completed, 0 failed, ...; 5 never appears: dropped).
        nodes: (J,) int64 nodes the job needs: ``ceil(alloc_procs / procs_per_node)``.
        procs_per_node: Processors per node used to derive ``nodes``.
        time_offset_s: What was subtracted from the file's submit times (``UnixStartTime``
            for absolute times, else 0); add it back for Unix times.
        dropped: Job lines dropped as cancelled, without run time or without processors.
    """

    path: Path | None
    header: Mapping[str, str]
    job_id: np.ndarray
    line: np.ndarray
    submit_s: np.ndarray
    wait_s: np.ndarray
    run_s: np.ndarray
    alloc_procs: np.ndarray
    req_procs: np.ndarray
    req_time_s: np.ndarray
    status: np.ndarray
    nodes: np.ndarray
    procs_per_node: int = 1
    time_offset_s: float = 0.0
    dropped: int = 0

    @property
    def num_jobs(self) -> int:
        """Number of jobs kept."""
        return int(self.submit_s.shape[0])

    @property
    def max_nodes(self) -> int | None:
        """The header's ``MaxNodes`` (the machine's node count), or None when absent."""
        return header_int(self.header, "MaxNodes", self.path)

    @property
    def max_procs(self) -> int | None:
        """The header's ``MaxProcs``, or None when absent."""
        return header_int(self.header, "MaxProcs", self.path)

    @classmethod
    def from_arrays(
        cls,
        submit_s: np.ndarray,
        run_s: np.ndarray,
        nodes: np.ndarray,
        req_time_s: np.ndarray | None = None,
        *,
        header: Mapping[str, str] | None = None,
    ) -> SWFLog:
        """Build a log of node-counted jobs from arrays (for tests and synthetic workloads).

        Args:
            submit_s: Submit times (any order; sorted stably).
            run_s: Run times, > 0.
            nodes: Nodes per job, >= 1.
            req_time_s: Requested times (default: the run times).
            header: Header lines to record.

        Returns:
            The log, jobs sorted by submit time; ``job_id`` is each job's 1-based position
            in the given arrays, processors equal nodes (``procs_per_node`` 1), wait times
            unknown (-1) and every status 1 (completed).

        Raises:
            ConfigError: shapes differ, or a run time, requested time or node count is not
                positive.
        """
        submit = np.asarray(submit_s, dtype=np.float64)
        run = np.asarray(run_s, dtype=np.float64)
        n = np.asarray(nodes, dtype=np.int64)
        req = run.copy() if req_time_s is None else np.asarray(req_time_s, dtype=np.float64)
        if not (submit.shape == run.shape == n.shape == req.shape) or submit.ndim != 1:
            raise ConfigError("arrays", (submit.shape, run.shape, n.shape), "equal 1-D shapes")
        for name, arr, ok, allowed in (
            ("submit_s", submit, np.isfinite(submit), "finite"),
            ("run_s", run, np.isfinite(run) & (run > 0), "finite and > 0"),
            ("req_time_s", req, np.isfinite(req) & (req > 0), "finite and > 0"),
            ("nodes", n, n >= 1, ">= 1"),
        ):
            if not ok.all():
                j = int(np.argmin(ok))
                raise ConfigError(f"{name}[{j}]", arr[j].item(), allowed)
        order = np.argsort(submit, kind="stable")
        J = submit.size
        return cls(
            path=None,
            header=types.MappingProxyType(dict(header or {})),
            job_id=readonly(order.astype(np.int64) + 1),
            line=readonly(np.full(J, -1, dtype=np.int64)),
            submit_s=readonly(submit[order]),
            wait_s=readonly(np.full(J, -1.0)),
            run_s=readonly(run[order]),
            alloc_procs=readonly(n[order]),
            req_procs=readonly(n[order].copy()),
            req_time_s=readonly(req[order]),
            status=readonly(np.ones(J, dtype=np.int64)),
            nodes=readonly(n[order].copy()),
        )


def header_int(header: Mapping[str, str], key: str, path: Path | str | None) -> int | None:
    """The leading integer of header value ``key`` (None when the key is absent).

    Trailing text is ignored, so ``"1024 (nodes)"`` reads 1024.

    Args:
        header: the header entries of a log.
        key: the header key, e.g. ``"MaxNodes"``.
        path: the log, for the error (None: a log built from arrays).

    Raises:
        DataError: the value does not start with an integer.
    """
    if key not in header:
        return None
    m = _LEADING_INT.match(header[key])
    if m is None:
        raise DataError(path or "<arrays>", key, header[key], "an integer header value")
    return int(m.group())


def read_swf(path: str | Path, *, procs_per_node: int | None = None) -> SWFLog:
    """Read an SWF log (plain or gzip) into arrays of the jobs that occupied nodes.

    Args:
        path: The log file.
        procs_per_node: Processors per node; overrides the header's ``MaxProcs/MaxNodes``.

    Returns:
        The jobs, sorted by submit time, with submit times relative to the log start.

    Raises:
        DataError: the file is unreadable; a job line has fewer than 18 fields, a field that
            is not a finite number, a fractional processor count, job number or status, or a
            negative submit time; a header value used here is not an integer; ``MaxProcs`` is
            not a multiple of ``MaxNodes`` (pass ``procs_per_node``); the file has no job line.
            The error names the file, line, field and value.
        ConfigError: ``procs_per_node`` < 1.
    """
    if procs_per_node is not None and procs_per_node < 1:
        raise ConfigError("procs_per_node", procs_per_node, ">= 1 (or None)")
    p = Path(path)
    header, rows, lines = _split_lines(p, read_text(p))
    if not rows:
        raise DataError(p, "jobs", 0, "at least one job line")
    data = _to_floats(p, rows, lines)
    col = {name: data[:, i] for name, i in _F.items()}
    for name in _INTEGER_FIELDS:
        _check(p, lines, name, col[name], col[name] == np.round(col[name]), "a whole number")
    _check(p, lines, "submit_time", col["submit_time"], col["submit_time"] >= 0, ">= 0")

    ppn = procs_per_node or _header_procs_per_node(p, header)
    submit = col["submit_time"].copy()
    offset = 0.0
    unix_start = header_int(header, "UnixStartTime", p)
    if unix_start is not None and unix_start > 0 and submit.min() >= unix_start / 2:
        offset = float(unix_start)
        submit -= offset
    alloc = col["allocated_processors"].astype(np.int64)
    req = col["requested_processors"].astype(np.int64)
    alloc = np.where(alloc > 0, alloc, req)
    req = np.where(req > 0, req, alloc)
    run = col["run_time"]
    req_time = np.where(col["requested_time"] > 0, col["requested_time"], run)
    status = col["status"].astype(np.int64)
    nodes = -(-np.maximum(alloc, 0) // ppn)  # ceil for non-negative counts

    keep = (status != STATUS_CANCELLED) & (run > 0) & (nodes > 0)
    idx = np.flatnonzero(keep)
    idx = idx[np.argsort(submit[idx], kind="stable")]
    return SWFLog(
        path=p,
        header=types.MappingProxyType(header),
        job_id=readonly(col["job_number"][idx].astype(np.int64)),
        line=readonly(np.asarray(lines, dtype=np.int64)[idx]),
        submit_s=readonly(submit[idx]),
        wait_s=readonly(col["wait_time"][idx].copy()),
        run_s=readonly(run[idx].copy()),
        alloc_procs=readonly(alloc[idx]),
        req_procs=readonly(req[idx]),
        req_time_s=readonly(req_time[idx]),
        status=readonly(status[idx]),
        nodes=readonly(nodes[idx]),
        procs_per_node=int(ppn),
        time_offset_s=offset,
        dropped=int(keep.size - idx.size),
    )


def _split_lines(path: Path, text: str) -> tuple[dict[str, str], list[list[str]], list[int]]:
    """Split the text into header entries and the first 18 fields of each job line.

    Lines are split on line feeds only (not ``str.splitlines``, which also splits on form
    feeds and other separators), so line numbers match what editors show.

    Args:
        path: the file, for the errors.
        text: its whole text.

    Returns:
        (header, rows, lines): ``Key -> value`` of the ``; Key: value`` lines (a repeated
        key's values joined by newlines), the first 18 fields of each job line as text, and
        each job line's 1-based line number.

    Raises:
        DataError: a job line with fewer than 18 fields.
    """
    header: dict[str, str] = {}
    rows: list[list[str]] = []
    lines: list[int] = []
    for i, raw in enumerate(text.split("\n"), start=1):
        s = raw.strip()
        if not s:
            continue
        if s[0] == ";":
            m = _HEADER_LINE.match(s)
            if m is not None:
                key, value = m.groups()
                header[key] = f"{header[key]}\n{value}" if key in header else value
            continue
        fields = s.split()
        if len(fields) < NUM_FIELDS:
            raise DataError(
                path,
                "fields",
                f"{len(fields)} fields",
                f"at least {NUM_FIELDS} whitespace-separated fields ({', '.join(SWF_FIELDS)})",
                row=i,
            )
        rows.append(fields[:NUM_FIELDS])
        lines.append(i)
    return header, rows, lines


def _to_floats(path: Path, rows: list[list[str]], lines: list[int]) -> np.ndarray:
    """The job fields as an (R, 18) float64 array; the first bad token raises.

    Args:
        path: the file, for the error.
        rows: the job lines' first 18 fields, as text.
        lines: each job line's 1-based line number.

    Raises:
        DataError: the first token, row by row, that is not a finite number.
    """
    try:
        data = np.array(rows, dtype=np.float64)
    except ValueError:
        data = None
    if data is not None and np.isfinite(data).all():
        return data
    for r, fields in enumerate(rows):
        for name, tok in zip(SWF_FIELDS, fields, strict=True):
            try:
                ok = math.isfinite(float(tok))
            except ValueError:
                ok = False
            if not ok:
                raise DataError(path, name, tok, "a finite number", row=lines[r])
    raise AssertionError("unreachable: a bad token was not found")  # pragma: no cover


def _check(
    path: Path, lines: list[int], name: str, values: np.ndarray, ok: np.ndarray, allowed: str
) -> None:
    """Raise for the first job line where ``ok`` is False in field ``name``.

    Args:
        path: the file.
        lines: each job line's 1-based line number.
        name: the SWF field checked.
        values: (R,) the field's values (shown as an integer when whole).
        ok: (R,) bool, the lines that pass.
        allowed: what a value should be, for the message.
    """
    if not ok.all():
        r = int(np.argmin(ok))
        v = float(values[r])
        raise DataError(path, name, int(v) if v.is_integer() else v, allowed, row=lines[r])


def _header_procs_per_node(path: Path, header: Mapping[str, str]) -> int:
    """``MaxProcs / MaxNodes`` when both header values are present, else 1.

    Args:
        path: the file, for the errors.
        header: its header entries.

    Raises:
        DataError: ``MaxNodes`` < 1, or ``MaxProcs`` not a positive multiple of it.
    """
    max_nodes = header_int(header, "MaxNodes", path)
    max_procs = header_int(header, "MaxProcs", path)
    if max_nodes is None or max_procs is None:
        return 1
    if max_nodes < 1:
        raise DataError(path, "MaxNodes", max_nodes, ">= 1")
    if max_procs < max_nodes or max_procs % max_nodes:
        raise DataError(
            path,
            "MaxProcs",
            max_procs,
            f"a multiple of MaxNodes ({max_nodes}), or pass procs_per_node",
        )
    return max_procs // max_nodes
