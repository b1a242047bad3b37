"""The compiled (numba) kernels against the vectorised numpy code they replaced: bit-for-bit.

The references below are the numpy implementations as they were before the kernels; the
simulation must not drift by a single ulp.
"""

from __future__ import annotations

import numpy as np
import pytest

from mtgym.generate.default import default_generator
from mtgym.generate.instance import Instance
from mtgym.model.throughput import ThroughputModel, interp_rows
from mtgym.policy.placement import pack_targets
from mtgym.sim.dynamics import initial_state, repair_allocation
from mtgym.testing.kit import linear_job, tiny_instance
from mtgym.types import JobStatus, PerfKind


# -- references (the former numpy code) ----------------------------------------------------
def ref_formula(m: ThroughputModel, job, count, slow, spread) -> np.ndarray:
    job, count, slow, spread = np.broadcast_arrays(
        np.asarray(job, dtype=np.int64),
        np.asarray(count, dtype=np.float64),
        np.asarray(slow, dtype=np.float64),
        np.asarray(spread, dtype=np.int64),
    )
    jb = m.jobs
    out = np.zeros(job.shape, dtype=np.float64)
    pos = count > 0
    is_table = jb.perf_kind == PerfKind.TABLE
    table = is_table[job] & pos
    if table.any():
        j = job[table]
        base = interp_rows(count[table], jb.curve_nodes[j], jb.curve_tput[j])
        out[table] = base / slow[table] / m._lam[spread[table]]
    param = ~is_table[job] & pos
    if param.any():
        j = job[param]
        g = count[param] * m._gpn
        lb = jb.local_batch[j]
        lvl = spread[param]
        t_comp = lb * slow[param]
        t_comm = np.where(
            g > 1,
            2.0 * (g - 1.0) / g * jb.grad_bytes[j] / m._bw[lvl] + 2.0 * (g - 1.0) * m._lat[lvl],
            0.0,
        )
        out[param] = g * lb / (t_comp + (1.0 - jb.overlap[j]) * t_comm)
    return out


def ref_job_rates(m: ThroughputModel, node_job: np.ndarray):
    J = m.jobs.num_jobs
    rate, count, spread = np.zeros(J), np.zeros(J, dtype=np.int32), np.zeros(J, dtype=np.int8)
    nodes = np.flatnonzero(node_job >= 0)
    if nodes.size == 0:
        return rate, count, spread
    owners = node_job[nodes]
    order = np.argsort(owners, kind="stable")
    nodes, owners = nodes[order], owners[order]
    starts = np.concatenate(([0], np.flatnonzero(owners[1:] != owners[:-1]) + 1))
    jobs = owners[starts]
    slow = np.maximum.reduceat(m.node_slowness(owners, nodes), starts)
    cnt = np.diff(np.append(starts, nodes.size))
    spr = m.cluster.topology.spreads_by_job(nodes, starts)
    rate[jobs] = ref_formula(m, jobs, cnt, slow, spr)
    count[jobs] = cnt
    spread[jobs] = spr
    return rate, count, spread


def ref_pack(available, node_job, slowdown, app_class, coords, jobs, targets) -> np.ndarray:
    J = app_class.shape[0]
    a = np.where(available, node_job, -1).astype(np.int32)
    keep = np.zeros(J, dtype=np.int64)
    keep[jobs] = targets
    held = np.flatnonzero(a >= 0)
    if held.size:
        owners = a[held]
        sf = slowdown[held, app_class[owners]]
        order = np.lexsort((held, sf, owners))
        held, owners = held[order], owners[order]
        first = np.concatenate(([0], np.flatnonzero(owners[1:] != owners[:-1]) + 1))
        rank = np.arange(held.size) - np.repeat(first, np.diff(np.append(first, held.size)))
        a[held[rank >= keep[owners]]] = -1
    have = np.bincount(a[a >= 0], minlength=J)
    need = np.maximum(keep[jobs] - have[jobs], 0)
    total = int(need.sum())
    if total == 0:
        return a
    free = np.flatnonzero(available & (a < 0))
    if coords.shape[1] > 2:
        grp = coords[free, 1]
        gfree = np.bincount(grp)[grp]
    else:
        grp = np.zeros(free.size, dtype=np.int64)
        gfree = grp
    speed = slowdown[free].mean(axis=1)
    free = free[np.lexsort((free, speed, grp, -gfree))]
    a[free[:total]] = np.repeat(jobs, need).astype(np.int32)
    return a


# -- fixtures ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def inst() -> Instance:
    return default_generator()(0)


def random_map(rng, N, J, p_idle=0.5) -> np.ndarray:
    nj = rng.integers(0, J, N).astype(np.int32)
    nj[rng.random(N) < p_idle] = -1
    return nj


# -- tests -------------------------------------------------------------------------------
def test_kernels__formula_is_bit_identical_to_numpy(inst):
    m = ThroughputModel(inst.cluster, inst.jobs)
    rng = np.random.default_rng(0)
    M = 2000
    job = rng.integers(0, inst.num_jobs, M)
    count = rng.integers(0, 70, M)
    slow = rng.lognormal(-6.0, 0.5, M)
    spread = rng.integers(0, inst.cluster.topology.num_levels, M)
    got = m.formula(job, count, slow, spread)
    np.testing.assert_array_equal(got, ref_formula(m, job, count, slow, spread))
    # broadcasting of scalars, as callers use it
    assert m.formula(3, 5, slow[0], 1) == ref_formula(m, 3, 5, slow[0], 1)


def test_kernels__table_formula_is_bit_identical_to_numpy():
    rows = [linear_job(f"t{i}", 10.0 + i, 8, 1e6) for i in range(3)]
    inst = tiny_instance(8, rows)
    m = ThroughputModel(inst.cluster, inst.jobs)
    assert (inst.jobs.perf_kind == PerfKind.TABLE).all()
    rng = np.random.default_rng(1)
    job = rng.integers(0, 3, 500)
    count = rng.integers(0, 12, 500)
    slow = rng.uniform(0.5, 2.0, 500)
    spread = rng.integers(0, inst.cluster.topology.num_levels, 500)
    np.testing.assert_array_equal(
        m.formula(job, count, slow, spread), ref_formula(m, job, count, slow, spread)
    )


def test_kernels__job_rates_are_bit_identical_to_numpy(inst):
    m = ThroughputModel(inst.cluster, inst.jobs)
    rng = np.random.default_rng(2)
    for p_idle in (1.0, 0.9, 0.5, 0.0):
        nj = random_map(rng, inst.num_nodes, inst.num_jobs, p_idle)
        for got, want in zip(m.job_rates(nj), ref_job_rates(m, nj), strict=True):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("levels", [3, 2])
def test_kernels__pack_targets_matches_numpy(inst, levels):
    cl = inst.cluster
    coords = cl.topology.coords if levels == 3 else cl.topology.coords[:, [0, -1]]
    rng = np.random.default_rng(3)
    N, J = inst.num_nodes, inst.num_jobs
    for _ in range(200):
        avail = rng.random(N) < rng.uniform(0.2, 1.0)
        nj = np.where(avail, random_map(rng, N, J, 0.6), -1).astype(np.int32)
        jobs = rng.permutation(J)[: rng.integers(0, J)]
        held = np.bincount(nj[nj >= 0], minlength=J)[jobs]
        spare = int(avail.sum())
        targets = np.zeros(jobs.size, dtype=np.int64)
        for i in range(jobs.size):  # feasible targets: at most the idle nodes in total
            targets[i] = min(int(rng.integers(0, 2 * held[i] + 3)), spare)
            spare -= targets[i]
        args = (avail, nj, cl.profiled_slowdown, inst.jobs.app_class, coords, jobs, targets)
        got = pack_targets(*args)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, ref_pack(*args))
    with pytest.raises(ValueError, match="free nodes"):
        pack_targets(
            np.ones(N, bool), np.full(N, -1, np.int32), cl.profiled_slowdown,
            inst.jobs.app_class, coords, np.array([0]), np.array([N + 1]),
        )  # fmt: skip


def test_kernels__repair_fast_path_agrees_with_the_full_repair(inst):
    """A feasible allocation skips the vectorised checks: it must be left as it is."""
    state = initial_state(inst)
    state.status[:] = JobStatus.ACTIVE
    idle = np.flatnonzero(state.available)
    a = np.full(inst.num_nodes, -1, dtype=np.int32)
    j = int(np.flatnonzero(inst.jobs.max_nodes >= 2)[0])
    k = min(int(inst.jobs.max_nodes[j]), idle.size)
    if k < inst.jobs.min_nodes[j]:
        pytest.skip("not enough idle nodes at t_start")
    a[idle[:k]] = j
    b = a.copy()
    rep = repair_allocation(state, inst, b)
    assert not rep.repaired
    np.testing.assert_array_equal(a, b)
    b[np.flatnonzero(~state.available)[:1]] = j  # one node that is not idle
    rep = repair_allocation(state, inst, b)
    assert rep.unavailable_nodes == 1
