"""The live instance and state: the Slurm nodes and a scenario's jobs, as the simulator's
types, so every registered policy decides on a live cluster exactly as in simulation.

``live_instance`` builds an ``Instance`` whose cluster is the Slurm nodes (stable indices,
GPU type from ``gres`` when it names one of the scenario's types, identical devices, one
topology group: Slurm does not say the network) and whose jobs are the first ``max_jobs``
of a scenario, all submitted at once (a live queue). Its supply is one placeholder window
per node before the start: the live supply comes from ``SlurmSupply``.

``LiveState`` keeps a ``ClusterState`` in step with the real world: which nodes are lent
now, which job holds which node, each job's predicted rate, and its progress integrated
from that rate (the real jobs' progress is not read back); ``view`` builds the policy's
``SchedulerView`` (with the known ends of the nodes' current windows).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from mtgym.core.instance import Instance, Jobs, Supply, frozen
from mtgym.core.topology import Topology
from mtgym.core.types import JobStatus
from mtgym.generate.cluster import build_cluster
from mtgym.scavenger.slurm import NodeInfo
from mtgym.sim.dynamics import throughput_model
from mtgym.sim.state import ClusterState
from mtgym.sim.view import InfoMode, SchedulerView, ViewBuilder


def take_jobs(jobs: Jobs, k: int) -> Jobs:
    """The first ``k`` jobs, all submitted at time 0, outside any campaign.

    Per-job arrays and tuples are cut to ``k`` (arrays copied and frozen); other fields are
    kept as they are.

    Args:
        jobs: a workload's jobs.
        k: how many to keep (more than there are: all).
    """
    J = jobs.num_jobs
    k = min(k, J)
    kw = {}
    for f in dataclasses.fields(jobs):
        v = getattr(jobs, f.name)
        if isinstance(v, tuple):
            kw[f.name] = v[:k]
        elif isinstance(v, np.ndarray) and v.shape[:1] == (J,):
            kw[f.name] = frozen(np.array(v[:k], copy=True))
        else:
            kw[f.name] = v
    kw["submit_s"] = frozen(np.zeros(k))
    kw["campaign"] = frozen(np.full(k, -1, dtype=np.int32))
    return Jobs(**kw)


def live_instance(
    names: Sequence[str],
    nodes: dict[str, NodeInfo],
    workload: Instance,
    *,
    max_jobs: int | None = None,
    name: str = "slurm-live",
) -> Instance:
    """The live instance (see module doc). ``workload`` provides the jobs and GPU types.

    A node whose ``gres`` type is not one of the workload's types (or has none) gets the
    workload's first type. The horizon is infinite.

    Args:
        names: host names by stable index (``SlurmSupply.discover``).
        nodes: the last ``sinfo`` by host name (GPU types).
        workload: an instance of the scenario (its jobs, GPU types and GPUs per node).
        max_jobs: keep the first this many jobs (None: all).
        name: the instance's name.

    Raises:
        ValueError: ``names`` is empty.
    """
    N = len(names)
    if N == 0:
        raise ValueError("the Slurm cluster lists no node (check --partition)")
    wcl = workload.cluster
    types = {t.lower(): i for i, t in enumerate(wcl.gpu_type_names)}
    gtype = np.zeros(N, dtype=np.int16)
    for i, n in enumerate(names):
        info = nodes.get(n)
        if info is not None and info.gpu_type is not None:
            gtype[i] = types.get(info.gpu_type.lower(), 0)
    cluster = build_cluster(
        np.random.default_rng(0),
        gpus_per_node=wcl.gpus_per_node,
        gpu_type_names=wcl.gpu_type_names,
        gpu_type=gtype,
        topology=Topology.uniform(N, N),
        variability=None,
        profile_noise=0.0,
        node_names=list(names),
    )
    jobs = take_jobs(workload.jobs, workload.num_jobs if max_jobs is None else max_jobs)
    # placeholder windows before the start (the view indexes the supply; never simulated)
    past = Supply.from_windows(np.arange(N), np.full(N, -2.0), np.full(N, -1.0), num_nodes=N)
    return Instance(name, cluster, past, jobs, t_start=0.0, t_end=math.inf).validate()


class LiveState:
    """The simulator's state of a live cluster (see module doc). Times are seconds since
    ``t0`` (the loop's start, epoch seconds).

    Every job is active from the start. No node is available until ``set_available``.

    Args:
        instance: the live instance (``live_instance``).
        mode: what the policy may see (``InfoMode`` or its name).
        t0: the loop's start, epoch seconds.

    Attributes:
        state: the simulator state kept in step.
        window_end: (N,) each lent node's known end, seconds since ``t0`` (inf: unknown or
            not lent).
    """

    def __init__(self, instance: Instance, mode: InfoMode | str, t0: float) -> None:
        self.instance = instance
        self.t0 = t0
        self.state = ClusterState.initial(instance)
        self.state.status[:] = JobStatus.ACTIVE
        self.state.arrival_cursor = instance.num_jobs
        self.window_end = np.full(instance.num_nodes, np.inf)
        self._views = ViewBuilder(instance, mode)
        self._model = throughput_model(instance)

    @property
    def node_job(self) -> np.ndarray:
        """(N,) job holding each node, -1 = none."""
        return self.state.node_job

    def advance_to(self, t_epoch: float) -> list[int]:
        """Integrate progress at the current rates up to ``t_epoch``; returns the jobs that
        completed (their nodes are freed here).

        Time never goes back: an earlier ``t_epoch`` integrates nothing. Progress is
        samples at the model's predicted rate, not the real jobs' reports.

        Args:
            t_epoch: epoch seconds.

        Returns:
            Indices of the jobs that completed in this step.
        """
        s = self.state
        t = max(t_epoch - self.t0, s.time)
        dt = t - s.time
        s.progress += s.rate * dt
        s.node_s += s.n_nodes * dt
        s.time = t
        done = np.flatnonzero(s.active & (s.progress >= self.instance.jobs.work))
        for j in done.tolist():
            s.status[j] = JobStatus.COMPLETED
            s.finish_time[j] = t
            self.set_nodes(j, ())
        return done.tolist()

    def set_available(self, lendable: dict[int, float]) -> None:
        """Lent nodes now (index -> known end, epoch s; inf = unknown).

        Nodes not in ``lendable`` become unavailable (their holders are not changed here;
        the loop releases them first). Indices past the instance's nodes are ignored.

        Args:
            lendable: ``SlurmSupply.lendable``.
        """
        s = self.state
        s.available[:] = False
        self.window_end[:] = np.inf
        for n, end in lendable.items():
            if n < s.available.shape[0]:
                s.available[n] = True
                self.window_end[n] = end - self.t0
        s.window[:] = -1

    def set_nodes(self, j: int, nodes: Sequence[int], *, rescale: bool = False) -> None:
        """Job ``j`` now holds exactly ``nodes`` (its rate is the model's on them).

        Counts a rescale when a job that held nodes gets a new non-empty set (or when the
        caller says so: the scavenger stops a job's generation before it starts the next
        one on the new set, so the job holds nothing in between), a start when it held
        none; the first start's time is recorded.

        Args:
            j: the job index.
            nodes: node indices (empty: the job holds none).
            rescale: a non-empty ``nodes`` is the job's new set after a stop for a rescale.
        """
        s = self.state
        held = s.node_job == j
        if len(nodes) > 0 and (rescale or (held.any() and s.n_nodes[j] > 0)):
            s.rescales[j] += 1
        elif len(nodes) > 0:
            s.starts[j] += 1
            if np.isnan(s.first_start[j]):
                s.first_start[j] = s.time
        s.node_job[held] = -1
        idx = np.asarray(sorted(nodes), dtype=np.int64)
        s.node_job[idx] = j
        s.n_nodes[j] = idx.size
        s.rate[j] = self._model.rate_on(j, idx) if idx.size else 0.0

    def view(self) -> SchedulerView:
        """The policy's view now (known ends of the open windows included).

        ``window_end`` is a read-only view of ``self.window_end`` (seconds since ``t0``).
        """
        v = self._views(self.state)
        we = self.window_end.view()
        we.flags.writeable = False
        return dataclasses.replace(v, window_end=we)

    def holdings(self) -> dict[int, tuple[int, ...]]:
        """Job -> nodes it holds (jobs holding none left out), node indices ascending."""
        out: dict[int, tuple[int, ...]] = {}
        for n, j in enumerate(self.state.node_job.tolist()):
            if j >= 0:
                out[j] = (*out.get(j, ()), n)
        return out
