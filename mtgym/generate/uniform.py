"""``uniform_instance``: a cluster of identical nodes with explicit idle windows and jobs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mtgym.core.instance import Campaigns, Cluster, CostModel, Instance, Supply
from mtgym.core.topology import Topology
from mtgym.generate.cluster import build_cluster
from mtgym.generate.supply.always_idle import always_idle
from mtgym.generate.workload import JobRow, build_jobs


def uniform_cluster(
    num_nodes: int,
    group_size: int = 2,
    locality_factor: tuple[float, float, float] | None = None,
) -> Cluster:
    """Identical single-GPU V100 nodes in groups of ``group_size``, no variability.

    Args:
        num_nodes: nodes of the cluster.
        group_size: nodes per group (node -> group -> system; the last group is partial
            when it does not divide ``num_nodes``).
        locality_factor: PAL's lambda at the node, group and system levels (None: 1).

    Returns:
        A cluster whose true and profiled slowdowns are all 1.
    """
    topo = Topology.uniform(num_nodes, group_size, locality_factor=locality_factor)
    return build_cluster(
        np.random.default_rng(0),
        gpus_per_node=1,
        gpu_type_names=("V100",),
        gpu_type=np.zeros(num_nodes, dtype=int),
        topology=topo,
        variability=None,
        profile_noise=0.0,
    )


def uniform_instance(
    num_nodes: int,
    rows: Sequence[JobRow],
    *,
    windows: Sequence[tuple[int, float, float]] | None = None,
    t_end: float = 1e6,
    costs: CostModel | None = None,
    group_size: int = 2,
    slowdown: np.ndarray | None = None,
    locality_factor: tuple[float, float, float] | None = None,
    campaigns: Campaigns | None = None,
) -> Instance:
    """An instance of identical single-GPU nodes (or ``slowdown`` (N, 4) per node) in groups of
    ``group_size``, running ``rows``: the bridge's prediction cluster, and the test kit's
    ``tiny_instance``.

    ``windows`` are (node, start, end); default: every node idle on [0, t_end).

    Args:
        num_nodes: nodes of the cluster.
        rows: the jobs (``build_jobs`` tabulates them on this cluster, exactly declared).
        windows: idle windows (node, start, end), seconds, end unknown in advance.
        t_end: the episode's end (it starts at 0), seconds.
        costs: how rescales and pre-emptions are charged (default ``CostModel()``).
        group_size: nodes per topology group.
        slowdown: (N, 4) true per-class node factors, also used as the device and profiled
            ones (None: all 1).
        locality_factor: PAL's lambda at the node, group and system levels.
        campaigns: the campaign table the rows' ``campaign`` indices refer to.

    Returns:
        The validated instance, named ``"uniform"``, seed 0.
    """
    cl = uniform_cluster(num_nodes, group_size, locality_factor)
    if slowdown is not None:
        from dataclasses import replace

        sd = np.asarray(slowdown, dtype=np.float64)
        cl = replace(cl, device_slowdown=sd[:, None, :], slowdown=sd, profiled_slowdown=sd)
    if windows is None:
        supply = always_idle(num_nodes, 0.0, t_end)
    else:
        w = np.array(windows, dtype=np.float64).reshape(-1, 3)
        supply = Supply.from_windows(w[:, 0].astype(int), w[:, 1], w[:, 2], num_nodes=num_nodes)
    jobs = build_jobs(list(rows), cl)
    return Instance(
        "uniform",
        cl,
        supply,
        jobs,
        campaigns=campaigns or Campaigns(),
        costs=costs or CostModel(),
        t_end=t_end,
        seed=0,
    ).validate()
