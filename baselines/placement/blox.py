"""The Blox placement baselines PAL is compared with: Packed and Random, sticky or not.

From ``placement/packing_{sticky,nonsticky}.py`` and ``random_{sticky,nonsticky}.py`` of
``hal-uw/blox-pal`` (Blox, Agarwal et al., EuroSys '24). Jobs come in the scheduler's order
(FIFO, LAS or SRTF); there is no class-priority reorder; a round stops at the first job that
cannot be placed (no backfilling).

**Packer** (``_consolidated_placement``), free units grouped by host in host order:

1. the first host whose free count equals the demand: all its free units; else
2. the host with the fewest free units that still holds the demand (first on ties): its
   first g free units; else
3. if enough units are free in total, greedily the hosts with the most free units (first on
   ties), taking their first free units until the demand is met.

**Random:** g free units drawn uniformly (a seeded generator, reset every episode).

**Sticky** (``sticky=True``): running jobs keep their units. A waiting job that does not fit
pre-empts running jobs of lower priority, lowest first, one at a time, until it fits; if it
still does not fit, the round ends and the jobs already pre-empted stay pre-empted (Blox's
behaviour, kept). **Non-sticky:** every round releases all units and re-places every job in
order (a job given the same units again keeps running untouched).

**Label swap [code quirk]:** PAL's plot script labels the code's non-sticky packer
"Packed-Sticky" (the paper's reference baseline) and the sticky one "Packed-Non-Sticky". The
``sticky`` flag here follows the *code*; ``label`` says which variant a policy is.
"""

from __future__ import annotations

import numpy as np

from baselines.placement.common import check_order, demands, host_of, job_order
from mtgym.core.types import Allocation
from mtgym.policy.tunable import Tunable, records_knobs
from mtgym.sim.view import InfoMode, SchedulerView

ORDERS = ("fifo", "las", "srtf")


def packed_select(free: np.ndarray, host: np.ndarray, g: int) -> np.ndarray | None:
    """Blox's packer: g of the ``free`` units (ascending ids) with hosts ``host``.

    Args:
        free: the free units' ids, ascending.
        host: (len(free),) each free unit's host.
        g: units wanted.

    Returns:
        The chosen units (an exact-fit host, else the best-fit host, else the fullest
        hosts), or None when fewer than g are free.
    """
    if g <= 0 or free.size < g:
        return None
    hosts, counts = np.unique(host, return_counts=True)
    # units of each host, contiguous and ascending (stable sort keeps unit order)
    by_host = np.argsort(host, kind="stable")
    starts = np.searchsorted(host[by_host], hosts)
    exact = np.flatnonzero(counts == g)
    if exact.size:
        h = exact[0]
        return free[by_host[starts[h] : starts[h] + g]]
    big = np.flatnonzero(counts >= g)
    if big.size:
        h = big[np.argmin(counts[big])]  # argmin: the first host on ties
        return free[by_host[starts[h] : starts[h] + g]]
    left = counts.copy()
    need = g
    out = []
    while need > 0:
        h = int(np.argmax(left))  # the most free units, first on ties
        take = min(int(left[h]), need)
        out.append(free[by_host[starts[h] : starts[h] + take]])
        left[h] -= take
        need -= take
    return np.sort(np.concatenate(out))


class _BloxPolicy(Tunable):
    info_mode = InfoMode.USER
    name = "blox"
    KNOBS = ("sticky", "order")

    @records_knobs
    def __init__(self, sticky: bool = True, *, order: str = "fifo", tuned: bool = True) -> None:
        self.sticky = bool(sticky)
        self.order = check_order(order)
        self.tuned = bool(tuned)

    def tuning_grid(self, episode: object) -> dict[str, list[object]]:
        """Stickiness, then the job order (Blox's two knobs; defaults first).

        Args:
            episode: the scenario's ``EpisodeSpec`` (unused: the grid is fixed).
        """
        return {"sticky": [True, False], "order": list(ORDERS)}

    @property
    def label(self) -> str:
        """``<name>-sticky`` or ``<name>-nonsticky`` (the code's meaning of the flag)."""
        return f"{self.name}-{'sticky' if self.sticky else 'nonsticky'}"

    def _select(self, free: np.ndarray, host: np.ndarray, g: int) -> np.ndarray | None:
        raise NotImplementedError

    def reset(self, view: SchedulerView) -> None:
        """Nothing to reset (Random re-seeds).

        Args:
            view: the episode's first view (unused).
        """

    def decide(self, view: SchedulerView) -> Allocation:
        """Place the active jobs in order (see the module docstring).

        Args:
            view: what the policy sees now (``mtgym.sim.view.SchedulerView``).

        Returns:
            The node map; a job that does not fit waits.
        """
        jobs = job_order(view, self.order)
        need = demands(view, jobs)
        hosts = host_of(view.topology_coords)
        available = np.asarray(view.available, dtype=bool)
        if self.sticky:
            a = np.where(available, view.node_job, -1).astype(np.int32)
            a[~np.isin(a, jobs)] = -1  # only active jobs keep units
        else:
            a = np.full(view.num_nodes, -1, dtype=np.int32)
        running = np.zeros(view.num_jobs, dtype=bool)
        running[a[a >= 0]] = True
        for idx, (j, g) in enumerate(zip(jobs.tolist(), need.tolist(), strict=True)):
            if running[j]:
                continue
            free = np.flatnonzero(available & (a < 0))
            sel = self._select(free, hosts[free], g)
            if sel is None and self.sticky:
                for k in jobs[idx + 1 :][::-1].tolist():  # lowest priority first
                    if not running[k]:
                        continue
                    a[a == k] = -1
                    running[k] = False
                    free = np.flatnonzero(available & (a < 0))
                    sel = self._select(free, hosts[free], g)
                    if sel is not None:
                        break
            if sel is None:
                break
            a[sel] = j
            running[j] = True
        return Allocation(a)


class PackedPolicy(_BloxPolicy):
    """Blox's packed placement (exact-fit host, else best-fit host, else fullest hosts).

    Args:
        sticky: keep running jobs in place (pre-empting lower-priority ones when a job does
            not fit); False re-places every job each round.
        order: ``"fifo"``, ``"las"`` or ``"srtf"``.
    """

    name = "packed"

    def _select(self, free: np.ndarray, host: np.ndarray, g: int) -> np.ndarray | None:
        return packed_select(free, host, g)


class RandomPolicy(_BloxPolicy):
    """Blox's random placement: g free units drawn uniformly.

    Args:
        sticky: as for ``PackedPolicy``.
        seed: seeds the draws; the generator restarts at every ``reset``.
        order: ``"fifo"``, ``"las"`` or ``"srtf"``.
    """

    name = "random"

    @records_knobs
    def __init__(
        self, sticky: bool = True, seed: int = 0, *, order: str = "fifo", tuned: bool = True
    ) -> None:
        super().__init__(sticky, order=order, tuned=tuned)  # the outer decorator's _given wins
        self.seed = seed
        self._rng = np.random.default_rng(seed)

    def reset(self, view: SchedulerView) -> None:
        """Restart the generator, so every episode draws the same way.

        Args:
            view: the episode's first view (unused).
        """
        self._rng = np.random.default_rng(self.seed)

    def _select(self, free: np.ndarray, host: np.ndarray, g: int) -> np.ndarray | None:
        if g <= 0 or free.size < g:
            return None
        return np.sort(self._rng.choice(free, size=g, replace=False))
