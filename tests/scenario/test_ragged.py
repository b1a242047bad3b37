"""Ragged topologies: a level's last group may be partial (issue 27).

A real machine's node count is often not a multiple of the rack or group size one models
(ALCF Theta's log: 4,360 nodes; groups of 128 leave one of 8). Such scenarios validate,
build and run, and every consumer of the topology (spread, link costs, the compiled
engine, placement, the env) sees the partial groups as groups like any other.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from baselines.placement import pal_place
from baselines.placement.lxv import LxV
from mtgym.cli import main
from mtgym.core.instance import Campaigns, CostModel, Instance
from mtgym.core.topology import Topology
from mtgym.core.types import Allocation
from mtgym.env.env import ScavengeEnv
from mtgym.generate.cluster import build_cluster
from mtgym.generate.supply.always_idle import always_idle
from mtgym.generate.workload import build_jobs
from mtgym.model.placement import pack_targets
from mtgym.model.throughput import ThroughputModel
from mtgym.policy.play import play
from mtgym.policy.registry import make_policy
from mtgym.scenario import ScenarioError, load_scenario
from mtgym.scenario.registry import get_generator
from mtgym.sim.dynamics import advance, initial_state
from mtgym.sim.view import InfoMode, ViewBuilder
from mtgym.testing import checked_rollout, linear_job

THETA = """\
name: theta-ragged
description: ALCF Theta's 4,360 logged nodes in groups of 128 (the last group holds 8)
generator:
  kind: synthetic
  cluster:
    num_nodes: 4360
    gpus_per_node: 1
    gpu_types: [A100]
    levels:
      - {name: node, bandwidth_gbps: 150.0, latency_s: 1.0e-6}
      - {name: group, group_size: 128, bandwidth_gbps: 25.0, latency_s: 2.0e-6}
      - {name: system, bandwidth_gbps: 12.5, latency_s: 5.0e-6}
  supply: {kind: synthetic, idle_fraction: 0.35, drains_per_hour: 1.0, drain_nodes_median: 6.0}
  workload: {kind: mix, num_jobs: 12, arrival_rate_per_h: 20.0, work_hours: [0.2, 0.5],
             max_nodes: [256]}
  horizon_s: 1800.0
episode: {max_jobs: 16}
"""

# node -> rack (4) -> group (16) -> system on 37 nodes: racks 0..8 full, rack 9 = {36};
# groups 0, 1 full, group 2 = {32..36} (two full racks and the partial one).
TWO_PARTIAL = """\
name: two-partial
description: 37 nodes, racks of 4, groups of 16; partial at both levels
generator:
  kind: synthetic
  cluster:
    num_nodes: 37
    gpus_per_node: 2
    gpu_types: [A100, V100]
    group_types: [0, 1]
    levels:
      - {name: node, bandwidth_gbps: 150.0, latency_s: 1.0e-6}
      - {name: rack, group_size: 4, bandwidth_gbps: 50.0, latency_s: 2.0e-6}
      - {name: group, group_size: 16, bandwidth_gbps: 25.0, latency_s: 3.0e-6,
         locality_factor: 1.3}
      - {name: system, bandwidth_gbps: 12.5, latency_s: 5.0e-6, locality_factor: 1.7}
  supply: {kind: synthetic, idle_fraction: 0.5, drains_per_hour: 1.0, drain_nodes_median: 3.0}
  workload: {kind: mix, num_jobs: 8, arrival_rate_per_h: 20.0, work_hours: [0.1, 0.3],
             max_nodes: [8]}
  horizon_s: 3600.0
episode: {max_jobs: 8}
"""


def _file(tmp_path: Path, text: str, name: str) -> Path:
    f = tmp_path / f"{name}.yaml"
    f.write_text(text)
    return f


# -- the Theta shape -------------------------------------------------------------------
def test_theta_shape__validates_builds_and_groups_the_last_8_nodes(tmp_path):
    f = _file(tmp_path, THETA, "theta")
    spec = load_scenario(f)
    assert spec.generator.cluster.num_nodes == 4360
    inst = get_generator(f)(0)
    c = inst.cluster.topology.coords
    sizes = np.bincount(c[:, 1])
    assert sizes.size == 35 and (sizes[:34] == 128).all() and sizes[34] == 8
    np.testing.assert_array_equal(np.flatnonzero(c[:, 1] == 34), np.arange(4352, 4360))
    t = inst.cluster.topology
    assert t.spread(np.arange(4352, 4360)) == 1  # the partial group is one group
    assert t.spread(np.array([4351, 4352])) == 2  # across the last full and the partial one


def test_theta_shape__runs_an_episode_from_the_cli_with_every_invariant_checked(tmp_path, capsys):
    f = _file(tmp_path, THETA, "theta")
    args = ["--policy", "greedy", "--debug", "--json", "--decision-interval", "300"]
    rc = main(["run", "--scenario", str(f), *args])
    assert rc == 0
    m = json.loads(capsys.readouterr().out)
    assert m["samples"] > 0 and m["decisions"] >= 6 and m["starts"] > 0


def test_theta_shape__pal_and_equal_share_play_with_every_invariant_checked(tmp_path):
    inst = get_generator(_file(tmp_path, THETA, "theta"))(1)
    for name in ("pal", "equal-share"):
        res = play(inst, make_policy(name), until=inst.t_start + 900.0, debug=True)
        assert res.metrics.samples > 0, name


# -- partial at two levels -------------------------------------------------------------
def test_two_partial_levels__coords_and_spread_of_the_partial_groups(tmp_path):
    inst = get_generator(_file(tmp_path, TWO_PARTIAL, "two"))(0)
    t = inst.cluster.topology
    assert t.level_names == ("node", "rack", "group", "system")
    np.testing.assert_array_equal(np.bincount(t.coords[:, 1]), [4] * 9 + [1])
    np.testing.assert_array_equal(np.bincount(t.coords[:, 2]), [16, 16, 5])
    np.testing.assert_array_equal(t.coords[32:, 1], [8, 8, 8, 8, 9])
    np.testing.assert_array_equal(t.coords[32:, 2], [2, 2, 2, 2, 2])
    assert t.spread(np.array([36])) == 0
    assert t.spread(np.array([32, 35])) == 1  # a full rack of the partial group
    assert t.spread(np.array([35, 36])) == 2  # the partial rack inside the partial group
    assert t.spread(np.array([32, 33, 34, 35, 36])) == 2  # the whole partial group
    assert t.spread(np.array([31, 36])) == 3  # across groups
    # the group types cycle over the level-1 groups (racks): racks 0, 1, 8, 9
    np.testing.assert_array_equal(inst.cluster.gpu_type[[0, 4, 32, 36]], [0, 1, 0, 1])


def _two_partial_instance(rows) -> Instance:
    n = np.arange(37)
    topo = Topology.build(
        ("node", "rack", "group", "system"),
        np.stack([n // 4, n // 16], axis=1),
        bandwidth_gbps=(150.0, 50.0, 25.0, 12.5),
        latency_s=(1e-6, 2e-6, 3e-6, 5e-6),
        locality_factor=(1.0, 1.0, 1.3, 1.7),
    )
    cl = build_cluster(
        np.random.default_rng(0),
        gpus_per_node=1,
        gpu_type_names=("V100",),
        gpu_type=np.zeros(37, dtype=int),
        topology=topo,
        variability=None,
        profile_noise=0.0,
    )
    return Instance(
        "two-partial",
        cl,
        always_idle(37, 0.0, 1e5),
        build_jobs(list(rows), cl),
        campaigns=Campaigns(),
        costs=CostModel(),
        t_end=1e5,
        seed=0,
    ).validate()


def test_two_partial_levels__engine_prices_each_set_by_the_level_it_spans():
    """The compiled step's spread and rate (locality 1.3 within a group, 1.7 across) for
    sets inside the partial rack, the partial group and across to a full group."""
    inst = _two_partial_instance([linear_job(f"j{i}", 10.0, 8, 1e9) for i in range(4)])
    a = np.full(37, -1, dtype=np.int32)
    a[[35, 36]] = 0  # partial rack 9 + rack 8: group level
    a[[32, 33]] = 1  # rack 8: rack level
    a[[30, 31, 34]] = 2  # group 1 + group 2: system level
    state, _ = advance(initial_state(inst), inst, Allocation(a), until=1.0)
    np.testing.assert_array_equal(state.spread, [2, 1, 3, 0])
    np.testing.assert_allclose(state.rate, [20.0 / 1.3, 20.0, 30.0 / 1.7, 0.0], rtol=1e-15)
    m = ThroughputModel(inst.cluster, inst.jobs)
    rate, count, spread = m.job_rates(a)
    np.testing.assert_array_equal(count, [2, 2, 3, 0])
    np.testing.assert_array_equal(spread, state.spread)
    np.testing.assert_allclose(rate, state.rate, rtol=1e-15)
    # the best case of a packed set: 1 node, 2..4 a rack, 5..16 a group, 17 the system
    np.testing.assert_array_equal(m.packed_spread(np.array([1, 4, 5, 16, 17])), [0, 1, 2, 2, 3])


def test_two_partial_levels__packer_ranks_the_partial_rack_by_free_nodes_like_any_other():
    inst = _two_partial_instance([linear_job(f"j{i}", 10.0, 8, 1e9) for i in range(2)])
    sd = inst.cluster.profiled_slowdown
    coords = inst.cluster.topology.coords
    avail = np.zeros(37, dtype=bool)
    avail[[3, 36, 33]] = True  # one free node in racks 0 and 9, and one in rack 8
    node_job = np.full(37, -1, dtype=np.int32)
    app = inst.jobs.app_class
    got = pack_targets(avail, node_job, sd, app, coords, np.array([0]), np.array([1]))
    assert np.flatnonzero(got == 0).tolist() == [3]  # ties: the lowest rack id
    avail[[32, 34]] = True  # rack 8 now has 3 free nodes
    got = pack_targets(avail, node_job, sd, app, coords, np.array([0, 1]), np.array([3, 2]))
    assert np.flatnonzero(got == 0).tolist() == [32, 33, 34]
    assert sorted(np.flatnonzero(got == 1).tolist()) == [3, 36]


def test_two_partial_levels__pal_takes_the_partial_group_when_only_it_holds_the_job():
    """PAL: 5 units do not fit a rack (4); group 2 (5 nodes, partial) is the only group
    with 5 free, so the job gets all of it at group level rather than the system."""
    inst = _two_partial_instance([linear_job("j", 10.0, 8, 1e9)])
    state = initial_state(inst)
    state.available[:] = False
    state.available[[0, 1, 2, 3, 20, 32, 33, 34, 35, 36]] = True
    v = ViewBuilder(inst, InfoMode.USER)(state)
    lx = LxV.build(v.slowdown, v.locality_factor)
    got = pal_place(v, np.array([0]), np.array([5]), lxv=lx)
    assert np.flatnonzero(got == 0).tolist() == [32, 33, 34, 35, 36]


def test_two_partial_levels__policies_and_env_run_with_every_invariant_checked(tmp_path):
    f = _file(tmp_path, TWO_PARTIAL, "two")
    gen = get_generator(f)
    inst = gen(0)
    for name in ("pal", "greedy", "freetrain"):
        traj = checked_rollout(inst, make_policy(name), max_steps=300)
        assert traj[-1][0].progress.sum() > 0, name
    env = ScavengeEnv(f, debug=True)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    for _ in range(20):
        obs, _, term, trunc, _ = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs)
        if term or trunc:
            break


# -- what still cannot be built ------------------------------------------------------------
def test_levels_that_do_not_nest_are_a_one_line_error(tmp_path):
    bad = TWO_PARTIAL.replace("group_size: 16", "group_size: 18")
    with pytest.raises(ScenarioError) as err:
        load_scenario(_file(tmp_path, bad, "bad"))
    msg = str(err.value)
    assert "group_size 18 is not a multiple of 4 (groups must nest)" in msg
    assert "\n" not in msg


# -- a node list (node -> rack -> row) as real machines publish it ---------------------------
NODE_LIST = """\
host,rack,row
h0,r0,A
h1,r0,A
h2,r0,A
h3,r1,A
h4,r2,B
h5,r2,B
h6,r2,B
h7,r2,B
h8,r3,B
"""

LISTED = """\
name: listed
description: 9 nodes from a node list; racks of 3, 1, 4 and 1 nodes in rows of 4 and 5
generator:
  kind: synthetic
  cluster:
    num_nodes: 9
    gpus_per_node: 2
    gpu_types: [A100, V100]
    group_types: [0, 1]
    nodes: nodes.csv
    levels:
      - {name: node, bandwidth_gbps: 150.0, latency_s: 1.0e-6}
      - {name: rack, bandwidth_gbps: 50.0, latency_s: 2.0e-6}
      - {name: row, bandwidth_gbps: 25.0, latency_s: 3.0e-6, locality_factor: 1.3}
      - {name: system, bandwidth_gbps: 12.5, latency_s: 5.0e-6, locality_factor: 1.7}
  supply: {kind: always-idle}
  workload: {kind: mix, num_jobs: 6, arrival_rate_per_h: 20.0, work_hours: [0.1, 0.3],
             max_nodes: [4]}
  horizon_s: 3600.0
episode: {max_jobs: 6}
"""


def test_node_list__groups_come_from_the_file_relative_to_the_scenario(tmp_path):
    (tmp_path / "nodes.csv").write_text(NODE_LIST)
    inst = get_generator(_file(tmp_path, LISTED, "listed"))(0)
    t = inst.cluster.topology
    assert t.level_names == ("node", "rack", "row", "system")
    np.testing.assert_array_equal(t.coords[:, 1], [0, 0, 0, 1, 2, 2, 2, 2, 3])
    np.testing.assert_array_equal(t.coords[:, 2], [0, 0, 0, 0, 1, 1, 1, 1, 1])
    assert t.spread(np.array([0, 2])) == 1
    assert t.spread(np.array([2, 3])) == 2  # rack r1 (one node) and r0 share row A
    assert t.spread(np.array([7, 8])) == 2
    assert t.spread(np.array([3, 4])) == 3
    # GPU types cycle over the racks in the file's order: r0, r1, r2, r3
    np.testing.assert_array_equal(inst.cluster.gpu_type, [0, 0, 0, 1, 0, 0, 0, 0, 1])
    traj = checked_rollout(inst, make_policy("greedy"), max_steps=200)
    assert traj[-1][0].progress.sum() > 0


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        (
            ("num_nodes: 9", "num_nodes: 10"),
            ["building generator", "the node list has 9 nodes but num_nodes is 10"],
        ),
        (
            ("{name: rack, bandwidth", "{name: rack, group_size: 3, bandwidth"),
            ["no group_size with a node list"],
        ),
        (("nodes: nodes.csv", "nodes: absent.csv"), ["generator.cluster.nodes", "no such file"]),
        (
            ("{name: row,", "{name: cab,"),
            ["building generator", "field 'cab' has value 'missing"],
        ),
    ],
)
def test_node_list__what_cannot_be_built_is_a_one_line_error(tmp_path, change, needles):
    (tmp_path / "nodes.csv").write_text(NODE_LIST)
    f = _file(tmp_path, LISTED.replace(*change), "listed")
    with pytest.raises(ScenarioError) as err:
        get_generator(f)(0)
    msg = str(err.value)
    assert str(f) in msg and "\n" not in msg
    for n in needles:
        assert n in msg, msg


def test_node_list__racks_that_do_not_nest_in_rows_are_a_one_line_error(tmp_path):
    (tmp_path / "nodes.csv").write_text(NODE_LIST.replace("h3,r1,A", "h3,r0,B"))
    f = _file(tmp_path, LISTED, "listed")
    with pytest.raises(ScenarioError) as err:
        get_generator(f)(0)
    msg = str(err.value)
    assert "each rack inside one row" in msg and "rows 'A', 'B'" in msg and "\n" not in msg


def test_node_list__summit_nodes_csv_models_summit_cabinets_and_rows(tmp_path, shared_data):
    text = (
        LISTED.replace("num_nodes: 9", "num_nodes: 4734")
        .replace("nodes: nodes.csv", "nodes: ${MTGYM_DATA}/summit-nodes.csv")
        .replace("{name: rack,", "{name: cabinet,")
        .replace("supply: {kind: always-idle}", "supply: {kind: synthetic, idle_fraction: 0.2}")
    )
    inst = get_generator(_file(tmp_path, text, "summit"))(0)
    c = inst.cluster.topology.coords
    assert np.bincount(c[:, 1]).tolist() == [18] * 263
    # Summit's rows a-h hold 26 to 37 cabinets of 18 nodes
    assert sorted(np.bincount(c[:, 2]).tolist()) == [468, 468, 540, 630, 648, 648, 666, 666]
    res = play(inst, make_policy("greedy"), until=900.0, decision_interval_s=300.0, debug=True)
    assert res.metrics.samples > 0
