"""The bridge's trace: a versioned JSON-lines record of a policy's decisions.

Line 1 is the header::

    {"format": "mtgym-trace", "version": 1, "scenario": "...", "policy": "...", "seed": 0,
     "t_start": 0.0, "t_end": 300.0, "num_nodes": 4, "gpus_per_node": 1,
     "jobs": {"0": {"name": ..., "model": ..., "app_class": "D", "min_nodes": 1,
                    "max_nodes": 2, "submit_s": 0.0, "work": ..., "r_up_s": ...,
                    "r_down_s": ..., "startup_s": ..., "curve": {"1": 100.0, "2": 200.0}}}}

then one line per change of a job's node set, in time order::

    {"t": 100.0, "job": "0", "nodes": [0, 2], "world_size": 2, "reason": "decision",
     "rate": 200.0}

and a last line ``{"t": <end>, "end": true}``. ``world_size`` is the number of simulator
nodes (``len(nodes)``); a replay runs ``world_size x workers_per_node`` real workers.
``reason`` is ``decision`` (the policy changed it), ``reclaim`` (the host took a node back:
the real job must shrink within the replay's deadline), ``complete``/``stopped`` (the job
finished or its campaign stopped it) or ``release`` (a reclaim left it below its minimum).
``rate`` and ``curve`` are the simulator's predicted samples/s on that node set and on n
packed best nodes. Times are simulated seconds.

``read_trace`` validates everything and rejects an unknown ``format`` or ``version`` with
a clear message; ``TraceWriter`` streams a trace.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from mtgym.core.errors import DataError

FORMAT = "mtgym-trace"
VERSION = 1
REASONS = ("decision", "reclaim", "complete", "stopped", "release")
#: the header ``extra`` key holding the recording's decision interval (simulated seconds;
#: null: at every event), which ``mtgym dataset from-trace`` decides on
INTERVAL_KEY = "decision_interval_s"


class TraceError(DataError):
    """A trace file is malformed, truncated or of an unsupported version.

    Built as ``DataError(path, field, value, allowed, row=line)``: the message names the
    file, the line (1 is the header), the field (``jobs.<id>.r_up_s``) and the bad value.
    """


class FieldError(ValueError):
    """One bad field (``read_trace`` turns it into a ``TraceError`` naming file and line).

    Raised by the validators that do not know the file (``TraceJob.from_json``,
    ``check_job_id``, the number checks).

    Args:
        field: the field's name inside its object (``r_up_s``, ``curve.2``).
        value: the value found.
        allowed: what would have been accepted, in words.
    """

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        self.field, self.value, self.allowed = field, value, allowed
        super().__init__(f"field {field!r} has value {value!r}; allowed: {allowed}")


#: A job id is used as a folder name (``jobs/<id>``): a short, safe path part only.
JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def check_job_id(job_id: Any) -> str:
    """``job_id`` if it is a safe path part (no separators, ``..``, absolute paths).

    Allowed: 1 to 64 letters, digits, ``.``, ``_`` and ``-``, starting with a letter or
    digit, without ``..`` (``JOB_ID``). Each id names a folder ``jobs/<id>`` of a replay.

    Args:
        job_id: the id read from the header's ``jobs`` keys.

    Raises:
        FieldError: on field ``jobs`` when the id is not a string or not safe.
    """
    if not isinstance(job_id, str) or not JOB_ID.match(job_id) or ".." in job_id:
        raise FieldError(
            "jobs",
            job_id,
            "job ids of letters, digits, '.', '_' and '-' (1-64, no '..', no separators): "
            "each names a folder jobs/<id>",
        )
    return job_id


def _number(v: Any, field: str, *, lo: float | None = None, positive: bool = False) -> float:
    """A finite JSON number (not a bool), >= ``lo`` (> ``lo`` when ``positive``).

    Args:
        v: the JSON value.
        field: its name, for the error.
        lo: the lower bound (None: any finite number).
        positive: make the bound strict.

    Raises:
        FieldError: not a number, NaN or infinite, or below the bound.
    """
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise FieldError(field, v, "a finite number")
    if lo is not None and (v <= lo if positive else v < lo):
        raise FieldError(field, v, f"a finite number {'>' if positive else '>='} {lo:g}")
    return float(v)


def _count(v: Any, field: str, lo: int) -> int:
    """An integer >= ``lo`` (an integral float such as 2.0 is fine; 1.5 and bools are not).

    Args:
        v: the JSON value.
        field: its name, for the error.
        lo: the smallest allowed value.

    Raises:
        FieldError: a bool, not a number, NaN, infinite, a fraction, or below ``lo``.
    """
    if (
        isinstance(v, bool)
        or not isinstance(v, int | float)
        or v != v
        or v in (math.inf, -math.inf)
    ):
        raise FieldError(field, v, f"an integer >= {lo}")
    if isinstance(v, float) and not v.is_integer():
        raise FieldError(field, v, f"an integer >= {lo} (not a fraction)")
    if v < lo:
        raise FieldError(field, v, f"an integer >= {lo}")
    return int(v)


@dataclass
class TraceJob:
    """A job as the simulator saw it (``curve``: node count -> predicted samples/s).

    Times are simulated seconds; the replay divides them by its time scale.

    Attributes:
        name: the simulator's job name (not the id: ids are the header's keys).
        model: the simulator's model name, free text; it does not pick the torch model.
        app_class: PAL's class, ``"A"`` to ``"D"``; it picks the torch model of a replay.
        min_nodes: the fewest simulator nodes the job runs on (>= 1).
        max_nodes: the most simulator nodes it runs on (>= ``min_nodes``).
        submit_s: when it was submitted.
        work: samples to process to complete (``inf``: unbounded, ``null`` in JSON).
        r_up_s: pause of a scale-up.
        r_down_s: pause of a scale-down.
        startup_s: pause of a start from 0 nodes.
        curve: ``n`` (>= 1) -> the simulator's rate in samples/s on ``n`` packed nodes of
            the job's best type; may be empty.
    """

    name: str
    model: str = ""
    app_class: str = "D"
    min_nodes: int = 1
    max_nodes: int = 1
    submit_s: float = 0.0
    work: float = math.inf
    r_up_s: float = 0.0
    r_down_s: float = 0.0
    startup_s: float = 0.0
    curve: dict[int, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (curve keys as strings, sorted by node count; inf work as null)."""
        d = asdict(self)
        d["curve"] = {str(k): float(v) for k, v in sorted(self.curve.items())}
        d["work"] = None if not math.isfinite(self.work) else float(self.work)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TraceJob:
        """Inverse of ``to_json``, validating every field.

        Missing fields take the dataclass defaults except ``name``; ``app_class`` is read
        case-insensitively; ``curve`` keys must be decimal integers >= 1.

        Args:
            d: one entry of the header's ``jobs`` object.

        Raises:
            FieldError: a missing name, an unknown field, or one that is out of range (its
                name, value, allowed).
        """
        if not isinstance(d, dict):
            raise FieldError("", d, "an object with the job's fields")
        known = set(cls.__dataclass_fields__)
        extra = set(d) - known
        if extra:
            raise FieldError(sorted(extra)[0], d[sorted(extra)[0]], f"one of {sorted(known)}")
        if not isinstance(d.get("name"), str) or not d["name"]:
            raise FieldError("name", d.get("name"), "a non-empty string")
        model = d.get("model", "")
        if not isinstance(model, str):
            raise FieldError("model", model, "a string (the simulator's model name)")
        app = d.get("app_class", "D")
        if not isinstance(app, str) or app.strip().upper() not in ("A", "B", "C", "D"):
            raise FieldError("app_class", app, "one of A, B, C, D")
        lo = _count(d.get("min_nodes", 1), "min_nodes", 1)
        hi = _count(d.get("max_nodes", 1), "max_nodes", 1)
        if hi < lo:
            raise FieldError("max_nodes", hi, f"an integer >= min_nodes ({lo})")
        work = d.get("work")
        curve_in = d.get("curve") or {}
        if not isinstance(curve_in, dict):
            raise FieldError("curve", curve_in, "an object: node count -> samples/s")
        curve: dict[int, float] = {}
        for k, v in curve_in.items():
            try:
                n = int(k)
            except (TypeError, ValueError):
                raise FieldError("curve", k, "node counts >= 1 as keys") from None
            if n < 1 or str(n) != str(k).strip():
                raise FieldError("curve", k, "node counts >= 1 as keys")
            curve[n] = _number(v, f"curve.{k}", lo=0.0)
        return cls(
            name=d["name"],
            model=model,
            app_class=app.strip().upper(),
            min_nodes=lo,
            max_nodes=hi,
            submit_s=_number(d.get("submit_s", 0.0), "submit_s"),
            work=math.inf if work is None else _number(work, "work", lo=0.0, positive=True),
            r_up_s=_number(d.get("r_up_s", 0.0), "r_up_s", lo=0.0),
            r_down_s=_number(d.get("r_down_s", 0.0), "r_down_s", lo=0.0),
            startup_s=_number(d.get("startup_s", 0.0), "startup_s", lo=0.0),
            curve=curve,
        )


@dataclass
class TraceHeader:
    """The first line of a trace.

    Attributes:
        scenario: the scenario the decisions were recorded on.
        policy: the recorded policy's name.
        seed: the episode seed (None: unknown).
        t_start: the recording's start, simulated seconds.
        t_end: the instance's end (or ``until``), simulated seconds; not the end line's time.
        num_nodes: simulator nodes; event node indices are below it.
        jobs: the jobs by id (each id a safe folder name, ``check_job_id``).
        gpus_per_node: GPUs of one simulator node in the scenario (>= 1).
        node_names: host names per node index (Slurm), or None.
        extra: free-form metadata, kept as read.
    """

    scenario: str
    policy: str
    seed: int | None
    t_start: float
    t_end: float
    num_nodes: int
    jobs: dict[str, TraceJob]
    gpus_per_node: int = 1
    node_names: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The header line's object, with ``format`` and ``version`` added."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "scenario": self.scenario,
            "policy": self.policy,
            "seed": self.seed,
            "t_start": self.t_start,
            "t_end": self.t_end,
            "num_nodes": self.num_nodes,
            "gpus_per_node": self.gpus_per_node,
            "node_names": self.node_names,
            "jobs": {k: j.to_json() for k, j in self.jobs.items()},
            "extra": self.extra,
        }


@dataclass(frozen=True)
class TraceEvent:
    """A job's node set from time ``t`` on (simulated seconds).

    Attributes:
        t: when the set takes effect.
        job: the job id.
        nodes: simulator node indices, empty when the job stops.
        reason: one of ``REASONS`` (see the module docstring).
        rate: the simulator's predicted samples/s on this node set (None: not recorded).
    """

    t: float
    job: str
    nodes: tuple[int, ...]
    reason: str = "decision"
    rate: float | None = None  # the simulator's predicted samples/s on this node set

    @property
    def world_size(self) -> int:
        """Number of simulator nodes."""
        return len(self.nodes)

    def to_json(self) -> dict[str, Any]:
        """The line's object (``world_size`` included; ``rate`` only when known)."""
        d: dict[str, Any] = {
            "t": self.t,
            "job": self.job,
            "nodes": list(self.nodes),
            "world_size": self.world_size,
            "reason": self.reason,
        }
        if self.rate is not None:
            d["rate"] = self.rate
        return d


@dataclass(frozen=True)
class Segment:
    """A job held ``nodes`` on [t0, t1) (simulated seconds).

    Attributes:
        job: the job id.
        t0: the start of the interval (the event's time).
        t1: the next change of the job, or the trace's end.
        nodes: the non-empty node set held throughout.
        reason: the reason of the event that opened the interval.
        rate: that event's predicted samples/s, or None.
    """

    job: str
    t0: float
    t1: float
    nodes: tuple[int, ...]
    reason: str
    rate: float | None

    @property
    def world_size(self) -> int:
        """Number of simulator nodes."""
        return len(self.nodes)


@dataclass
class Trace:
    """A whole trace: header, node-set changes, and the end time.

    Attributes:
        header: the first line.
        events: the node-set changes in time order (validated by ``read_trace``).
        t_end: the end line's time, simulated seconds: every job stops there.
    """

    header: TraceHeader
    events: list[TraceEvent]
    t_end: float

    @property
    def jobs(self) -> dict[str, TraceJob]:
        """Jobs by id."""
        return self.header.jobs

    def segments(self, job: str | None = None) -> list[Segment]:
        """Intervals with a constant, non-empty node set (all jobs or one), by start time.

        Zero-length intervals (two changes of a job at the same time) are dropped; the last
        interval of a running job ends at ``t_end``.

        Args:
            job: one job id, or None for all jobs.

        Returns:
            The segments sorted by ``(t0, job)``.
        """
        out: list[Segment] = []
        open_: dict[str, TraceEvent] = {}
        for ev in self.events:
            if job is not None and ev.job != job:
                continue
            prev = open_.pop(ev.job, None)
            if prev is not None and prev.nodes and ev.t > prev.t:
                out.append(Segment(ev.job, prev.t, ev.t, prev.nodes, prev.reason, prev.rate))
            open_[ev.job] = ev
        for ev in open_.values():
            if ev.nodes and self.t_end > ev.t:
                out.append(Segment(ev.job, ev.t, self.t_end, ev.nodes, ev.reason, ev.rate))
        return sorted(out, key=lambda s: (s.t0, s.job))

    def world_sizes(self, job: str) -> list[tuple[float, int]]:
        """(t, world size) steps of one job, 0 = not running.

        Args:
            job: the job id.

        Returns:
            One pair per event of the job, in trace order (simulated seconds, nodes).
        """
        return [(ev.t, ev.world_size) for ev in self.events if ev.job == job]

    def predicted_rate(self, job: str, world_size: int) -> float | None:
        """The simulator's rate of ``job`` on ``world_size`` nodes: the time-weighted mean of
        the rates it used on such node sets, else the header's curve (None if unknown).

        The recorded rates account for where the nodes were (slow nodes, spread); the
        curve is the packed best-node figure.

        Args:
            job: the job id.
            world_size: simulator nodes.

        Returns:
            samples per simulated second, or None when neither source has a figure.
        """
        num = den = 0.0
        for s in self.segments(job):
            if s.world_size == world_size and s.rate is not None:
                num += s.rate * (s.t1 - s.t0)
                den += s.t1 - s.t0
        if den > 0:
            return num / den
        return self.jobs[job].curve.get(world_size)

    def restricted(self, jobs: list[str] | None = None, until: float | None = None) -> Trace:
        """A copy with only ``jobs`` and only events before ``until``.

        The copy's header has those jobs only and ``t_end`` = the new end; events are
        shared (frozen), the header's other fields are copied shallowly.

        Args:
            jobs: the job ids to keep (None: all).
            until: the new end, simulated seconds (None: keep ``t_end``; never later).

        Raises:
            KeyError: a job id that the trace does not have.
        """
        keep = set(self.jobs if jobs is None else jobs)
        unknown = keep - set(self.jobs)
        if unknown:
            raise KeyError(f"unknown trace jobs {sorted(unknown)}; known: {sorted(self.jobs)}")
        t_end = self.t_end if until is None else min(self.t_end, until)
        header = TraceHeader(**{**self.header.__dict__})
        header.jobs = {k: v for k, v in self.jobs.items() if k in keep}
        header.t_end = t_end
        evs = [e for e in self.events if e.job in keep and e.t < t_end]
        return Trace(header, evs, t_end)


class TraceWriter:
    """Stream a trace: ``header`` first, then ``event`` calls in time order, then ``close``.

    The file is created (parents too) and the header written in ``__init__``; each line is
    compact JSON with NaN refused. Leaving a ``with`` block closes the file without the end
    line, so a trace whose writer failed reads as truncated.

    Args:
        path: the file to write (replaced if it exists).
        header: the first line.
    """

    def __init__(self, path: str | Path, header: TraceHeader) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f: IO[str] | None = open(self.path, "w", encoding="utf-8")  # noqa: SIM115
        self._t = -math.inf
        self._line(header.to_json())

    def _line(self, obj: dict[str, Any]) -> None:
        """Write one JSON line (asserts the file is still open)."""
        assert self._f is not None, "trace already closed"
        self._f.write(json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n")

    def event(self, ev: TraceEvent) -> None:
        """Append one change (times must not decrease).

        Args:
            ev: the change; its node set is not checked here (``read_trace`` does).

        Raises:
            ValueError: ``ev.t`` is before the previous event's time.
        """
        if ev.t < self._t:
            raise ValueError(f"trace events out of order: {ev.t} after {self._t}")
        self._t = ev.t
        self._line(ev.to_json())

    def close(self, t_end: float) -> None:
        """Write the end line and close (a no-op when already closed).

        Args:
            t_end: the end line's time, simulated seconds; every job stops there.
        """
        if self._f is None:
            return
        self._line({"t": float(t_end), "end": True})
        self._f.close()
        self._f = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def write_trace(path: str | Path, trace: Trace) -> Path:
    """Write a whole trace.

    Args:
        path: the file to write.
        trace: the header, events (in time order) and end time to write.

    Returns:
        ``path`` as a ``Path``.
    """
    w = TraceWriter(path, trace.header)
    for ev in trace.events:
        w.event(ev)
    w.close(trace.t_end)
    return Path(path)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of the file's non-blank lines, numbered from 1."""
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, start=1):
            if line.strip():
                yield i, line


def read_trace(path: str | Path, *, allow_truncated: bool = False) -> Trace:
    """Read and validate a trace.

    Node exclusivity is checked once all lines of an instant are read, so a hand-over
    between two jobs at the same time is accepted.

    Args:
        path: the trace file.
        allow_truncated: accept a file without its end line; the trace then ends at its
            last event (or ``t_start`` when it has none).

    Returns:
        The trace; blank lines are skipped.

    Raises:
        TraceError: not a trace, an unsupported version, a bad field (with the line), events
            out of order, a node held by two jobs at once, anything after the end line, or
            no end line (unless ``allow_truncated``).
    """
    path = Path(path)
    if not path.is_file():
        raise TraceError(path, "file", str(path), "an existing trace file")
    it = _lines(path)
    header = _read_header(path, _header_object(path, it))
    events: list[TraceEvent] = []
    held: dict[str, tuple[int, ...]] = {}
    t_prev = -math.inf
    t_end: float | None = None
    group_t: float | None = None
    lineno = 1
    for lineno, line in it:
        if t_end is not None:
            raise TraceError(path, "line", line[:60], "nothing after the end line", row=lineno)
        try:
            d = json.loads(line)
        except ValueError:
            raise TraceError(path, "line", line[:60], "a JSON object", row=lineno) from None
        if (
            not isinstance(d, dict)
            or not isinstance(d.get("t"), int | float)
            or isinstance(d.get("t"), bool)
        ):
            raise TraceError(path, "t", line[:60], "an object with a numeric 't'", row=lineno)
        t = float(d["t"])
        if not math.isfinite(t) or t < t_prev:
            raise TraceError(path, "t", t, f"finite and >= the previous time {t_prev}", row=lineno)
        if group_t is not None and t > group_t:
            _check_exclusive(path, held, lineno - 1)
        group_t = t
        t_prev = t
        if d.get("end") is True:
            t_end = t
            continue
        ev = _read_event(path, d, t, header, lineno)
        held[ev.job] = ev.nodes
        events.append(ev)
    if group_t is not None:
        _check_exclusive(path, held, lineno)
    if t_end is None:
        if not allow_truncated:
            raise TraceError(
                path, "end", "missing", 'a last line {"t": ..., "end": true} (truncated trace?)'
            )
        t_end = max(t_prev, header.t_start) if events else header.t_start
    return Trace(header, events, t_end)


def _header_object(path: Path, it: Iterator[tuple[int, str]]) -> dict[str, Any]:
    """The trace's first line as a JSON object of this format and version."""
    try:
        lineno, first = next(it)
    except StopIteration:
        raise TraceError(path, "header", "empty file", "a JSON header line") from None
    try:
        h = json.loads(first)
    except ValueError as exc:
        raise TraceError(path, "header", first[:60], f"a JSON object ({exc})", row=1) from None
    if not isinstance(h, dict) or h.get("format") != FORMAT:
        got = h.get("format") if isinstance(h, dict) else type(h).__name__
        raise TraceError(path, "format", got, f"{FORMAT!r} (not an mtgym trace)", row=lineno)
    if h.get("version") != VERSION:
        raise TraceError(
            path,
            "version",
            h.get("version"),
            f"{VERSION}: this mtgym reads trace version {VERSION} only; re-record the trace "
            "with this mtgym or read it with the mtgym that wrote it",
            row=lineno,
        )
    return h


def _check_exclusive(path: Path, held: dict[str, tuple[int, ...]], row: int) -> None:
    """Raise unless every node in ``held`` (job -> nodes) is held by one job only."""
    owners: dict[int, str] = {}
    for job, nodes in held.items():
        for n in nodes:
            if n in owners:
                raise TraceError(
                    path,
                    "nodes",
                    n,
                    f"a node held by one job at a time ({owners[n]}, {job})",
                    row=row,
                )
            owners[n] = job


def _read_event(
    path: Path, d: dict[str, Any], t: float, header: TraceHeader, lineno: int
) -> TraceEvent:
    """The event of line ``lineno`` (``d``, at time ``t``), its fields checked."""
    jobs = header.jobs
    job = str(d.get("job"))
    if job not in jobs:
        raise TraceError(path, "job", d.get("job"), f"one of {sorted(jobs)}", row=lineno)
    nodes = d.get("nodes")
    if not isinstance(nodes, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in nodes
    ):
        raise TraceError(path, "nodes", nodes, "a list of node indices", row=lineno)
    if len(set(nodes)) != len(nodes) or any(not 0 <= n < header.num_nodes for n in nodes):
        raise TraceError(
            path, "nodes", nodes, f"distinct indices in 0..{header.num_nodes - 1}", row=lineno
        )
    if len(nodes) > jobs[job].max_nodes:
        raise TraceError(
            path,
            "nodes",
            nodes,
            f"at most job {job}'s max_nodes = {jobs[job].max_nodes} nodes",
            row=lineno,
        )
    if d.get("world_size", len(nodes)) != len(nodes):
        raise TraceError(
            path, "world_size", d.get("world_size"), f"len(nodes) = {len(nodes)}", row=lineno
        )
    reason = d.get("reason", "decision")
    if reason not in REASONS:
        raise TraceError(path, "reason", reason, f"one of {REASONS}", row=lineno)
    rate = d.get("rate")
    if rate is not None and (
        isinstance(rate, bool)
        or not isinstance(rate, int | float)
        or not math.isfinite(rate)
        or rate < 0
    ):
        raise TraceError(path, "rate", rate, "a finite number >= 0 (samples/s)", row=lineno)
    return TraceEvent(t, job, tuple(nodes), reason, None if rate is None else float(rate))


def _read_header(path: Path, h: dict[str, Any]) -> TraceHeader:
    """Validate the header object (line 1); every error names its field."""

    def fail(field: str, value: Any, allowed: str) -> TraceError:
        return TraceError(path, field, value, allowed, row=1)

    for key in ("scenario", "policy", "t_start", "t_end", "num_nodes", "jobs"):
        if key not in h:
            raise fail(key, "missing", "the fields of a v1 header")
    try:
        t_start = _number(h["t_start"], "t_start")
        t_end = _number(h["t_end"], "t_end", lo=t_start)
        num_nodes = _count(h["num_nodes"], "num_nodes", 1)
        gpus = _count(h.get("gpus_per_node", 1), "gpus_per_node", 1)
        seed = h.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise FieldError("seed", seed, "an integer or null")
    except FieldError as exc:
        raise fail(exc.field, exc.value, exc.allowed) from None
    for key in ("scenario", "policy"):
        if not isinstance(h[key], str):
            raise fail(key, h[key], "a string")
    names = h.get("node_names")
    if names is not None and (
        not isinstance(names, list)
        or len(names) != num_nodes
        or not all(isinstance(n, str) and n for n in names)
    ):
        raise fail("node_names", names, f"null or {num_nodes} non-empty host names")
    if not isinstance(h["jobs"], dict):
        raise fail("jobs", h["jobs"], "an object: job id -> job")
    extra = h.get("extra") or {}
    if not isinstance(extra, dict):
        raise fail("extra", extra, "an object")
    jobs: dict[str, TraceJob] = {}
    for k, v in h["jobs"].items():
        try:
            check_job_id(k)
            jobs[k] = TraceJob.from_json(v)
        except FieldError as exc:
            field = "jobs" if exc.field == "jobs" else f"jobs.{k}.{exc.field}".rstrip(".")
            raise fail(field, exc.value, exc.allowed) from None
    return TraceHeader(
        scenario=h["scenario"],
        policy=h["policy"],
        seed=seed,
        t_start=t_start,
        t_end=t_end,
        num_nodes=num_nodes,
        jobs=jobs,
        gpus_per_node=gpus,
        node_names=names,
        extra=dict(extra),
    )
