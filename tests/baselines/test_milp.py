"""FreeTrain's MILP vs the exact count-level solver; faults; MalleTrain's profiler; greedy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from baselines.heuristics import GreedyPolicy
from baselines.milp.freetrain import FreeTrainAware, FreeTrainPolicy
from baselines.milp.malletrain import MalleTrainPolicy
from baselines.milp.problem import AllocProblem
from baselines.milp.solvers import solve_counts_dp, solve_node_milp
from mtgym.core.instance import CostModel
from mtgym.core.types import RescaleMode
from mtgym.generate.default import default_generator
from mtgym.generate.toy import TwoJobToy
from mtgym.policy.play import play
from mtgym.sim.view import InfoMode
from mtgym.testing import checked_rollout, linear_job, tiny_instance


def random_problem(rng: np.random.Generator, J: int, N: int) -> AllocProblem:
    cur = np.zeros((J, N), bool)
    owner = rng.integers(-1, J, N)
    for n in range(N):
        if owner[n] >= 0:
            cur[owner[n], n] = True
    bpn, bpo = [], []
    for _ in range(J):
        pts = np.array([0, 1, 2, 4, 8, 16], dtype=float)[: rng.integers(2, 7)]
        bpn.append(pts)
        bpo.append(np.concatenate([[0.0], np.cumsum(rng.uniform(10, 100, pts.size - 1))]))
    jmin = rng.integers(1, 3, J)
    jmax = jmin + rng.integers(0, 12, J)
    C = cur.sum(1)
    rate = np.array([np.interp(C[j], bpn[j], bpo[j]) if C[j] >= jmin[j] else 0.0 for j in range(J)])
    return AllocProblem(
        np.arange(J),
        np.arange(N),
        cur,
        jmin,
        jmax,
        bpn,
        bpo,
        rng.uniform(0, 20, J),
        rng.uniform(0, 12, J),
        rate,
        float(rng.uniform(5, 60)),
    )


def brute_force(p: AllocProblem) -> float:
    best = -np.inf
    options = [p.feasible_counts(j) for j in range(p.jobs.size)]
    for combo in itertools.product(*options):
        best = max(best, p.objective(np.array(combo)))
    return best


@pytest.mark.parametrize("seed", range(8))
def test_count_dp__equals_node_milp_and_brute_force(seed):
    rng = np.random.default_rng(seed)
    p = random_problem(rng, int(rng.integers(1, 4)), int(rng.integers(2, 10)))
    dp = solve_counts_dp(p)
    milp = solve_node_milp(p, solver="highs", time_limit_s=30)
    assert milp.optimal
    assert dp.objective == pytest.approx(milp.objective, rel=1e-7, abs=1e-6)
    assert dp.objective == pytest.approx(brute_force(p), rel=1e-9, abs=1e-9)
    # the MILP never migrates: each job's new node set grows or shrinks its old one
    for j in range(p.jobs.size):
        old, new = p.current[j], milp.node_map[j]
        assert np.all(new[old]) or not np.any(new & ~old)


def test_node_milp__cbc_agrees_with_highs():
    p = random_problem(np.random.default_rng(42), 3, 8)
    a = solve_node_milp(p, solver="highs")
    b = solve_node_milp(p, solver="cbc")
    assert a.optimal and b.optimal and a.objective == pytest.approx(b.objective, rel=1e-7)


def test_node_milp__time_limit_reports_no_optimum_and_policy_keeps_the_previous_map():
    inst = default_generator()(0)
    pol = FreeTrainPolicy(solver="milp", time_limit_s=1e-3)
    traj = checked_rollout(inst, pol, max_steps=30)
    assert pol.fallbacks > 0 and not pol.last.optimal
    # with the previous map kept, the first decision leaves everything idle
    assert traj[0][0].n_nodes.sum() == 0


def test_node_milp__missing_solver_is_reported_not_raised(monkeypatch):
    import pulp

    monkeypatch.setattr(pulp.HiGHS, "available", lambda self: False)
    p = random_problem(np.random.default_rng(1), 2, 5)
    res = solve_node_milp(p, solver="highs")
    assert res.status == "unavailable" and np.array_equal(res.counts, p.counts)
    # the policy falls back to CBC and still finds the optimum
    pol = FreeTrainPolicy(solver="milp")
    assert pol.solve(p).optimal


def test_node_milp__bad_solver_name_is_a_status():
    p = random_problem(np.random.default_rng(1), 2, 5)
    assert solve_node_milp(p, solver="gurobi").status.startswith("failed")


def test_freetrain__empty_and_degenerate_inputs_give_valid_allocations():
    # one breakpoint only (the job can never run) and a job with no idle node for it
    one = linear_job("one", 10.0, 1, 1e4)
    one.curve_nodes, one.curve_tput = np.array([0.0]), np.array([0.0])
    rows = [one, linear_job("b", 10.0, 2, 1e4)]
    inst = tiny_instance(2, rows, windows=[(0, 100.0, 200.0), (1, 150.0, 300.0)], t_end=400.0)
    for pol in (
        FreeTrainPolicy(),
        FreeTrainPolicy(solver="milp"),
        MalleTrainPolicy(),
        GreedyPolicy(),
        FreeTrainAware(),
    ):
        traj = checked_rollout(inst, pol)
        assert traj[-1][0].n_nodes[0] == 0


@pytest.mark.parametrize(
    "factory", [FreeTrainPolicy, GreedyPolicy, lambda: FreeTrainPolicy(solver="milp")]
)
def test_policies__reach_the_two_job_toy_optimum(factory):
    toy = TwoJobToy(num_nodes=4, horizon_s=3600.0)
    res = play(toy(), factory())
    assert res.metrics.samples == pytest.approx(100.0 * 4 * 3600.0)


def test_freetrain__t_fwd_trades_rescales_for_gain():
    inst = default_generator()(1)
    short = play(inst, FreeTrainPolicy(t_fwd=1.0)).metrics
    long = play(inst, FreeTrainPolicy(t_fwd=600.0)).metrics
    assert long.rescales > short.rescales


def test_malletrain__sees_no_declared_information_and_measures_costs():
    pol = MalleTrainPolicy(probe_s=0.0)
    assert pol.info_mode is InfoMode.PROFILED
    rows = [linear_job("a", 100.0, 4, 1e8, r_up_s=9.0, r_down_s=4.0)]
    windows = [(n, 0.0, 1e5) for n in range(2)] + [(2, 300.0, 1e5), (3, 600.0, 1e5)]
    inst = tiny_instance(4, rows, windows=windows, t_end=5000.0)
    res = play(inst, pol, decision_interval_s=60.0)
    prof = pol.jobs[0]
    assert set(prof.measured) >= {2, 4}
    assert prof.measured[2] == pytest.approx(200.0) and prof.measured[4] == pytest.approx(400.0)
    assert prof.cost_up == pytest.approx(9.0)
    assert res.metrics.samples > 0


@pytest.mark.parametrize("mode", list(RescaleMode))
def test_malletrain__measures_the_true_rescale_cost_in_both_rescale_modes(mode):
    # Deciding every 2 s, MalleTrain observes the job while it still repays a BFTrainer
    # debt (its rate already shows > 0): the cost must be measured once the debt is paid,
    # not at the first observation.
    pol = MalleTrainPolicy(probe_s=0.0)
    rows = [linear_job("a", 100.0, 4, 1e8, r_up_s=9.0, r_down_s=4.0, startup_s=0.0)]
    windows = [(n, 0.0, 1e5) for n in range(2)] + [(2, 300.0, 1e5), (3, 600.0, 1e5)]
    inst = tiny_instance(4, rows, windows=windows, t_end=2000.0, costs=CostModel(rescale=mode))
    play(inst, pol, decision_interval_s=2.0)
    assert pol.jobs[0].cost_up == pytest.approx(9.0)


def test_malletrain__probes_largest_first():
    pol = MalleTrainPolicy(probe_s=30.0)
    inst = tiny_instance(8, [linear_job("a", 100.0, 8, 1e9)], t_end=2000.0)
    sizes = []
    play(inst, pol, decision_interval_s=10.0, on_step=lambda s, i: sizes.append(int(s.n_nodes[0])))
    firsts = [k for i, k in enumerate(sizes) if i == 0 or sizes[i - 1] != k]
    assert firsts[:4] == [8, 4, 2, 1]


def test_policies__invariants_on_the_default_scenario():
    inst = default_generator()(2)
    for pol in (FreeTrainPolicy(), MalleTrainPolicy(), GreedyPolicy(), FreeTrainAware()):
        checked_rollout(inst, pol, max_steps=400)
