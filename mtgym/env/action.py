"""Action modes: env actions <-> ``Allocation``, with masks and documented repairs.

- ``counts``: ``MultiDiscrete([max_count + 1] * num_slots)``, the target node count of each
  slot's job; nodes are then chosen by ``mtgym.model.placement.pack_targets``.
- ``assign``: ``MultiDiscrete([num_slots + 1] * num_nodes)``, the slot (1-based) whose job
  each node runs; 0 = none.
- ``delta``: ``MultiDiscrete([3] * num_slots)``: 0 = shrink (halve; below the minimum -> 0),
  1 = keep, 2 = grow (double, from 0 -> the minimum; capped at the maximum).

0 (``counts``/``assign``) and 1 (``delta``) are the no-ops and are never masked.

An action outside the space raises ``ValueError`` naming the slot and the bound. An action
inside the space but infeasible is repaired deterministically and reported in
``info["repair"]``: a count for an empty slot -> 0; a count above the job's maximum -> the
maximum; a count between 1 and the minimum - 1 -> 0; more nodes asked than are idle ->
granted in submission order, each job getting what is left (0 if that is below its
minimum); ``assign`` to an empty slot or an unavailable node -> none.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from numba import njit

from mtgym.core.instance import Instance
from mtgym.core.names import ACTION_MODES
from mtgym.core.types import Repair
from mtgym.env.slots import JobSlots
from mtgym.model.placement import _classes64, _pack, _static_order
from mtgym.sim.state import ClusterState

COUNTS, ASSIGN, DELTA = range(3)
# ``info["repair"]``'s keys: the decoder's (``assign`` has only the first), then the
# engine's (``mtgym.sim.dynamics.repair_allocation``; zeros when nothing was repaired).
DECODE_REPAIRS = ("empty_slot", "over_max", "below_min", "oversubscribed")
ENGINE_REPAIRS = (
    "unavailable_nodes",
    "inactive_job_nodes",
    "dyn_over_max_nodes",
    "dyn_below_min_jobs",
)


def repair_record(
    mode: str, decoded: tuple[int, int, int, int], engine: Repair | None
) -> dict[str, int]:
    """``info["repair"]``: the decoder's repair counts, then the engine's (``None``: none)."""
    keys = DECODE_REPAIRS[:1] if mode == "assign" else DECODE_REPAIRS
    rep = dict(zip(keys, decoded, strict=False))
    if engine is None:
        rep.update(dict.fromkeys(ENGINE_REPAIRS, 0))
    else:
        rep.update(
            zip(
                ENGINE_REPAIRS,
                (
                    engine.unavailable_nodes,
                    engine.inactive_job_nodes,
                    engine.over_max_nodes,
                    engine.below_min_jobs,
                ),
                strict=True,
            )
        )
    return rep


def pack_failed(total: int, free: int) -> ValueError:
    """The error of a placement that needs more nodes than are free (as ``pack_targets``)."""
    return ValueError(f"targets need {total} free nodes but only {free} are free")


class ActionCodec:
    """One action mode for fixed sizes (nodes, slots, count cap): its space, validation
    and mask. Decoding is compiled (``_decode_pack``, ``_decode_assign``; ``mtgym.env.step``).
    """

    def __init__(self, mode: str, num_nodes: int, num_slots: int, max_count: int) -> None:
        if mode not in ACTION_MODES:
            raise ValueError(f"action_mode {mode!r} is not one of {ACTION_MODES}")
        self.mode = mode
        self.kernel_id = ACTION_MODES.index(mode)
        self.N, self.S, self.C = num_nodes, num_slots, max_count
        if mode == "counts":
            self.nvec = np.full(num_slots, max_count + 1, dtype=np.int64)
        elif mode == "assign":
            self.nvec = np.full(num_nodes, num_slots + 1, dtype=np.int64)
        else:
            self.nvec = np.full(num_slots, 3, dtype=np.int64)
        self.space = spaces.MultiDiscrete(self.nvec)
        self.mask_size = int(self.nvec.sum())
        self.mask_buffer = np.zeros(self.mask_size, dtype=np.int8)  # filled by the kernels

    # -- validation ------------------------------------------------------------------
    def validate(self, action: np.ndarray, *, check_range: bool = True) -> np.ndarray:
        """The action as the int64 array the kernels take (the given array itself when it
        is one already), or ``ValueError`` naming the shape, dtype or entry and its bound.

        ``check_range=False`` leaves an int64 array of the right shape to the step's decode
        kernels, which check every entry anyway and change nothing on one out of range
        (``mtgym.env.step`` then calls this again to name it): one pass less per step.
        """
        a = np.asarray(action)
        if (
            a.dtype == np.int64
            and a.shape == self.nvec.shape
            and (not check_range or _out_of_range(a, self.nvec) < 0)
        ):
            return a  # the common case
        if a.dtype.kind == "f" and not isinstance(action, np.ndarray):
            # a list of Python ints numpy made float (one >= 2**63): keep the exact values
            exact = np.asarray(action, dtype=object)
            if all(isinstance(x, int) for x in exact.ravel()):
                a = exact
        return self._check_slow(a)

    def _check_slow(self, a: np.ndarray) -> np.ndarray:
        """Shape, integer values and range, with the offending value as given."""
        if a.shape != self.nvec.shape:
            raise ValueError(
                f"action has shape {a.shape}; expected {self.nvec.shape} "
                f"for action_mode {self.mode!r}"
            )
        if a.dtype == object or a.dtype.kind not in "biuf":  # Python ints >= 2**63, ...
            try:
                a = np.asarray(a, dtype=np.float64) if a.dtype != object else a
            except (TypeError, ValueError):
                raise ValueError(f"action dtype {a.dtype} is not numeric") from None
        if a.size and a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            i = int(np.flatnonzero(~np.isfinite(a))[0])
            raise ValueError(f"action[{i}] = {a[i]!r} is not a finite number")
        integral = np.issubdtype(a.dtype, np.integer) or np.all(np.equal(np.mod(a, 1), 0))
        if a.size and not integral:
            raise ValueError(f"action dtype {a.dtype} holds non-integer values")
        # range checked on the values as given (a cast first would wrap 1e300 or 2**64-1)
        bad = np.flatnonzero((a < 0) | (a >= self.nvec))
        if bad.size:
            i = int(bad[0])
            v = a[i]
            shown = int(v) if a.dtype.kind in "iu" or (a.dtype == object) else float(v)
            what = "node" if self.mode == "assign" else "slot"
            raise ValueError(
                f"action[{i}] ({what} {i}) = {shown!r} is out of range; "
                f"allowed 0..{int(self.nvec[i]) - 1}"
            )
        return a.astype(np.int64)

    def decode(
        self, action: np.ndarray, state: ClusterState, instance: Instance, slots: JobSlots
    ) -> tuple[np.ndarray, tuple[int, int, int, int]]:
        """The node map the env's step would apply for ``action`` (its kernels) and the
        decoder's repair counts, for callers outside the env (``mtgym.policy.observe``).
        """
        a = self.validate(action)
        if self.mode == "assign":
            _, empty, node_job = _decode_assign(a, slots.job)
            return node_job, (empty, 0, 0, 0)
        jobs, cl = instance.jobs, instance.cluster
        slowdown = cl.profiled_slowdown
        group, seg_start, seg_nodes = _static_order(slowdown, cl.topology.coords)
        _, counts, node_job, total, free = _decode_pack(
            a,
            self.mode == "delta",
            self.C,
            slots.job,
            state.n_nodes,
            jobs.min_nodes,
            jobs.max_nodes,
            state.available,
            state.node_job,
            (
                np.ascontiguousarray(slowdown, dtype=np.float64),
                _classes64(jobs.app_class),
                group,
                seg_start,
                seg_nodes,
            ),
        )
        if total > free:
            raise pack_failed(total, free)
        return node_job, counts

    # -- masks -----------------------------------------------------------------------
    def mask(self, state: ClusterState, instance: Instance, slots: JobSlots) -> np.ndarray:
        """Flat concatenation of per-dimension masks (sb3-contrib's MultiDiscrete layout),
        into ``mask_buffer`` (the step's kernel fills the same buffer after each step).
        """
        m = self.mask_buffer
        jobs = instance.jobs
        if self.mode == "counts":
            _counts_mask(m, slots.job, jobs.min_nodes, jobs.max_nodes, state.available, self.C)
        elif self.mode == "delta":
            _delta_mask(
                m, slots.job, jobs.min_nodes, jobs.max_nodes, state.available, state.n_nodes, self.C
            )
        else:
            _assign_mask(m, slots.job, state.available)
        return m


# ---------------------------------------------------------------------------------------
# Compiled kernels (numba): masks and the count repairs, as loops over slots.
# ---------------------------------------------------------------------------------------
@njit(cache=True)
def _counts_mask(
    mask: np.ndarray,
    slot_job: np.ndarray,
    min_nodes: np.ndarray,
    max_nodes: np.ndarray,
    available: np.ndarray,
    max_count: int,
) -> None:  # pragma: no cover - jit
    """``counts`` mask in place: 0 always; min..min(max, max_count, idle nodes) for a present
    slot.
    """
    n_avail = 0
    for n in range(available.shape[0]):
        if available[n]:
            n_avail += 1
    for s in range(slot_job.shape[0]):
        row = s * (max_count + 1)
        mask[row] = 1
        j = slot_job[s]
        lo, hi = 1, 0
        if j >= 0:
            lo, hi = max(min_nodes[j], 1), min(min(max_nodes[j], max_count), n_avail)
        for c in range(1, max_count + 1):
            mask[row + c] = 1 if lo <= c <= hi else 0


@njit(cache=True)
def _delta_mask(
    mask: np.ndarray,
    slot_job: np.ndarray,
    min_nodes: np.ndarray,
    max_nodes: np.ndarray,
    available: np.ndarray,
    n_nodes: np.ndarray,
    max_count: int,
) -> None:  # pragma: no cover - jit
    """``delta`` mask in place: keep always; shrink a running job; grow one below its cap
    when enough nodes are free (its minimum from 0, else one).
    """
    n_avail = 0
    for n in range(available.shape[0]):
        if available[n]:
            n_avail += 1
    held = 0
    for j in range(n_nodes.shape[0]):
        held += n_nodes[j]
    free = n_avail - held
    for s in range(slot_job.shape[0]):
        j = slot_job[s]
        mask[3 * s] = 0
        mask[3 * s + 1] = 1
        mask[3 * s + 2] = 0
        if j < 0:
            continue
        n = n_nodes[j]
        need = min_nodes[j] if n == 0 else 1
        mask[3 * s] = 1 if n > 0 else 0
        mask[3 * s + 2] = 1 if n < min(max_nodes[j], max_count) and free >= need else 0


@njit(cache=True)
def _assign_mask(
    mask: np.ndarray, slot_job: np.ndarray, available: np.ndarray
) -> None:  # pragma: no cover - jit
    """``assign`` mask in place: "none" always; any present slot on an idle node."""
    S = slot_job.shape[0]
    for n in range(available.shape[0]):
        row = n * (S + 1)
        mask[row] = 1
        for s in range(S):
            mask[row + 1 + s] = 1 if available[n] and slot_job[s] >= 0 else 0


@njit(cache=True)
def _fcfs(present: np.ndarray, sj: np.ndarray) -> np.ndarray:  # pragma: no cover - jit
    """The present slots in order of their jobs' submission (job index)."""
    on = np.flatnonzero(present)
    keys = np.empty(on.shape[0], dtype=np.int64)
    for i in range(on.shape[0]):
        keys[i] = sj[on[i]]
    return on[np.argsort(keys, kind="mergesort")]


@njit(cache=True)
def _repair_targets(
    target: np.ndarray,
    present: np.ndarray,
    sj: np.ndarray,
    min_nodes: np.ndarray,
    max_nodes: np.ndarray,
    available: np.ndarray,
) -> np.ndarray:  # pragma: no cover - jit
    """Repair per-slot node counts in place (module docstring's rules, in its order);
    returns the counts of (empty_slot, over_max, below_min, oversubscribed).
    """
    rep = np.zeros(4, dtype=np.int64)
    total = 0
    for s in range(target.shape[0]):
        if not present[s]:
            if target[s] > 0:
                rep[0] += 1
            target[s] = 0
            continue
        j = sj[s]
        if target[s] > max_nodes[j]:
            rep[1] += 1
            target[s] = max_nodes[j]
        if target[s] > 0 and target[s] < min_nodes[j]:
            rep[2] += 1
            target[s] = 0
        total += target[s]
    free = 0
    for n in range(available.shape[0]):
        if available[n]:
            free += 1
    if total > free:  # FCFS: in submission order, each job gets what is left
        left = free
        for s in _fcfs(present, sj):
            want = target[s]
            got = min(want, left)
            if got < min_nodes[sj[s]]:
                got = 0
            if got != want:
                rep[3] += 1
            target[s] = got
            left -= got
    return rep


@njit(cache=True)
def _out_of_range(a: np.ndarray, nvec: np.ndarray) -> int:  # pragma: no cover - jit
    """Index of the first entry outside ``0..nvec-1``, or -1."""
    for i in range(a.shape[0]):
        if a[i] < 0 or a[i] >= nvec[i]:
            return i
    return -1


@njit(cache=True)
def _repair_ordered(
    target: np.ndarray,
    present: np.ndarray,
    sj: np.ndarray,
    min_nodes: np.ndarray,
    max_nodes: np.ndarray,
    available: np.ndarray,
) -> tuple[tuple[int, int, int, int], np.ndarray, np.ndarray]:  # pragma: no cover - jit
    """``_repair_targets``, then the present slots' jobs and repaired targets in FCFS order
    (what ``pack_targets`` takes). Repair counts come back as a tuple of ints.
    """
    rep = _repair_targets(target, present, sj, min_nodes, max_nodes, available)
    order = _fcfs(present, sj)
    jobs = np.empty(order.shape[0], dtype=np.int64)
    tg = np.empty(order.shape[0], dtype=np.int64)
    for i in range(order.shape[0]):
        jobs[i] = sj[order[i]]
        tg[i] = target[order[i]]
    return (rep[0], rep[1], rep[2], rep[3]), jobs, tg


@njit(cache=True)
def _delta_targets(
    a: np.ndarray,
    slot_job: np.ndarray,
    n_nodes: np.ndarray,
    min_nodes: np.ndarray,
    max_nodes: np.ndarray,
    max_count: int,
) -> np.ndarray:  # pragma: no cover - jit
    """``delta`` actions as node-count targets per slot: grow (double; from 0 to the
    minimum), shrink (halve; below the minimum -> 0) or keep, capped at min(max, max_count); 0 for
    an empty slot ("keep" there is a no-op).
    """
    out = np.zeros(a.shape[0], dtype=np.int64)
    for s in range(a.shape[0]):
        j = slot_job[s]
        if j < 0:
            continue
        n = np.int64(n_nodes[j])
        if a[s] == 2:
            t = np.int64(min_nodes[j]) if n == 0 else 2 * n
        elif a[s] == 0:
            t = n // 2 if n // 2 >= min_nodes[j] else np.int64(0)
        else:
            t = n
        out[s] = min(t, min(np.int64(max_nodes[j]), np.int64(max_count)))
    return out


@njit(cache=True)
def _decode_pack(
    a: np.ndarray,
    delta: bool,
    max_count: int,
    slot_job: np.ndarray,
    n_nodes: np.ndarray,
    min_nodes: np.ndarray,
    max_nodes: np.ndarray,
    available: np.ndarray,
    node_job: np.ndarray,
    placement: tuple,
) -> tuple[int, tuple[int, int, int, int], np.ndarray, int, int]:  # pragma: no cover - jit
    """A ``counts`` (entries 0..max_count) or ``delta`` (0..2) action, int64, in one call: the first
    entry out of range (or -1); when all are in range, its targets (the counts, or
    ``_delta_targets``) repaired (``_repair_ordered``) and placed (``pack_targets``'
    ``_pack``, with ``placement``: the profiled slowdowns, the jobs' app classes and the
    static node order's group, segment starts and sizes). Returns (bad index, repair
    counts, node map, nodes needed, nodes free).
    """
    slowdown, app_class, group, seg_start, seg_nodes = placement
    hi = 2 if delta else max_count
    for i in range(a.shape[0]):
        if a[i] < 0 or a[i] > hi:
            return i, (0, 0, 0, 0), np.empty(0, dtype=np.int32), 0, 0
    target = (
        _delta_targets(a, slot_job, n_nodes, min_nodes, max_nodes, max_count) if delta else a.copy()
    )
    present = slot_job >= 0
    sj = np.maximum(slot_job, 0)
    counts, jobs, tg = _repair_ordered(target, present, sj, min_nodes, max_nodes, available)
    out, total, free = _pack(
        available, node_job, slowdown, app_class, group, seg_start, seg_nodes, jobs, tg
    )
    return -1, counts, out, total, free


@njit(cache=True)
def _decode_assign(
    a: np.ndarray, slot_job: np.ndarray
) -> tuple[int, int, np.ndarray]:  # pragma: no cover - jit
    """An ``assign`` action (int64): the first entry outside 0..S (or -1), the entries
    naming an empty slot, and the node map (slot ``k`` -> its job, 0 -> none).
    """
    S = slot_job.shape[0]
    out = np.empty(a.shape[0], dtype=np.int32)
    empty = 0
    for n in range(a.shape[0]):
        k = a[n]
        if k < 0 or k > S:
            return n, 0, out
        out[n] = slot_job[k - 1] if k > 0 else -1
        if k > 0 and out[n] < 0:
            empty += 1
    return -1, empty, out


# ---------------------------------------------------------------------------------------
# Budget-feasible sampling (what the per-slot masks cannot express).
# ---------------------------------------------------------------------------------------
def _clean_count(c: int, lo: int, hi: int) -> bool:
    return c == 0 or lo <= c <= hi


def sample_valid(
    codec: ActionCodec,
    state: ClusterState,
    instance: Instance,
    slots: JobSlots,
    rng: np.random.Generator,
) -> np.ndarray:
    """A random action that needs no repair: in every mode, each job gets 0 nodes or between
    its minimum and maximum (and the count cap), and all jobs together use at most the idle
    nodes. Slots are visited in a random order, each drawing uniformly among the choices the
    remaining node budget allows, so the draw covers the whole feasible set (not uniformly).
    """
    jobs = instance.jobs
    n_avail = int(np.count_nonzero(state.available))
    present = np.flatnonzero(slots.job >= 0)
    order = rng.permutation(present)
    if codec.mode == "assign":
        out = np.zeros(codec.N, dtype=np.int64)
        pool = rng.permutation(np.flatnonzero(state.available))
        used = 0
        for s in order:
            j = slots.job[s]
            lo, hi = int(jobs.min_nodes[j]), min(int(jobs.max_nodes[j]), pool.size - used)
            choices = [0, *range(max(lo, 1), hi + 1)]
            c = int(rng.choice(choices))
            out[pool[used : used + c]] = s + 1
            used += c
        return out
    if codec.mode == "counts":
        out = np.zeros(codec.S, dtype=np.int64)
        left = n_avail
        for s in order:
            j = slots.job[s]
            lo, hi = max(int(jobs.min_nodes[j]), 1), min(int(jobs.max_nodes[j]), codec.C, left)
            c = int(rng.choice([0, *range(lo, hi + 1)]))
            out[s] = c
            left -= c
        return out
    # delta: each slot's three targets (shrink, keep, grow) as ``_delta_targets`` computes
    # them; a choice is kept when its target needs no repair and fits the budget.
    out = np.ones(codec.S, dtype=np.int64)
    targets = {
        k: _delta_targets(
            np.full(codec.S, k, dtype=np.int64),
            slots.job,
            state.n_nodes,
            jobs.min_nodes,
            jobs.max_nodes,
            codec.C,
        )
        for k in (0, 1, 2)
    }
    lo_of = {s: int(jobs.min_nodes[slots.job[s]]) for s in present}
    hi_of = {s: int(jobs.max_nodes[slots.job[s]]) for s in present}
    # start from the cleanest baseline: every slot shrunk to a clean target, else kept
    chosen = {}
    for s in present:
        for k in (0, 1):
            if _clean_count(int(targets[k][s]), lo_of[s], hi_of[s]):
                chosen[s] = k
        chosen.setdefault(s, 0)
    total = sum(int(targets[chosen[s]][s]) for s in present)
    for s in order:
        base = int(targets[chosen[s]][s])
        ok = [
            k
            for k in (0, 1, 2)
            if _clean_count(int(targets[k][s]), lo_of[s], hi_of[s])
            and total - base + int(targets[k][s]) <= n_avail
        ]
        if ok:
            k = int(rng.choice(ok))
            total += int(targets[k][s]) - base
            chosen[s] = k
    for s in present:
        out[s] = chosen[s]
    return out
