"""``SlurmSupply``: idle nodes of a running Slurm cluster as a supply source.

Two faces:

- **live** (``poll()``): each call takes one snapshot (``sinfo``, ``squeue``,
  ``scontrol show reservation``) and returns what changed as ``SupplyEvent``s: a node became
  lendable (``appear``), stopped being lendable (``reclaim``), or its known end changed
  (``end_known``). Node indices are stable: the order of first sight, by natural name order
  within one poll.
- **capture** (``generate(rng, num_nodes, t0, t1)``): the same interface as
  ``SyntheticSupply``/``TraceSupply``: it polls the live cluster for ``t1 - t0`` wall
  seconds and returns the idle windows it saw as a ``Supply`` on [t0, t1), so the
  simulator, the env and the baselines can run on a recording of the real machine.

State mapping (``classify``): a node is lendable only when its base state is ``idle`` with
no drain, not-responding (``*``), maintenance, reservation, power or reboot flag, or when it
is allocated only to the scavenger's own jobs (their names start with ``own_prefix``); and
when no reservation or planned pending job needs it within ``margin_s``. Everything else
is a reclaim: ``alloc``/``mix`` by another job, ``drain``/``drng``, ``down``, ``*``, a node
that vanished from ``sinfo``, and every node when Slurm cannot be read (the scavenger never
keeps a node it cannot see).

Known ends: the earliest start of a future reservation on the node, or of a pending job that
the backfill scheduler planned on it (``squeue`` ``%S``/``%Y``), whichever comes first.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from mtgym.core.errors import ConfigError
from mtgym.core.instance import Supply
from mtgym.scavenger.slurm import ClusterSnapshot, NodeInfo, SlurmClient, SlurmError

#: Flags in the order their name is given as the reason a node is not lendable.
_REASON_ORDER = (
    "not_responding",
    "drain",
    "maint",
    "reserved",
    "fail",
    "reboot",
    "completing",
    "power_save",
    "powering_up",
    "powering_down",
    "power_down",
)


@dataclass(frozen=True)
class NodeVerdict:
    """Whether a node may be lent now, why (or why not), and its known end (epoch s).

    Attributes:
        lendable: the node may be lent now.
        reason: ``idle`` or ``held`` (only the scavenger's jobs on it) when lendable; else
            the first blocking flag, ``reservation <name>``, ``<base> by job <ids>``, the
            base state, or ``needed soon``.
        known_end: when a reservation or planned job needs it (inf: not known).
    """

    lendable: bool
    reason: str
    known_end: float = math.inf


@dataclass(frozen=True)
class SupplyEvent:
    """One change of the live supply. ``t`` and ``known_end`` are epoch seconds.

    Attributes:
        t: the poll's time.
        kind: ``"appear"`` (lendable now), ``"reclaim"`` (no longer) or ``"end_known"``
            (still lendable, its known end changed).
        node: the node's stable index.
        name: its host name.
        reason: the verdict's reason (``vanished``, ``slurm unreachable: ...`` or
            ``scavenger stopped`` for a node without a verdict); empty for ``end_known``.
        known_end: the node's known end (inf: unknown).
    """

    t: float
    kind: str  # "appear", "reclaim" or "end_known"
    node: int
    name: str
    reason: str = ""
    known_end: float = math.inf

    def as_dict(self) -> dict[str, object]:
        """JSON-ready (an unknown end is ``None``)."""
        return {
            "t": self.t,
            "kind": self.kind,
            "node": self.node,
            "name": self.name,
            "reason": self.reason,
            "known_end": None if math.isinf(self.known_end) else self.known_end,
        }


def natural_key(name: str) -> tuple:
    """Sort key that puts ``n2`` before ``n10``.

    Digit runs compare as numbers, so ``n02`` and ``n2`` tie; the rest compares as text.

    Args:
        name: a host name.
    """
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def known_ends(snap: ClusterSnapshot, own_prefix: str | None = None) -> dict[str, float]:
    """Node -> earliest time (epoch s) a future reservation or a planned foreign pending
    job needs it. Active reservations are not ends: they block the node (``classify``).

    A pending job's end is its expected start on its scheduled nodes; jobs without one
    (``N/A``) give none.

    Args:
        snap: one poll.
        own_prefix: name prefix of the scavenger's own jobs (their pending steps are not
            ends).

    Returns:
        Host name -> epoch seconds, only for nodes with a finite end.
    """
    ends: dict[str, float] = {}

    def put(node: str, t: float) -> None:
        if math.isfinite(t) and t < ends.get(node, math.inf):
            ends[node] = t

    for r in snap.reservations:
        if r.start_s > snap.t:
            for n in r.nodes:
                put(n, r.start_s)
    for j in snap.jobs:
        if j.state == "PENDING" and not _ours(j.name, own_prefix):
            for n in j.sched_nodes:
                put(n, j.start_s)
    return ends


def _ours(job_name: str, own_prefix: str | None) -> bool:
    """The job is one of the scavenger's own (never when ``own_prefix`` is None or empty)."""
    return bool(own_prefix) and job_name.startswith(own_prefix)  # type: ignore[arg-type]


def classify(
    snap: ClusterSnapshot, *, own_prefix: str | None = None, margin_s: float = 30.0
) -> dict[str, NodeVerdict]:
    """Each node's verdict (see the module doc for the rules).

    Jobs in ``RUNNING``, ``COMPLETING``, ``CONFIGURING``, ``SUSPENDED`` or ``STOPPED``
    occupy their nodes; a reservation is active from its start until its end (for ever when
    the end is unknown).

    Args:
        snap: one poll.
        own_prefix: name prefix of the scavenger's own jobs.
        margin_s: a node whose known end is closer than this is ``needed soon``.

    Returns:
        Host name -> verdict, for every node of the snapshot.
    """
    running: dict[str, list[tuple[str, str]]] = {}
    for j in snap.jobs:
        if j.state in ("RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STOPPED"):
            for n in j.nodes:
                running.setdefault(n, []).append((j.job_id, j.name))
    active_resv: dict[str, str] = {}
    for r in snap.reservations:
        if r.start_s <= snap.t < (r.end_s if math.isfinite(r.end_s) else math.inf):
            for n in r.nodes:
                active_resv.setdefault(n, r.name)
    ends = known_ends(snap, own_prefix)
    out: dict[str, NodeVerdict] = {}
    for name, node in snap.nodes.items():
        out[name] = _verdict(
            node, running.get(name, []), active_resv, ends, snap.t, own_prefix, margin_s
        )
    return out


def _verdict(
    node: NodeInfo,
    jobs: list[tuple[str, str]],
    active_resv: dict[str, str],
    ends: dict[str, float],
    t: float,
    own_prefix: str | None,
    margin_s: float,
) -> NodeVerdict:
    """One node's verdict; the first rule that applies decides.

    In order: a blocking flag (``_REASON_ORDER``), an active reservation, a foreign job,
    a base state other than idle (or alloc/mix held only by the scavenger), a known end
    within ``margin_s`` of ``t``; otherwise lendable.
    """
    end = ends.get(node.name, math.inf)
    for flag in _REASON_ORDER:
        if flag in node.flags:
            return NodeVerdict(False, flag, end)
    if node.name in active_resv:
        return NodeVerdict(False, f"reservation {active_resv[node.name]}", end)
    foreign = [jid for jid, jname in jobs if not _ours(jname, own_prefix)]
    if foreign:
        return NodeVerdict(False, f"{node.base} by job {','.join(foreign)}", end)
    if node.base == "idle":
        why = "idle"
    elif node.base in ("alloc", "mix") and jobs:
        why = "held"  # only the scavenger's own jobs run there
    else:
        return NodeVerdict(False, node.base, end)
    if end - t < margin_s:
        return NodeVerdict(False, "needed soon", end)
    return NodeVerdict(True, why, end)


@dataclass
class SlurmSupply:
    """The live supply of a Slurm cluster (see module doc).

    Args:
        client: the Slurm client (its retries and timeouts apply to every poll).
        partition: only nodes of this partition (None = all).
        margin_s: a node needed within this many seconds is not lent (and a lent one is
            reclaimed when its known end comes this close).
        own_prefix: job-name prefix of the scavenger's own Slurm jobs: a node they hold
            stays lendable.
        detail: also read jobs and reservations (known ends, foreign jobs); False reads
            ``sinfo`` only (one command per poll).
        poll_s: the period ``generate`` polls at.
        clock: epoch seconds now (injectable for tests).
        sleep: waits between ``generate``'s polls (injectable for tests).

    Attributes:
        names: host names by stable index (first sight; natural order within a poll).
        index: host name -> stable index.
        lendable: index -> known end (epoch s, inf = unknown) of the nodes lendable now.
        verdicts: the last poll's verdict per host name (empty after a failed poll).
        nodes: the last successful ``sinfo``, by host name.
        error: the last poll's error (None: it worked).
        polls: polls so far, failed ones included.
    """

    client: SlurmClient
    partition: str | None = None
    margin_s: float = 30.0
    own_prefix: str | None = None
    detail: bool = True
    poll_s: float = 2.0
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    names: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    lendable: dict[int, float] = field(default_factory=dict)  # node -> known end
    verdicts: dict[str, NodeVerdict] = field(default_factory=dict)
    nodes: dict[str, NodeInfo] = field(default_factory=dict)  # the last sinfo
    error: SlurmError | None = None  # the last poll's error (None = it worked)
    polls: int = 0
    _open: dict[int, tuple[float, bool]] = field(default_factory=dict)  # node -> start, known
    _closed: list[tuple[int, float, float, bool]] = field(default_factory=list)

    # -- live --------------------------------------------------------------------------
    def node_index(self, name: str) -> int:
        """The stable index of a node (assigned on first sight).

        Args:
            name: the host name.
        """
        if name not in self.index:
            self.index[name] = len(self.names)
            self.names.append(name)
        return self.index[name]

    def discover(self) -> list[str]:
        """Poll once (if never polled) and return the node names in index order."""
        if not self.polls:
            self.poll()
        return list(self.names)

    def poll(self) -> list[SupplyEvent]:
        """One snapshot -> the changes since the last poll (reclaims first).

        When Slurm cannot be read after the client's retries, every lent node is
        reclaimed (reason ``slurm unreachable: ...``) and ``error`` is set.
        """
        self.polls += 1
        try:
            snap = self.client.snapshot(self.partition, detail=self.detail)
        except SlurmError as exc:
            self.error = exc
            now = self.clock()
            self.verdicts = {}
            return self._update(now, {}, f"slurm unreachable: {exc.detail}")
        self.error = None
        self.nodes = snap.nodes
        for name in sorted(snap.nodes, key=natural_key):
            self.node_index(name)
        self.verdicts = classify(snap, own_prefix=self.own_prefix, margin_s=self.margin_s)
        want = {self.index[n]: v.known_end for n, v in self.verdicts.items() if v.lendable}
        return self._update(snap.t, want, "vanished")

    def _update(self, t: float, want: dict[int, float], missing: str) -> list[SupplyEvent]:
        """Move from the lendable set to ``want`` at ``t``, recording window ends and starts.

        Args:
            t: the time of the change, epoch seconds.
            want: index -> known end of the nodes lendable from now.
            missing: the reclaim reason of a node without a verdict.

        Returns:
            Reclaims (by index), then appearances and changed known ends (by index).
        """
        events: list[SupplyEvent] = []
        for n in sorted(set(self.lendable) - set(want)):
            v = self.verdicts.get(self.names[n])
            why = v.reason if v is not None else missing
            end = v.known_end if v is not None else math.inf
            events.append(SupplyEvent(t, "reclaim", n, self.names[n], why, end))
            start, known = self._open.pop(n)
            self._closed.append((n, start, t, known))
        for n in sorted(want):
            name = self.names[n]
            if n not in self.lendable:
                why = self.verdicts[name].reason
                events.append(SupplyEvent(t, "appear", n, name, why, want[n]))
                self._open[n] = (t, math.isfinite(want[n]))
            elif want[n] != self.lendable[n]:
                events.append(SupplyEvent(t, "end_known", n, name, "", want[n]))
        self.lendable = want
        return events

    def release_all(self) -> list[SupplyEvent]:
        """Close every open window now (the scavenger stops).

        Returns:
            One ``reclaim`` per lent node, reason ``scavenger stopped``.
        """
        self.verdicts = {}
        return self._update(self.clock(), {}, "scavenger stopped")

    # -- capture -----------------------------------------------------------------------
    def capture(self, t0_epoch: float, t1_epoch: float, num_nodes: int | None = None) -> Supply:
        """The windows seen so far, on [t0_epoch, t1_epoch) shifted so t0_epoch is 0;
        windows still open end at ``t1_epoch``. Nodes past ``num_nodes`` are dropped.

        A window is ``end_known`` when its node had a known end when it opened.

        Args:
            t0_epoch: the recording's start (becomes time 0).
            t1_epoch: its end.
            num_nodes: nodes of the supply (None: every node seen).

        Returns:
            The windows clipped to the span; empty ones are dropped.
        """
        n_all = len(self.names) if num_nodes is None else num_nodes
        rows = list(self._closed) + [(n, s, t1_epoch, k) for n, (s, k) in self._open.items()]
        rows = [r for r in rows if r[0] < n_all]
        node = np.array([r[0] for r in rows], dtype=np.int64)
        s = np.maximum(np.array([r[1] for r in rows], dtype=float), t0_epoch) - t0_epoch
        e = np.minimum(np.array([r[2] for r in rows], dtype=float), t1_epoch) - t0_epoch
        k = np.array([r[3] for r in rows], dtype=bool)
        ok = e > s
        return Supply.from_windows(node[ok], s[ok], e[ok], k[ok], num_nodes=n_all)

    def generate(self, rng: np.random.Generator, num_nodes: int, t0: float, t1: float) -> Supply:
        """Record the live cluster for ``t1 - t0`` wall seconds; its windows on [t0, t1).

        Node i is the i-th node in index order (natural name order at the first poll).
        ``rng`` is unused (a recording is not random).

        Blocks for the whole span, polling every ``poll_s`` wall seconds.

        Args:
            rng: unused.
            num_nodes: nodes of the supply; nodes past it are dropped.
            t0: the supply's start, simulated seconds.
            t1: its end; ``t1 - t0`` is also the wall time recorded.

        Raises:
            ConfigError: ``num_nodes`` < 1 or a span that is not finite and positive.
        """
        if num_nodes < 1 or not (t1 > t0) or not math.isfinite(t1 - t0):
            raise ConfigError(
                "num_nodes/span", (num_nodes, t0, t1), "num_nodes >= 1, finite t1 > t0"
            )
        start = self.clock()
        end = start + (t1 - t0)
        self.poll()
        while (now := self.clock()) < end:
            self.sleep(min(self.poll_s, end - now))
            self.poll()
        sup = self.capture(start, end, num_nodes)
        return Supply.from_windows(
            sup.node, sup.start_s + t0, sup.end_s + t0, sup.end_known, num_nodes=num_nodes
        )
