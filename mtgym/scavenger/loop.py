"""The scavenger loop: poll Slurm, release reclaimed nodes at once, ask a policy, launch.

Each period (``poll_s``):

1. ``SlurmSupply.poll()`` -> supply events. A **reclaimed** node held by a job stops that
   job's generation at once (``reclaim=True``: ``scancel`` / SIGTERM-SIGKILL; no graceful
   wait), and the job loses all its nodes; the policy may restart it on the rest below.
   When Slurm cannot be read, every node counts as reclaimed: the scavenger never keeps a
   node it cannot see.
2. The live state (``LiveState``) integrates each job's predicted progress, marks the
   lendable nodes and their known ends, and builds the policy's ``SchedulerView``.
3. The policy (any registered one, same interface as in simulation) returns an allocation;
   it is repaired exactly as the simulator would (``repair_allocation``), and each job whose
   node set changes gets its generation stopped (gracefully) and a new one started on the
   new set through the ``NodeLauncher``.

Every event is one JSON line in ``<out>/events.jsonl``; ``summary.json`` is written at the
end. Times in the log are epoch seconds (``t``) and seconds since the start (``rel``).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.io import atomic_write_json
from mtgym.core.types import Allocation, AppClass
from mtgym.policy.base import Policy
from mtgym.scavenger.launch import NodeLauncher, job_spec
from mtgym.scavenger.live import LiveState, live_instance
from mtgym.scavenger.source import SlurmSupply, SupplyEvent
from mtgym.sim.dynamics import repair_allocation, validate_allocation


class EventLog:
    """JSON lines, one per event, flushed at once (``tail -f`` works).

    Args:
        path: ``events.jsonl`` (appended to; its folder is created).
        t0: the loop's start, epoch seconds (``rel`` counts from it).
        echo: called with every record after it is written (console output), or None.

    Attributes:
        counts: events written so far, by name (``summary.json``'s ``events``).
    """

    def __init__(
        self, path: Path, t0: float, echo: Callable[[dict[str, Any]], None] | None
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.t0 = t0
        self.echo = echo
        self._f = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        self.counts: dict[str, int] = {}

    def __call__(self, event: str, t: float | None = None, **kw: Any) -> dict[str, Any]:
        """Write one event.

        Args:
            event: its name (``poll``, ``launch``, ``release``, ``node_reclaim``...).
            t: its time, epoch seconds (None: now); written to the millisecond.
            **kw: its fields; numpy scalars and paths are converted, anything else JSON
                cannot encode is written with ``str``.

        Returns:
            The record as written.
        """
        t = time.time() if t is None else t
        rec = {"t": round(t, 3), "rel": round(t - self.t0, 3), "event": event, **kw}
        self._f.write(json.dumps(rec, default=_json_default) + "\n")
        self._f.flush()
        self.counts[event] = self.counts.get(event, 0) + 1
        if self.echo is not None:
            self.echo(rec)
        return rec

    def close(self) -> None:
        """Close the file."""
        self._f.close()


def _json_default(o: Any) -> Any:
    """JSON fallback: numpy scalars as numbers, paths and anything else as text.

    The ``inf`` branch never runs: ``json`` writes floats itself (``Infinity``) without
    calling the fallback.
    """
    if isinstance(o, np.integer | np.floating):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, float) and math.isinf(o):
        return None
    return str(o)


#: The bridge's training model per PAL app class (as ``mtgym bridge replay`` picks it).
MODEL_BY_CLASS = {AppClass.A: "cnn", AppClass.B: "mlp", AppClass.C: "mlp", AppClass.D: "cnn"}


@dataclass
class Running:
    """A job's current generation.

    Attributes:
        gen: the generation number.
        nodes: the node indices it runs on.
        handle: the launcher's handle.
        t_start: when it was started, epoch seconds.
    """

    gen: int
    nodes: tuple[int, ...]
    handle: Any
    t_start: float


@dataclass
class Scavenger:
    """The live loop (see module doc).

    Args:
        supply: the live Slurm supply.
        policy: a registered policy (``mtgym.policy.registry.make_policy``).
        workload: an instance whose jobs (the first ``max_jobs``) the nodes are lent to.
        launcher: runs the generations (``ReportLauncher`` reports only).
        out_dir: where ``events.jsonl``, ``summary.json`` and the job folders go.
        poll_s: the polling period.
        max_jobs: lend to the first this many jobs of ``workload`` (None: all).
        model: the bridge model for every job (None: by app class, ``MODEL_BY_CLASS``).
        clock, sleep: injectable for tests.
        echo: called with every event record (console output).

    Attributes:
        running: job index -> its running generation.
        gens: job index -> the last generation number started.
        polls: periods run.
        release_s: seconds from seeing each reclaim to its generation stopped.
        live: the live state (after ``open``).
        instance: the live instance (after ``open``).
        log: the event log (after ``open``).
        t0: the start, epoch seconds.
    """

    supply: SlurmSupply
    policy: Policy
    workload: Instance
    launcher: NodeLauncher
    out_dir: Path
    poll_s: float = 5.0
    max_jobs: int | None = None
    model: str | None = None  # the bridge model for every job (None: by app class)
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    echo: Callable[[dict[str, Any]], None] | None = None
    running: dict[int, Running] = field(default_factory=dict)
    gens: dict[int, int] = field(default_factory=dict)
    polls: int = 0
    release_s: list[float] = field(default_factory=list)  # reclaim seen -> step stopped
    live: LiveState | None = None
    instance: Instance | None = None
    log: EventLog | None = None
    t0: float = 0.0

    # -- set-up ------------------------------------------------------------------------
    def open(self) -> None:
        """Discover the nodes (raises ``SlurmError`` if Slurm cannot be read), build the
        live instance, reset the policy.

        The node set is fixed here: nodes that appear later are logged (``ignored_node``)
        and never lent. Logs ``start`` with the nodes, jobs and the nodes lendable now, and
        installs the retry logger on the Slurm client unless it has one.

        Raises:
            SlurmError: the first poll failed after its retries (logged ``slurm_error``
                with ``fatal``).
            ValueError: Slurm lists no node.
        """
        self.out_dir = Path(self.out_dir)
        self.t0 = self.clock()
        self.log = EventLog(self.out_dir / "events.jsonl", self.t0, self.echo)
        if self.supply.client.on_retry is None:
            self.supply.client.on_retry = self._on_retry
        self.supply.poll()
        if self.supply.error is not None:
            self.log("slurm_error", error=str(self.supply.error), fatal=True)
            raise self.supply.error
        names = list(self.supply.names)
        self.instance = live_instance(
            names, self.supply.nodes, self.workload, max_jobs=self.max_jobs
        )
        self.live = LiveState(self.instance, self.policy.info_mode, self.t0)
        self.log(
            "start",
            nodes=names,
            jobs=list(self.instance.jobs.name),
            policy=self.policy.name,
            poll_s=self.poll_s,
            partition=self.supply.partition,
            lendable=[names[n] for n in sorted(self.supply.lendable)],
        )
        self.live.set_available(self.supply.lendable)
        self.policy.reset(self.live.view())

    def _on_retry(self, attempt: int, exc: Exception, wait_s: float) -> None:
        """The Slurm client's ``on_retry``: log a ``retry`` event."""
        if self.log is not None:
            self.log("retry", attempt=attempt, error=str(exc), wait_s=round(wait_s, 3))

    # -- one period ----------------------------------------------------------------------
    def step(self) -> list[SupplyEvent]:
        """Poll, release reclaimed nodes, decide, launch. Returns the supply events.

        In order: poll (a failure is logged and reclaims every lent node), log each supply
        event as ``node_<kind>``, stop the jobs on reclaimed nodes, integrate progress and
        stop the jobs that completed, mark the lendable nodes, let the policy decide, and
        log ``poll`` with what each job holds.
        """
        assert self.live is not None and self.log is not None and self.instance is not None
        self.polls += 1
        t_poll = self.clock()
        events = self.supply.poll()
        t_seen = self.clock()
        if self.supply.error is not None:
            self.log("slurm_error", error=str(self.supply.error))
        N = self.instance.num_nodes
        for e in events:
            if e.node >= N:
                self.log("ignored_node", name=e.name, why="appeared after the start")
                continue
            self.log(f"node_{e.kind}", t=e.t, **_ev(e))
        self._release_reclaimed(events, t_seen)
        for j in self.live.advance_to(t_seen):
            self._stop_job(j, reclaim=False, why="complete")
        self.live.set_available({n: end for n, end in self.supply.lendable.items() if n < N})
        self._decide()
        self.log("poll", poll_s=round(t_seen - t_poll, 4), lent=self._lent_summary())
        return events

    def _release_reclaimed(self, events: list[SupplyEvent], t_seen: float) -> None:
        """Stop at once every job that holds a reclaimed node (``release_s`` from
        ``t_seen``, the time the poll returned).
        """
        assert self.live is not None
        gone = {e.node for e in events if e.kind == "reclaim"}
        hit = sorted(
            {int(self.live.node_job[n]) for n in gone if n < self.live.node_job.size} - {-1}
        )
        for j in hit:
            self._stop_job(j, reclaim=True, why="reclaim", t_seen=t_seen)

    def _stop_job(self, j: int, *, reclaim: bool, why: str, t_seen: float | None = None) -> None:
        """Take every node from job ``j`` and stop its generation, if one runs.

        Logs ``release`` (a reclaim or the shutdown) or ``stop`` (a rescale or completion)
        with the launcher's facts; with ``t_seen``, also ``release_s``.

        Args:
            j: the job index.
            reclaim: stop at once (no graceful checkpoint wait).
            why: ``reclaim``, ``rescale``, ``complete`` or ``shutdown``, logged.
            t_seen: when the reclaim was seen, epoch seconds (None: not a reclaim).
        """
        assert self.live is not None and self.log is not None
        run = self.running.pop(j, None)
        self.live.set_nodes(j, ())
        if run is None:
            return
        facts = self.launcher.stop(run.handle, reclaim=reclaim)
        t = self.clock()
        extra: dict[str, Any] = {}
        if t_seen is not None:
            extra["release_s"] = round(t - t_seen, 4)
            self.release_s.append(t - t_seen)
        self.log(
            "release" if reclaim else "stop",
            t=t,
            job=j,
            gen=run.gen,
            nodes=self._names(run.nodes),
            why=why,
            **extra,
            **facts,
        )

    def _decide(self) -> None:
        """Ask the policy, repair its allocation as the simulator would, and apply it.

        Every job whose node set changes is stopped gracefully (all of them first, so the
        nodes are free), then started on its new set if it has one.
        """
        assert self.live is not None and self.instance is not None
        view = self.live.view()
        alloc = self.policy.decide(view)
        node_job = alloc.node_job if isinstance(alloc, Allocation) else alloc
        a = validate_allocation(node_job, self.instance.num_nodes, self.instance.num_jobs)
        st = self.live.state
        shim = SimpleNamespace(available=st.available, status=st.status, node_job=st.node_job)
        rep = repair_allocation(shim, self.instance, a)  # type: ignore[arg-type]
        if rep.repaired:
            self.log("repaired", jobs=rep.jobs, unavailable=rep.unavailable_nodes)
        cur = self.live.node_job
        changed = np.flatnonzero(a != cur)
        jobs = sorted((set(a[changed].tolist()) | set(cur[changed].tolist())) - {-1})
        # stop first (frees nodes), then start
        rescaled = [j for j in jobs if j in self.running]
        for j in rescaled:
            self._stop_job(j, reclaim=False, why="rescale")
        for j in jobs:
            nodes = tuple(np.flatnonzero(a == j).tolist())
            if nodes:
                self._start_job(j, nodes, rescale=j in rescaled)

    def _start_job(self, j: int, nodes: tuple[int, ...], *, rescale: bool = False) -> None:
        """Start job ``j``'s next generation on ``nodes`` and log ``launch`` (with its
        predicted rate, and the commands when the launcher only reports them); ``rescale``:
        the job ran until this decision stopped it (counted as a rescale, not a start).
        """
        assert self.live is not None and self.instance is not None and self.log is not None
        gen = self.gens.get(j, -1) + 1
        self.gens[j] = gen
        jobs = self.instance.jobs
        model = self.model or MODEL_BY_CLASS[AppClass(int(jobs.app_class[j]))]
        spec = job_spec(self.out_dir, j, jobs.name[j], model=model)
        handle = self.launcher.start(spec, self._names(nodes), nodes, gen)
        self.running[j] = Running(gen, nodes, handle, self.clock())
        self.live.set_nodes(j, nodes, rescale=rescale)
        self.log(
            "launch",
            job=j,
            name=jobs.name[j],
            gen=gen,
            nodes=self._names(nodes),
            rate=round(float(self.live.state.rate[j]), 3),
            **({"commands": handle["commands"]} if isinstance(handle, dict) else {}),
        )

    def _names(self, nodes: tuple[int, ...]) -> list[str]:
        """Host names of node indices."""
        return [self.supply.names[n] for n in nodes]

    def _lent_summary(self) -> dict[str, list[str]]:
        """Job index (as text) -> host names it holds, for the ``poll`` event."""
        assert self.live is not None
        return {str(j): self._names(nodes) for j, nodes in sorted(self.live.holdings().items())}

    def holdings(self) -> dict[int, list[str]]:
        """Job -> names of the nodes it holds now."""
        assert self.live is not None
        return {j: self._names(n) for j, n in self.live.holdings().items()}

    # -- the whole run -------------------------------------------------------------------
    def run(self, duration_s: float | None = None, max_polls: int | None = None) -> dict[str, Any]:
        """Open, step every ``poll_s`` until ``duration_s`` or ``max_polls``, close.

        Returns the summary (also written to ``summary.json``). Every generation is
        stopped on the way out, also on an exception or Ctrl-C.

        Periods start every ``poll_s`` seconds (a slow poll shortens the wait, never
        overlaps); the last period is the one that ends at or after ``duration_s``.

        Args:
            duration_s: seconds to run from the start (None: no limit).
            max_polls: periods to run (None: no limit). With neither, it runs until
                interrupted.
        """
        self.open()
        try:
            end = math.inf if duration_s is None else self.t0 + duration_s
            while max_polls is None or self.polls < max_polls:
                t = self.clock()
                self.step()
                if self.clock() >= end:
                    break
                nxt = min(t + self.poll_s, end)
                self.sleep(max(0.0, nxt - self.clock()))
        finally:
            summary = self.close()
        return summary

    def close(self) -> dict[str, Any]:
        """Stop every generation, close the supply's windows, write ``summary.json``.

        Returns:
            ``polls``, ``duration_s``, event counts, reclaim release times (count, max,
            mean), Slurm commands run, and per job that was ever started its starts,
            rescales, node-seconds and predicted progress (samples).
        """
        assert self.log is not None
        for j in sorted(self.running):
            self._stop_job(j, reclaim=True, why="shutdown")
        self.launcher.close()
        self.supply.release_all()
        rel = np.asarray(self.release_s)
        summary = {
            "polls": self.polls,
            "duration_s": round(self.clock() - self.t0, 3),
            "events": dict(self.log.counts),
            "reclaims_released": int(rel.size),
            "release_s_max": float(rel.max()) if rel.size else None,
            "release_s_mean": float(rel.mean()) if rel.size else None,
            "slurm_calls": self.supply.client.calls,
        }
        if self.live is not None:
            s = self.live.state
            summary["jobs"] = {
                str(j): {
                    "name": self.live.instance.jobs.name[j],
                    "starts": int(s.starts[j]),
                    "rescales": int(s.rescales[j]),
                    "node_s": round(float(s.node_s[j]), 3),
                    "predicted_progress": float(s.progress[j]),
                }
                for j in range(self.live.instance.num_jobs)
                if s.starts[j] > 0
            }
        self.log("end", **{k: v for k, v in summary.items() if k != "jobs"})
        self.log.close()
        atomic_write_json(self.out_dir / "summary.json", summary, default=_json_default)
        return summary


def _ev(e: SupplyEvent) -> dict[str, Any]:
    """A supply event's fields for the log, without ``t`` and ``kind`` (the event has them)."""
    d = e.as_dict()
    d.pop("t")
    d.pop("kind")
    return d
