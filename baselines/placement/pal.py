"""PAL and PM-First (Jain et al., SC '24, arXiv 2408.11919), as in ``hal-uw/blox-pal``.

Each scheduling round (``placement/pal.py``, ``placement/pmfirst.py`` of the artifact):

1. The scheduler orders the active jobs (FIFO, LAS or SRTF; ``order``).
2. **Non-sticky:** every running job's units are released; all available units are free.
3. **Class-priority reorder:** the prefix of the order whose cumulative demand fits in the
   free units is stable-sorted by class A -> D; the rest follows unchanged.
4. Jobs are placed one by one on the free units; the round **stops at the first job that
   cannot be placed** (no backfilling).
5. A job whose new unit set equals its old one keeps running untouched (the node map keeps
   it, so mtgym charges nothing); others restart, free in PAL's simulator.

**PAL's per-job search** (class c, demand g, the class's clustered ``sf`` from ``LxV``):

- ``g == 1``: the PM-First rule on all free units.
- otherwise, walk the L x V order ``(v, l)``:

  - *within entry* (l below the top level): the level-l groups holding >= g free units with
    ``sf <= v``. At l = 1 (one host, PAL's "within-node") each host's best g-subset is the
    one with the smallest maximum sf; PAL enumerates all g-subsets (``itertools.combinations``)
    and keeps the first with the smallest maximum, which is the first g units by index with
    ``sf <=`` the host's g-th smallest sf: computed that way, without the combinatorial blow-up.
    Deeper levels (an extension, see ``lxv``) pick inside each group with the PM-First
    rule. The group with the smallest maximum wins; ties: more eligible units (PAL walks
    nodes in ``value_counts`` order), then the lower group id.
  - *across entry* (the top level): if >= g free units have ``sf <= v``, the PM-First rule on
    them.
  - entries of levels whose largest group is smaller than g are skipped, so for PAL's
    topology a job larger than a host (g > 4) gets PM-First on all free units, as in PAL.

**The PM-First rule:** for each candidate unit, count the candidates on its host with the same
sf; score = |count - g| (best fit); sort candidates by (sf, score, unit index) and take g.

**PM-First as a policy:** the same round (non-sticky, reorder, stop at first failure) with the
PM-First rule on all free units for every job.

**Rounds, as in PAL's simulator.** The policies are round-based (``round_s``, default 360 s,
the artifact's Sia-Philly round): they place jobs only at ``t0 + k x round_s`` (``t0`` = the
first view's time). ``play`` reads ``round_s`` and decides exactly on that grid; a
driver that calls ``decide`` at other instants (every event) gets the standing allocation
back unchanged until the next boundary has passed. Between rounds the allocation is kept:
departed nodes are lost, freed and newly idle nodes stay unused, waiting jobs wait, as in
the artifact, where completions and arrivals are seen only at round granularity.
``round_s=None`` re-places at every call (the event-driven variant). Jobs are rigid: each
asks for ``min_nodes`` units (``common.demands``). A job whose set changes restarts and pays
what the scenario's cost model charges every policy for it (PAL's simulator, and mtgym's
``pal-philly`` scenario, charge nothing; the default scenario charges ``r_up_s``); a job
whose set is unchanged is not touched.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from baselines.placement.common import (
    check_order,
    class_priority_reorder,
    demands,
    host_of,
    job_order,
)
from baselines.placement.lxv import LxV
from mtgym.core.types import Allocation
from mtgym.policy.tunable import Tunable, records_knobs
from mtgym.sim.view import InfoMode, SchedulerView


# ---------------------------------------------------------------------------------------
# Per-job unit selection
# ---------------------------------------------------------------------------------------
def pm_first_select(units: np.ndarray, sf: np.ndarray, host: np.ndarray, g: int) -> np.ndarray:
    """PM-First rule: g of ``units`` by (sf, |same-sf units on the host - g|, index).

    Args:
        units: candidate unit indices.
        sf: their clustered slowdown factors.
        host: their host ids.
        g: units needed (``<= units.size``).
    """
    # Count the units sharing (sf, host) through one integer key: np.unique(axis=0) on
    # float pairs is an order of magnitude slower and this runs once per job per round.
    _, sf_id = np.unique(sf, return_inverse=True)
    host = np.asarray(host, dtype=np.int64)
    key = sf_id.ravel().astype(np.int64) * (int(host.max(initial=0)) + 1) + host
    _, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    score = np.abs(counts[inv.ravel()] - g)
    order = np.lexsort((units, score, sf))
    return np.sort(units[order[:g]])


def _best_in_host(units: np.ndarray, sf: np.ndarray, g: int) -> np.ndarray:
    """PAL's within-node pick: the first g-subset (itertools order) with the smallest max sf.

    That subset is the first g of ``units`` (ascending) whose sf is at most the g-th smallest.
    """
    m = np.partition(sf, g - 1)[g - 1]
    return units[sf <= m][:g]


def _within_level(
    units: np.ndarray,
    sf: np.ndarray,
    group: np.ndarray,
    host: np.ndarray,
    g: int,
    level: int,
) -> np.ndarray | None:
    """Best set inside one level-``level`` group (units are the eligible ones, ascending)."""
    gids, counts = np.unique(group, return_counts=True)
    cand = gids[counts >= g]
    if cand.size == 0:
        return None
    best: tuple[float, int, int] | None = None
    pick: np.ndarray | None = None
    for gid, cnt in zip(cand, counts[counts >= g], strict=True):
        m = group == gid
        if level == 1:
            pos = _best_in_host(np.flatnonzero(m), sf[m], g)  # positions in ``units``
            sel = units[pos]
            worst = float(sf[pos].max())
        else:
            sel = pm_first_select(units[m], sf[m], host[m], g)
            worst = float(sf[np.isin(units, sel)].max())
        key = (worst, -int(cnt), int(gid))
        if best is None or key < best:
            best, pick = key, sel
    return None if pick is None else np.sort(pick)


class _Cluster:
    """Per-view constants of the selection: hosts, group coordinates, group capacities."""

    def __init__(self, view: SchedulerView) -> None:
        self.coords = np.asarray(view.topology_coords)
        self.host = host_of(self.coords)
        self.top = self.coords.shape[1] - 1
        self.capacity = np.array(
            [np.bincount(self.coords[:, k]).max() for k in range(self.coords.shape[1])]
        )


def pal_select(
    free: np.ndarray, cls: int, g: int, lxv: LxV, cluster: _Cluster
) -> np.ndarray | None:
    """PAL's choice of g units among ``free`` (ascending unit ids) for a class-``cls`` job:
    the first (slowdown level, spread level) of the L x V order that can hold them.

    Args:
        free: the free units' ids, ascending.
        cls: the job's application class (a column of ``lxv.sf``).
        g: units wanted.
        lxv: the cluster's L x V tables.
        cluster: the cluster's hosts, groups and group capacities.

    Returns:
        The chosen units, or None when no g units qualify.
    """
    if g <= 0 or free.size < g:
        return None
    sf = lxv.sf[free, cls]
    host = cluster.host[free]
    if g == 1:
        return pm_first_select(free, sf, host, g)
    for v, lvl, _ in lxv.order[cls]:
        if lvl < cluster.top and cluster.capacity[lvl] < g:
            continue
        elig = sf <= v
        if int(elig.sum()) < g:
            continue
        if lvl >= cluster.top:
            return pm_first_select(free[elig], sf[elig], host[elig], g)
        sel = _within_level(
            free[elig], sf[elig], cluster.coords[free[elig], lvl], host[elig], g, lvl
        )
        if sel is not None:
            return sel
    return None


def pm_first_unit_select(
    free: np.ndarray, cls: int, g: int, lxv: LxV, cluster: _Cluster
) -> np.ndarray | None:
    """PM-First's choice: the PM-First rule on all free units; arguments and result as
    ``pal_select``'s.
    """
    if g <= 0 or free.size < g:
        return None
    return pm_first_select(free, lxv.sf[free, cls], cluster.host[free], g)


# ---------------------------------------------------------------------------------------
# One round
# ---------------------------------------------------------------------------------------
def _place(
    select: Callable[[np.ndarray, int, int, LxV, _Cluster], np.ndarray | None],
    view: SchedulerView,
    jobs: np.ndarray,
    demand: np.ndarray,
    lxv: LxV,
    reorder: bool,
) -> np.ndarray:
    jobs = np.asarray(jobs, dtype=np.int64)
    demand = np.asarray(demand, dtype=np.int64)
    if jobs.shape != demand.shape:
        raise ValueError(f"jobs {jobs.shape} and demands {demand.shape} differ in shape")
    free = np.asarray(view.available, dtype=bool).copy()
    a = np.full(view.num_nodes, -1, dtype=np.int32)
    if reorder:
        jobs, demand = class_priority_reorder(jobs, demand, view.app_class, int(free.sum()))
    cluster = _Cluster(view)
    for j, g in zip(jobs.tolist(), demand.tolist(), strict=True):
        if g <= 0:
            continue
        sel = select(np.flatnonzero(free), int(view.app_class[j]), g, lxv, cluster)
        if sel is None:
            break  # PAL stops the round at the first job it cannot place
        a[sel] = j
        free[sel] = False
    return a


def pal_place(
    view: SchedulerView,
    jobs: np.ndarray,
    demands: np.ndarray,
    *,
    lxv: LxV,
    reorder: bool = True,
    rule: str = "pal",
) -> np.ndarray:
    """One PAL round: a node map placing ``jobs`` (priority order) on all available units.

    Every available unit is a candidate (non-sticky); with ``reorder`` the fitting prefix is
    sorted by class first; the round stops at the first job that cannot be placed. Jobs with
    demand 0 are skipped. Returns (N,) int32, -1 = idle.

    Args:
        view: the current view.
        jobs: the jobs to place, in priority order.
        demands: units each job asks for.
        lxv: the cluster's L x V tables.
        reorder: apply PAL's class-priority reorder to the fitting prefix.
        rule: ``"pal"`` (``pal_select``) or ``"pm-first"`` (``pm_first_unit_select`` for
            every job: ``pm_first_place``).
    """
    return _place(_RULES[rule], view, jobs, demands, lxv, reorder)


_RULES = {"pal": pal_select, "pm-first": pm_first_unit_select}
#: One PM-First round: ``pal_place`` with the PM-First rule for every job.
pm_first_place = functools.partial(pal_place, rule="pm-first")


# ---------------------------------------------------------------------------------------
# Placers (counts decided elsewhere) and policies
# ---------------------------------------------------------------------------------------
class _LxVCache:
    """Builds the L x V tables once per cluster (PAL: when the GPUs register)."""

    def __init__(self, *, pal_k_quirk: bool, seed: int) -> None:
        self.pal_k_quirk = pal_k_quirk
        self.seed = seed
        self._lxv: LxV | None = None
        self._key: tuple[np.ndarray, np.ndarray] | None = None

    def get(self, view: SchedulerView) -> LxV:
        key = (view.slowdown, view.locality_factor)
        if (
            self._lxv is None
            or self._key is None
            or any(a is not b for a, b in zip(key, self._key, strict=True))
        ):
            self._lxv = LxV.build(
                view.slowdown, view.locality_factor, pal_k_quirk=self.pal_k_quirk, seed=self.seed
            )
            self._key = key
        return self._lxv


class _Placer:
    _place = staticmethod(pal_place)

    def __init__(self, *, pal_k_quirk: bool = True, seed: int = 1) -> None:
        self._cache = _LxVCache(pal_k_quirk=pal_k_quirk, seed=seed)

    def lxv(self, view: SchedulerView) -> LxV:
        """The (cached) L x V tables of the view's cluster.

        Args:
            view: a view of the cluster.
        """
        return self._cache.get(view)

    def place(self, view: SchedulerView, jobs: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """A node map giving ``jobs[i]`` exactly ``counts[i]`` units (0 = none).

        Non-sticky (PAL re-places every job each round); the class-priority reorder decides
        who picks first. Raises ``ValueError`` when the counts exceed the available units.

        Args:
            view: the current view.
            jobs: the jobs' indices, in priority order.
            counts: units for each of ``jobs``.
        """
        counts = np.asarray(counts, dtype=np.int64)
        total, n_free = int(counts.sum()), int(np.count_nonzero(view.available))
        if total > n_free:
            raise ValueError(f"counts need {total} units but only {n_free} are available")
        return type(self)._place(view, jobs, counts, lxv=self.lxv(view))


class PALPlacer(_Placer):
    """PAL's placement for an allocator that decides the counts (``pack_targets``' role).

    Args:
        pal_k_quirk: K1 = 2 as in PAL's code (else a silhouette scan over 2..10).
        seed: the K-means seed (PAL: ``random_state=1``).
    """

    _place = staticmethod(pal_place)


class PMFirstPlacer(_Placer):
    """PM-First's placement for an allocator that decides the counts.

    Args:
        pal_k_quirk, seed: as for ``PALPlacer`` (they shape the L x V tables).
    """

    _place = staticmethod(pm_first_place)


#: PAL's scheduling round in the Sia-Philly simulations (seconds).
ROUND_S = 360.0


class _RoundPolicy(Tunable):
    info_mode = InfoMode.USER
    _place = staticmethod(pal_place)
    KNOBS = ("round_s", "order")

    @records_knobs
    def __init__(
        self,
        order: str = "fifo",
        *,
        round_s: float | None = ROUND_S,
        pal_k_quirk: bool = True,
        seed: int = 1,
        tuned: bool = True,
    ) -> None:
        self.order = check_order(order)
        self.tuned = bool(tuned)
        if round_s is not None and not (np.isfinite(round_s) and round_s > 0):
            raise ValueError(f"round_s must be a finite number > 0 or None, got {round_s!r}")
        self.round_s = None if round_s is None else float(round_s)
        self._cache = _LxVCache(pal_k_quirk=pal_k_quirk, seed=seed)
        self._t0: float | None = None
        self._next_round = 0  # index k of the next round boundary t0 + k x round_s

    def tuning_grid(self, episode: object) -> dict[str, list[object]]:
        """The round length (PAL's 360 s, 60, 120, 900, 1,800 s, every event), then the job
        order (FIFO, LAS, SRTF: the orders of PAL's simulator).

        Args:
            episode: the scenario's ``EpisodeSpec`` (unused: the grid is fixed).
        """
        return {
            "round_s": [ROUND_S, 60.0, 120.0, 900.0, 1800.0, None],
            "order": ["fifo", "las", "srtf"],
        }

    def reset(self, view: SchedulerView) -> None:
        """Build the L x V tables (PAL: at GPU registration); the round grid starts now.

        Args:
            view: the episode's first view.
        """
        self._cache.get(view)
        self._t0 = float(view.time)
        self._next_round = 0

    def in_round(self, time: float) -> bool:
        """Whether a new round has started by ``time`` (always, without ``round_s``).

        Args:
            time: the simulated time, seconds.
        """
        if self.round_s is None or self._t0 is None:
            return True
        # 1e-9 rounds: a driver stepping t0 + round_s at a time may land a hair short of k
        return (time - self._t0) / self.round_s >= self._next_round - 1e-9

    def decide(self, view: SchedulerView) -> Allocation:
        """Re-place every active job at a round boundary; keep the allocation in between.

        Args:
            view: what the policy sees now (``mtgym.sim.view.SchedulerView``).

        Returns:
            The node map of the round (rigid jobs: each gets its demand or waits).
        """
        if self._t0 is None:
            self._t0 = float(view.time)
        if not self.in_round(view.time):
            keep = np.where(view.available, view.node_job, -1).astype(np.int32)
            return Allocation(keep)
        if self.round_s is not None:
            self._next_round = int(np.floor((view.time - self._t0) / self.round_s + 1e-9)) + 1
        jobs = job_order(view, self.order)
        a = type(self)._place(view, jobs, demands(view, jobs), lxv=self._cache.get(view))
        return Allocation(a)


class PALPolicy(_RoundPolicy):
    """PAL: variability- and locality-aware placement over the L x V order, rigid jobs.

    Args:
        order: ``"fifo"`` (submission), ``"las"`` (least progress) or ``"srtf"`` (least
            remaining work).
        round_s: seconds between rounds (PAL's 360 s); ``None`` re-places at every call.
        pal_k_quirk: K1 = 2 as in PAL's code (else a real silhouette scan over 2..10).
        seed: the K-means seed (PAL: ``random_state=1``).
    """

    name = "pal"
    _place = staticmethod(pal_place)


class PMFirstPolicy(_RoundPolicy):
    """PM-First: PAL's round with the PM-First rule (fastest sf level, best-fit host).

    Args:
        order, round_s, pal_k_quirk, seed: as for ``PALPolicy``.
    """

    name = "pm-first"
    _place = staticmethod(pm_first_place)
