"""Replay a trace on real torch jobs: one job per trace job, rescaled when the trace says.

``replay(trace, out_dir, config)`` walks the trace on a scaled wall clock (``time_scale``
simulated seconds per wall second) and hands every change of a job's node set to that job's
*driver*, a thread that owns the job's generations (``mtgym.bridge.launcher``):

- a change of node set = stop the running generation (stop file -> checkpoint -> exit) and
  start the next one on the new node set, which resumes from the newest valid checkpoint;
  0 nodes = stop; from 0 nodes = start;
- changes that arrive while the driver is still busy are coalesced (only the newest node set
  is applied; ``coalesced`` counts the skipped ones), so a compressed clock never queues up
  restarts;
- **reclaims** (``reason == "reclaim"`` in the trace) must release the node within
  ``reclaim_deadline_s`` wall seconds of the trace time: the driver asks for a graceful
  stop, escalates to SIGTERM at ``deadline - term_grace_s - 0.5`` and to SIGKILL at
  ``deadline - 0.5``, and records whether the deadline was met;
- a generation that exits on its own (a worker was killed, a crash) or stops reporting for
  ``stall_timeout_s`` is cleaned up and restarted on the same node set, from its last valid
  checkpoint, up to ``max_restarts`` times.

Everything is logged to ``out_dir/events.jsonl``; each job's reports, checkpoints and logs
live in ``out_dir/jobs/<id>/``. Every process started is stopped before ``replay`` returns
(also on errors and Ctrl-C; ``mtgym bridge replay`` turns SIGTERM and SIGHUP into an
exception so they take the same path, and the kernel kills the agents if the controller
itself is SIGKILLed: see ``mtgym.bridge.procs``).
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mtgym.bridge.launcher import JobSpec, Launch, LocalLauncher
from mtgym.bridge.models import MODEL_SETS, MODELS, default_batch, model_for_app_class
from mtgym.bridge.trace import FieldError, Trace, check_job_id, read_trace, write_trace
from mtgym.core.io import atomic_write_json

_FINAL = "final"


@dataclass
class ReplayConfig:
    """How to replay a trace (all durations in wall-clock seconds unless named ``_sim``).

    Saved whole in ``replay.json`` (``config``); ``mtgym bridge replay``'s options map onto
    it one to one.

    Attributes:
        time_scale: simulated seconds played per wall second (> 0).
        workers_per_node: real worker processes per simulator node (>= 1).
        reclaim_deadline_s: a reclaimed node is released within this many seconds of its
            trace time (>= ``term_grace_s + 1``).
        stop_timeout_s: the graceful window of a voluntary stop before SIGTERM.
        term_grace_s: seconds between SIGTERM and SIGKILL.
        model: a ``models.MODELS`` name for every job, a ``models.MODEL_SETS`` name (a model
            per app class), or None: the ``small`` set.
        batch: samples per worker per step (None: the model's default).
        lr: the workers' SGD learning rate.
        ckpt_every: steps between periodic checkpoints.
        sync_every: steps between the workers' stop-file votes.
        threads: torch threads per worker.
        dp: ``"ddp"`` or ``"allreduce"`` (``worker.py --dp``).
        device: ``"auto"``, ``"cpu"`` or ``"cuda"``.
        seed: the data seed; a job with a numeric id ``j`` gets ``seed + j``.
        max_restarts: restarts after crashes or stalls, per job over the whole replay.
        stall_timeout_s: a generation whose ``progress.jsonl`` does not change for this
            long is killed and restarted.
        until: simulated time to stop at (None: the trace's end).
        jobs: trace job ids to replay (None: all).
        max_world_size: cap on simulator nodes per job; longer node sets keep their first
            nodes.
        worker_args: per job id, extra ``worker.py`` arguments (fault injection).
        poll_s: how often the clock and the drivers wake up.

    Raises:
        ValueError: from ``__post_init__``, for a value out of range or an unknown model.
    """

    time_scale: float = 1.0  # simulated seconds per wall second
    workers_per_node: int = 1
    reclaim_deadline_s: float = 10.0
    stop_timeout_s: float = 30.0  # graceful window of a voluntary stop before SIGTERM
    term_grace_s: float = 2.0
    model: str | None = None  # a model, a model set, or None: by app class ("small" set)
    batch: int | None = None  # per worker; None = the model's default
    lr: float = 0.01
    ckpt_every: int = 50
    sync_every: int = 2
    threads: int = 1
    dp: str = "ddp"
    device: str = "auto"
    seed: int = 0
    max_restarts: int = 3
    stall_timeout_s: float = 120.0
    until: float | None = None  # simulated time to stop at (default: the trace's end)
    jobs: list[str] | None = None  # trace job ids to replay (default: all)
    max_world_size: int | None = None  # cap on simulator nodes per job
    worker_args: dict[str, list[str]] = field(default_factory=dict)  # per job, extra args
    poll_s: float = 0.05

    def __post_init__(self) -> None:
        if not self.time_scale > 0:
            raise ValueError(f"time_scale must be > 0, got {self.time_scale}")
        if self.workers_per_node < 1:
            raise ValueError(f"workers_per_node must be >= 1, got {self.workers_per_node}")
        if self.reclaim_deadline_s < self.term_grace_s + 1.0:
            raise ValueError(
                f"reclaim_deadline_s ({self.reclaim_deadline_s}) must be >= term_grace_s + 1 "
                f"({self.term_grace_s + 1.0})"
            )
        if self.model is not None and self.model not in MODELS and self.model not in MODEL_SETS:
            known = ", ".join([*sorted(MODELS), *sorted(MODEL_SETS)])
            raise ValueError(f"unknown model {self.model!r}; known: {known}")
        if self.batch is not None and self.batch < 1:
            raise ValueError(f"batch must be >= 1, got {self.batch}")
        if self.max_world_size is not None and self.max_world_size < 1:
            raise ValueError(f"max_world_size must be >= 1, got {self.max_world_size}")


@dataclass
class ReplayResult:
    """Where a replay wrote its files and how it went.

    Attributes:
        out_dir: the replay folder.
        t0_wall: wall time (``time.time``) at which simulated time ``sim0`` played.
        sim0: the simulated time the replay started at.
        t_end_wall: wall time of the trace's end.
        wall_s: seconds from ``t0_wall`` to the return of ``replay``.
        jobs: per job id, ``generations``, ``restarts`` and ``coalesced`` (changes skipped
            because a newer one arrived while the driver was busy).
    """

    out_dir: Path
    t0_wall: float  # wall time of simulated time ``sim0``
    sim0: float
    t_end_wall: float  # wall time of the trace's end
    wall_s: float
    jobs: dict[str, dict[str, Any]]

    @property
    def events_path(self) -> Path:
        """``out_dir/events.jsonl``."""
        return self.out_dir / "events.jsonl"


class EventLog:
    """Thread-safe JSON-lines log of controller events (also forwarded to a callback).

    Opened for appending, line-buffered: every event is on disk when ``emit`` returns.

    Args:
        path: ``events.jsonl``.
        callback: called with every record after it is written (progress display);
            exceptions it raises are swallowed.
    """

    def __init__(self, path: Path, callback: Callable[[dict[str, Any]], None] | None) -> None:
        self.path = path
        self._f = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
        self._lock = threading.Lock()
        self._cb = callback

    def emit(self, **rec: Any) -> dict[str, Any]:
        """Log one event (``t`` = now).

        Args:
            **rec: the record's fields (``event``, ``job``, ``gen``...); values JSON cannot
                encode are written with ``str``.

        Returns:
            The record as written, ``t`` included.
        """
        rec.setdefault("t", time.time())
        with self._lock:
            self._f.write(json.dumps(rec, separators=(",", ":"), default=str) + "\n")
        if self._cb is not None:
            with contextlib.suppress(Exception):  # a display callback must not break a replay
                self._cb(rec)
        return rec

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._f.close()


@dataclass
class _Target:
    """A node set a driver is asked to apply (one trace event, or the final stop).

    Attributes:
        t_wall: when the trace wants it, wall seconds.
        t_sim: the same instant in simulated seconds.
        nodes: the simulator nodes (empty: stop).
        reason: the trace event's reason, or ``"final"``.
        final: the end of the trace: stop the job and end the driver.
        coalesced: targets skipped for this one (newer targets replace queued ones).
        reclaim_t_wall: the earliest reclaim among the coalesced targets: the deadline
            counts from it.
    """

    t_wall: float  # when the trace wants it
    t_sim: float
    nodes: tuple[int, ...]
    reason: str
    final: bool = False
    coalesced: int = 0
    reclaim_t_wall: float | None = None  # earliest reclaim folded into this target


class JobDriver(threading.Thread):
    """Owns one job's generations; applies node-set targets in order (see module doc).

    A daemon thread: it starts, stops and restarts the job's generations through the
    launcher, and is the thread whose death the agents' parent-death signal follows.

    Args:
        job_id: the trace job id.
        spec: what to train.
        launcher: starts and stops the generations (shared by every driver).
        config: the replay's settings.
        log: the replay's event log.

    Attributes:
        current: the running generation, or None.
        gen: the last generation number started (-1: none yet).
        restarts: restarts after crashes or stalls so far.
        coalesced: targets skipped in all.
        error: what ended the thread, if it failed.
    """

    def __init__(
        self,
        job_id: str,
        spec: JobSpec,
        launcher: LocalLauncher,
        config: ReplayConfig,
        log: EventLog,
    ) -> None:
        super().__init__(name=f"mtgym-bridge-job-{job_id}", daemon=True)
        self.job_id = job_id
        self.spec = spec
        self.launcher = launcher
        self.config = config
        self.log = log
        self.q: queue.Queue[_Target] = queue.Queue()
        self.current: Launch | None = None
        self.gen = -1
        self.restarts = 0
        self.coalesced = 0
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._stopping = False  # set by kill_all: no health checks, no restarts

    # -- queue -------------------------------------------------------------------------
    def submit(self, target: _Target) -> None:
        """Hand a new target to the driver (thread-safe; applied in order, newest wins).

        Args:
            target: the node set to apply.
        """
        self.q.put(target)

    def _next(self, timeout: float) -> _Target | None:
        """The newest queued target, the ones before it coalesced into it.

        The result keeps ``final`` if any coalesced target had it, and the wall time of the
        first coalesced reclaim (so a reclaim's deadline is not lost behind a later change).

        Args:
            timeout: seconds to wait for a first target.

        Returns:
            The target, or None when none came within ``timeout``.
        """
        try:
            tgt = self.q.get(timeout=timeout)
        except queue.Empty:
            return None
        reclaim = tgt.t_wall if tgt.reason == "reclaim" else None
        skipped = 0
        while True:
            try:
                nxt = self.q.get_nowait()
            except queue.Empty:
                break
            skipped += 1
            if nxt.reason == "reclaim" and reclaim is None:
                reclaim = nxt.t_wall
            final = tgt.final or nxt.final
            tgt = nxt
            tgt.final = final
        tgt.coalesced = skipped
        tgt.reclaim_t_wall = reclaim
        self.coalesced += skipped
        return tgt

    # -- thread ------------------------------------------------------------------------
    def run(self) -> None:
        """Apply targets until the final one; watch the running generation in between.

        Any exception, ``BaseException`` included, ends the thread, is stored in ``error``
        and logged as ``driver_error``; the controller then kills what is left.
        """
        try:
            while True:
                tgt = self._next(self.config.poll_s)
                if tgt is None:
                    self._health()
                    continue
                self._apply(tgt)
                if tgt.final:
                    break
        except BaseException as exc:  # recorded; the controller kills what is left
            self.error = exc
            self.log.emit(job=self.job_id, event="driver_error", error=repr(exc))

    def _apply(self, tgt: _Target) -> None:
        """Make the running generation match ``tgt``: nothing if the same node set is already
        running, else stop the current one and start the next (none for an empty set or the
        final target).
        """
        nodes = () if tgt.final else tgt.nodes
        cur = self.current
        if cur is not None and set(cur.nodes) == set(nodes) and cur.proc.poll() is None:
            return
        if cur is not None:
            self._stop_gen(cur, tgt)
        if nodes:
            self._start_gen(nodes, tgt, kind="start", after_stop=cur is not None)

    def _stop_gen(self, cur: Launch, tgt: _Target) -> None:
        """Stop ``cur`` and log ``stop_request`` and ``stopped``.

        A reclaim (not on the final target) counts from its trace time: graceful until
        ``deadline - term_grace_s - 0.5``, SIGTERM, then SIGKILL by ``deadline - 0.5``;
        ``stopped`` then carries ``release_s`` and ``deadline_met``. Any other stop gets
        ``stop_timeout_s`` of grace from now.
        """
        cfg = self.config
        reclaim = tgt.reclaim_t_wall is not None and not tgt.final
        if reclaim:
            assert tgt.reclaim_t_wall is not None
            anchor = tgt.reclaim_t_wall
            deadline = anchor + cfg.reclaim_deadline_s
            graceful_s = max(0.0, deadline - cfg.term_grace_s - 0.5 - time.time())
            term = min(cfg.term_grace_s, max(0.1, deadline - 0.5 - time.time() - graceful_s))
        else:
            anchor, deadline = time.time(), None
            graceful_s, term = cfg.stop_timeout_s, cfg.term_grace_s
        self.log.emit(
            job=self.job_id,
            event="stop_request",
            gen=cur.gen,
            world_size=cur.world_size,
            t_sim=tgt.t_sim,
            reason="final" if tgt.final else tgt.reason,
            to_world_size=self.launcher.world_size(tgt.nodes) if tgt.nodes and not tgt.final else 0,
            reclaim=reclaim,
            coalesced=tgt.coalesced,
        )
        res = self.launcher.stop(cur, graceful_s=graceful_s, term_grace_s=term)
        rec: dict[str, Any] = {
            "job": self.job_id,
            "event": "stopped",
            "gen": cur.gen,
            "world_size": cur.world_size,
            "rc": res.rc,
            "graceful": res.graceful,
            "reported_stop": res.reported_stop,
            "signalled": res.signalled,
            "latency_s": round(res.latency_s, 4),
            "leftover_pids": list(res.leftover_pids),
            "reclaim": reclaim,
        }
        if deadline is not None:
            rec.update(
                deadline_s=cfg.reclaim_deadline_s,
                release_s=round(res.t_exit - anchor, 4),
                deadline_met=res.t_exit <= deadline and not res.leftover_pids,
            )
        self.log.emit(**rec)
        with self._lock:
            self.current = None

    def _start_gen(
        self, nodes: tuple[int, ...], tgt: _Target | None, *, kind: str, after_stop: bool = False
    ) -> None:
        """Launch the next generation on ``nodes`` and log it (nothing after ``kill_all``).

        Args:
            nodes: the simulator nodes.
            tgt: the target it applies (None for a restart after a crash).
            kind: the event logged, ``"start"`` or ``"restart"``.
            after_stop: a generation was stopped just before (``measure`` classifies the
                change as up, down or same rather than a start from 0).
        """
        if self._stopping:
            return
        self.gen += 1
        la = self.launcher.start(self.spec, nodes, self.gen)
        with self._lock:
            self.current = la
        self.log.emit(
            job=self.job_id,
            event=kind,
            gen=la.gen,
            world_size=la.world_size,
            nodes=list(nodes),
            after_stop=after_stop,
            pid=la.pid,
            port=la.port,
            t_sim=None if tgt is None else tgt.t_sim,
            t_target=None if tgt is None else tgt.t_wall,
            cmd=la.cmd,
        )

    def _health(self) -> None:
        """Check the running generation between targets: restart it after a crash or a stall.

        A crash is an agent that exited on its own; a stall is no change to
        ``progress.jsonl`` for ``stall_timeout_s`` since the later of its last write and
        the launch. Either is killed, logged (``crash``/``stall``) and restarted on the same
        nodes, until ``max_restarts`` is used up: then ``gave_up`` is logged and the job
        stays stopped until the next target starts it again.
        """
        cur = self.current
        if cur is None or self._stopping:
            return
        rc = self.launcher.poll(cur)
        stalled = False
        if rc is None:
            prog = self.spec.job_dir / "progress.jsonl"
            last = max(cur.t_launch, prog.stat().st_mtime if prog.exists() else 0.0)
            stalled = time.time() - last > self.config.stall_timeout_s
            if not stalled:
                return
        res = self.launcher.stop(cur, graceful_s=0.0, term_grace_s=self.config.term_grace_s)
        self.log.emit(
            job=self.job_id,
            event="stall" if stalled else "crash",
            gen=cur.gen,
            world_size=cur.world_size,
            rc=rc,
            signalled=res.signalled,
            leftover_pids=list(res.leftover_pids),
        )
        with self._lock:
            self.current = None
        if self.restarts >= self.config.max_restarts:
            self.log.emit(job=self.job_id, event="gave_up", restarts=self.restarts)
            return
        self.restarts += 1
        self._start_gen(cur.nodes, None, kind="restart")

    def kill_all(self) -> None:
        """Emergency stop: kill the running generation (used on errors and Ctrl-C).

        Also stops health checks and restarts, and ``_start_gen`` starts nothing more;
        called from the controller's thread while the driver may still be running.
        """
        with self._lock:
            self._stopping = True
            cur = self.current
            self.current = None
        if cur is not None:
            self.launcher.kill(cur, term_grace_s=1.0)
            self.log.emit(job=self.job_id, event="killed", gen=cur.gen)


def _spec(trace: Trace, job_id: str, out_dir: Path, cfg: ReplayConfig) -> JobSpec:
    """The ``JobSpec`` of one trace job: its model from its app class and ``cfg.model``.

    Raises:
        ValueError: the job id is not a safe folder name.
    """
    try:
        check_job_id(job_id)  # a Trace built in code skips read_trace's check
    except FieldError as exc:
        raise ValueError(f"trace job id {job_id!r}: {exc.allowed}") from None
    job = trace.jobs[job_id]
    model = model_for_app_class(job.app_class, cfg.model)
    return JobSpec(
        job_id=job_id,
        job_dir=(out_dir / "jobs" / job_id).resolve(),
        model=model,
        name=job.name,
        batch=cfg.batch or default_batch(model),
        lr=cfg.lr,
        seed=cfg.seed + int(job_id) if job_id.isdigit() else cfg.seed,
        ckpt_every=cfg.ckpt_every,
        sync_every=cfg.sync_every,
        threads=cfg.threads,
        dp=cfg.dp,
        device=cfg.device,
        extra_args=tuple(cfg.worker_args.get(job_id, ())),
    )


def replay(
    trace: Trace | str | Path,
    out_dir: str | Path,
    config: ReplayConfig | None = None,
    *,
    launcher: LocalLauncher | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    hooks: Callable[[float, dict[str, JobDriver]], None] | None = None,
) -> ReplayResult:
    """Replay ``trace`` on real torch jobs; write reports under ``out_dir``.

    ``hooks(t_sim, drivers)`` is called from the clock loop about every ``poll_s`` (tests
    use it to inject faults). Returns when every job has stopped.

    Writes ``trace.jsonl`` (as replayed), ``replay.json``, ``events.jsonl`` and
    ``jobs/<id>/``. The clock starts 0.2 s after set-up.

    Args:
        trace: the trace, or its path (read with ``read_trace``).
        out_dir: a new folder, or one without ``events.jsonl``.
        config: the replay's settings (None: the defaults).
        launcher: None: a ``LocalLauncher`` with the config's workers per node. Left open;
            it refuses new launches after a failed replay.
        on_event: called with every event record as it is logged.
        hooks: see above.

    Raises:
        FileExistsError: ``out_dir`` already holds a replay.
        ValueError: an unsafe job id.
        gpu.NotEnoughGpusError: a job's largest generation does not fit the visible GPUs.
        RuntimeError: a driver failed or stopped early; every process is stopped first.
    """
    cfg = config or ReplayConfig()
    tr = read_trace(trace) if not isinstance(trace, Trace) else trace
    tr = tr.restricted(cfg.jobs, cfg.until)
    out = Path(out_dir)
    if (out / "events.jsonl").exists():
        raise FileExistsError(f"{out} already holds a replay (events.jsonl); use a new folder")
    launcher = launcher or LocalLauncher(workers_per_node=cfg.workers_per_node)
    specs = {j: _spec(tr, j, out, cfg) for j in tr.jobs}
    _check_fits(tr, specs, launcher, cfg)
    devices = {j: launcher.resolve_device(s.device) for j, s in specs.items()}
    out.mkdir(parents=True, exist_ok=True)
    write_trace(out / "trace.jsonl", tr)
    log = EventLog(out / "events.jsonl", on_event)
    drivers = {j: JobDriver(j, specs[j], launcher, cfg, log) for j in tr.jobs}
    sim0 = tr.header.t_start
    if tr.events:
        sim0 = min(sim0, tr.events[0].t) if tr.events[0].t < sim0 else sim0
    clock = _Clock(time.time() + 0.2, sim0, cfg.time_scale)
    meta = _replay_meta(out, cfg, tr, launcher, specs, devices, clock)
    atomic_write_json(out / "replay.json", meta, default=str)
    log.emit(event="replay_start", t0_wall=clock.t0, sim0=sim0, time_scale=cfg.time_scale)
    for d in drivers.values():
        d.start()
    ok = False
    try:
        ok = _drive(tr, drivers, hooks, cfg, clock, log)
    finally:
        if not ok:  # an error, Ctrl-C or SIGTERM: no driver may start anything any more
            launcher.refuse_new()
        for d in drivers.values():
            d.kill_all()
        launcher.kill_all()  # whatever a driver started that it no longer tracks
        log.emit(event="replay_end", ok=ok)
        log.close()
    errors = {j: d.error for j, d in drivers.items() if d.error is not None}
    if errors:
        raise RuntimeError(f"replay drivers failed: {errors}")
    return ReplayResult(
        out_dir=out,
        t0_wall=clock.t0,
        sim0=sim0,
        t_end_wall=clock.to_wall(tr.t_end),
        wall_s=time.time() - clock.t0,
        jobs={
            j: {"generations": d.gen + 1, "restarts": d.restarts, "coalesced": d.coalesced}
            for j, d in drivers.items()
        },
    )


@dataclass(frozen=True)
class _Clock:
    """Simulated time ``sim0`` plays at wall time ``t0``, ``time_scale`` times faster.

    Attributes:
        t0: wall time (``time.time``) of ``sim0``.
        sim0: the simulated time the replay starts at.
        time_scale: simulated seconds per wall second.
    """

    t0: float
    sim0: float
    time_scale: float

    def to_wall(self, t_sim: float) -> float:
        """The wall time at which simulated time ``t_sim`` plays.

        Args:
            t_sim: simulated seconds (earlier than ``sim0`` gives a time before ``t0``).
        """
        return self.t0 + (t_sim - self.sim0) / self.time_scale


def _check_fits(
    tr: Trace, specs: dict[str, JobSpec], launcher: LocalLauncher, cfg: ReplayConfig
) -> None:
    """Fail before anything starts: every job's largest generation must fit the GPUs.

    Raises:
        gpu.NotEnoughGpusError: from ``launcher.check_fits`` (CUDA jobs only).
    """
    for j, s in specs.items():
        most = max((len(e.nodes) for e in tr.events if e.job == j), default=0)
        if cfg.max_world_size:
            most = min(most, cfg.max_world_size)
        if most:
            launcher.check_fits(j, most, s.device)


def _replay_meta(
    out: Path,
    cfg: ReplayConfig,
    tr: Trace,
    launcher: LocalLauncher,
    specs: dict[str, JobSpec],
    devices: dict[str, str],
    clock: _Clock,
) -> dict[str, Any]:
    """``replay.json``: the configuration, the clock, the launcher and each job's spec.

    ``measure_replay`` reads it back: ``workers_per_node``, ``t0_wall``, ``t_end_wall``,
    ``config.time_scale`` and each job's ``job_dir`` (relative to ``out``). ``capped``
    lists the jobs ``max_world_size`` cut; ``gpus`` is empty unless a job runs on CUDA.
    """
    return {
        "format": "mtgym-bridge-replay",
        "version": 1,
        "config": asdict(cfg),
        "t0_wall": clock.t0,
        "sim0": clock.sim0,
        "t_end_sim": tr.t_end,
        "t_end_wall": clock.to_wall(tr.t_end),
        "workers_per_node": launcher.workers_per_node,
        "launch": launcher.launch,
        "share_gpus": launcher.share_gpus,
        "gpus": launcher.gpus if "cuda" in devices.values() else [],
        "capped": capped_jobs(tr, cfg.max_world_size),
        "jobs": {
            j: {
                "name": s.name,
                "model": s.model,
                "batch": s.batch,
                "dp": s.dp,
                "device": devices[j],
                "start_method": (
                    launcher.start_method(s.device) if launcher.launch == "agent" else "torchrun"
                ),
                "job_dir": str(s.job_dir.relative_to(out.resolve())),
            }
            for j, s in specs.items()
        },
    }


def _drive(
    tr: Trace,
    drivers: dict[str, JobDriver],
    hooks: Callable[[float, dict[str, JobDriver]], None] | None,
    cfg: ReplayConfig,
    clock: _Clock,
    log: EventLog,
) -> bool:
    """Hand each trace event to its job's driver at its wall time, then the final stop;
    wait for the drivers; True when every one ended without an error.

    The drivers get ``stop_timeout_s + 4 term_grace_s + 30`` seconds in all to finish
    after the final stop; one still alive then makes the result False.

    Raises:
        RuntimeError: a driver thread ended before the trace did (``_sleep_until``).
    """
    to_wall = clock.to_wall
    for ev in tr.events:
        _sleep_until(to_wall(ev.t), drivers, hooks, cfg, clock)
        nodes = ev.nodes[: cfg.max_world_size] if cfg.max_world_size else ev.nodes
        drivers[ev.job].submit(_Target(to_wall(ev.t), ev.t, tuple(nodes), ev.reason))
    _sleep_until(to_wall(tr.t_end), drivers, hooks, cfg, clock)
    log.emit(event="trace_end", t_sim=tr.t_end)
    for d in drivers.values():
        d.submit(_Target(to_wall(tr.t_end), tr.t_end, (), "final", final=True))
    limit = time.time() + cfg.stop_timeout_s + 4 * cfg.term_grace_s + 30.0
    for d in drivers.values():
        d.join(timeout=max(0.1, limit - time.time()))
    return all(not d.is_alive() and d.error is None for d in drivers.values())


def capped_jobs(trace: Trace, max_world_size: int | None) -> dict[str, int]:
    """Jobs whose node sets ``max_world_size`` cuts, with the largest set the trace gives.

    Args:
        trace: the trace.
        max_world_size: the cap in simulator nodes (None or 0: no cap, ``{}``).

    Returns:
        Job id -> the largest node count in its events, for the jobs above the cap.
    """
    if not max_world_size:
        return {}
    most: dict[str, int] = {}
    for e in trace.events:
        most[e.job] = max(most.get(e.job, 0), len(e.nodes))
    return {j: n for j, n in most.items() if n > max_world_size}


def _sleep_until(
    t_wall: float,
    drivers: dict[str, JobDriver],
    hooks: Callable[[float, dict[str, JobDriver]], None] | None,
    cfg: ReplayConfig,
    clock: _Clock,
) -> None:
    """Wait for wall time ``t_wall``, calling ``hooks`` about every ``poll_s``; raise if a
    driver stopped early.
    """
    while True:
        now = time.time()
        if hooks is not None:
            hooks(clock.sim0 + (now - clock.t0) * cfg.time_scale, drivers)
        dead = [j for j, d in drivers.items() if not d.is_alive()]
        if dead:
            raise RuntimeError(f"job drivers stopped early: {dead}")
        if now >= t_wall:
            return
        time.sleep(min(cfg.poll_s, t_wall - now))


def load_replay_meta(out_dir: str | Path) -> dict[str, Any]:
    """``out_dir/replay.json`` as a dict (written by ``replay``, see ``_replay_meta``).

    Args:
        out_dir: the replay folder.

    Raises:
        FileNotFoundError: not a replay folder.
    """
    return json.loads((Path(out_dir) / "replay.json").read_text())
