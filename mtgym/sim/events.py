"""Time-ordered events with deterministic tie-breaking.

The calendar merges three kinds of sources:

- static, pre-sorted streams from the instance (window starts, window ends, job arrivals),
  read through cursors: no heap operations for the bulk of a trace;
- analytic events computed from the state (a job reaching its next milestone);
- a heap of scheduled timers (decision ticks, profiling probes), ordered by
  (time, priority, insertion counter) so equal times pop in a fixed order.

Events at one instant are processed in a fixed order of kinds: milestones (completions and
campaign rungs), then reclaims, then new idle nodes, then arrivals, then timers.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any


@dataclass(order=True)
class _Entry:
    """One heap entry; entries order by (time, priority, counter), never by payload.

    Attributes:
        time: when the timer is due, seconds on the instance's clock.
        priority: lower pops first among entries of one time.
        counter: insertion number, the last tie-break (first pushed, first popped).
        payload: what the timer carries back to its owner (not compared).
    """

    time: float
    priority: int
    counter: int
    payload: Any = field(compare=False)


class EventQueue:
    """A min-heap of timers; ties break by priority, then by insertion order.

    The heap is Python's (``heapq``): the compiled engine only reads the next due time
    (``peek_time``) and hands control back when a timer is due.
    """

    __slots__ = ("_counter", "_heap")

    def __init__(self) -> None:
        self._heap: list[_Entry] = []
        self._counter = 0

    def push(self, time: float, payload: Any = None, priority: int = 0) -> None:
        """Schedule ``payload`` at ``time``.

        Args:
            time: when it is due, seconds on the instance's clock (may be in the past: it is
                then due at once).
            payload: returned by ``pop_until`` with the time; should be immutable.
            priority: among timers of one time, lower pops first.

        Raises:
            ValueError: ``time`` is NaN.
        """
        if time != time:  # NaN
            raise ValueError("event time is NaN")
        heapq.heappush(self._heap, _Entry(float(time), int(priority), self._counter, payload))
        self._counter += 1

    def peek_time(self) -> float:
        """Time of the next timer, or +inf."""
        return self._heap[0].time if self._heap else float("inf")

    def pop_until(self, time: float) -> list[tuple[float, Any]]:
        """Remove and return every timer due at or before ``time``, in order.

        Args:
            time: the current time, seconds.

        Returns:
            (time, payload) pairs, by (time, priority, insertion).
        """
        out = []
        while self._heap and self._heap[0].time <= time:
            e = heapq.heappop(self._heap)
            out.append((e.time, e.payload))
        return out

    def __len__(self) -> int:
        return len(self._heap)

    def copy(self) -> EventQueue:
        """An independent copy (payloads are shared; they should be immutable)."""
        q = EventQueue()
        q._heap = list(self._heap)
        q._counter = self._counter
        return q
