"""The compiled count-level DP (``dp_kernel``) answers bit for bit as the NumPy code it
replaced: same counts, same objective, same rates, on random problems built to hit its
corners (ties, infeasible instances, no zero option, NaN and infinite values, overflow),
on every decision of real episodes, and through the curve memo of FreeTrain.

The reference below is the former implementation, copied verbatim and kept independent of
the production code (it reads only an ``AllocProblem``'s fields).
"""

from __future__ import annotations

import ast
import inspect

import numpy as np
import pytest

from baselines.milp import dp_kernel
from baselines.milp.freetrain import FreeTrainAware, FreeTrainPolicy
from baselines.milp.malletrain import MalleTrainPolicy
from baselines.milp.problem import AllocProblem, CurveMemo, build_problem, dedupe_curve
from baselines.milp.solvers import KEEP_TIE_BONUS, solve_counts_dp
from mtgym.generate.default import default_generator
from mtgym.policy.play import play

# the random problems overflow and meet inf - inf on purpose (both implementations warn)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# -- the former implementation (reference) ----------------------------------------------


def ref_counts(p: AllocProblem) -> np.ndarray:
    return p.current.sum(axis=1)


def ref_obj_at(p: AllocProblem, j: int, n: np.ndarray | float) -> np.ndarray:
    x, y = p.bp_nodes[j], p.bp_obj[j]
    n = np.asarray(n, dtype=np.float64)
    if x.size == 0:
        return np.where(n == 0, 0.0, -np.inf)
    v = np.interp(n, x, y)
    return np.where((n < x[0]) | (n > x[-1]), -np.inf, v)


def ref_feasible_counts(p: AllocProblem, j: int) -> np.ndarray:
    x = p.bp_nodes[j]
    hi = int(min(p.jmax[j], p.cap, x[-1] if x.size else 0))
    lo = int(max(p.jmin[j], x[0] if x.size else 1, 1))
    out = [0] if (x.size and x[0] <= 0) else []
    out += list(range(lo, hi + 1))
    return np.array(out, dtype=np.int64)


def ref_job_values(p: AllocProblem, j: int, n: np.ndarray) -> np.ndarray:
    C = ref_counts(p)[j]
    loss = np.where(n > C, p.r_up[j], np.where(n < C, p.r_down[j], 0.0)) * p.rate[j]
    return p.t_fwd * ref_obj_at(p, j, n) - loss


def ref_objective(p: AllocProblem, n: np.ndarray) -> float:
    if int(np.sum(n)) > p.cap:
        return -np.inf
    total = 0.0
    for j in range(p.jobs.size):
        if n[j] != 0 and (n[j] < p.jmin[j] or n[j] > p.jmax[j]):
            return -np.inf
        total += float(ref_job_values(p, j, np.array([n[j]]))[0])
    return total


def ref_solve_counts_dp(p: AllocProblem) -> tuple[np.ndarray, float]:
    J, N = p.jobs.size, p.cap
    NEG = -np.inf
    best = np.full(N + 1, NEG)
    best[0] = 0.0
    choice = np.zeros((J, N + 1), dtype=np.int64)
    C = ref_counts(p)
    scale = 1.0 + float(
        np.max(np.abs(p.t_fwd * np.concatenate([b for b in p.bp_obj] or [np.zeros(1)])))
    )
    for j in range(J):
        opts = ref_feasible_counts(p, j)
        if opts.size == 0:
            opts = np.zeros(1, dtype=np.int64)
            vals = np.zeros(1)
        else:
            vals = ref_job_values(p, j, opts) + KEEP_TIE_BONUS * scale * (opts == C[j])
        used = np.arange(N + 1)[:, None] - opts[None, :]
        ok = used >= 0
        cand = np.where(ok, best[np.maximum(used, 0)], NEG) + vals[None, :]
        k = np.argmax(cand, axis=1)
        choice[j] = opts[k]
        best = cand[np.arange(N + 1), k]
    c = int(np.argmax(best))
    counts = np.zeros(J, dtype=np.int64)
    for j in range(J - 1, -1, -1):
        counts[j] = choice[j, c]
        c -= counts[j]
    return counts, ref_objective(p, counts)


def ref_rate(
    C: np.ndarray, jmin: np.ndarray, bp_nodes: list[np.ndarray], bp_obj: list[np.ndarray]
) -> np.ndarray:
    rate = np.zeros(len(bp_nodes))
    for i in range(len(bp_nodes)):
        if C[i] >= jmin[i] and bp_nodes[i].size:
            rate[i] = float(np.interp(C[i], bp_nodes[i], bp_obj[i]))
    return rate


# -- helpers ----------------------------------------------------------------------------


def same_float(a: float, b: float) -> bool:
    """Bit for bit (NaN payloads and signed zeros included)."""
    return np.float64(a).tobytes() == np.float64(b).tobytes()


def assert_same_solve(p: AllocProblem) -> None:
    try:
        ref = ref_solve_counts_dp(p)
    except (ValueError, IndexError) as exc:  # the reference fails: so must the new code
        with pytest.raises(type(exc)):
            solve_counts_dp(p)
        return
    got = solve_counts_dp(p)
    assert np.array_equal(got.counts, ref[0]), (got.counts, ref[0])
    assert got.counts.dtype == np.int64
    assert same_float(got.objective, ref[1]), (got.objective, ref[1])


def random_curve(rng: np.random.Generator, kind: int) -> tuple[np.ndarray, np.ndarray]:
    """Breakpoints of several shapes (``kind``) with values that tie, overflow or are not
    finite now and then.
    """
    size = int(rng.integers(0 if kind == 0 else 1, 8))
    if kind == 1:  # integer nodes from 0
        x = np.unique(np.concatenate([[0], rng.integers(1, 24, size)])).astype(float)
    elif kind == 2:  # not from 0: the job has no zero option
        x = np.unique(rng.integers(1, 24, max(size, 1))).astype(float)
    elif kind == 3:  # fractional nodes
        x = np.unique(np.round(rng.uniform(-0.5, 20, max(size, 1)), 1))
    else:  # possibly empty or a single point
        x = np.unique(rng.integers(0, 12, size)).astype(float)
    style = rng.integers(0, 10)
    if style < 4:
        y = np.concatenate([[0.0], np.cumsum(rng.uniform(1, 100, x.size))])[: x.size]
    elif style < 6:  # small integers: many exact ties
        y = rng.integers(0, 4, x.size).astype(float)
    elif style < 7:  # decreasing or negative
        y = -rng.uniform(0, 50, x.size)
    elif style < 8:  # huge: sums overflow to inf
        y = rng.choice([1e307, 1.7e308, -1.7e308], x.size)
    elif style < 9:  # not finite values
        y = rng.choice([1.0, 2.0, np.inf, -np.inf, np.nan], x.size)
    else:
        y = rng.uniform(0, 10, x.size).round(0)
    return x, y


def random_problem(rng: np.random.Generator) -> AllocProblem:
    J = int(rng.integers(0, 10))
    N = int(rng.integers(0, 30))
    cur = np.zeros((J, N), bool)
    if J:
        owner = rng.integers(-1, J, N)
        for n in range(N):
            if owner[n] >= 0:
                cur[owner[n], n] = True
    kind = int(rng.integers(0, 5))
    curves = [
        random_curve(rng, kind if rng.random() < 0.7 else int(rng.integers(0, 5))) for _ in range(J)
    ]
    jmin = rng.integers(0, 6, J)
    jmax = jmin + rng.integers(-2, 14, J)
    C = cur.sum(1)
    rate = np.array(
        [
            np.interp(C[j], *curves[j]) if C[j] >= jmin[j] and curves[j][0].size else 0.0
            for j in range(J)
        ]
    )
    if rng.random() < 0.2:
        rate = np.where(rng.random(J) < 0.5, 0.0, rate)
    r_up = rng.choice([0.0, 5.0, 12.5, 30.0], J) if rng.random() < 0.5 else rng.uniform(0, 40, J)
    r_down = rng.uniform(0, 20, J)
    t_fwd = float(rng.choice([1.0, 10.0, 60.0, rng.uniform(0.5, 600)]))
    p = AllocProblem(
        np.arange(J),
        np.arange(N),
        cur,
        jmin.astype(np.int64),
        jmax.astype(np.int64),
        [c[0] for c in curves],
        [c[1] for c in curves],
        r_up.astype(np.float64),
        r_down,
        rate.astype(np.float64),
        t_fwd,
    )
    if rng.random() < 0.3:
        p.capacity = int(rng.integers(0, N + 1))  # MalleTrain's nodes left after probes
    return p


# -- the DP -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_count_dp__same_counts_and_objective_as_the_numpy_dp(seed):
    rng = np.random.default_rng(1000 + seed)
    for _ in range(150):
        assert_same_solve(random_problem(rng))


@pytest.mark.parametrize("seed", range(3))
def test_count_dp__same_on_large_problems(seed):
    # ~100 jobs on ~200 idle nodes (the 512-node machine's admission cap)
    rng = np.random.default_rng(seed)
    J, N = 100, 200
    cur = np.zeros((J, N), bool)
    owner = rng.integers(-1, J, N)
    for n in range(N):
        if owner[n] >= 0:
            cur[owner[n], n] = True
    bpn = [np.array([0.0, 1, 2, 4, 8, 16])[: rng.integers(2, 7)] for _ in range(J)]
    bpo = [np.concatenate([[0.0], np.cumsum(rng.uniform(0.5, 1.0, b.size - 1))]) for b in bpn]
    jmin = rng.integers(1, 3, J)
    jmax = jmin + rng.integers(0, 16, J)
    C = cur.sum(1)
    rate = ref_rate(C, jmin, bpn, bpo)
    p = AllocProblem(
        np.arange(J),
        np.arange(N),
        cur,
        jmin,
        jmax,
        bpn,
        bpo,
        rng.uniform(0, 60, J),
        rng.uniform(0, 30, J),
        rate,
        600.0,
    )
    assert_same_solve(p)


def test_count_dp__corner_cases():
    empty = AllocProblem(
        np.zeros(0, np.int64),
        np.arange(3),
        np.zeros((0, 3), bool),
        np.zeros(0, np.int64),
        np.zeros(0, np.int64),
        [],
        [],
        np.zeros(0),
        np.zeros(0),
        np.zeros(0),
        10.0,
    )
    assert_same_solve(empty)

    def one(x, y, jmin=1, jmax=4, nodes=3, held=0, cap=None):
        cur = np.zeros((1, nodes), bool)
        cur[0, :held] = True
        return AllocProblem(
            np.array([0]),
            np.arange(nodes),
            cur,
            np.array([jmin]),
            np.array([jmax]),
            [np.asarray(x, float)],
            [np.asarray(y, float)],
            np.array([5.0]),
            np.array([3.0]),
            np.array([1.0 if held else 0.0]),
            10.0,
            cap,
        )

    assert_same_solve(one([0, 1, 2], [0, 1, 2]))
    assert_same_solve(one([], []))  # no breakpoints at all (the reference raises)
    assert_same_solve(one([2, 3], [5, 6], jmin=2, nodes=1))  # infeasible, no zero option
    assert_same_solve(one([5, 6], [5, 6], jmin=5, jmax=9, nodes=2))  # backtrack wraps
    assert_same_solve(one([0, 1, 2], [0, 1, 2], cap=0))
    assert_same_solve(one([0, 1, 2], [0, 1, 2], held=2))  # keeps its nodes on a tie
    assert_same_solve(one([0, 1.5, 2.5], [0, 1, 2]))  # fractional breakpoints
    assert_same_solve(one([0, 1, 2], [0, np.inf, 1]))  # +inf: the full scan
    assert_same_solve(one([0, 1, 2], [0, np.nan, 1]))
    assert_same_solve(one([0, 2, 1], [0, 1, 2]))  # unsorted: the NumPy path answers
    assert_same_solve(one([0, np.nan, 2], [0, 1, 2]))


def test_objective__same_as_the_numpy_loop():
    rng = np.random.default_rng(7)
    for _ in range(300):
        p = random_problem(rng)
        J = p.jobs.size
        for _ in range(5):
            n = rng.integers(-1, 16, J)
            if rng.random() < 0.5:
                n = np.minimum(n, np.maximum(p.jmax, 0))
            assert same_float(p.objective(n), ref_objective(p, n))
        if J:  # other dtypes go through the NumPy loop
            n = rng.integers(0, 4, J)
            assert same_float(p.objective(n.astype(float)), ref_objective(p, n.astype(float)))
            assert same_float(p.objective(list(n)), ref_objective(p, list(n)))


def test_interp_each__is_np_interp():
    rng = np.random.default_rng(3)
    for _ in range(400):
        x = np.unique(rng.uniform(-5, 30, rng.integers(1, 9)))
        if rng.random() < 0.5:
            x = np.round(x)
            x = np.unique(x)
        y = rng.normal(0, 100, x.size)
        if rng.random() < 0.2:
            y[rng.integers(0, x.size)] = rng.choice([np.inf, -np.inf, np.nan])
        q = np.concatenate([rng.uniform(-10, 40, 6), x, np.round(rng.uniform(-6, 32, 4))])
        off = np.array([0, x.size], dtype=np.int64)
        for v in q:
            got = dp_kernel.interp_each(off, x, y, np.array([v]))[0]
            assert same_float(got, float(np.interp(v, x, y))), (v, x, y)


# -- real episodes ----------------------------------------------------------------------


class Checked:
    """Wraps a policy's ``solve``/``problem``: every decision is also solved and built by the
    reference, and both must agree bit for bit.
    """

    def __init__(self, policy: FreeTrainPolicy) -> None:
        self.policy, self.solves = policy, 0
        solve, problem = policy.solve, policy.problem

        def checked_problem(view):
            p = problem(view)
            # the memo's curves are those a fresh policy (an empty memo) makes
            fresh = type(policy)(objective=policy.objective).curves(view, p.jobs)
            for (x, y), a, b in zip(fresh, p.bp_nodes, p.bp_obj, strict=True):
                assert np.array_equal(x, a) and np.array_equal(y, b)
            assert np.array_equal(p.rate, ref_rate(p.counts, p.jmin, p.bp_nodes, p.bp_obj))
            return p

        def checked_solve(p):
            res = solve(p)
            counts, obj = ref_solve_counts_dp(p)
            assert np.array_equal(res.counts, counts) and same_float(res.objective, obj)
            self.solves += 1
            return res

        policy.problem, policy.solve = checked_problem, checked_solve


@pytest.mark.parametrize(
    "make",
    [
        lambda: FreeTrainPolicy(),
        lambda: FreeTrainPolicy(objective="speedup", max_jobs=40),
        lambda: FreeTrainPolicy(objective="normalized"),
        lambda: FreeTrainAware(),
    ],
    ids=["throughput", "speedup-40-jobs", "normalized", "aware"],
)
def test_freetrain__every_decision_of_an_episode_matches_the_reference(make):
    inst = default_generator()(3)
    checked = Checked(make())
    play(inst, checked.policy, until=inst.t_start + 3 * 3600)
    assert checked.solves > 50


def test_malletrain__decisions_match_the_reference(monkeypatch):
    import baselines.milp.malletrain as mt

    calls = []

    def checked(p):
        res = solve_counts_dp(p)
        counts, obj = ref_solve_counts_dp(p)
        assert np.array_equal(res.counts, counts) and same_float(res.objective, obj)
        calls.append(1)
        return res

    monkeypatch.setattr(mt, "solve_counts_dp", checked)
    inst = default_generator()(4)
    play(inst, MalleTrainPolicy(), until=inst.t_start + 3 * 3600)
    assert len(calls) > 50


def test_build_problem__rates_as_the_numpy_loop_also_for_unsorted_curves():
    inst = default_generator()(5)
    pol = FreeTrainPolicy()
    views = []

    def grab(view):
        views.append(view)
        return FreeTrainPolicy.decide(pol, view)

    pol.decide = grab
    play(inst, pol, until=inst.t_start + 1800)
    view = views[-1]
    jobs = np.flatnonzero(view.n_nodes > 0)
    assert jobs.size
    curves = pol.curves(view, jobs)
    swapped = [(x[::-1].copy(), y[::-1].copy()) for x, y in curves]  # not increasing
    for cs in (curves, swapped):
        p = build_problem(view, jobs, cs, view.r_up_s[jobs], view.r_down_s[jobs], 10.0)
        assert np.array_equal(p.rate, ref_rate(p.counts, p.jmin, p.bp_nodes, p.bp_obj))


# -- the curve memo ---------------------------------------------------------------------


class FakeView:
    def __init__(self, nodes: np.ndarray, tput: np.ndarray) -> None:
        self.curve_nodes, self.curve_tput = nodes, tput


def test_curve_memo__reuses_only_what_was_made_from_the_same_rows():
    nodes = np.tile([0.0, 1, 2, 4, np.nan], (4, 1))
    tput = np.arange(20, dtype=float).reshape(4, 5)
    made = []

    def make(view):
        def f(j):
            made.append(j)
            return dedupe_curve(view.curve_nodes[j], view.curve_tput[j])

        return f

    memo = CurveMemo()
    v = FakeView(nodes, tput)
    first = memo.get(v, np.array([0, 2]), "a", make(v))
    assert made == [0, 2]
    assert memo.get(v, np.array([2, 0, 1]), "a", make(v))[1] is first[0] and made == [0, 2, 1]
    assert not first[0][0].flags.writeable  # shared: read-only
    t2 = tput.copy()
    t2[2, 1] = -1.0  # job 2's curve changes: only job 2 is made anew
    v2 = FakeView(nodes, t2)
    got = memo.get(v2, np.array([0, 1, 2]), "a", make(v2))
    assert made == [0, 2, 1, 2] and got[2][1][1] == -1.0
    memo.get(v2, np.array([0]), "b", make(v2))  # another key: everything anew
    assert made[-1] == 0 and len(made) == 5
    t3 = np.concatenate([t2, t2])  # another instance (more jobs): everything anew
    v3 = FakeView(np.concatenate([nodes, nodes]), t3)
    memo.get(v3, np.array([0]), "b", make(v3))
    assert len(made) == 6
    z = t3.copy()
    z[0, 0] = -0.0  # bit for bit: -0.0 is not 0.0
    v4 = FakeView(v3.curve_nodes, z)
    memo.get(v4, np.array([0]), "b", make(v4))
    assert len(made) == 7


# -- numba's cache ----------------------------------------------------------------------


def test_dp_kernel__is_self_contained_so_numba_recompiles_it_after_an_edit():
    # mtgym._kernel_cache hashes mtgym's sources only; this kernel lives in baselines and is
    # recompiled by numba's own check of its file's time stamp, which is enough only while
    # it calls no kernel and reads no constant of another file.
    tree = ast.parse(inspect.getsource(dp_kernel))
    imported = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
    assert imported <= {"__future__", "numpy", "numba", "mtgym"}
