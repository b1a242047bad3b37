"""MalleTrain experiment: policy options on tiny instances, workloads, declarations, a tiny run."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from baselines.milp.freetrain import FreeTrainPolicy
from baselines.milp.malletrain import MalleTrainPolicy
from mtgym.core.instance import CostModel
from mtgym.core.types import AppClass
from mtgym.generate.workload import JobRow
from mtgym.policy.play import play
from mtgym.reproduce import malletrain as mt
from mtgym.reproduce import malletrain_run as run_mod
from mtgym.reproduce.common import NOT_REPRODUCED, REPRODUCED, ROW_KEYS
from mtgym.reproduce.malletrain_analyse import Gain, reading
from mtgym.reproduce.malletrain_campaigns import CampaignSizes
from mtgym.sim.dynamics import initial_state
from mtgym.sim.view import InfoMode, ViewBuilder
from mtgym.testing import linear_job, tiny_instance


def sublinear_job(name: str, max_nodes: int, work: float, **kw) -> JobRow:
    """Rate 100 n^0.7: strongly sublinear."""
    n = np.arange(max_nodes + 1, dtype=np.float64)
    return JobRow(
        name=name,
        model="sub",
        app_class=AppClass.D,
        submit_s=kw.pop("submit_s", 0.0),
        min_nodes=1,
        max_nodes=max_nodes,
        work=work,
        curve_nodes=n,
        curve_tput=100.0 * n**0.7,
        **kw,
    )


def sizes_seen(inst, pol, dt=10.0) -> list[int]:
    out: list[int] = []
    play(inst, pol, decision_interval_s=dt, on_step=lambda s, i: out.append(int(s.n_nodes[0])))
    return out


def test_main_branch_malletrain_never_probes_and_starts_from_declarations():
    rows = [sublinear_job("a", 8, 1e9, r_up_s=5.0, r_down_s=3.0)]
    inst = tiny_instance(8, rows, t_end=2000.0)
    main = MalleTrainPolicy(prior="declared", probe=False)
    assert main.info_mode is InfoMode.USER
    sizes = sizes_seen(inst, main)
    assert main.probes_issued == 0
    assert main.jobs[0].probes == [] and main.jobs[0].probing is None
    # the declared (true) curve rises to 8 nodes: it takes all 8 from the start, no probe
    assert sizes[0] == 8 and set(sizes) - {0} == {8}  # 0: the windows close at the end
    # the paper-style JPA probes the same job at 8, 4, 2, 1 first
    paper = MalleTrainPolicy(probe_s=30.0)
    seen = sizes_seen(inst, paper)
    assert paper.probes_issued >= 4
    firsts = [k for i, k in enumerate(seen) if i == 0 or seen[i - 1] != k]
    assert firsts[:4] == [8, 4, 2, 1]


def test_main_branch_merges_measurements_into_declared_curve_and_costs():
    # declared curve twice the truth: measured points overwrite it where the job ran
    rows = [linear_job("a", 100.0, 4, 1e9, r_up_s=9.0, r_down_s=4.0)]
    inst = tiny_instance(4, rows, t_end=1000.0)
    inst = replace(inst, jobs=replace(inst.jobs, declared_curve_tput=inst.jobs.curve_tput * 2))
    pol = MalleTrainPolicy(prior="declared", probe=False)
    play(inst, pol, decision_interval_s=50.0)
    view = ViewBuilder(inst, pol.info_mode)(initial_state(inst))
    xs, ys = pol._curve(0, view)
    assert pol.jobs[0].measured[4] == pytest.approx(400.0)
    assert ys[xs == 4][0] == pytest.approx(400.0)  # measured overwrites declared 800
    assert ys[xs == 2][0] == pytest.approx(400.0)  # declared 2 x 200 kept
    assert pol._cost(0, "up", view) == pytest.approx(9.0)  # declared, never measured


def test_probes_do_not_cap_growth_when_uncapped():
    # probes at 2 and 1 node only (fractions 1/4, 1/8 of 8); 8 idle nodes
    rows = [sublinear_job("a", 8, 1e9)]
    inst = tiny_instance(8, rows, t_end=3000.0)
    capped = MalleTrainPolicy(probe_fractions=(0.25, 0.125), probe_s=20.0)
    uncapped = MalleTrainPolicy(probe_fractions=(0.25, 0.125), probe_s=20.0, cap_at_measured=False)
    s_cap = sizes_seen(inst, capped)
    s_unc = sizes_seen(inst, uncapped)
    assert max(s_cap) == 2  # never past the largest probed size
    assert max(s_unc) == 8  # grows to its maximum, then measures the truth there
    assert uncapped.jobs[0].measured[8] == pytest.approx(100.0 * 8**0.7)

    def samples(p):
        return play(inst, p, decision_interval_s=10.0).metrics.samples

    assert samples(uncapped) > samples(capped)


def test_option_defaults_and_bad_values():
    with pytest.raises(ValueError, match="probe=False needs prior"):
        MalleTrainPolicy(probe=False)
    with pytest.raises(ValueError, match="prior"):
        MalleTrainPolicy(prior="oracle")
    with pytest.raises(ValueError, match="information"):
        FreeTrainPolicy(information="some")
    with pytest.raises(ValueError, match="guess_rate"):
        FreeTrainPolicy(information="none", guess_rate=0.0)
    assert MalleTrainPolicy().info_mode is InfoMode.PROFILED
    assert FreeTrainPolicy().info_mode is InfoMode.USER


def test_no_information_freetrain_declares_a_flat_linear_guess():
    rows = [
        sublinear_job("a", 4, 1e9, r_up_s=30.0, r_down_s=20.0),
        linear_job("b", 7.0, 6, 1e9, r_up_s=1.0),
    ]
    inst = tiny_instance(8, rows, t_end=500.0, costs=CostModel())
    pol = FreeTrainPolicy(information="none", guess_cost_s=15.0)
    assert pol.info_mode is InfoMode.PROFILED  # it cannot see declarations
    view = ViewBuilder(inst, pol.info_mode)(initial_state(inst))
    assert np.all(np.isnan(view.curve_tput))
    p = pol.problem(view)
    for j, jmax in enumerate((4, 6)):
        assert p.bp_nodes[j].tolist() == [0.0, float(jmax)]
        assert p.bp_obj[j].tolist() == [0.0, float(jmax)]  # one common rate: 1 per node
    assert p.r_up.tolist() == [15.0, 15.0] and p.r_down.tolist() == [15.0, 15.0]
    # the rate cancels out: a different common rate allocates the same way
    a = play(inst, FreeTrainPolicy(information="none")).metrics.samples
    b = play(inst, FreeTrainPolicy(information="none", guess_rate=123.0)).metrics.samples
    assert a == b


TINY = mt.Sizes(
    seeds=(0, 1),
    workloads=("nas", "hpo", "imagenet"),
    campaign=CampaignSizes(trials=6, interarrival_s=60.0, work_hours=(0.2, 0.4)),
    campaign_horizon_s=1800.0,
    jobs=8,
    horizon_s=1800.0,
)


def test_imagenet_declarations_change_only_declarations(shared_data):
    d = str(shared_data)
    exact = mt.instance(d, TINY, "imagenet", 0, "exact")
    truth = exact.jobs
    # the measured table is the truth, and what a user measures offline
    assert np.array_equal(truth.declared_curve_tput, truth.curve_tput)
    off = mt.instance(d, TINY, "imagenet", 0, "offline").jobs
    assert np.array_equal(off.declared_curve_tput, truth.curve_tput)
    assert np.array_equal(off.declared_r_up_s, truth.r_up_s)
    lin = mt.instance(d, TINY, "imagenet", 0, "linear").jobs
    assert np.allclose(lin.declared_curve_tput, truth.curve_nodes * truth.curve_tput[:, 1:2])
    none = mt.instance(d, TINY, "imagenet", 0, "none").jobs
    per_node = none.declared_curve_tput[:, 1]
    assert np.all(per_node == per_node[0])  # one rate for every job
    assert np.all(none.declared_r_up_s == 15.0)
    noisy = mt.instance(d, TINY, "imagenet", 0, "noise1").jobs
    ratio = noisy.declared_curve_tput[:, 1:] / truth.curve_tput[:, 1:]
    assert np.std(np.log(ratio)) == pytest.approx(1.0, abs=0.25)
    for j in (lin, none, noisy):
        assert np.array_equal(j.curve_tput, truth.curve_tput)  # the truth never changes
    # BFTrainer's ImageNet curves are sublinear at their largest count
    eff = truth.curve_tput[:, -1] / (truth.curve_nodes[:, -1] * truth.curve_tput[:, 1])
    assert eff.max() < 0.95
    # seeds differ in start and job draw; a seed is deterministic
    other = mt.instance(d, TINY, "imagenet", 1, "exact")
    assert other.t_start != exact.t_start
    again = mt.instance(d, TINY, "imagenet", 0, "exact")
    assert again.t_start == exact.t_start and again.jobs.name == exact.jobs.name
    with pytest.raises(ValueError, match="declaration 'typo'"):
        mt.instance(d, TINY, "imagenet", 0, "typo")
    with pytest.raises(ValueError, match="does not apply"):
        mt.instance(d, TINY, "imagenet", 0, "family")


def test_campaign_trials_differ_in_scaling_and_declarations_differ_from_truth(shared_data):
    d = str(shared_data)
    for wl in ("nas", "hpo"):
        t = run_mod.truth(d, TINY, wl, 0)
        jobs = t.instance.jobs
        assert jobs.num_jobs == 2 * TINY.campaign.trials
        assert set(jobs.campaign.tolist()) == {0, 1}
        assert np.all(np.isfinite(jobs.rungs[:, :2]))  # successive-halving rungs
        # trials arrive as the searches generate them
        assert np.allclose(np.diff(jobs.submit_s[::2]), TINY.campaign.interarrival_s)
        eff = np.array(run_mod.efficiency_at(t.instance, 8.0))
        assert eff.max() - eff.min() > 0.05  # scaling differs by configuration
        off = mt.instance(d, TINY, wl, 0, "offline").jobs
        ex = mt.instance(d, TINY, wl, 0, "exact").jobs
        fam = mt.instance(d, TINY, wl, 0, "family").jobs
        assert np.array_equal(off.declared_curve_tput, jobs.curve_tput)
        m = jobs.curve_nodes > 1
        # the runtime truth (variability, scattered nodes) is below the offline curve
        assert np.all(ex.declared_curve_tput[m] <= off.declared_curve_tput[m] * (1 + 1e-9))
        assert np.any(ex.declared_curve_tput[m] < 0.99 * off.declared_curve_tput[m])
        # the family curve is one curve per campaign model (up to the padding)
        for c in (0, 1):
            rows = fam.declared_curve_tput[jobs.campaign == c]
            assert np.allclose(rows, rows[0])
        assert not np.allclose(fam.declared_curve_tput, off.declared_curve_tput)
        ex_i = mt.instance(d, TINY, wl, 0, "exact")
        assert run_mod.declaration_error(ex_i, t.exact) == 0.0
        assert run_mod.declaration_error(mt.instance(d, TINY, wl, 0, "offline"), t.exact) > 0.0


def test_hps_profile_fits_bftrainers_shufflenet_curve(shared_data):
    from mtgym.readers import read_bftrainer_jobs
    from mtgym.reproduce.malletrain_campaigns import _formula, hps_shufflenet

    p = hps_shufflenet(str(shared_data))
    t = read_bftrainer_jobs(shared_data / "bftrainer-hps-shufflenet-1000j.csv")
    n = t.curve_nodes.astype(float)
    y = np.asarray(t.curve_tput[0], dtype=float)
    keep = n > 0
    fit = _formula(n[keep], p.rate_per_gpu["V100"], p.grad_bytes, p.local_batch, p.overlap)
    assert np.max(np.abs(np.log(fit / y[keep]))) < 0.1


def test_gain_verdict_needs_an_interval_above_zero():
    g = lambda m, lo, hi: Gain("nas", "none", m, lo, hi, (m,), 10)  # noqa: E731
    assert g(0.22, 0.10, 0.30).verdict == REPRODUCED
    assert g(0.05, 0.01, 0.09).verdict == REPRODUCED  # size does not enter the verdict
    assert g(0.22, -0.01, 0.40).verdict == NOT_REPRODUCED  # interval includes 0
    assert g(-0.10, -0.2, -0.05).verdict == NOT_REPRODUCED
    assert g(-0.10, -0.2, -0.05).worse and not g(0.22, -0.01, 0.4).worse
    # a reading is reproduced when one of its campaign cells is
    table = [g(0.1, 0.02, 0.2), Gain("hpo", "none", -0.1, -0.2, 0.1, (0.0,), 10)]
    assert reading(table, "a")[0] == REPRODUCED
    assert reading([table[1]], "a")[0] == NOT_REPRODUCED


def test_tiny_run_reports_headline_readings_and_every_cell(shared_data, tmp_path, monkeypatch):
    monkeypatch.setattr(mt, "QUICK", TINY)
    res = mt.run(shared_data, tmp_path, quick=True, workers=1, progress=False)
    rows = [r.as_dict() for r in res.rows]
    assert all(tuple(r) == ROW_KEYS for r in rows)
    heads = [r for r in rows if r["metric"].startswith("HEADLINE")]
    assert [h["metric"][:12] for h in heads] == ["HEADLINE (a)", "HEADLINE (b)"]
    assert all("without requiring users" in h["note"] for h in heads)
    n_cells = 3 * len(mt.DECLARATIONS) - 1  # no family on ImageNet
    assert len(res.raw["gains"]) == n_cells
    for gd in res.raw["gains"]:
        assert gd["n"] == 2 and gd["ci_low"] <= gd["gain"] <= gd["ci_high"]
        assert gd["verdict"] in (REPRODUCED, NOT_REPRODUCED)
    eps = res.raw["episodes"]
    assert len(eps) == 2 * (3 + n_cells)  # per seed: MalleTrain per workload + the cells
    assert all(e["probes"] > 0 for e in eps if e["policy"] == "malletrain")
    # campaigns are judged in best-node equivalents, the ImageNet replay in samples/s
    for e in eps:
        key = "throughput" if e["workload"] == "imagenet" else "normalized_throughput"
        assert e["value"] == e["metrics"][key]
    assert set(res.raw["diagnostics"]) == {"nas", "hpo", "imagenet"}
    lin = res.raw["imagenet_efficiency_at_64"]
    assert lin["AlexNet"] == pytest.approx(0.444, abs=0.001)
    assert (tmp_path / "malletrain_gain.png").exists()
    assert "Are BFTrainer's ImageNet curves close to linear?" in res.sections[0]
    with pytest.raises(ValueError, match="--seeds"):
        mt.sizes_for(True, 1)
