"""Replay of an SWF log under FCFS + EASY backfilling, and the idle windows it leaves.

A job log records what ran, but often not when (the Lublin log's wait times are ``-1``), so
the idle nodes a scavenger could borrow have to be recovered by simulating the batch
scheduler. ``easy_backfill`` does so with the usual policy of production machines
(Mu'alem and Feitelson, 2001):

* jobs queue in submission order (FCFS); the head of the queue starts as soon as enough nodes
  are free;
* when the head cannot start, it gets a *reservation*: the earliest time (the *shadow* time)
  at which enough nodes are free if every running job ends at its *requested* (estimated)
  end, ``start + req_time_s``; the nodes free then beyond the head's need are *extra* nodes;
* a later job may start now (backfill) only if it fits in the nodes free now AND either its
  requested end is no later than the shadow time or it needs no more than the extra nodes
  (which it then consumes);
* a job really ends at ``start + min(run_s, req_time_s)`` (schedulers kill jobs at their
  requested time), never later than its estimate, so reservations always hold;
* a starting job takes the lowest-numbered free nodes (deterministic).

``idle_windows`` turns the schedule into a ``Supply``: each node's gaps between jobs.

**Known ends.** With ``known_ends=True``, the window ``[a, b)`` on a node, ended at ``b`` by
job ``j`` starting there, has ``end_known`` True iff ``j`` started at a head-of-queue
reservation that was already fixed, at its final value, when the window opened: the
scheduler had promised ``j`` the start ``b`` at some time ``<= a`` and never moved it. A
reservation fixes a start time, not a node set; a scheduler that pins the nodes when it makes
the reservation (as Slurm does) can tell the scavenger the end, which is the case modelled.
Windows ended by a backfilled job, by a job that started at the head without waiting, by a
job that started earlier than promised (a job ended before its estimate), or by the end of
the span are surprises.
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass

import numpy as np

from mtgym.core.errors import ConfigError
from mtgym.core.instance import Supply, frozen
from mtgym.readers.swf import SWFLog


@dataclass(frozen=True, eq=False)
class Schedule:
    """When and where each job of a log ran under FCFS + EASY backfilling.

    One row per replayed job, in submission order; all arrays are read-only. Job ``i`` ran on
    nodes ``node_idx[node_ptr[i]:node_ptr[i + 1]]`` (sorted, not necessarily contiguous)
    during ``[start_s[i], end_s[i])``.

    Attributes:
        num_nodes: Nodes of the machine replayed.
        job: (J,) int64 row of the job in the ``SWFLog``.
        job_id: (J,) int64 job number from the log.
        submit_s: (J,) float64 submit time.
        start_s: (J,) float64 start time (``>= submit_s``).
        end_s: (J,) float64 real end, ``start_s + min(run_s, req_time_s)``.
        req_end_s: (J,) float64 requested end, ``start_s + req_time_s`` (what EASY plans with).
        nodes: (J,) int64 node count.
        node_ptr: (J + 1,) int64 CSR offsets into ``node_idx``.
        node_idx: (sum(nodes),) int32 node ids.
        reserved_s: (J,) float64 the first reservation the job got as the blocked head of the
            queue (NaN if it never waited at the head); ``start_s <= reserved_s`` always.
        reserved_at_s: (J,) float64 when that first reservation was made (NaN if none).
        start_known_s: (J,) float64 since when the start time was fixed by the reservation the
            job started at (NaN when the start was not at a reservation); see the module's
            known-ends rule.
        dropped: Jobs not replayed because they need more nodes than the machine has.
    """

    num_nodes: int
    job: np.ndarray
    job_id: np.ndarray
    submit_s: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    req_end_s: np.ndarray
    nodes: np.ndarray
    node_ptr: np.ndarray
    node_idx: np.ndarray
    reserved_s: np.ndarray
    reserved_at_s: np.ndarray
    start_known_s: np.ndarray
    dropped: int = 0

    @property
    def num_jobs(self) -> int:
        """Number of jobs replayed."""
        return int(self.start_s.shape[0])

    @property
    def wait_s(self) -> np.ndarray:
        """(J,) queueing delay of each job."""
        return self.start_s - self.submit_s

    def nodes_of(self, i: int) -> np.ndarray:
        """The node ids job ``i`` ran on.

        Args:
            i: the job's row in the schedule (not its log row or number).

        Returns:
            int32 node ids, ascending (a read-only view).
        """
        return self.node_idx[self.node_ptr[i] : self.node_ptr[i + 1]]

    def busy_node_seconds(self, t0: float, t1: float) -> float:
        """Node-seconds the jobs occupied within [t0, t1).

        Args:
            t0: span start, seconds of log time.
            t1: span end.
        """
        d = np.clip(np.minimum(self.end_s, t1) - np.maximum(self.start_s, t0), 0.0, None)
        return float(np.dot(d, self.nodes))

    def utilisation(self, t0: float, t1: float) -> float:
        """Share of the machine's node-seconds on [t0, t1) that jobs occupied.

        Args:
            t0: span start, seconds of log time.
            t1: span end, finite and after ``t0``.

        Raises:
            ConfigError: a span not finite or empty.
        """
        _check_span(t0, t1)
        return self.busy_node_seconds(t0, t1) / (self.num_nodes * (t1 - t0))


def easy_backfill(
    log: SWFLog,
    num_nodes: int,
    *,
    t0: float | None = None,
    t1: float | None = None,
) -> Schedule:
    """Replay a log on ``num_nodes`` nodes under FCFS + EASY backfilling (see the module).

    Args:
        log: The jobs (node counts, submit, run and requested times).
        num_nodes: Nodes of the machine.
        t0: Replay only jobs submitted at or after ``t0`` (default: all); the machine starts
            empty, so for a warm machine at some time replay from earlier and clip the windows.
        t1: Replay only jobs submitted before ``t1`` (default: all). Later jobs cannot change
            any start before ``t1``, so idle windows clipped to ``t1`` are exact. Jobs still
            queued at ``t1`` are scheduled to completion.

    Returns:
        The schedule of the replayed jobs; jobs needing more than ``num_nodes`` nodes are
        dropped and counted in ``Schedule.dropped``.

    Raises:
        ConfigError: ``num_nodes`` < 1.
    """
    if num_nodes < 1:
        raise ConfigError("num_nodes", num_nodes, ">= 1")
    in_span = np.ones(log.num_jobs, dtype=bool)
    if t0 is not None:
        in_span &= log.submit_s >= t0
    if t1 is not None:
        in_span &= log.submit_s < t1
    fits = log.nodes <= num_nodes
    too_big = int(np.count_nonzero(in_span & ~fits))
    rows = np.flatnonzero(in_span & fits)
    submit = log.submit_s[rows]
    need = log.nodes[rows]
    run_for = np.minimum(log.run_s[rows], log.req_time_s[rows])
    req = log.req_time_s[rows]
    start, assigned, reserved, reserved_at, known = _simulate(
        submit.tolist(), need.tolist(), run_for.tolist(), req.tolist(), num_nodes
    )
    start_a = np.asarray(start, dtype=np.float64)
    J = rows.size
    node_ptr = np.zeros(J + 1, dtype=np.int64)
    np.cumsum(need, out=node_ptr[1:])
    node_idx = np.concatenate(assigned).astype(np.int32, copy=False) if J else np.zeros(0, np.int32)
    return Schedule(
        num_nodes=int(num_nodes),
        job=frozen(rows.astype(np.int64)),
        job_id=frozen(log.job_id[rows].copy()),
        submit_s=frozen(submit.copy()),
        start_s=frozen(start_a),
        end_s=frozen(start_a + run_for),
        req_end_s=frozen(start_a + req),
        nodes=frozen(need.astype(np.int64)),
        node_ptr=frozen(node_ptr),
        node_idx=frozen(node_idx),
        reserved_s=frozen(np.asarray(reserved, dtype=np.float64)),
        reserved_at_s=frozen(np.asarray(reserved_at, dtype=np.float64)),
        start_known_s=frozen(np.asarray(known, dtype=np.float64)),
        dropped=too_big,
    )


def _simulate(
    submit: list[float],
    need: list[int],
    run_for: list[float],
    req: list[float],
    num_nodes: int,
) -> tuple[list[float], list[np.ndarray], list[float], list[float], list[float]]:
    """The event loop of ``easy_backfill`` on plain lists (jobs sorted by submit time).

    Events are submissions (in order) and completions (a heap of real ends). At each event
    time, completions are processed first, then arrivals are queued, then the scheduler
    makes one pass: start heads while they fit, reserve for a blocked head, backfill.
    Running jobs are also kept sorted by requested end, for the shadow-time computation.

    A pass after arrivals only (no completion, same head) need only consider the new
    arrivals for backfilling: free nodes, shadow time and extra nodes are as the last pass
    left them, and time has moved on, so every older queued job is still refused.

    Args:
        submit: submit times, non-decreasing.
        need: nodes of each job, each at most ``num_nodes``.
        run_for: real run time of each job, ``min(run_s, req_time_s)``.
        req: requested time of each job.
        num_nodes: nodes of the machine.

    Returns:
        Per job: start time, node ids, first reservation, when it was made, and since when
        its final start was fixed (``Schedule``'s columns; NaN where none).
    """
    sim = _Backfill(need, run_for, req, num_nodes)
    J = len(submit)
    nxt = 0
    inf = float("inf")
    ends = sim.ends
    while nxt < J or ends:
        t = min(submit[nxt] if nxt < J else inf, ends[0][0] if ends else inf)
        completed = sim.complete_until(t)
        first_new = len(sim.queue)
        while nxt < J and submit[nxt] <= t:
            sim.queue.append(nxt)
            nxt += 1
        if not sim.queue:
            continue
        scan_from = 1
        if completed or first_new == 0 or sim.queue[0] != sim.head:
            if not sim.start_heads(t):
                continue
        else:
            scan_from = first_new
        sim.backfill(t, scan_from)
    return sim.start, sim.assigned, sim.reserved, sim.reserved_at, sim.known


class _Backfill:
    """The state of ``_simulate``'s EASY-backfilling pass: free nodes, running jobs (by
    real end in a heap, by requested end sorted), the queue, and the blocked head's
    reservation; per job its start, nodes, first reservation and when its final start
    became known.

    Args:
        need: nodes of each job.
        run_for: real run time of each job.
        req: requested time of each job.
        num_nodes: nodes of the machine.

    Attributes:
        start: per job, its start time (NaN while queued).
        assigned: per job, its node ids (empty until it starts).
        reserved: per job, its first reservation as the blocked head (NaN if none).
        reserved_at: per job, when that reservation was made.
        known: per job, since when the start it got was fixed (NaN unless it started at
            its standing reservation).
        cur_res: the blocked head's current reservation (shadow time).
        cur_since: since when ``cur_res`` has held unchanged.
        free: (num_nodes,) bool, free nodes.
        n_free: number of free nodes.
        ends: heap of (real end, job) of the running jobs.
        by_req_end: the running jobs' (requested end, job), sorted.
        queue: queued jobs, in submission order.
        head: the job ``cur_res`` is for (-1 when none is blocked).
        shadow: the blocked head's shadow time, as of the last pass.
        extra: nodes free at the shadow time beyond the head's need, left for backfilling.
    """

    def __init__(
        self, need: list[int], run_for: list[float], req: list[float], num_nodes: int
    ) -> None:
        nan = float("nan")
        J = len(need)
        self.need, self.run_for, self.req = need, run_for, req
        self.start = [nan] * J
        self.assigned: list[np.ndarray] = [np.zeros(0, np.int64)] * J
        self.reserved = [nan] * J
        self.reserved_at = [nan] * J
        self.known = [nan] * J
        self.cur_res = nan  # the blocked head's current reservation, and since when it has held
        self.cur_since = nan
        self.free = np.ones(num_nodes, dtype=bool)
        self.n_free = num_nodes
        self.ends: list[tuple[float, int]] = []  # heap of (real end, job)
        self.by_req_end: list[tuple[float, int]] = []  # running jobs by (requested end, job)
        self.queue: list[int] = []
        self.head = -1  # the job whose reservation cur_res is
        self.shadow = 0.0
        self.extra = 0

    def launch(self, j: int, t: float) -> None:
        """Start job j at time t on the first free nodes.

        Args:
            j: the job (it must fit: ``need[j] <= n_free``).
            t: the start time.
        """
        k = self.need[j]
        got = np.flatnonzero(self.free)[:k]
        self.free[got] = False
        self.n_free -= k
        self.assigned[j] = got
        self.start[j] = t
        heapq.heappush(self.ends, (t + self.run_for[j], j))
        bisect.insort(self.by_req_end, (t + self.req[j], j))

    def complete_until(self, t: float) -> bool:
        """Release the nodes of every job that ends by t; whether any did.

        Args:
            t: the current time; jobs whose real end is ``<= t`` finish.
        """
        ends, by_req_end, need, start, req = (
            self.ends,
            self.by_req_end,
            self.need,
            self.start,
            self.req,
        )
        completed = False
        while ends and ends[0][0] <= t:
            _, j = heapq.heappop(ends)
            self.free[self.assigned[j]] = True
            self.n_free += need[j]
            del by_req_end[bisect.bisect_left(by_req_end, (start[j] + req[j], j))]
            completed = True
        return completed

    def start_heads(self, t: float) -> bool:
        """Start heads while they fit; then reserve for the blocked head. False when the
        queue emptied.

        A head that starts at time ``cur_res`` (its reservation, unmoved since
        ``cur_since``) gets ``known = cur_since``. A new blocked head records its first
        reservation; a moved reservation restarts ``cur_since``.

        Args:
            t: the current time.
        """
        need, queue = self.need, self.queue
        q = 0
        while q < len(queue) and need[queue[q]] <= self.n_free:
            j = queue[q]
            if j == self.head and t == self.cur_res:
                self.known[j] = self.cur_since
            self.launch(j, t)
            q += 1
        self.queue = queue = queue[q:]
        if not queue:
            self.head = -1
            return False
        j = queue[0]
        self.shadow, self.extra = _shadow(self.by_req_end, need, self.n_free, need[j])
        if j != self.head:
            self.head = j
            self.reserved[j] = self.shadow
            self.reserved_at[j] = t
            self.cur_res, self.cur_since = self.shadow, t
        elif self.shadow != self.cur_res:
            self.cur_res, self.cur_since = self.shadow, t
        return True

    def backfill(self, t: float, scan_from: int) -> None:
        """Start queued jobs from ``scan_from`` on that fit now and do not delay the head's
        reservation.

        A queued job that fits in the free nodes starts if it ends (by its request) by the
        shadow time, or else if it needs no more than the extra nodes, which it then uses
        up. The started jobs leave the queue.

        Args:
            t: the current time.
            scan_from: the first queue position to consider (1: all but the head).
        """
        if self.n_free == 0:
            return
        need, req, queue, shadow = self.need, self.req, self.queue, self.shadow
        started = False
        for q in range(scan_from, len(queue)):
            j = queue[q]
            k = need[j]
            if k > self.n_free:
                continue
            if t + req[j] <= shadow:
                self.launch(j, t)
                started = True
            elif k <= self.extra:
                self.launch(j, t)
                self.extra -= k
                started = True
            if self.n_free == 0:
                break
        if started:
            start = self.start
            self.queue = [j for j in queue if start[j] != start[j]]


def _shadow(
    by_req_end: list[tuple[float, int]], need: list[int], n_free: int, want: int
) -> tuple[float, int]:
    """Shadow time and extra nodes for a head needing ``want`` nodes (``want > n_free``).

    Walks the running jobs by requested end until enough nodes would be free.

    Args:
        by_req_end: the running jobs' (requested end, job), sorted.
        need: nodes of each job.
        n_free: nodes free now.
        want: the head's need.

    Returns:
        (shadow time, extra nodes): the requested end at which the head fits, and the
        nodes free then (ties at that end included) beyond its need.
    """
    avail = n_free
    for t_end, j in by_req_end:
        avail += need[j]
        if avail >= want:
            # Jobs ending at the same instant free their nodes together.
            return t_end, avail - want + _ties(by_req_end, need, t_end, j)
    raise AssertionError("a job larger than the machine reached the queue")  # pragma: no cover


def _ties(by_req_end: list[tuple[float, int]], need: list[int], t_end: float, j: int) -> int:
    """Nodes of running jobs after job ``j`` in ``by_req_end`` that end at ``t_end`` too."""
    i = bisect.bisect_right(by_req_end, (t_end, j))
    extra = 0
    while i < len(by_req_end) and by_req_end[i][0] == t_end:
        extra += need[by_req_end[i][1]]
        i += 1
    return extra


def idle_windows(
    schedule: Schedule,
    num_nodes: int,
    t0: float,
    t1: float,
    *,
    known_ends: bool = False,
) -> Supply:
    """The per-node idle windows between the schedule's jobs, clipped to [t0, t1).

    Args:
        schedule: The replay (``easy_backfill``).
        num_nodes: Nodes of the supply, ``>= schedule.num_nodes`` (nodes beyond the replayed
            machine are idle throughout).
        t0: Start of the span.
        t1: End of the span.
        known_ends: Mark windows whose end the scheduler had fixed when they opened (the
            module's known-ends rule); otherwise every end is a surprise.

    Returns:
        The supply; its offered node-seconds on [t0, t1) equal
        ``num_nodes * (t1 - t0) - schedule.busy_node_seconds(t0, t1)``.

    Raises:
        ConfigError: a bad span or too few nodes.
    """
    _check_span(t0, t1)
    if num_nodes < schedule.num_nodes:
        raise ConfigError("num_nodes", num_nodes, f">= the schedule's {schedule.num_nodes}")
    job = np.repeat(np.arange(schedule.num_jobs), schedule.nodes)
    node = schedule.node_idx.astype(np.int64)
    start = schedule.start_s[job]
    end = schedule.end_s[job]
    order = np.lexsort((start, node))
    job, node, start, end = job[order], node[order], start[order], end[order]
    first = np.ones(node.size, dtype=bool)
    first[1:] = node[1:] != node[:-1]
    last = np.ones(node.size, dtype=bool)
    last[:-1] = first[1:]
    # The gap before each busy interval: from the node's previous end (or t0) to its start.
    prev_end = np.empty(node.size)
    prev_end[1:] = end[:-1]
    prev_end[first] = -np.inf
    gap_known = np.zeros(node.size, dtype=bool)
    if known_ends:
        since = schedule.start_known_s[job]
        gap_known = since <= prev_end  # NaN compares False: not at a reservation
    # The gap after each node's last job, and whole-span windows of nodes never used.
    unused = np.setdiff1d(np.arange(num_nodes), node)
    w_node = np.concatenate([node, node[last], unused])
    w_start = np.concatenate([prev_end, end[last], np.full(unused.size, -np.inf)])
    w_end = np.concatenate([start, np.full(int(last.sum()) + unused.size, np.inf)])
    w_known = np.concatenate([gap_known, np.zeros(int(last.sum()) + unused.size, dtype=bool)])
    w_known &= w_end <= t1
    s = np.maximum(w_start, t0)
    e = np.minimum(w_end, t1)
    keep = e > s
    return Supply.from_windows(
        w_node[keep], s[keep], e[keep], w_known[keep], num_nodes=int(num_nodes)
    )


def _check_span(t0: float, t1: float) -> None:
    """Raise unless t0 < t1, both finite."""
    if not (np.isfinite(t0) and np.isfinite(t1) and t1 > t0):
        raise ConfigError("t0/t1", (t0, t1), "finite, t0 < t1")
