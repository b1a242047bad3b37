"""The Summit replay on the real files (reduced: a node subset and two days)."""

from __future__ import annotations

import numpy as np

from mtgym.core.types import PerfKind, RescaleMode
from mtgym.generate.replay import SummitReplay
from mtgym.policy.equal_share import EqualShare
from mtgym.policy.play import play


def test_summit_replay__builds_cabinet_row_topology_and_table_jobs(shared_data):
    gen = SummitReplay(
        shared_data / "summit-idle-fragments.csv.gz",
        shared_data / "summit-nodes.csv",
        shared_data / "bftrainer-hps-shufflenet-10j.csv",
        t_start=72_743.0,
        t_end=72_743.0 + 2 * 86_400.0,
        num_nodes=600,
    )
    inst = gen()
    topo = inst.cluster.topology
    assert topo.level_names == ("node", "cabinet", "row", "system")
    # the cabinet level groups nodes by the cabinet in their name (a01n05 -> a01), rows by row
    names = inst.cluster.node_names
    cab = np.unique([n[:3] for n in names], return_inverse=True)[1]
    row = np.unique([n[0] for n in names], return_inverse=True)[1]
    assert np.array_equal(
        np.unique(np.stack([cab, topo.coords[:, 1]]), axis=1).shape, (2, cab.max() + 1)
    )
    assert len(np.unique(np.stack([row, topo.coords[:, 2]], axis=1), axis=0)) == row.max() + 1
    assert np.bincount(topo.coords[:, 1]).max() <= 18
    assert inst.cluster.gpus_per_node == 6
    assert np.all(inst.jobs.perf_kind == PerfKind.TABLE)
    assert inst.costs.rescale == RescaleMode.BFTRAINER
    assert inst.supply.start_s.min() >= 72_743.0 and inst.supply.end_s.max() <= inst.t_end
    res = play(inst, EqualShare(10), debug=True)
    m = res.metrics
    # offered node-time equals the trace's idle node-time on this span
    assert m.offered_node_s == inst.supply.offered_node_seconds(inst.t_start, res.state.time)
    assert 0 < m.utilisation <= 1 and m.samples > 0
    # Table throughput with identical devices and lambda = 1 is exactly BFTrainer's curve
    j = int(np.flatnonzero(res.state.first_start == res.state.first_start)[0])
    assert inst.jobs.curve_tput[j, 1] == 2831.0
