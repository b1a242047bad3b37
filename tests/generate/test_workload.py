from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mtgym.core.errors import ConfigError
from mtgym.core.instance import Cluster, Instance
from mtgym.core.topology import Topology
from mtgym.core.types import AppClass, PerfKind
from mtgym.generate.catalog import CATALOG
from mtgym.generate.cluster import build_cluster
from mtgym.generate.default import default_generator
from mtgym.generate.workload import Campaign, Declaration, JobMix, JobRow, build_jobs
from mtgym.model.throughput import ThroughputModel
from mtgym.testing.kit import linear_job

RESNET50 = CATALOG["resnet50"]
V100_R50 = 4.39 * 64
A100_R50 = 2.0 * V100_R50


def cluster(num_nodes=8, gpn=4, group_size=4, types=None) -> Cluster:
    types = (
        np.array([0] * (num_nodes // 2) + [1] * (num_nodes - num_nodes // 2))
        if types is None
        else types
    )
    return build_cluster(
        np.random.default_rng(0),
        gpus_per_node=gpn,
        gpu_type_names=("A100", "V100"),
        gpu_type=types,
        topology=Topology.uniform(num_nodes, group_size),
        variability=None,
        profile_noise=0.0,
    )


def hand_rate(count, slow, level, *, gpn=4, lb=64, grad=25.6e6 * 4, overlap=0.4):
    bw = (150.0, 25.0, 12.5)
    lat = (1e-6, 2e-6, 5e-6)
    g = count * gpn
    t_comm = (
        0.0 if g == 1 else 2 * (g - 1) / g * grad / (bw[level] * 1e9) + 2 * (g - 1) * lat[level]
    )
    return g * lb / (lb * slow + (1 - overlap) * t_comm)


def r50(name="r50", max_nodes=8, **kw) -> JobRow:
    kw.setdefault("work", 1e9)
    return JobRow(
        name, "resnet50", AppClass.A, kw.pop("submit_s", 0.0), 1, max_nodes, profile=RESNET50, **kw
    )


def table(name, nodes, tput, **kw) -> JobRow:
    kw.setdefault("work", 1e6)
    kw.setdefault("max_nodes", int(max(nodes)))
    return JobRow(
        name, "table", AppClass.B, kw.pop("submit_s", 0.0), curve_nodes=nodes, curve_tput=tput, **kw
    )


# -- build_jobs: tables ---------------------------------------------------------------
def test_build_jobs__sorted_by_submit_time_stably():
    rows = [
        linear_job("c", 1.0, 2, 10.0, submit_s=50.0),
        linear_job("a", 1.0, 2, 10.0, submit_s=10.0),
        linear_job("b1", 1.0, 2, 10.0, submit_s=30.0),
        linear_job("b2", 1.0, 2, 10.0, submit_s=30.0),
    ]
    jobs = build_jobs(rows, cluster())
    assert jobs.name == ("a", "b1", "b2", "c")
    np.testing.assert_array_equal(jobs.submit_s, [10.0, 30.0, 30.0, 50.0])


def test_build_jobs__table_curve_gets_origin_and_padding():
    rows = [
        table("short", [1, 2, 4], [10.0, 18.0, 30.0]),
        table("long", [0, 1, 2, 3, 4, 5, 6], [0.0, 5, 9, 12, 14, 15, 15.5]),
    ]
    jobs = build_jobs(rows, cluster())
    assert jobs.curve_nodes.shape == (2, 7)
    np.testing.assert_array_equal(jobs.curve_nodes[0], [0, 1, 2, 4, 4, 4, 4])
    np.testing.assert_array_equal(jobs.curve_tput[0], [0, 10, 18, 30, 30, 30, 30])
    np.testing.assert_array_equal(jobs.curve_nodes[1], [0, 1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(jobs.curve_tput[1], [0.0, 5, 9, 12, 14, 15, 15.5])
    np.testing.assert_array_equal(jobs.perf_kind, [PerfKind.TABLE, PerfKind.TABLE])
    np.testing.assert_array_equal(jobs.declared_curve_tput, jobs.curve_tput)
    np.testing.assert_array_equal(jobs.type_rate, np.ones((2, 2)))


def test_build_jobs__table_work_hours_uses_the_table():
    jobs = build_jobs(
        [table("t", [1, 2, 4], [10.0, 18.0, 30.0], work=None, work_hours=2.0, work_ref_nodes=3)],
        cluster(),
    )
    assert jobs.work[0] == pytest.approx(2.0 * 3600.0 * 24.0, rel=1e-12)


def test_build_jobs__arrays_are_read_only():
    jobs = build_jobs([r50(), table("t", [1, 2], [1.0, 2.0])], cluster())
    for f in dataclasses.fields(jobs):
        v = getattr(jobs, f.name)
        if isinstance(v, np.ndarray):
            assert not v.flags.writeable, f.name


# -- build_jobs: parametric -----------------------------------------------------------
@pytest.mark.parametrize(
    ("max_nodes", "breakpoints"),
    [(1, [0, 1]), (2, [0, 1, 2]), (6, [0, 1, 2, 4, 6]), (8, [0, 1, 2, 4, 8])],
)
def test_build_jobs__parametric_breakpoints(max_nodes, breakpoints):
    jobs = build_jobs([r50(max_nodes=max_nodes)], cluster())
    np.testing.assert_array_equal(jobs.curve_nodes[0], breakpoints)
    assert jobs.perf_kind[0] == PerfKind.PARAMETRIC


def test_build_jobs__parametric_curve_equals_formula_at_breakpoints():
    cl = cluster()  # 8 nodes x 4 GPUs, groups of 4, types A100 (nodes 0-3) and V100
    jobs = build_jobs([r50(max_nodes=6)], cl)
    m = ThroughputModel(cl, jobs)
    n = jobs.curve_nodes[0]
    np.testing.assert_array_equal(n, [0, 1, 2, 4, 6])
    spread = np.array([0, 0, 1, 1, 2])  # packed: 1 node, then a group of 4, then the system
    np.testing.assert_array_equal(m.packed_spread(n), spread)
    slow = 1.0 / A100_R50  # the fastest type at slowdown 1
    np.testing.assert_allclose(
        jobs.curve_tput[0],
        m.formula(np.zeros(5, dtype=int), n, np.full(5, slow), spread),
        rtol=1e-12,
    )
    want = [0.0] + [hand_rate(c, slow, lvl) for c, lvl in zip(n[1:], spread[1:], strict=True)]
    np.testing.assert_allclose(jobs.curve_tput[0], want, rtol=1e-12)
    np.testing.assert_allclose(jobs.type_rate[0], [A100_R50, V100_R50], rtol=1e-12)
    assert jobs.local_batch[0] == 64
    assert jobs.grad_bytes[0] == pytest.approx(102.4e6)
    assert jobs.overlap[0] == 0.4


def test_build_jobs__parametric_row_overrides():
    row = r50(rate_scale=0.5, params_scale=2.0, local_batch=32)
    jobs = build_jobs([row], cluster())
    np.testing.assert_allclose(jobs.type_rate[0], [0.5 * A100_R50, 0.5 * V100_R50], rtol=1e-12)
    assert jobs.grad_bytes[0] == pytest.approx(204.8e6)
    assert jobs.local_batch[0] == 32


def test_build_jobs__work_hours_sizes_work_at_reference_nodes():
    cl = cluster()
    jobs = build_jobs([r50(max_nodes=8, work=None, work_hours=2.0, work_ref_nodes=4)], cl)
    rate4 = hand_rate(4, 1.0 / A100_R50, 1)
    assert jobs.work[0] == pytest.approx(2.0 * 3600.0 * rate4, rel=1e-12)
    m = ThroughputModel(cl, jobs)
    assert jobs.work[0] == pytest.approx(2.0 * 3600.0 * m.rate_on(0, np.arange(4)), rel=1e-12)


def test_build_jobs__work_hours_at_non_breakpoint_reference_nodes():
    cl = cluster()
    jobs = build_jobs([r50(max_nodes=8, work=None, work_hours=1.0, work_ref_nodes=6)], cl)
    m = ThroughputModel(cl, jobs)
    assert jobs.work[0] == pytest.approx(3600.0 * m.ideal_curve(0)[6], rel=1e-6)


def test_build_jobs__checkpoint_seconds_become_samples():
    row = linear_job("lin", 10.0, 4, 1e6)
    row.ckpt_every = -600.0  # seconds, as JobMix stores them
    jobs = build_jobs([row, linear_job("never", 10.0, 4, 1e6)], cluster())
    assert jobs.ckpt_every[0] == 6000.0  # 600 s at the one-node rate of 10 samples/s
    assert jobs.ckpt_every[1] == np.inf


# -- declarations ---------------------------------------------------------------------
def test_build_jobs__declaration_bias_scales_declared_curve_only():
    rows = [r50(max_nodes=8), table("t", [1, 2, 4], [10.0, 18.0, 30.0])]
    truth = build_jobs(rows, cluster())
    jobs = build_jobs(rows, cluster(), np.random.default_rng(0), Declaration(curve_bias=1.5))
    np.testing.assert_array_equal(jobs.curve_tput, truth.curve_tput)
    np.testing.assert_allclose(jobs.declared_curve_tput, 1.5 * truth.curve_tput, rtol=1e-15)
    np.testing.assert_array_equal(jobs.declared_r_up_s, jobs.r_up_s)
    np.testing.assert_array_equal(jobs.declared_r_down_s, jobs.r_down_s)
    np.testing.assert_array_equal(jobs.work, truth.work)


def test_build_jobs__cost_bias_scales_declared_costs_only():
    rows = [linear_job("lin", 10.0, 4, 1e6, r_up_s=18.0, r_down_s=12.0)]
    jobs = build_jobs(rows, cluster(), np.random.default_rng(0), Declaration(cost_bias=2.0))
    assert jobs.r_up_s[0] == 18.0 and jobs.r_down_s[0] == 12.0
    assert jobs.declared_r_up_s[0] == 36.0 and jobs.declared_r_down_s[0] == 24.0
    np.testing.assert_array_equal(jobs.declared_curve_tput, jobs.curve_tput)


def test_build_jobs__noisy_declaration_is_noisy_but_positive():
    rows = [table("t", [1, 2, 4], [10.0, 18.0, 30.0])]
    jobs = build_jobs(rows, cluster(), np.random.default_rng(0), Declaration(curve_sigma=0.3))
    ratio = jobs.declared_curve_tput[0, 1:] / jobs.curve_tput[0, 1:]
    assert np.all(ratio > 0)
    assert np.ptp(ratio) > 0


def test_build_jobs__noisy_declaration_keeps_padding_repeated():
    rows = [linear_job("short", 10.0, 2, 1e6), linear_job("long", 10.0, 6, 1e6)]
    jobs = build_jobs(rows, cluster(), np.random.default_rng(0), Declaration(curve_sigma=0.2))
    short = jobs.name.index("short")
    np.testing.assert_array_equal(jobs.curve_nodes[short], [0, 1, 2, 2, 2, 2, 2])
    d = jobs.declared_curve_tput[short]
    # "padded by repeating the last point" (Jobs docstring) holds for the declared curve too
    np.testing.assert_array_equal(d[2:], np.full(5, d[2]))


def test_build_jobs__noisy_declaration_without_rng_is_config_error():
    with pytest.raises(ConfigError) as info:
        build_jobs([r50()], cluster(), None, Declaration(curve_sigma=0.1))
    assert info.value.field == "rng"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"curve_bias": 0.0}, "curve_bias"),
        ({"cost_bias": -1.0}, "cost_bias"),
        ({"curve_sigma": -0.1}, "curve_sigma"),
        ({"cost_sigma": 3.0}, "cost_sigma"),
    ],
)
def test_declaration__bad_parameters_name_the_field(kwargs, field):
    with pytest.raises(ConfigError) as info:
        Declaration(**kwargs)
    assert info.value.field == field


# -- build_jobs: validation -----------------------------------------------------------
@pytest.mark.parametrize("rungs", [(0.5, 0.3), (0.5, 0.5), (0.0, 0.5), (0.5, 1.0), (-0.1,)])
def test_build_jobs__bad_rungs_are_config_errors(rungs):
    with pytest.raises(ConfigError) as info:
        build_jobs([linear_job("lin", 1.0, 2, 10.0, rungs=rungs)], cluster())
    assert "rungs" in info.value.field


def test_build_jobs__rungs_are_nan_padded():
    rows = [linear_job("a", 1.0, 2, 10.0, rungs=(0.25, 0.5)), linear_job("b", 1.0, 2, 10.0)]
    jobs = build_jobs(rows, cluster())
    np.testing.assert_array_equal(jobs.rungs[0], [0.25, 0.5])
    assert np.isnan(jobs.rungs[1]).all()


def test_build_jobs__min_above_max_is_config_error():
    with pytest.raises(ConfigError) as info:
        build_jobs([linear_job("lin", 1.0, 2, 10.0, min_nodes=3)], cluster())
    assert "min/max_nodes" in info.value.field


def test_build_jobs__no_work_is_config_error():
    with pytest.raises(ConfigError) as info:
        build_jobs([r50(work=None)], cluster())
    assert info.value.field.endswith(".work")


def test_build_jobs__no_curve_no_profile_is_config_error():
    with pytest.raises(ConfigError):
        build_jobs([JobRow("x", "x", AppClass.A, 0.0, work=1.0)], cluster())


# -- JobMix / Campaign ----------------------------------------------------------------
def test_job_mix_rows__zero_jobs_is_an_empty_workload_and_draws_nothing():
    rng = np.random.default_rng(5)
    assert JobMix(num_jobs=0).rows(rng) == []
    assert rng.random() == np.random.default_rng(5).random()


def test_job_mix_rows__deterministic_per_seed():
    a = JobMix().rows(np.random.default_rng(3))
    b = JobMix().rows(np.random.default_rng(3))
    c = JobMix().rows(np.random.default_rng(4))
    assert a == b
    assert a != c
    assert len(a) == 30
    assert a[0].submit_s == 0.0
    assert all(r.model in CATALOG and r.profile is CATALOG[r.model] for r in a)
    assert all(r.min_nodes <= r.max_nodes for r in a)
    assert all(r.work_ref_nodes == min(4, r.max_nodes) for r in a)
    assert all(r.ckpt_every == -600.0 for r in a)
    assert np.all(np.diff([r.submit_s for r in a]) >= 0)


def test_campaign_rows__deterministic_per_seed():
    camp = Campaign(kind="nas", num_trials=6)
    a = camp.rows(np.random.default_rng(3), 0, "nas0")
    b = camp.rows(np.random.default_rng(3), 0, "nas0")
    c = camp.rows(np.random.default_rng(4), 0, "nas0")
    assert a == b
    assert a != c


def test_campaign_rows__nas_trials_differ_in_architecture():
    rows = Campaign(kind="nas", num_trials=6).rows(np.random.default_rng(0), 2, "nas2")
    assert [r.name for r in rows] == [f"nas2-t{i:03d}" for i in range(6)]
    assert len({r.rate_scale for r in rows}) == 6
    assert len({r.params_scale for r in rows}) == 6
    assert all(r.local_batch is None for r in rows)
    assert all(r.campaign == 2 for r in rows)
    assert [r.submit_s for r in rows] == [60.0 * i for i in range(6)]
    jobs = build_jobs(rows, cluster())
    assert len({float(x) for x in jobs.type_rate[:, 0]}) == 6
    assert len({float(x) for x in jobs.grad_bytes}) == 6
    assert len({float(x) for x in jobs.local_batch}) == 1


def test_campaign_rows__hpo_trials_differ_in_batch_only():
    camp = Campaign(kind="hpo", num_trials=8)
    rows = camp.rows(np.random.default_rng(0), 0, "hpo0")
    assert all(r.rate_scale == 1.0 and r.params_scale == 1.0 for r in rows)
    assert all(r.local_batch in camp.batch_choices for r in rows)
    assert len({r.local_batch for r in rows}) > 1
    jobs = build_jobs(rows, cluster())
    assert len({tuple(x) for x in jobs.type_rate}) == 1
    assert len({float(x) for x in jobs.grad_bytes}) == 1
    np.testing.assert_array_equal(jobs.local_batch, [r.local_batch for r in rows])


def test_campaign__unknown_model_is_config_error():
    with pytest.raises(ConfigError) as info:
        Campaign(model="alexnet")
    assert info.value.field == "model"
    with pytest.raises(ConfigError) as info:
        Campaign(kind="grid")
    assert info.value.field == "kind"


def test_job_mix__unknown_model_is_config_error():
    with pytest.raises(ConfigError) as info:
        JobMix(models={"alexnet": 1.0})
    assert info.value.field == "models"
    assert "alexnet" in str(info.value)
    with pytest.raises(ConfigError):
        JobMix(models={"resnet50": 0.0})
    with pytest.raises(ConfigError):
        JobMix(arrival_rate_per_h=0.0)


# -- the default scenario -------------------------------------------------------------
def test_default_generator__shape_of_the_scenario():
    inst = default_generator()(0)
    cl = inst.cluster
    assert cl.num_nodes == 64 and cl.gpus_per_node == 4
    assert cl.device_slowdown.shape == (64, 4, 4)
    assert cl.topology.num_levels == 3
    assert int(cl.topology.coords[:, 1].max()) + 1 == 4
    np.testing.assert_array_equal(np.bincount(cl.topology.coords[:, 1]), [16, 16, 16, 16])
    assert cl.gpu_type_names == ("A100", "V100")
    np.testing.assert_array_equal(cl.gpu_type, np.repeat([0, 0, 1, 1], 16))
    assert inst.num_jobs == 30
    assert inst.campaigns.num_campaigns == 1
    assert inst.campaigns.kind == ("hpo",)
    assert int((inst.jobs.campaign == 0).sum()) == 8
    assert int((inst.jobs.campaign == -1).sum()) == 22
    assert inst.t_start == 0.0 and inst.t_end == 6 * 3600.0
    mean_idle = inst.supply.offered_node_seconds(0.0, inst.t_end) / inst.t_end
    assert 15.0 <= mean_idle <= 30.0
    assert inst.supply.end_known.any()  # drains


def _numpy_fields(obj) -> dict[str, np.ndarray]:
    return {
        f.name: getattr(obj, f.name)
        for f in dataclasses.fields(obj)
        if isinstance(getattr(obj, f.name), np.ndarray)
    }


def _assert_same_instance(a: Instance, b: Instance) -> None:
    topo_a, topo_b = a.cluster.topology, b.cluster.topology
    pairs = [
        (a.cluster, b.cluster),
        (topo_a, topo_b),
        (a.supply, b.supply),
        (a.jobs, b.jobs),
        (a.campaigns, b.campaigns),
    ]
    for x, y in pairs:
        fx, fy = _numpy_fields(x), _numpy_fields(y)
        assert fx.keys() == fy.keys()
        assert fx, type(x)
        for name in fx:
            assert np.array_equal(fx[name], fy[name], equal_nan=True), name
    assert a.jobs.name == b.jobs.name


def test_default_generator__same_seed_same_instance():
    gen = default_generator()
    _assert_same_instance(gen(0), gen(0))
    _assert_same_instance(gen(5), default_generator()(5))


def test_default_generator__different_seed_different_instance():
    a, b = default_generator()(0), default_generator()(1)
    assert not np.array_equal(a.cluster.slowdown, b.cluster.slowdown)
    assert a.jobs.name != b.jobs.name or not np.array_equal(a.jobs.work, b.jobs.work)
    assert a.supply.num_windows != b.supply.num_windows or not np.array_equal(
        a.supply.start_s, b.supply.start_s
    )
