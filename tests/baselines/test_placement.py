"""PAL, PM-First and the Blox Packed/Random baselines (baselines.placement)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from baselines.placement import (
    LxV,
    PackedPolicy,
    PALPlacer,
    PALPolicy,
    PMFirstPlacer,
    PMFirstPolicy,
    RandomPolicy,
    kmeans_1d,
    packed_select,
    pal_place,
    pm_first_place,
    pm_first_select,
    silhouette_1d,
)
from baselines.placement.common import class_priority_reorder, job_order
from baselines.placement.lxv import (
    choose_k1,
    class_slowdown_levels,
    outlier_mask,
    traversal_order,
)
from mtgym.core.types import AppClass, JobStatus
from mtgym.generate.pal_philly import PALPhilly
from mtgym.policy.play import play
from mtgym.sim.dynamics import initial_state
from mtgym.sim.view import SchedulerView, ViewBuilder
from mtgym.testing import checked_rollout, linear_job, tiny_instance

A, B, C, D = AppClass.A, AppClass.B, AppClass.C, AppClass.D
LAMBDA = (1.0, 1.0, 1.7)  # (unit, host, system): PAL's within 1.0 / across 1.7


def instance(slowdown, jobs, *, hosts_of=4):
    """Units (GPUs) in hosts of ``hosts_of``; jobs = [(class, demand, submit_s), ...]."""
    sd = np.asarray(slowdown, dtype=float)
    if sd.ndim == 1:
        sd = np.repeat(sd[:, None], 4, axis=1)
    rows = [
        linear_job(f"j{i}", 1.0, g, 1e4, min_nodes=g, submit_s=s, app_class=c)
        for i, (c, g, s) in enumerate(jobs)
    ]
    return tiny_instance(
        sd.shape[0], rows, group_size=hosts_of, slowdown=sd, locality_factor=LAMBDA
    )


def view_of(inst, **changes) -> SchedulerView:
    """The first view of ``inst``, with some arrays replaced (node_job, status, progress)."""
    v = ViewBuilder(inst)(initial_state(inst))
    return dataclasses.replace(v, **{k: np.asarray(a) for k, a in changes.items()})


def sets(node_map) -> dict[int, list[int]]:
    a = np.asarray(node_map)
    return {int(j): np.flatnonzero(a == j).tolist() for j in np.unique(a[a >= 0])}


# -- the L x V matrix -------------------------------------------------------------------
def test_kmeans_1d__hand_array_two_clusters():
    # {1,1,2,2},{4}: inertia 4 x 0.5^2 = 1.0 beats {1,1},{2,2,4}: 24/9
    centers, labels = kmeans_1d(np.array([1.0, 1.0, 2.0, 2.0, 4.0]), 2)
    assert centers.tolist() == [1.5, 4.0]
    assert labels.tolist() == [0, 0, 0, 0, 1]


def test_kmeans_1d__caps_k_at_distinct_values_and_is_deterministic():
    x = np.array([1.0, 1.0, 3.0])
    centers, labels = kmeans_1d(x, 5)
    assert centers.tolist() == [1.0, 3.0] and labels.tolist() == [0, 0, 1]
    rng = np.random.default_rng(7)
    y = rng.normal(1.0, 0.05, 200)
    c1, l1 = kmeans_1d(y, 4, seed=3)
    c2, l2 = kmeans_1d(y, 4, seed=3)
    assert np.array_equal(c1, c2) and np.array_equal(l1, l2)


def test_silhouette_1d__hand_example():
    # points 0 and 5: a = 1, b = 4.5; points 1 and 4: a = 1, b = 3.5
    s = silhouette_1d(np.array([0.0, 1.0, 4.0, 5.0]), np.array([0, 0, 1, 1]))
    assert s == pytest.approx((3.5 / 4.5 + 2.5 / 3.5) / 2)


def test_outlier_mask__mean_plus_three_sample_sd():
    # 7 x 1.0, 8 x 1.1, one 3.0: mean 1.175, sd (ddof 1) 0.48922, threshold 2.6427
    x = np.array([3.0] + [1.0] * 7 + [1.1] * 8)
    assert outlier_mask(x).tolist() == [True] + [False] * 15
    # 10 points can never pass mean + 3 sd (the largest z is 9 / sqrt(10) < 3)
    assert not outlier_mask(np.array([1.0] * 9 + [100.0])).any()


def test_class_slowdown_levels__k1_is_two_plus_one_cluster_per_outlier():
    x = np.array([3.0] + [1.0] * 7 + [1.1] * 8)
    sf = class_slowdown_levels(x)
    # K = 2 + 1 outlier = 3 clusters {1.0}, {1.1}, {3.0}; median centroid 1.1
    assert sf[0] == pytest.approx(3.0 / 1.1)
    assert np.allclose(sf[1:8], 1.0 / 1.1) and np.allclose(sf[8:], 1.0)


def test_class_slowdown_levels__quirk_merges_levels_a_silhouette_scan_keeps():
    x = np.array([1.0] * 5 + [1.2] * 5 + [1.4] * 5)
    assert choose_k1(x) == 2  # PAL's loop returns after k = 2
    assert choose_k1(x, pal_k_quirk=False) == 3  # three exact groups: silhouette 1
    assert np.unique(class_slowdown_levels(x)).size == 2
    sf = class_slowdown_levels(x, pal_k_quirk=False)
    assert np.allclose(np.unique(sf), [1.0 / 1.2, 1.0, 1.4 / 1.2])


def test_traversal_order__sorted_by_sf_times_lambda():
    order = traversal_order(np.array([0.9, 1.0, 2.0]), [(1, 1.0), (2, 1.7)])
    assert [(v, lvl) for v, lvl, _ in order] == [
        (0.9, 1),
        (1.0, 1),
        (0.9, 2),  # 1.53
        (1.0, 2),  # 1.7
        (2.0, 1),
        (2.0, 2),
    ]


def test_traversal_order__ties_keep_within_before_across():
    # lambda 1: every sf level's within entry comes before its across entry
    order = traversal_order(np.array([1.0, 0.9]), [(1, 1.0), (2, 1.0)])
    assert [(v, lvl) for v, lvl, _ in order] == [(0.9, 1), (0.9, 2), (1.0, 1), (1.0, 2)]
    # 1.0 x 1.7 == 1.7 x 1.0: the within entry first
    order = traversal_order(np.array([1.0, 1.7]), [(1, 1.0), (2, 1.7)])
    assert [(v, lvl) for v, lvl, _ in order][1:3] == [(1.7, 1), (1.0, 2)]


def test_lxv__rows_are_the_topology_levels_above_the_unit():
    lx = LxV.build(np.ones((8, 4)), np.array(LAMBDA))
    assert lx.loc_levels == ((1, 1.0), (2, 1.7))
    assert [(v, lvl) for v, lvl, _ in lx.order[0]] == [(1.0, 1), (1.0, 2)]


# -- PAL and PM-First per-job choices -----------------------------------------------------
def test_pal_place__takes_the_within_host_set_with_the_smallest_max_sf():
    # two hosts; host 0 = units 0-3, host 1 = units 4-7; two sf levels per class
    sd = [1.2, 1.0, 1.2, 1.2, 1.0, 1.2, 1.0, 1.2]
    inst = instance(sd, [(A, 2, 0.0)])
    v = view_of(inst)
    lx = LxV.build(v.slowdown, v.locality_factor)
    # (fast, within): host 1 has two fast units (4, 6), host 0 only one
    assert sets(pal_place(v, np.array([0]), np.array([2]), lxv=lx)) == {0: [4, 6]}
    # the packer takes the first best-fit host whatever the speed
    assert sets(PackedPolicy(sticky=False).decide(v).node_job) == {0: [0, 1]}


def test_pal_place__within_host_pick_ignores_faster_units_beyond_the_max():
    # host 0: sf 1.0, 0.9, 1.0, 0.9 -> g = 3 must include a 1.0 unit; PAL keeps the first
    # g-subset (itertools order) with the smallest max, i.e. units 0, 1, 2
    sf = np.array([1.0, 0.9, 1.0, 0.9])
    sd = np.repeat(sf[:, None], 4, axis=1)
    lx = LxV(
        sd,
        tuple(np.unique(sd[:, c]) for c in range(4)),
        ((1, 1.0), (2, 1.7)),
        tuple(tuple(traversal_order(np.array([0.9, 1.0]), [(1, 1.0), (2, 1.7)])) for _ in range(4)),
    )
    v = view_of(instance(sf, [(A, 3, 0.0)]))
    assert sets(pal_place(v, np.array([0]), np.array([3]), lxv=lx)) == {0: [0, 1, 2]}


def outlier_cluster():
    """16 units (4 hosts); class A: unit 0 is an outlier (3.0); classes B-D identical."""
    sd = np.ones((16, 4))
    sd[:, A] = [3.0] + [1.0] * 7 + [1.1] * 8
    return sd


def test_pal_place__class_a_avoids_the_outlier_class_d_may_use_it():
    inst = instance(outlier_cluster(), [(D, 4, 0.0), (A, 4, 0.0), (A, 1, 0.0)])
    v = view_of(inst)
    got = sets(PALPolicy().decide(v).node_job)
    # the reorder lets class A pick first: the fast host 1 (units 4-7), then a fast single
    # unit (1); class D (flat profile) then takes the first whole free host
    assert got == {1: [4, 5, 6, 7], 2: [1], 0: [8, 9, 10, 11]}
    # a class-D job alone may sit on the outlier's host
    v_d = view_of(instance(outlier_cluster(), [(D, 4, 0.0)]))
    assert sets(PALPolicy().decide(v_d).node_job) == {0: [0, 1, 2, 3]}
    # the packer puts class A on the outlier's host (the first exact fit)
    v_a = view_of(instance(outlier_cluster(), [(A, 4, 0.0)]))
    assert sets(PackedPolicy().decide(v_a).node_job) == {0: [0, 1, 2, 3]}
    assert sets(PALPolicy().decide(v_a).node_job) == {0: [4, 5, 6, 7]}


def test_pm_first_select__best_fit_locality_score():
    units = np.array([0, 1, 2, 4, 5])
    host = np.array([0, 0, 0, 1, 1])
    # one sf level: host 0 has 3 free (|3 - 2| = 1), host 1 has 2 free (0): best fit wins
    assert pm_first_select(units, np.ones(5), host, 2).tolist() == [4, 5]
    # sf first: unit 0 is faster, then the best-fit score among sf 1.0 (host 0: 2 -> 0,
    # host 1: 2 -> 0), then the unit index
    sf = np.array([0.9, 1.0, 1.0, 1.0, 1.0])
    assert pm_first_select(units, sf, host, 2).tolist() == [0, 1]
    # g = 1: a unit alone at its level on its host fits best
    assert pm_first_select(units, np.ones(5), np.array([0, 0, 0, 1, 2]), 1).tolist() == [4]


@pytest.mark.parametrize("seed", range(20))
def test_pm_first_select__matches_the_rule_written_out(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    units = np.sort(rng.choice(200, n, replace=False))
    sf = rng.choice([0.9, 1.0, 1.13, 2.5], n)
    host = rng.integers(0, 6, n)
    g = int(rng.integers(1, n + 1))
    same = {(s, h): int(np.sum((sf == s) & (host == h))) for s, h in zip(sf, host, strict=True)}
    key = sorted(range(n), key=lambda i: (sf[i], abs(same[sf[i], host[i]] - g), units[i]))
    assert pm_first_select(units, sf, host, g).tolist() == sorted(units[key[:g]].tolist())


def test_pm_first_place__large_job_uses_fast_units_across_hosts():
    sd = np.ones((8, 4))
    sd[:, B] = [1.2, 1.0, 1.0, 1.2, 1.0, 1.0, 1.2, 1.2]
    v = view_of(instance(sd, [(B, 4, 0.0)]))
    lx = LxV.build(v.slowdown, v.locality_factor)
    # sf levels 1/1.1 and 1.2/1.1. PM-First: the four fast units (two per host). PAL:
    # (fast, within) finds no host with 4 fast units; (slow, within) = 1.09 comes before
    # (fast, across) = 0.91 x 1.7 = 1.55, so it stays in one host (the first on the tie)
    assert sets(pm_first_place(v, np.array([0]), np.array([4]), lxv=lx)) == {0: [1, 2, 4, 5]}
    assert sets(pal_place(v, np.array([0]), np.array([4]), lxv=lx)) == {0: [0, 1, 2, 3]}


# -- the round ------------------------------------------------------------------------------
def test_class_priority_reorder__sorts_only_the_prefix_that_fits():
    jobs, dem = class_priority_reorder(
        np.array([0, 1, 2, 3, 4]), np.array([2, 2, 2, 2, 2]), np.array([D, C, A, B, A]), 7
    )
    assert jobs.tolist() == [2, 1, 0, 3, 4]  # cumulative 2, 4, 6 fit in 7; job 4 stays last
    assert dem.tolist() == [2] * 5


def test_pal_policy__stops_at_the_first_job_it_cannot_place():
    inst = instance(np.ones(8), [(D, 6, 0.0), (D, 4, 0.0), (D, 2, 0.0)])
    v = view_of(inst)
    for pol in (PALPolicy(), PMFirstPolicy(), PackedPolicy(sticky=False), RandomPolicy(False)):
        got = sets(pol.decide(v).node_job)
        assert list(got) == [0] and len(got[0]) == 6, pol.name  # job 2 would fit: no backfill


def test_pal_policy__non_sticky_keeps_an_unchanged_set_and_moves_others():
    inst = instance(np.ones(8), [(D, 2, 0.0), (D, 1, 0.0)])
    # job 0 sits on units 6, 7 (as if the packer put it there); PAL re-places it
    v = view_of(inst, node_job=np.array([-1, -1, -1, -1, -1, -1, 0, 0]))
    a = PALPolicy().decide(v).node_job
    assert sets(a)[0] == [0, 1]  # moved: the first host with two units of the best level
    v2 = view_of(inst, node_job=np.where(a == 0, 0, -1))
    assert np.array_equal(PALPolicy().decide(v2).node_job, a)  # same set: untouched


def test_job_order__fifo_las_srtf():
    inst = instance(np.ones(4), [(D, 1, 0.0), (D, 1, 0.0), (D, 1, 0.0)])
    v = view_of(inst, progress=np.array([50.0, 10.0, 9_990.0]))
    assert job_order(v, "fifo").tolist() == [0, 1, 2]
    assert job_order(v, "las").tolist() == [1, 0, 2]
    assert job_order(v, "srtf").tolist() == [2, 0, 1]  # remaining 10, 9950, 9990


# -- Blox baselines ---------------------------------------------------------------------------
def test_packed_select__exact_fit_then_best_fit_then_fullest_hosts():
    free = np.array([0, 1, 2, 4, 5, 8, 9, 10, 11])
    host = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])  # free counts 3, 2, 4
    assert packed_select(free, host, 2).tolist() == [4, 5]  # exact fit: host 1
    assert packed_select(free, host, 3).tolist() == [0, 1, 2]  # exact fit: host 0
    assert packed_select(free, host, 1).tolist() == [4]  # fewest free >= 1: host 1
    assert packed_select(free, host, 5).tolist() == [0, 8, 9, 10, 11]  # host 2, then host 0
    assert packed_select(free, host, 10) is None


def test_packed_policy__sticky_keeps_running_jobs_non_sticky_repacks():
    inst = instance(np.ones(8), [(D, 2, 0.0), (D, 1, 0.0)])
    # job 0 runs on units 2, 3 and job 1 on unit 4 (job 0's old neighbour finished)
    v = view_of(inst, node_job=np.array([-1, -1, 0, 0, 1, -1, -1, -1]))
    assert sets(PackedPolicy(sticky=True).decide(v).node_job) == {0: [2, 3], 1: [4]}
    # non-sticky: job 0 -> first best-fit host {0, 1}; job 1 -> exact fit? no; fewest >= 1
    assert sets(PackedPolicy(sticky=False).decide(v).node_job) == {0: [0, 1], 1: [2]}


def test_packed_policy__sticky_preempts_lower_priority_jobs():
    inst = instance(np.ones(8), [(D, 4, 0.0), (D, 6, 0.0)])
    # LAS: job 1 has more service, so job 0 (waiting, 4 units) has priority; 2 units free
    v = view_of(
        inst,
        node_job=np.array([1, 1, 1, 1, 1, 1, -1, -1]),
        progress=np.array([0.0, 500.0]),
    )
    assert sets(PackedPolicy(order="las").decide(v).node_job) == {0: [0, 1, 2, 3]}
    # FIFO: job 1 is lower priority too, and still pre-empted; without need nothing moves
    assert sets(PackedPolicy().decide(v).node_job) == {0: [0, 1, 2, 3]}
    v_run = view_of(
        inst,
        node_job=np.array([1, 1, 1, 1, 1, 1, -1, -1]),
        status=np.array([JobStatus.COMPLETED, JobStatus.ACTIVE], dtype=np.int8),
    )
    assert sets(PackedPolicy().decide(v_run).node_job) == {1: [0, 1, 2, 3, 4, 5]}


def test_random_policy__deterministic_per_seed():
    inst = instance(np.ones(16), [(D, 3, 0.0), (D, 5, 0.0)])
    v = view_of(inst)
    a = RandomPolicy(seed=5).decide(v).node_job
    assert np.array_equal(RandomPolicy(seed=5).decide(v).node_job, a)
    p = RandomPolicy(sticky=False, seed=5)
    p.reset(v)
    first = p.decide(v).node_job
    p.reset(v)
    assert np.array_equal(p.decide(v).node_job, first)  # reset restarts the draws
    assert not np.array_equal(RandomPolicy(seed=6).decide(v).node_job, a)
    assert sorted(len(s) for s in sets(a).values()) == [3, 5]


def test_placers__give_each_job_exactly_its_count():
    inst = instance(outlier_cluster(), [(A, 4, 0.0), (D, 4, 0.0), (B, 1, 0.0)])
    v = view_of(inst)
    for placer in (PALPlacer(), PMFirstPlacer()):
        a = placer.place(v, np.array([1, 0, 2]), np.array([3, 6, 0]))
        assert np.bincount(a[a >= 0], minlength=3).tolist() == [6, 3, 0]
        assert a[0] != 0  # class A never gets the outlier while fast units are left
        with pytest.raises(ValueError, match="only 16"):
            placer.place(v, np.array([0, 1]), np.array([10, 7]))


# -- rollouts -----------------------------------------------------------------------------------
# checked_rollout decides at every event: the round policies run event-driven here (with
# rounds, an event driver may leave them waiting for an event that never comes; rounds are
# checked through play below)
POLICIES = [
    lambda: PALPolicy(round_s=None),
    lambda: PALPolicy("las", round_s=None),
    lambda: PMFirstPolicy("srtf", round_s=None),
    lambda: PackedPolicy(sticky=True),
    lambda: PackedPolicy(sticky=False, order="las"),
    lambda: RandomPolicy(sticky=True, seed=1),
    lambda: RandomPolicy(sticky=False, seed=2, order="srtf"),
]


@pytest.mark.parametrize("make", POLICIES)
def test_policies__keep_invariants_on_a_tiny_instance(make):
    jobs = [(A, 2, 0.0), (D, 4, 0.0), (B, 3, 5.0), (C, 1, 7.0), (A, 6, 9.0), (D, 1, 9.0)]
    rows = [
        linear_job(f"j{i}", 2.0, g, 500.0 * (i + 1), min_nodes=g, submit_s=s, app_class=c)
        for i, (c, g, s) in enumerate(jobs)
    ]
    inst = tiny_instance(
        8,
        rows,
        group_size=4,
        slowdown=outlier_cluster()[:8] + 0.01 * np.arange(8)[:, None],
        locality_factor=LAMBDA,
        windows=[(n, 0.0, 400.0) for n in range(8)]
        + [(n, 600.0, 1e6) for n in range(8)]
        + [(1, 400.0, 450.0)],
    )
    traj = checked_rollout(inst, make())
    assert traj[-1][1].all_done


@pytest.fixture(scope="module")
def philly20(shared_data):
    return PALPhilly(
        shared_data / "pal-philly" / "workload-1.csv",
        shared_data / "gpu-variability" / "sim",
        max_jobs=20,
    )(0)


@pytest.mark.parametrize("make", POLICIES)
def test_policies__keep_invariants_on_pal_philly(philly20, make):
    traj = checked_rollout(philly20, make())
    assert traj[-1][1].all_done


@pytest.mark.parametrize("make", [lambda: PALPolicy(), lambda: PMFirstPolicy("las")])
def test_round_policies__keep_invariants_on_pal_philly_with_360s_rounds(philly20, make):
    res = play(philly20, make(), debug=True)  # every invariant after each step
    assert res.metrics.jobs_completed == philly20.num_jobs
    assert res.decisions <= np.ceil(res.metrics.duration_s / 360.0) + 1


def test_reduced_sia_philly__pal_and_pm_first_beat_packed_non_sticky(shared_data):
    inst = PALPhilly(
        shared_data / "pal-philly" / "workload-1.csv",
        shared_data / "gpu-variability" / "sim",
        max_jobs=40,
    )(0)
    jct = {
        name: play(inst, pol, decision_interval_s=360).metrics.jct_mean
        for name, pol in {
            "pal": PALPolicy(),
            "pm-first": PMFirstPolicy(),
            "packed-ns": PackedPolicy(sticky=False),
        }.items()
    }
    assert jct["pal"] < jct["packed-ns"]
    assert jct["pm-first"] < jct["packed-ns"]


# -- rounds, as in PAL's simulator -----------------------------------------------------------
class Recorder:
    """Wraps a policy; records (time, allocation asked, standing allocation) per decide."""

    def __init__(self, policy):
        self.policy, self.calls = policy, []
        self.name, self.info_mode = policy.name, policy.info_mode

    @property
    def round_s(self):
        return self.policy.round_s

    def reset(self, view):
        self.policy.reset(view)

    def decide(self, view):
        a = self.policy.decide(view)
        standing = np.where(view.available, view.node_job, -1)
        self.calls.append((view.time, a.node_job.copy(), standing))
        return a


def churn_instance():
    """Arrivals, completions and node departures at instants off a 100 s grid."""
    jobs = [(A, 2, 0.0), (D, 4, 5.0), (B, 3, 37.0), (C, 1, 130.0), (A, 2, 251.0), (D, 1, 333.0)]
    rows = [
        linear_job(f"j{i}", 2.0, g, 300.0 * (i + 1), min_nodes=g, submit_s=s, app_class=c)
        for i, (c, g, s) in enumerate(jobs)
    ]
    return tiny_instance(
        8,
        rows,
        group_size=4,
        slowdown=outlier_cluster()[:8] + 0.01 * np.arange(8)[:, None],
        locality_factor=LAMBDA,
        windows=[(n, 0.0, 170.0) for n in range(4)]
        + [(n, 0.0, 1e5) for n in range(4, 8)]
        + [(n, 220.0, 1e5) for n in range(4)],
        t_end=1e5,
    )


@pytest.mark.parametrize("cls", [PALPolicy, PMFirstPolicy])
def test_round_policies__play_decides_on_the_round_grid_only(cls):
    inst = churn_instance()
    rec = Recorder(cls(round_s=100.0))
    res = play(inst, rec)
    times = np.array([t for t, _, _ in rec.calls])
    assert np.allclose(times / 100.0, np.round(times / 100.0))  # 0, 100, 200, ...
    assert res.metrics.jobs_completed == inst.num_jobs
    assert cls().round_s == 360.0  # PAL's Sia-Philly round by default


@pytest.mark.parametrize("cls", [PALPolicy, PMFirstPolicy])
def test_round_policies__keep_the_allocation_between_rounds_under_an_event_driver(cls):
    inst = churn_instance()
    rec = Recorder(cls(round_s=100.0))
    traj = checked_rollout(inst, rec)  # calls decide at every event
    assert traj[-1][1].all_done
    k_next, changed_on_grid = 0, 0
    for t, asked, standing in rec.calls:
        if t / 100.0 >= k_next - 1e-9:  # a new round: the policy may re-place
            changed_on_grid += not np.array_equal(asked, standing)
            k_next = int(np.floor(t / 100.0 + 1e-9)) + 1
        else:  # inside a round: exactly the standing allocation
            assert np.array_equal(asked, standing), t
    assert changed_on_grid >= 2
    assert any(t % 100.0 for t, _, _ in rec.calls)  # the driver did call off the grid


def test_round_policies__round_s_none_replaces_at_every_call_and_bad_values_fail():
    inst = churn_instance()
    rec = Recorder(PALPolicy(round_s=None))
    play(inst, rec)
    assert any(t % 100.0 for t, _, _ in rec.calls)  # event-driven: decides off any grid
    for bad in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="round_s"):
            PALPolicy(round_s=bad)
