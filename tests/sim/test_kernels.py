"""The compiled (numba) kernels against the vectorised numpy code they replaced: bit-for-bit.

The references below are the numpy implementations as they were before the kernels; the
simulation must not drift by a single ulp.
"""

from __future__ import annotations

import numpy as np
import pytest

from mtgym.core.instance import Instance
from mtgym.core.types import JobStatus, PerfKind
from mtgym.generate.default import default_generator
from mtgym.model.placement import pack_targets
from mtgym.model.throughput import ThroughputModel, interp_rows
from mtgym.sim.dynamics import initial_state, repair_allocation
from mtgym.testing.kit import linear_job, tiny_instance


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


# -- the step-path kernels (env slots, profiler, placement sort, event times) ------------
def ref_slots_update(job: np.ndarray, nxt: int, status: np.ndarray, submitted: int) -> int:
    """``JobSlots.update`` as it was (numpy), in place on ``job``; returns the cursor."""
    occ = job >= 0
    if occ.any():
        done = status[job[occ]] != JobStatus.ACTIVE
        if done.any():
            job[np.flatnonzero(occ)[done]] = -1
    free = np.flatnonzero(job < 0)
    if free.size == 0:
        return nxt
    cand = np.arange(nxt, submitted)
    cand = cand[status[cand] == JobStatus.ACTIVE]
    take = cand[: free.size]
    job[free[: take.size]] = take
    if take.size:
        return int(take[-1]) + 1
    return submitted if cand.size == 0 else nxt


def test_kernels__slots_update_matches_numpy():
    from mtgym.env.slots import _queued, _update

    rng = np.random.default_rng(0)
    for _ in range(300):
        J, S = int(rng.integers(1, 40)), int(rng.integers(1, 9))
        status = rng.integers(0, 4, J).astype(np.int8)  # FUTURE..STOPPED
        submitted = int(rng.integers(0, J + 1))
        job = np.full(S, -1, dtype=np.int64)
        pick = rng.permutation(submitted)[: rng.integers(0, S + 1)]
        job[: pick.size] = pick
        rng.shuffle(job)
        nxt = int(rng.integers(0, submitted + 1))
        want = job.copy()
        want_next = ref_slots_update(want, nxt, status, submitted)
        got_next = _update(job, status, nxt, submitted)
        np.testing.assert_array_equal(job, want)
        assert got_next == want_next
        active = int(np.count_nonzero(status == JobStatus.ACTIVE))
        assert _queued(job, status) == active - int(np.count_nonzero(job >= 0))


def test_kernels__profiler_observe_matches_numpy():
    from mtgym.sim.profiling import _observe

    rng = np.random.default_rng(1)
    J, C = 50, 8
    rate = np.full((J, C + 1), np.nan)
    samples = np.zeros((J, C + 1), dtype=np.int32)
    want_rate, want_samples = rate.copy(), samples.copy()
    for _ in range(50):
        n0 = rng.integers(0, C + 3, J).astype(np.int32)
        n = np.where(rng.random(J) < 0.7, n0, rng.integers(0, C + 3, J)).astype(np.int32)
        debt0 = np.where(rng.random(J) < 0.8, 0.0, rng.random(J))
        debt = np.where(rng.random(J) < 0.8, 0.0, rng.random(J))
        stall = np.where(rng.random(J) < 0.5, -np.inf, rng.random(J) * 20)
        p0 = rng.random(J) * 1e6
        p1 = p0 + rng.random(J) * 1e3
        t0, dt = 10.0, float(rng.random() * 7 + 0.1)
        steady = (n > 0) & (n == n0) & (stall <= t0) & (debt0 == 0) & (debt == 0) & (n <= C)
        jobs = np.flatnonzero(steady)
        want_rate[jobs, n[jobs]] = (p1[jobs] - p0[jobs]) / dt
        want_samples[jobs, n[jobs]] += 1
        _observe((rate, samples), C, t0, dt, (p0, n0, debt0), (n, stall, debt, p1))
        np.testing.assert_array_equal(rate, want_rate)
        np.testing.assert_array_equal(samples, want_samples)


def test_kernels__stable_argsort_is_numpy_mergesort():
    from mtgym.model.placement import _stable_argsort

    rng = np.random.default_rng(2)
    for m in [*range(0, 20), 63, 64, 65, 100]:
        for _ in range(20):
            v = rng.integers(0, 4, m).astype(np.float64)  # many ties
            v[rng.random(m) < 0.1] = np.nan
            np.testing.assert_array_equal(_stable_argsort(v), np.argsort(v, kind="mergesort"))


def test_kernels__next_event_time_is_min_of_the_candidates():
    from mtgym.sim import kernel
    from mtgym.sim.engine import next_event

    inst = tiny_instance(4, [linear_job(f"j{i}", 10.0, 2, 1000.0) for i in range(12)])
    base = kernel.fields_of(initial_state(inst), inst)

    def _next_event(
        t, n_nodes, rate, stall, debt, ms, prog, t_end, t_timer, start_s, c0, end_s, c1, sub, c2
    ):
        fields = base | dict(
            n_nodes=n_nodes,
            rate=rate,
            stall_until=stall,
            debt=debt,
            milestone=ms,
            progress=prog,
            start_s=start_s,
            end_sorted_s=end_s,
            submit_s=sub,
            t_end=t_end,
            scalars=base["scalars"].copy(),
        )
        sc = fields["scalars"]
        sc["time"], sc["start_cursor"], sc["end_cursor"], sc["arrival_cursor"] = t, c0, c1, c2
        return next_event(kernel.from_fields(fields), t_timer)

    rng = np.random.default_rng(3)
    for _ in range(200):
        J = 12
        n_nodes = rng.integers(0, 3, J).astype(np.int32)
        rate = np.where(rng.random(J) < 0.8, rng.random(J) * 10, 0.0)
        stall = np.where(rng.random(J) < 0.5, -np.inf, rng.random(J) * 50)
        debt = np.where(rng.random(J) < 0.7, 0.0, rng.random(J) * 5)
        prog = rng.random(J) * 100
        ms = prog + rng.random(J) * 100
        t = 10.0
        start_s, end_s, sub = (np.sort(rng.random(5) * 100) for _ in range(3))
        cur = [int(rng.integers(0, 6)) for _ in range(3)]
        t_timer = float(rng.choice([np.inf, rng.random() * 100]))
        t_end = float(rng.choice([np.inf, 80.0]))
        held, t_hit, got = _next_event(
            t, n_nodes, rate, stall, debt, ms, prog, t_end, t_timer,
            start_s, cur[0], end_s, cur[1], sub, cur[2],
        )  # fmt: skip
        cand = [t_end, t_timer]
        for arr, c in ((start_s, cur[0]), (end_s, cur[1]), (sub, cur[2])):
            if c < arr.size:
                cand.append(float(arr[c]))
        if t_hit.size:
            cand.append(float(t_hit.min()))
        np.testing.assert_array_equal(held, np.flatnonzero(n_nodes > 0))
        assert got == min(cand)


def test_kernels__pairwise_sum_is_numpys_sum_and_dot_is_fixed_order():
    from mtgym.sim.numeric import dot, pairwise_sum

    rng = np.random.default_rng(4)
    for n in [*range(0, 300), 1000, 1001, 4734, 100_003]:
        a = rng.standard_normal(n) * 10.0 ** rng.integers(-5, 10, n)
        assert pairwise_sum(a) == a.sum()  # bit for bit, including numpy's blocking
        k = rng.integers(0, 64, n).astype(np.int32)
        assert dot(k, a) == pairwise_sum(k * a)  # the products, summed pairwise
        assert abs(dot(k, a) - float(np.dot(k, a))) <= 1e-12 * float(np.abs(k * a).sum())


def ref_repair(state, instance, a: np.ndarray) -> tuple:
    """``repair_allocation`` as it was (numpy), in place on ``a``."""
    from mtgym.core.types import Repair

    rep = Repair()
    jobs = instance.jobs
    idx = np.flatnonzero(a >= 0)
    owners = a[idx]
    bad = ~state.available[idx]
    if bad.any():
        rep.unavailable_nodes = int(bad.sum())
        rep.jobs.extend(np.unique(owners[bad]).tolist())
        a[idx[bad]] = -1
        idx, owners = idx[~bad], owners[~bad]
    bad = state.status[owners] != JobStatus.ACTIVE
    if bad.any():
        rep.inactive_job_nodes = int(bad.sum())
        rep.jobs.extend(np.unique(owners[bad]).tolist())
        a[idx[bad]] = -1
        idx, owners = idx[~bad], owners[~bad]
    cnt = np.bincount(owners, minlength=instance.num_jobs)
    over = cnt > jobs.max_nodes
    if over.any():
        sel = over[owners]
        nodes, own = idx[sel], owners[sel]
        new_node = (state.node_job[nodes] != own).astype(np.int8)
        order = np.lexsort((nodes, new_node, own))
        nodes, own = nodes[order], own[order]
        first = np.concatenate(([0], np.flatnonzero(own[1:] != own[:-1]) + 1))
        rank = np.arange(nodes.size) - np.repeat(first, np.diff(np.append(first, nodes.size)))
        drop = rank >= jobs.max_nodes[own]
        a[nodes[drop]] = -1
        rep.over_max_nodes += int(drop.sum())
        rep.jobs.extend(np.flatnonzero(over).tolist())
        keep = a[idx] >= 0
        idx, owners = idx[keep], owners[keep]
        cnt = np.minimum(cnt, jobs.max_nodes)
    below = np.flatnonzero((cnt > 0) & (cnt < jobs.min_nodes))
    if below.size:
        a[idx[np.isin(owners, below)]] = -1
        rep.below_min_jobs = int(below.size)
        rep.jobs.extend(below.tolist())
    if rep.jobs:
        rep.jobs = sorted(set(rep.jobs))
    return rep


def test_kernels__repair_matches_numpy(inst):
    """Random in-range maps, most infeasible in every way, repaired as the numpy code did."""
    rng = np.random.default_rng(5)
    state = initial_state(inst)
    J, N = inst.num_jobs, inst.num_nodes
    for trial in range(60):
        state.status[:] = rng.choice(
            [JobStatus.FUTURE, JobStatus.ACTIVE, JobStatus.COMPLETED], J, p=[0.1, 0.8, 0.1]
        )
        state.available[:] = rng.random(N) < 0.7
        held = rng.integers(-1, min(J, 6), N).astype(np.int32)
        state.node_job[:] = np.where(state.available, held, -1)
        a = rng.integers(-1, min(J, 6), N).astype(np.int32)
        if trial % 3 == 0:
            a[rng.random(N) < 0.5] = -1
        want_a, got_a = a.copy(), a.copy()
        want = ref_repair(state, inst, want_a)
        got = repair_allocation(state, inst, got_a)
        np.testing.assert_array_equal(got_a, want_a)
        assert got == want and all(type(v) is int for v in got.jobs)
