"""From progress reports to measurements: throughput per world size and rescale costs.

MalleTrain's Job Monitor derives a job's throughput from its per-iteration progress
reports; the bridge does the same with the reports of ``mtgym.bridge.worker``:

- **Throughput at a world size**: the samples of steady-state iterations divided by their
  duration, pooled over every generation that ran at that world size. The first
  ``skip_first`` iterations of a generation (warm-up) and its last ``skip_last`` (the stop
  vote and final checkpoint) are left out, as MalleTrain skips the reports around a resize;
  so are iterations that overlap *another* job's restart (``exclude_foreign``: on a small
  machine a neighbour's ``import torch`` steals the cores; see ``mtgym/bridge/README.md``).
  Redone iterations (after a crash) are never counted twice.
- **Rescale cost** of a change from generation g to g+1: the gap between g's last report
  and g+1's first report, minus the normal step gap (the median iteration time of g+1 in
  steady state): the time the job made no progress because of the rescale, which is what
  the simulator's ``r_up_s``/``r_down_s`` pause stands for (``RescaleMode.PAUSE``). A start
  from 0 nodes is measured from the launch to the first report (``startup_s``), a recovery
  after a crash from the last report before it to the first *new* (not redone) report.
"""

from __future__ import annotations

import itertools
import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


def read_jsonl(path: str | Path) -> tuple[list[dict[str, Any]], int]:
    """Records of a JSON-lines file and the number of unreadable lines (a torn tail).

    Blank lines are skipped; a line that is not JSON, or JSON but not an object, counts as
    unreadable. Bytes that are not UTF-8 are replaced.

    Args:
        path: the file; a missing one gives ``([], 0)``.
    """
    out, bad = [], 0
    p = Path(path)
    if not p.exists():
        return [], 0
    with open(p, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                bad += 1
                continue
            if isinstance(rec, dict):
                out.append(rec)
            else:
                bad += 1
    return out, bad


@dataclass
class Throughput:
    """Measured throughput of one job at one world size.

    Attributes:
        world_size: real workers (of the first generation measured at this node count).
        nodes: simulator nodes (``world_size // workers_per_node``, at least 1).
        samples_per_s: ``samples / seconds`` over every generation at this size.
        seconds: steady-state wall time measured.
        samples: global samples of the measured step intervals.
        intervals: step intervals measured.
        generations: the generations that contributed.
        per_gen: generation -> its own samples/s.
        step_s_median: median over those generations of their median step time, seconds
            (NaN when unknown).
    """

    world_size: int  # real workers
    nodes: int  # simulator nodes (world_size / workers_per_node)
    samples_per_s: float
    seconds: float  # steady-state time measured
    samples: int
    intervals: int
    generations: list[int] = field(default_factory=list)
    per_gen: dict[int, float] = field(default_factory=dict)  # gen -> samples/s
    step_s_median: float = float("nan")


@dataclass
class Transition:
    """One change between consecutive generations of a job (or a start from 0).

    Times are wall-clock (``time.time``), durations seconds.

    Attributes:
        kind: ``"up"``, ``"down"``, ``"same"`` (a new node set of the same size),
            ``"start"`` (from 0 nodes) or ``"restart"`` (after a crash or stall).
        from_gen: the generation before (None for a start).
        to_gen: the generation launched.
        from_world_size: workers before (0 for a start).
        to_world_size: workers after.
        t_request: the controller's stop request of ``from_gen``, else the launch time.
        t_last: the last report of ``from_gen`` (None for a start).
        t_first: the first new (not redone) report of ``to_gen`` (None: it never made
            progress).
        gap_s: ``t_first`` minus ``t_last`` (minus the launch time for a start).
        normal_step_s: ``to_gen``'s median step time.
        cost_s: ``gap_s - normal_step_s`` clipped at 0: the pause the simulator charges.
        stop_latency_s: stop request -> every process gone.
        reclaim: the stop was a reclaim.
        deadline_met: a reclaim's release was within the deadline (None: not a reclaim).
        release_s: a reclaim's release time from its trace time.
        signalled: the strongest signal the stop needed (``""`` when graceful).
    """

    kind: str  # "up", "down", "same", "start", "restart"
    from_gen: int | None
    to_gen: int
    from_world_size: int
    to_world_size: int
    t_request: float | None  # controller's stop request / launch time
    t_last: float | None  # last report before
    t_first: float | None  # first (new) report after
    gap_s: float | None
    normal_step_s: float | None
    cost_s: float | None  # gap minus the normal step: the pause the simulator charges
    stop_latency_s: float | None = None  # stop request -> every process gone
    reclaim: bool = False
    deadline_met: bool | None = None
    release_s: float | None = None
    signalled: str = ""


@dataclass
class JobMeasurement:
    """Everything measured about one job.

    Attributes:
        job: the trace job id.
        name: the simulator's job name.
        model: the torch model trained.
        throughput: by simulator node count.
        transitions: every launch, in generation order.
        total_samples: useful (not redone) global samples by the end of the trace.
        total_steps: the highest new (not redone) step reported, end of trace or not.
        redone_steps: step reports marked ``redo``.
        committed_steps: the steps with a durable checkpoint, sorted.
        crashes: generations that crashed or stalled.
        invalid_checkpoints: torn or corrupt checkpoint files skipped on resume.
        bad_lines: unreadable lines in ``progress.jsonl``.
        launches: generations started (start and restart events).
        gave_up: crashed more than ``--max-restarts`` times.
        device: the device of the last ``start`` report (``"cpu"``, ``"cuda:0"``).
        gpu: rank 0's GPU utilisation and memory (``gpu_stats``; CUDA only).
    """

    job: str
    name: str
    model: str
    throughput: dict[int, Throughput]  # by simulator node count
    transitions: list[Transition]
    total_samples: int  # useful samples by the end of the trace
    total_steps: int
    redone_steps: int
    committed_steps: list[int]
    crashes: int
    invalid_checkpoints: int
    bad_lines: int
    launches: int = 0  # generations started (start and restart events)
    gave_up: bool = False  # crashed more than --max-restarts times
    device: str = ""  # as the workers reported it ("cpu", "cuda:0")
    gpu: dict[str, Any] | None = None  # rank 0's GPU utilisation and memory (CUDA only)

    @property
    def made_progress(self) -> bool:
        """True when at least one new (not redone) step was reported."""
        return self.total_steps > 0

    def costs(self, kind: str) -> list[float]:
        """Measured costs (s) of one transition kind.

        Args:
            kind: a ``Transition.kind``; calibration uses ``up``, ``down`` and ``start``.

        Returns:
            ``cost_s`` of every such transition that has one, in generation order.
        """
        return [t.cost_s for t in self.transitions if t.kind == kind and t.cost_s is not None]

    def mean_cost(self, kind: str) -> float | None:
        """Mean cost of a kind, None if never measured.

        Args:
            kind: a ``Transition.kind``.
        """
        c = self.costs(kind)
        return statistics.fmean(c) if c else None


@dataclass
class Measurements:
    """All jobs of one replay.

    Attributes:
        out_dir: the replay folder.
        workers_per_node: real workers per simulator node.
        time_scale: simulated seconds per wall second of the replay.
        t0_wall: wall time the replay's clock started.
        t_end_wall: wall time of the trace's end.
        jobs: per trace job id.
    """

    out_dir: str
    workers_per_node: int
    time_scale: float
    t0_wall: float
    t_end_wall: float
    jobs: dict[str, JobMeasurement]

    @property
    def empty(self) -> bool:
        """True when no job has a single throughput figure (nothing to calibrate on)."""
        return not any(jm.throughput for jm in self.jobs.values())

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict, with ``format`` ``mtgym-bridge-measurements`` and version 1."""
        d = asdict(self)
        d["format"] = "mtgym-bridge-measurements"
        d["version"] = 1
        return d


@dataclass(frozen=True)
class MeasureOptions:
    """How ``measure_job`` reads a job's reports.

    Attributes:
        workers_per_node: worker processes per simulator node (world size / node count).
        t_end_wall: wall time the replay ended; samples reported later do not count.
        skip_first: step intervals left out at the start of each generation (warm-up).
        skip_last: step intervals left out at its end.
        foreign_busy: wall-time windows (start, end) in which another job was starting or
            stopping; step intervals that overlap one are left out of the throughput.
    """

    workers_per_node: int = 1
    t_end_wall: float | None = None
    skip_first: int = 3
    skip_last: int = 1
    foreign_busy: Sequence[tuple[float, float]] = ()


def measure_job(
    job: str,
    records: list[dict[str, Any]],
    events: list[dict[str, Any]],
    options: MeasureOptions | None = None,
    *,
    name: str = "",
    model: str = "",
    bad_lines: int = 0,
) -> JobMeasurement:
    """Measure one job from its progress records and the controller's events for it
    (``options``: how to read them; the defaults when None).

    Args:
        job: the trace job id.
        records: the job's ``progress.jsonl`` records (``read_jsonl``).
        events: the controller's ``events.jsonl`` records for this job only.
        options: how to read them.
        name: the simulator's job name, copied into the result.
        model: the torch model, copied into the result.
        bad_lines: unreadable progress lines, copied into the result.

    Returns:
        Throughput per node count, transitions and their costs, and the job's counters.
    """
    options = options or MeasureOptions()
    steps = [r for r in records if r.get("event") == "step"]
    log = _GenerationLog(steps, events)
    tput, gen_step_s = _throughput(log, options)
    trans = log.transitions(gen_step_s)
    useful = [r for r in steps if not r.get("redo")]
    if options.t_end_wall is not None:
        useful_end = [r for r in useful if float(r["t"]) <= options.t_end_wall]
    else:
        useful_end = useful
    total = max((int(r["samples"]) for r in useful_end), default=0)
    committed = sorted({int(r["step"]) for r in records if r.get("event") == "ckpt"})
    devices = [str(r.get("device", "")) for r in records if r.get("event") == "start"]
    return JobMeasurement(
        job=job,
        name=name,
        model=model,
        throughput=dict(sorted(tput.items())),
        transitions=trans,
        total_samples=total,
        total_steps=max((int(r["step"]) for r in useful), default=0),
        redone_steps=sum(1 for r in steps if r.get("redo")),
        committed_steps=committed,
        crashes=len({int(e["gen"]) for e in events if e.get("event") in ("crash", "stall")}),
        invalid_checkpoints=sum(1 for r in records if r.get("event") == "ckpt_invalid"),
        bad_lines=bad_lines,
        launches=len(log.starts),
        gave_up=any(e.get("event") == "gave_up" for e in events),
        device=devices[-1] if devices else "",
        gpu=gpu_stats(records),
    )


class _GenerationLog:
    """A job's step reports by generation, and the controller's events for it.

    Args:
        steps: the job's ``step`` records.
        events: the controller's events for the job.

    Attributes:
        by_gen: generation -> its step records, in file order.
        gens: the generations with step records, sorted.
        starts: generation -> its ``start`` or ``restart`` event.
        stops: generation -> its ``stopped`` event.
    """

    def __init__(self, steps: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        self.by_gen: dict[int, list[dict[str, Any]]] = {}
        for r in steps:
            self.by_gen.setdefault(int(r["gen"]), []).append(r)
        self.gens = sorted(self.by_gen)
        self.events = events
        self.starts = {int(e["gen"]): e for e in events if e.get("event") in ("start", "restart")}
        self.stops = {int(e["gen"]): e for e in events if e.get("event") == "stopped"}

    def ordered(self, g: int | None) -> list[dict[str, Any]]:
        """Generation g's step reports in time order (none for None).

        Args:
            g: the generation, or None (the generation before the first).
        """
        return sorted(self.by_gen.get(g, []), key=lambda r: r["t"]) if g is not None else []

    def transitions(self, gen_step_s: dict[int, float]) -> list[Transition]:
        """Every launch of the job, in generation order, and what it cost.

        Generations that were launched but never reported and those that reported without
        a launch event both count.

        Args:
            gen_step_s: generation -> its median step time (``_throughput``).
        """
        trans: list[Transition] = []
        prev: int | None = None
        for g in sorted(set(self.gens) | set(self.starts)):
            trans.append(self._transition(g, prev, gen_step_s.get(g)))
            prev = g
        return trans

    def _transition(self, g: int, prev: int | None, normal: float | None) -> Transition:
        """The launch of generation g after generation ``prev`` (None: the first);
        ``normal`` is g's median step time.

        A ``restart`` event makes a restart; a ``start`` logged right after a stop
        (``after_stop``) is up, down or same by world size; anything else is a start from
        0 nodes, measured from its launch. The stop's latency, reclaim, deadline and
        signal come from ``prev``'s ``stopped`` event.
        """
        ev = self.starts.get(g)
        recs_g = self.ordered(g)
        first_new = next((r for r in recs_g if not r.get("redo")), None)
        ws = int(ev["world_size"]) if ev else int(recs_g[0]["world_size"])
        prev_recs = self.ordered(prev)
        prev_last = prev_recs[-1] if prev_recs else None
        prev_ws = (
            int(self.starts[prev]["world_size"])
            if prev in self.starts
            else int(prev_last["world_size"])
            if prev_last
            else 0
        )
        if ev is not None and ev.get("event") == "restart":
            kind = "restart"
        elif ev is not None and ev.get("after_stop") and prev is not None:
            kind = "up" if ws > prev_ws else "down" if ws < prev_ws else "same"
        else:
            kind = "start"
        if kind == "start":
            t_ref = float(ev["t"]) if ev is not None else None
            t_last = None
        else:
            t_last = float(prev_last["t"]) if prev_last else None
            t_ref = t_last
        t_first = float(first_new["t"]) if first_new else None
        gap = (t_first - t_ref) if (t_first is not None and t_ref is not None) else None
        cost = (gap - normal) if (gap is not None and normal is not None) else None
        stop_info = self.stops.get(prev, {}) if (prev is not None and kind != "start") else {}
        req = [e for e in self.events if e.get("event") == "stop_request" and e.get("gen") == prev]
        return Transition(
            kind=kind,
            from_gen=prev if kind != "start" else None,
            to_gen=g,
            from_world_size=prev_ws if kind != "start" else 0,
            to_world_size=ws,
            t_request=(
                float(req[0]["t"]) if (req and kind != "start") else float(ev["t"]) if ev else None
            ),
            t_last=t_last,
            t_first=t_first,
            gap_s=gap,
            normal_step_s=normal,
            cost_s=max(cost, 0.0) if cost is not None else None,
            stop_latency_s=stop_info.get("latency_s"),
            reclaim=bool(stop_info.get("reclaim", False)),
            deadline_met=stop_info.get("deadline_met"),
            release_s=stop_info.get("release_s"),
            signalled=str(stop_info.get("signalled", "")),
        )


def _throughput(
    log: _GenerationLog, options: MeasureOptions
) -> tuple[dict[int, Throughput], dict[int, float]]:
    """Throughput per simulator node count over every generation's steady steps, and
    each generation's median step time.

    Redone steps are dropped; of the rest, the first ``skip_first`` and last ``skip_last``
    reports are cut. Each remaining pair of consecutive reports is one interval of the
    later report's global batch. Intervals that overlap a foreign window (widened by 0.5 s
    before it) count in the median step time but not in the throughput.

    Args:
        log: the job's reports by generation.
        options: the cuts, the workers per node and the foreign windows.

    Returns:
        ``(throughput by node count, generation -> median step seconds)``; a generation
        without a measurable interval has no entry.
    """
    tput: dict[int, Throughput] = {}
    gen_step_s: dict[int, float] = {}
    skip_first, skip_last = options.skip_first, options.skip_last
    for g in log.gens:
        rs = [r for r in log.by_gen[g] if not r.get("redo")]
        rs.sort(key=lambda r: r["t"])
        ws = int(rs[0]["world_size"]) if rs else int(log.by_gen[g][0]["world_size"])
        keep = rs[skip_first : len(rs) - skip_last if skip_last else None]
        secs = samples = n = 0
        gaps = []
        for a, b in itertools.pairwise(keep):
            dt = float(b["t"]) - float(a["t"])
            if dt <= 0:
                continue
            gaps.append(dt)
            if any(lo - 0.5 <= b["t"] and a["t"] <= hi for lo, hi in options.foreign_busy):
                continue
            secs += dt
            samples += int(b["batch"])
            n += 1
        if gaps:
            gen_step_s[g] = statistics.median(gaps)
        if n == 0 or secs <= 0:
            continue
        nodes = max(1, ws // options.workers_per_node)
        t = tput.setdefault(nodes, Throughput(ws, nodes, 0.0, 0.0, 0, 0))
        t.seconds += secs
        t.samples += samples
        t.intervals += n
        t.generations.append(g)
        t.per_gen[g] = samples / secs
    for t in tput.values():
        t.samples_per_s = t.samples / t.seconds
        med = [gen_step_s[g] for g in t.generations if g in gen_step_s]
        t.step_s_median = statistics.median(med) if med else float("nan")
    return tput, gen_step_s


def gpu_stats(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Rank 0's GPU figures over a job's ``gpu`` reports (None when there are none).

    ``util_mean``: utilisation (%) averaged over every sample, or None when no sampler
    worked; ``mem_peak_gib``/``mem_reserved_gib``: the largest allocator figures.

    Also ``reports`` (how many), ``util_samples`` (in all), ``util_source`` (of the last
    report) and ``gpus`` (the physical ids reported, sorted).

    Args:
        records: the job's ``progress.jsonl`` records; only ``gpu`` events are read.
    """
    recs = [r for r in records if r.get("event") == "gpu"]
    if not recs:
        return None
    num = den = 0.0
    for r in recs:
        if r.get("util") is not None and r.get("util_samples"):
            num += float(r["util"]) * int(r["util_samples"])
            den += int(r["util_samples"])
    return {
        "reports": len(recs),
        "util_mean": num / den if den else None,
        "util_samples": int(den),
        "util_source": str(recs[-1].get("util_source", "")),
        "mem_peak_gib": max(float(r.get("mem_peak_gib") or 0.0) for r in recs),
        "mem_reserved_gib": max(float(r.get("mem_reserved_gib") or 0.0) for r in recs),
        "gpus": sorted({str(r["gpu"]) for r in recs if r.get("gpu") is not None}),
    }


def measure_replay(
    out_dir: str | Path,
    *,
    skip_first: int = 3,
    skip_last: int = 1,
    exclude_foreign: bool = True,
    settle_s: float = 0.5,
) -> Measurements:
    """Measure every job of a replay folder (``replay.json``, ``events.jsonl``, reports).

    A job's busy windows are its stop requests (to ``stopped``) and launches (to the first
    new step report), each 10 s long when the end is missing, and extended by
    ``settle_s``. With ``exclude_foreign`` every job leaves the other jobs' windows out of
    its throughput.

    Args:
        out_dir: the replay folder.
        skip_first: step intervals left out at the start of each generation.
        skip_last: step intervals left out at its end.
        exclude_foreign: leave out intervals that overlap another job's busy window.
        settle_s: seconds added to the end of each busy window.

    Returns:
        Every job of ``replay.json``, measured.

    Raises:
        FileNotFoundError: no ``replay.json`` in ``out_dir``.
    """
    out = Path(out_dir)
    meta = json.loads((out / "replay.json").read_text())
    events, _ = read_jsonl(out / "events.jsonl")
    wpn = int(meta["workers_per_node"])
    progress: dict[str, tuple[list[dict[str, Any]], int]] = {
        j: read_jsonl(out / info["job_dir"] / "progress.jsonl") for j, info in meta["jobs"].items()
    }
    # each job's busy windows: stop request -> stopped, and launch -> its first report
    windows: dict[str, list[tuple[float, float]]] = {}
    for j in meta["jobs"]:
        firsts: dict[int, float] = {}
        for r in progress[j][0]:
            if r.get("event") == "step" and not r.get("redo"):
                firsts.setdefault(int(r["gen"]), float(r["t"]))
        mine = [e for e in events if str(e.get("job")) == j]
        stopped = {int(e["gen"]): float(e["t"]) for e in mine if e.get("event") == "stopped"}
        for e in mine:
            kind, t = e.get("event"), float(e["t"])
            if kind == "stop_request":
                end = stopped.get(int(e["gen"]), t + 10.0)
            elif kind in ("start", "restart"):
                end = firsts.get(int(e["gen"]), t + 10.0)
            else:
                continue
            windows.setdefault(j, []).append((t, end + settle_s))
    jobs = {}
    for j, info in meta["jobs"].items():
        foreign = [w for k, ws in windows.items() if k != j for w in ws] if exclude_foreign else []
        recs, bad = progress[j]
        jobs[j] = measure_job(
            j,
            recs,
            [e for e in events if str(e.get("job")) == j],
            MeasureOptions(
                workers_per_node=wpn,
                t_end_wall=float(meta["t_end_wall"]),
                skip_first=skip_first,
                skip_last=skip_last,
                foreign_busy=foreign,
            ),
            name=info.get("name", ""),
            model=info.get("model", ""),
            bad_lines=bad,
        )
    return Measurements(
        out_dir=str(out),
        workers_per_node=wpn,
        time_scale=float(meta["config"]["time_scale"]),
        t0_wall=float(meta["t0_wall"]),
        t_end_wall=float(meta["t_end_wall"]),
        jobs=jobs,
    )
