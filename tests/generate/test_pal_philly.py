"""PAL's Sia-Philly generator (mtgym.generate.pal_philly) on the real files."""

from __future__ import annotations

import numpy as np
import pytest

from mtgym.core.errors import ConfigError
from mtgym.core.types import AppClass, PerfKind
from mtgym.generate.pal_philly import PALPhilly, pal_slowdown_pool
from mtgym.model.throughput import ThroughputModel
from mtgym.readers import PAL_ITER_TIME_S, read_philly_trace


@pytest.fixture(scope="module")
def paths(shared_data):
    return shared_data / "pal-philly" / "workload-1.csv", shared_data / "gpu-variability" / "sim"


def test_pal_philly__one_gpu_units_grouped_by_host(paths):
    inst = PALPhilly(*paths, max_jobs=10)(0)
    topo = inst.cluster.topology
    assert inst.num_nodes == 64 and inst.cluster.gpus_per_node == 1
    assert topo.level_names == ("gpu", "node", "system")
    assert topo.coords[:, 1].tolist() == np.repeat(np.arange(16), 4).tolist()
    assert topo.locality_factor.tolist() == [1.0, 1.0, 1.7]
    # every GPU idle for the whole horizon
    assert inst.supply.num_windows == 64
    assert np.all(inst.supply.start_s == 0) and np.all(inst.supply.end_s == inst.t_end)


def test_pal_philly__rigid_jobs_count_iterations(paths):
    trace = read_philly_trace(paths[0])
    inst = PALPhilly(*paths, max_jobs=10)(0)
    jb = inst.jobs
    assert inst.num_jobs == 10
    assert jb.min_nodes.tolist() == jb.max_nodes.tolist() == trace.num_gpus[:10].tolist()
    assert jb.work.tolist() == trace.duration[:10].tolist()  # iterations, not seconds
    assert jb.submit_s.tolist() == trace.submit_s[:10].tolist()
    assert np.all(jb.perf_kind == PerfKind.TABLE)
    assert np.all(jb.r_up_s == 0) and np.all(jb.r_down_s == 0) and np.all(jb.startup_s == 0)
    # trace rows 0-2: vgg19 -> C, DCGAN -> B, BERT -> B
    assert jb.app_class[:3].tolist() == [AppClass.C, AppClass.B, AppClass.B]


def test_pal_philly__rate_is_pals_iteration_time(paths):
    inst = PALPhilly(*paths, max_jobs=3)(0)
    model = ThroughputModel(inst.cluster, inst.jobs)
    sf = inst.cluster.slowdown
    j = 1  # DCGAN (class B), 12 GPUs
    within = np.array([0, 1, 2, 3])
    across = np.arange(12)
    base = PAL_ITER_TIME_S["DCGAN"]
    # PAL: base x max sf x (1.7 across hosts); a 4-GPU set in one host has no penalty
    assert model.rate_on(j, across) == pytest.approx(1 / (base * sf[across, 1].max() * 1.7))
    assert model.formula(j, 12, sf[within, 1].max(), 1) == pytest.approx(
        1 / (base * sf[within, 1].max())
    )


def test_pal_philly__classes_draw_independently_from_the_run_pools(paths):
    gen = PALPhilly(*paths, max_jobs=1)
    sf = gen(0).cluster.slowdown
    resnet = pal_slowdown_pool(paths[1] / "resnet-longhorn-agg.csv")
    bert = pal_slowdown_pool(paths[1] / "bert-longhorn-agg.csv")
    pagerank = pal_slowdown_pool(paths[1] / "pagerank-longhorn-agg.csv")
    assert np.isin(sf[:, AppClass.A], resnet).all()
    assert np.isin(sf[:, AppClass.B], bert).all() and np.isin(sf[:, AppClass.C], bert).all()
    assert np.isin(sf[:, AppClass.D], pagerank).all()
    assert not np.array_equal(sf[:, AppClass.B], sf[:, AppClass.C])  # drawn separately
    assert np.array_equal(gen(0).cluster.slowdown, sf)  # seeded
    assert not np.array_equal(gen(1).cluster.slowdown, sf)
    # the profile PAL places on is the measured value itself
    assert np.array_equal(gen(0).cluster.profiled_slowdown, sf)


def test_pal_slowdown_pool__runs_or_worst_run_per_gpu(paths):
    runs = pal_slowdown_pool(paths[1] / "resnet-longhorn-agg.csv")
    assert runs.size == 1404 and np.median(runs) == pytest.approx(1.0)
    assert runs.max() == pytest.approx(3.5687, abs=1e-4)  # the data README's worst run
    worst = pal_slowdown_pool(paths[1] / "resnet-longhorn-agg.csv", "gpu-max")
    assert worst.size == 336 and np.median(worst) == pytest.approx(1.0)
    with pytest.raises(ConfigError, match="samples"):
        pal_slowdown_pool(paths[1] / "resnet-longhorn-agg.csv", "median")


def test_pal_philly__rejects_jobs_larger_than_the_cluster(paths):
    with pytest.raises(ConfigError, match="num_gpus"):
        PALPhilly(*paths, num_hosts=2)(0)  # workload-1 has 12-GPU jobs
    with pytest.raises(ConfigError, match="locality"):
        PALPhilly(*paths, locality=0.5)
