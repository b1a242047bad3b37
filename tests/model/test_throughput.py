from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtgym.core.instance import Cluster
from mtgym.core.topology import Topology
from mtgym.core.types import AppClass, PerfKind
from mtgym.generate.catalog import CATALOG
from mtgym.generate.cluster import build_cluster
from mtgym.generate.default import default_generator
from mtgym.generate.workload import JobRow, build_jobs
from mtgym.model.throughput import ThroughputModel, interp_rows
from mtgym.testing.kit import linear_job, tiny_instance

RESNET50 = CATALOG["resnet50"]
V100_R50 = 4.39 * 64  # samples/s per V100 (Gavel), the catalog's resnet50 rate
BW = (150.0, 25.0, 12.5)  # Topology.uniform defaults, GB/s
LAT = (1e-6, 2e-6, 5e-6)


def hand_rate(count, slow, level, *, gpn, local_batch, grad_bytes, overlap, bw=BW, lat=LAT):
    """The module docstring's parametric formula, written out scalar by scalar."""
    g = count * gpn
    t_compute = local_batch * slow
    if g == 1:
        t_comm = 0.0
    else:
        t_comm = 2 * (g - 1) / g * grad_bytes / (bw[level] * 1e9) + 2 * (g - 1) * lat[level]
    return g * local_batch / (t_compute + (1 - overlap) * t_comm)


def r50_row(name="r50", max_nodes=8, **kw) -> JobRow:
    return JobRow(name, "resnet50", AppClass.A, 0.0, 1, max_nodes, work=1e9, profile=RESNET50, **kw)


def two_type_cluster(gpn: int, types=(0, 0, 0, 0, 1, 1, 1, 1), group_size=4) -> Cluster:
    topo = Topology.uniform(len(types), group_size)
    return build_cluster(
        np.random.default_rng(0),
        gpus_per_node=gpn,
        gpu_type_names=("A100", "V100"),
        gpu_type=np.asarray(types),
        topology=topo,
        variability=None,
        profile_noise=0.0,
    )


@functools.cache
def default_instance():
    return default_generator()(0)


# -- interp_rows ----------------------------------------------------------------------
XP = np.array([[0.0, 1.0, 2.0, 4.0, 4.0], [0.0, 2.0, 2.0, 2.0, 2.0]])
FP = np.array([[0.0, 10.0, 18.0, 30.0, 30.0], [0.0, 5.0, 5.0, 5.0, 5.0]])


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        ([0.0, 0.0], [0.0, 0.0]),
        ([1.0, 1.0], [10.0, 2.5]),  # at a breakpoint / halfway
        ([0.5, 0.5], [5.0, 1.25]),
        ([3.0, 1.5], [24.0, 3.75]),  # between breakpoints 2 and 4: 18 + 0.5 * 12
        ([2.0, 2.0], [18.0, 5.0]),  # the (padded) last breakpoint of row 1
        ([4.0, 3.0], [30.0, 5.0]),  # beyond the last breakpoint: held flat
        ([9.0, 100.0], [30.0, 5.0]),
    ],
)
def test_interp_rows__hand_values(x, expected):
    np.testing.assert_allclose(interp_rows(np.array(x), XP, FP), expected, rtol=1e-12)


def test_interp_rows__single_breakpoint_is_constant():
    out = interp_rows(np.array([0.0, 5.0]), np.array([[0.0], [0.0]]), np.array([[7.0], [3.0]]))
    np.testing.assert_array_equal(out, [7.0, 3.0])


# -- parametric formula ---------------------------------------------------------------
def test_throughput_formula__parametric_hand_value():
    cl = two_type_cluster(gpn=4)
    jobs = build_jobs([r50_row()], cl)
    m = ThroughputModel(cl, jobs)
    # g = 8, t_compute = 64/500 = 0.128, t_comm = 1.75 * 102.4e6/25e9 + 14 * 2e-6 = 0.007196
    # rate = 512 / (0.128 + 0.6 * 0.007196) = 512 / 0.1323176
    got = m.formula(np.array([0]), np.array([2]), np.array([1 / 500]), np.array([1]))
    assert got[0] == pytest.approx(512 / 0.1323176, rel=1e-12)


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("slow", [1 / 561.92, 1 / 280.96, 0.01])
def test_throughput_formula__parametric_matches_docstring(count, level, slow):
    cl = two_type_cluster(gpn=4)
    jobs = build_jobs([r50_row()], cl)
    m = ThroughputModel(cl, jobs)
    got = m.formula(np.array([0]), np.array([count]), np.array([slow]), np.array([level]))[0]
    want = hand_rate(count, slow, level, gpn=4, local_batch=64, grad_bytes=25.6e6 * 4, overlap=0.4)
    assert got == pytest.approx(want, rel=1e-12)


def test_throughput_formula__single_gpu_has_no_comm_term():
    inst = tiny_instance(4, [r50_row(max_nodes=4)])
    m = ThroughputModel(inst.cluster, inst.jobs)
    # g = 1: rate = local_batch / (local_batch * slow) = 1 / slow, for any spread level
    for level in (0, 1, 2):
        got = m.formula(np.array([0]), np.array([1]), np.array([1 / V100_R50]), np.array([level]))
        assert got[0] == pytest.approx(V100_R50, rel=1e-12)
    assert m.rate_on(0, np.array([3])) == pytest.approx(V100_R50, rel=1e-12)


def test_throughput_formula__zero_nodes_is_zero_rate():
    inst = tiny_instance(4, [r50_row(max_nodes=4), linear_job("lin", 10.0, 4, 1e6)])
    m = ThroughputModel(inst.cluster, inst.jobs)
    out = m.formula(np.array([0, 1]), np.array([0, 0]), np.array([1.0, 1.0]), np.array([0, 0]))
    np.testing.assert_array_equal(out, [0.0, 0.0])
    assert m.rate_on(0, np.array([], dtype=int)) == 0.0


# -- straggler ------------------------------------------------------------------------
def test_throughput_job_rates__straggler_halves_a_table_job():
    sd = np.ones((4, 4))
    sd[1, AppClass.D] = 2.0  # node 1 is 2x slower for class D only
    rows = [
        linear_job("d", 10.0, 4, 1e6, app_class=AppClass.D),
        linear_job("a", 10.0, 4, 1e6, app_class=AppClass.A),
    ]
    inst = tiny_instance(4, rows, slowdown=sd)
    m = ThroughputModel(inst.cluster, inst.jobs)
    d = inst.jobs.name.index("d")
    a = inst.jobs.name.index("a")
    with_slow = np.array([d, d, -1, -1], dtype=np.int32)
    without = np.array([-1, -1, d, d], dtype=np.int32)
    r_with = m.job_rates(with_slow)[0][d]
    r_without = m.job_rates(without)[0][d]
    assert r_without == 20.0  # table(2) / 1 / 1
    assert r_with == 10.0  # table(2) / 2 / 1
    assert r_with == r_without / 2
    # the class-A job does not see node 1's class-D slowdown
    assert m.job_rates(np.array([a, a, -1, -1], dtype=np.int32))[0][a] == 20.0


def test_throughput_rate_on__straggler_gates_a_parametric_job():
    sd = np.ones((4, 4))
    sd[2, AppClass.A] = 1.5
    inst = tiny_instance(4, [r50_row(max_nodes=4)], slowdown=sd)
    m = ThroughputModel(inst.cluster, inst.jobs)
    kw = {"gpn": 1, "local_batch": 64, "grad_bytes": 25.6e6 * 4, "overlap": 0.4}
    assert m.rate_on(0, np.array([2])) == pytest.approx(V100_R50 / 1.5, rel=1e-12)
    assert m.rate_on(0, np.array([2, 3])) == pytest.approx(
        hand_rate(2, 1.5 / V100_R50, 1, **kw), rel=1e-12
    )
    assert m.rate_on(0, np.array([0, 1])) == pytest.approx(
        hand_rate(2, 1.0 / V100_R50, 1, **kw), rel=1e-12
    )


# -- locality -------------------------------------------------------------------------
def test_throughput_rate_on__parametric_same_group_beats_cross_group():
    inst = tiny_instance(4, [r50_row(max_nodes=4)])  # groups {0,1}, {2,3}
    m = ThroughputModel(inst.cluster, inst.jobs)
    kw = {"gpn": 1, "local_batch": 64, "grad_bytes": 25.6e6 * 4, "overlap": 0.4}
    same = m.rate_on(0, np.array([0, 1]))
    cross = m.rate_on(0, np.array([1, 2]))
    assert same == pytest.approx(hand_rate(2, 1 / V100_R50, 1, **kw), rel=1e-12)
    assert cross == pytest.approx(hand_rate(2, 1 / V100_R50, 2, **kw), rel=1e-12)
    assert same > cross


def test_throughput_rate_on__table_job_locality_factor_divides_rate():
    inst = tiny_instance(4, [linear_job("lin", 10.0, 4, 1e6)], locality_factor=(1, 1, 1.7))
    m = ThroughputModel(inst.cluster, inst.jobs)
    assert m.rate_on(0, np.array([0, 1])) == 20.0
    assert m.rate_on(0, np.array([1, 2])) == pytest.approx(20.0 / 1.7, rel=1e-15)
    assert m.rate_on(0, np.array([0, 1, 2, 3])) == pytest.approx(40.0 / 1.7, rel=1e-15)
    rate, count, spread = m.job_rates(np.array([0, -1, 0, -1], dtype=np.int32))
    assert rate[0] == pytest.approx(20.0 / 1.7, rel=1e-15)
    assert count[0] == 2
    assert spread[0] == 2


# -- heterogeneous GPU types ----------------------------------------------------------
def test_throughput_rate_on__faster_type_ratio_equals_type_rate_ratio():
    cl = two_type_cluster(gpn=1)
    jobs = build_jobs([r50_row()], cl)
    m = ThroughputModel(cl, jobs)
    np.testing.assert_allclose(jobs.type_rate[0], [2.0 * V100_R50, V100_R50], rtol=1e-12)
    fast, slow = m.rate_on(0, np.array([0])), m.rate_on(0, np.array([5]))
    assert fast == pytest.approx(2.0 * V100_R50, rel=1e-12)
    assert slow == pytest.approx(V100_R50, rel=1e-12)
    assert fast / slow == pytest.approx(jobs.type_rate[0, 0] / jobs.type_rate[0, 1], rel=1e-12)


def test_throughput_rate_on__table_job_type_speed_multiplies_rate():
    cl = two_type_cluster(gpn=1)
    row = linear_job("lin", 10.0, 4, 1e6)
    row.type_speed = {"A100": 1.5}
    jobs = build_jobs([row], cl)
    m = ThroughputModel(cl, jobs)
    np.testing.assert_array_equal(jobs.type_rate[0], [1.5, 1.0])
    assert m.rate_on(0, np.array([0])) == pytest.approx(15.0, rel=1e-12)
    assert m.rate_on(0, np.array([4])) == 10.0
    # a mixed set runs at the slower type's pace: 20 samples/s, times lambda = 1
    assert m.rate_on(0, np.array([3, 4])) == 20.0


# -- job_rates vs rate_on -------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.data())
def test_throughput_job_rates__equals_rate_on_per_job(data):
    inst = default_instance()
    N, J = inst.num_nodes, inst.num_jobs
    node_job = np.array(
        data.draw(st.lists(st.integers(-1, J - 1), min_size=N, max_size=N)), dtype=np.int32
    )
    m = ThroughputModel(inst.cluster, inst.jobs)
    rate, count, spread = m.job_rates(node_job)
    assert rate.shape == count.shape == spread.shape == (J,)
    np.testing.assert_array_equal(count, np.bincount(node_job[node_job >= 0], minlength=J))
    for j in range(J):
        nodes = np.flatnonzero(node_job == j)
        if nodes.size == 0:
            assert rate[j] == 0.0
            assert spread[j] == 0
        else:
            assert rate[j] == pytest.approx(m.rate_on(j, nodes), rel=1e-12)
            assert spread[j] == inst.cluster.topology.spread(nodes)


def test_throughput_job_rates__empty_map_is_all_zero():
    inst = default_instance()
    m = ThroughputModel(inst.cluster, inst.jobs)
    rate, count, spread = m.job_rates(np.full(inst.num_nodes, -1, dtype=np.int32))
    assert not rate.any() and not count.any() and not spread.any()


# -- best_node_rate / ideal_curve -----------------------------------------------------
def test_throughput_best_node_rate__equals_brute_force_max():
    inst = default_instance()
    m = ThroughputModel(inst.cluster, inst.jobs)
    best = m.best_node_rate()
    assert best.shape == (inst.num_jobs,)
    for j in range(inst.num_jobs):
        brute = max(m.rate_on(j, np.array([n])) for n in range(inst.num_nodes))
        assert best[j] == pytest.approx(brute, rel=1e-12)


def test_throughput_ideal_curve__table_job_shape_and_values():
    row = JobRow(
        "t",
        "table",
        AppClass.B,
        0.0,
        1,
        6,
        work=1e6,
        curve_nodes=[1, 2, 4, 6],
        curve_tput=[10.0, 18.0, 30.0, 36.0],
    )
    inst = tiny_instance(8, [row, linear_job("lin", 10.0, 4, 1e6)], group_size=8)
    m = ThroughputModel(inst.cluster, inst.jobs)
    t = inst.jobs.name.index("t")
    curve = m.ideal_curve(t)
    assert curve.shape == (7,)
    np.testing.assert_allclose(curve, [0.0, 10.0, 18.0, 24.0, 30.0, 33.0, 36.0], rtol=1e-12)
    assert np.all(np.diff(curve) >= 0)
    assert not curve.flags.writeable
    lin = m.ideal_curve(inst.jobs.name.index("lin"))
    np.testing.assert_allclose(lin, [0.0, 10.0, 20.0, 30.0, 40.0], rtol=1e-12)


def test_throughput_ideal_curve__default_instance_starts_at_zero():
    inst = default_instance()
    m = ThroughputModel(inst.cluster, inst.jobs)
    for j in range(inst.num_jobs):
        curve = m.ideal_curve(j)
        assert curve.shape == (int(inst.jobs.max_nodes[j]) + 1,)
        assert curve[0] == 0.0
        assert np.all(curve[1:] > 0)
        # the parametric jobs' tabulated truth is the ideal curve at the breakpoints
        if inst.jobs.perf_kind[j] == PerfKind.PARAMETRIC:
            bp = inst.jobs.curve_nodes[j].astype(int)
            np.testing.assert_allclose(curve[bp], inst.jobs.curve_tput[j], rtol=1e-12)
