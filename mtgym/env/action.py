"""Action modes: env actions <-> ``Allocation``, with masks and documented repairs.

- ``counts``: ``MultiDiscrete([max_count + 1] * num_slots)``, the target node count of each
  slot's job; nodes are then chosen by ``mtgym.policy.placement.pack_targets``.
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

from mtgym.env.slots import JobSlots
from mtgym.generate.instance import Instance
from mtgym.policy.placement import pack_targets
from mtgym.sim.state import ClusterState

ACTION_MODES = ("counts", "assign", "delta")


class ActionCodec:
    """Decodes one action mode for fixed sizes (nodes, slots, count cap)."""

    def __init__(self, mode: str, num_nodes: int, num_slots: int, max_count: int) -> None:
        if mode not in ACTION_MODES:
            raise ValueError(f"action_mode {mode!r} is not one of {ACTION_MODES}")
        self.mode = mode
        self.N, self.S, self.C = num_nodes, num_slots, max_count
        if mode == "counts":
            self.nvec = np.full(num_slots, max_count + 1, dtype=np.int64)
        elif mode == "assign":
            self.nvec = np.full(num_nodes, num_slots + 1, dtype=np.int64)
        else:
            self.nvec = np.full(num_slots, 3, dtype=np.int64)
        self.space = spaces.MultiDiscrete(self.nvec)
        self.mask_size = int(self.nvec.sum())
        self._mask = np.zeros(self.mask_size, dtype=np.int8)

    # -- validation ------------------------------------------------------------------
    def _check(self, action: np.ndarray) -> np.ndarray:
        a = np.asarray(action)
        if a.shape != self.nvec.shape:
            raise ValueError(
                f"action has shape {a.shape}; expected {self.nvec.shape} "
                f"for action_mode {self.mode!r}"
            )
        integral = np.issubdtype(a.dtype, np.integer) or np.all(np.equal(np.mod(a, 1), 0))
        if a.size and not integral:
            raise ValueError(f"action dtype {a.dtype} holds non-integer values")
        a = a.astype(np.int64)
        bad = np.flatnonzero((a < 0) | (a >= self.nvec))
        if bad.size:
            i = int(bad[0])
            what = "node" if self.mode == "assign" else "slot"
            raise ValueError(
                f"action[{i}] ({what} {i}) = {int(a[i])} is out of range; "
                f"allowed 0..{int(self.nvec[i]) - 1}"
            )
        return a

    # -- masks -----------------------------------------------------------------------
    def mask(self, state: ClusterState, instance: Instance, slots: JobSlots) -> np.ndarray:
        """Flat concatenation of per-dimension masks (sb3-contrib's MultiDiscrete layout)."""
        m = self._mask
        m[:] = 0
        jobs = instance.jobs
        present = slots.present
        sj = np.maximum(slots.job, 0)
        n_avail = int(np.count_nonzero(state.available))
        if self.mode == "counts":
            grid = m.reshape(self.S, self.C + 1)
            grid[:, 0] = 1
            c = np.arange(self.C + 1)
            hi = np.minimum(np.minimum(jobs.max_nodes[sj], self.C), n_avail)
            ok = (c[None, :] >= jobs.min_nodes[sj][:, None]) & (c[None, :] <= hi[:, None])
            grid[:, 1:] = (ok[:, 1:] & present[:, None]).astype(np.int8)
        elif self.mode == "delta":
            grid = m.reshape(self.S, 3)
            grid[:, 1] = 1
            n = state.n_nodes[sj]
            free = n_avail - int(state.n_nodes.sum())
            grid[:, 0] = present & (n > 0)
            need = np.where(n == 0, jobs.min_nodes[sj], 1)
            cap = np.minimum(jobs.max_nodes[sj], self.C)
            grid[:, 2] = present & (n < cap) & (free >= need)
        else:
            grid = m.reshape(self.N, self.S + 1)
            grid[:, 0] = 1
            grid[:, 1:] = (state.available[:, None] & present[None, :]).astype(np.int8)
        return m

    # -- decoding --------------------------------------------------------------------
    def decode(
        self, action: np.ndarray, state: ClusterState, instance: Instance, slots: JobSlots
    ) -> tuple[np.ndarray, dict[str, int]]:
        """Return the node map to apply and the repairs made (counts by kind)."""
        a = self._check(action)
        if self.mode == "assign":
            return self._decode_assign(a, slots)
        jobs = instance.jobs
        present = slots.present
        sj = np.maximum(slots.job, 0)
        if self.mode == "delta":
            n = state.n_nodes[sj].astype(np.int64)
            grow = np.where(n == 0, jobs.min_nodes[sj], 2 * n)
            shrink = np.where(n // 2 >= jobs.min_nodes[sj], n // 2, 0)
            target = np.where(a == 2, grow, np.where(a == 0, shrink, n))
            target = np.minimum(target, np.minimum(jobs.max_nodes[sj], self.C))
            target = np.where(present, target, 0)  # "keep" on an empty slot is a no-op
        else:
            target = a.copy()
        return self._realise(target, present, sj, state, instance)

    def _realise(
        self,
        target: np.ndarray,
        present: np.ndarray,
        sj: np.ndarray,
        state: ClusterState,
        instance: Instance,
    ) -> tuple[np.ndarray, dict[str, int]]:
        jobs = instance.jobs
        rep = {"empty_slot": 0, "over_max": 0, "below_min": 0, "oversubscribed": 0}
        empty = ~present & (target > 0)
        rep["empty_slot"] = int(empty.sum())
        target = np.where(present, target, 0)
        mx = jobs.max_nodes[sj]
        over = target > mx
        rep["over_max"] = int(over.sum())
        target = np.minimum(target, mx)
        below = (target > 0) & (target < jobs.min_nodes[sj])
        rep["below_min"] = int(below.sum())
        target = np.where(below, 0, target)
        free = int(np.count_nonzero(state.available))
        if int(target.sum()) > free:
            order = np.argsort(sj + np.where(present, 0, 1 << 40), kind="stable")  # FCFS
            left = free
            for s in order:
                want = int(target[s])
                got = min(want, left)
                if got < jobs.min_nodes[sj[s]]:
                    got = 0
                if got != want:
                    rep["oversubscribed"] += 1
                target[s] = got
                left -= got
        slots_on = np.flatnonzero(present)
        order = slots_on[np.argsort(sj[slots_on], kind="stable")]
        node_job = pack_targets(
            state.available,
            state.node_job,
            instance.cluster.profiled_slowdown,
            jobs.app_class,
            instance.cluster.topology.coords,
            sj[order],
            target[order],
        )
        return node_job, rep

    def _decode_assign(self, a: np.ndarray, slots: JobSlots) -> tuple[np.ndarray, dict[str, int]]:
        ext = np.concatenate(([-1], slots.job)).astype(np.int32)
        node_job = ext[a]
        rep = {"empty_slot": int(np.count_nonzero((a > 0) & (node_job < 0)))}
        return node_job, rep
