"""Generators that replay real data: the Summit idle trace with BFTrainer's workloads.

``SummitReplay`` rebuilds BFTrainer's setup (FreeTrain, arXiv 2106.12091; the
``BFTrainer/Replayer`` artifact): 4,734 Summit nodes (6 V100 each) in 263 cabinets of 18
in 8 rows, their recorded idle windows (14.9 days from 2021-02-10 00:08:52), and a job
table whose measured throughput curves the simulator interpolates exactly as the Replayer
does. Costs are charged BFTrainer's way by default (``RescaleMode.BFTRAINER``: R x rate
before the change, free starts; ``PreemptionMode.RDOWN``). The data files are read from
the paths given; nothing is copied into the project.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mtgym.core.instance import CostModel, Instance
from mtgym.core.rng import stream
from mtgym.core.topology import Topology
from mtgym.core.types import PreemptionMode, RescaleMode
from mtgym.generate.cluster import build_cluster
from mtgym.generate.supply import supply_from_windows
from mtgym.generate.workload import build_jobs, rows_from_bftrainer
from mtgym.model.variability import VariabilitySpec
from mtgym.readers import read_bftrainer_jobs, read_idle_windows, read_summit_nodes

#: Summit links (GB/s, s): NVLink 2 within a node (50 GB/s per GPU pair), dual-rail EDR
#: InfiniBand (2 x 12.5 GB/s) in a non-blocking fat tree, so the same bandwidth above the
#: node with latency growing by switch hops.
SUMMIT_BANDWIDTH_GBPS = (50.0, 23.0, 23.0, 23.0)
SUMMIT_LATENCY_S = (1e-6, 1.5e-6, 2.5e-6, 3.5e-6)
SUMMIT_TRACE_END_S = 1_289_437.0


@dataclass(frozen=True)
class SummitReplay:
    """The Summit trace + a BFTrainer job table.

    Attributes:
        fragments: path of ``summit-idle-fragments.csv.gz``.
        nodes: path of ``summit-nodes.csv`` (for the cabinet/row topology).
        jobs: path of a BFTrainer workload CSV (e.g. ``bftrainer-imagenet-1001j.csv``).
        t_start: replay start, s since the trace start (0 = the whole trace; 72,743 = the
            Replayer's row 1000, the first submission).
        t_end: replay end (default: the trace end).
        num_nodes: keep only the first ``num_nodes`` nodes in the trace's column order
            (the Replayer's ``-nN``); default all 4,734.
        variability: per-GPU slowdowns (None: identical devices, as BFTrainer assumes).
        costs: the cost model (default: BFTrainer's accounting).
        name: the generator's and its instances' name.
    """

    fragments: str | Path
    nodes: str | Path
    jobs: str | Path
    name: str = "summit-replay"
    t_start: float = 0.0
    t_end: float | None = None
    num_nodes: int | None = None
    variability: VariabilitySpec | None = None
    costs: CostModel = field(
        default_factory=lambda: CostModel(RescaleMode.BFTRAINER, PreemptionMode.RDOWN)
    )

    def __call__(self, seed: int = 0) -> Instance:
        """Build the instance (the seed only matters with ``variability``).

        The topology is node -> cabinet -> row -> system from ``summit-nodes.csv``; each
        node has 6 V100s; the jobs' submission times keep the trace's clock.

        Args:
            seed: the instance seed (its ``"variability"`` stream draws the devices).

        Returns:
            The validated instance on [``t_start``, ``t_end``).
        """
        win = read_idle_windows(self.fragments)
        nodes = read_summit_nodes(self.nodes)
        keep = np.arange(len(nodes) if self.num_nodes is None else min(self.num_nodes, len(nodes)))
        t_end = SUMMIT_TRACE_END_S if self.t_end is None else float(self.t_end)
        supply, orig = supply_from_windows(
            win.node_index, win.start_s, win.end_s, nodes=keep, t0=self.t_start, t1=t_end
        )
        groups = np.stack([nodes.cabinet_id[orig], nodes.row_id[orig]], axis=1)
        topo = Topology.build(
            ("node", "cabinet", "row", "system"),
            groups,
            SUMMIT_BANDWIDTH_GBPS,
            SUMMIT_LATENCY_S,
        )
        cluster = build_cluster(
            stream(seed, "variability"),
            gpus_per_node=6,
            gpu_type_names=("V100",),
            gpu_type=np.zeros(orig.size, dtype=np.int16),
            topology=topo,
            variability=self.variability,
            profile_noise=0.0 if self.variability is None else 0.01,
            node_names=[str(x) for x in nodes.node_name[orig]],
        )
        jobs = build_jobs(rows_from_bftrainer(read_bftrainer_jobs(self.jobs)), cluster)
        return Instance(
            name=self.name,
            cluster=cluster,
            supply=supply,
            jobs=jobs,
            costs=self.costs,
            t_start=self.t_start,
            t_end=t_end,
            seed=seed,
        ).validate()
