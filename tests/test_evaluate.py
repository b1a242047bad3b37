"""mtgym evaluate: same seeds for every policy, results.json keys, TensorBoard tags."""

from __future__ import annotations

import json

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from mtgym.cli import main
from mtgym.evaluate import RESULT_KEYS, TAGS


def test_evaluate__writes_results_and_shared_tags(tmp_path, capsys):
    out = tmp_path / "ev"
    code = main(
        [
            "evaluate",
            "--scenario",
            "toy-two-jobs",
            "--policy",
            "equal-share",
            "--policy",
            "freetrain",
            "--policy",
            "greedy",
            "--seeds",
            "2",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    res = json.loads((out / "results.json").read_text())
    assert res["seeds"] == [0, 1] and set(res["policies"]) == {"equal-share", "freetrain", "greedy"}
    for entry in res["policies"].values():
        assert set(RESULT_KEYS) <= set(entry) and len(entry["per_seed"]) == 2
    # the toy's optimum (100 N horizon) is reached by the MILP and greedy, not by equal share
    assert res["policies"]["freetrain"]["samples"] == pytest.approx(100 * 4 * 3600.0)
    assert res["policies"]["equal-share"]["samples"] == pytest.approx(100 * 3 * 3600.0)
    for name in res["policies"]:
        acc = EventAccumulator(str(out / "tb" / name))
        acc.Reload()
        tags = set(acc.Tags()["scalars"])
        # (no job completes in this toy, so there is no JCT to log: NaNs are not written)
        assert {
            TAGS[k]
            for k in (
                "throughput",
                "utilisation",
                "upper_bound_fraction",
                "decision_ms",
                "rescales",
            )
        } <= tags
        assert len(acc.Scalars("eval/throughput")) == 2
    assert "freetrain" in capsys.readouterr().out


def test_evaluate__unknown_policy_fails_before_simulating(capsys):
    assert main(["evaluate", "--policy", "nope", "--seeds", "1", "--no-progress"]) == 2
    assert "unknown policy 'nope'" in capsys.readouterr().err


def test_evaluate__jct_and_makespan_tags_when_jobs_complete(tmp_path):
    out = tmp_path / "ev"
    assert (
        main(
            [
                "evaluate",
                "--scenario",
                "toy-linear",
                "--policy",
                "greedy",
                "--seeds",
                "1",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    acc = EventAccumulator(str(out / "tb" / "greedy"))
    acc.Reload()
    assert acc.Scalars("eval/jct_mean")[0].value == pytest.approx(3000.0)
    assert acc.Scalars("eval/makespan")[0].value == pytest.approx(3000.0)


# -- statistics, common metrics, TensorBoard summaries and hparams ------------------------
def _evaluate_toy(out, *extra):
    return main(
        [
            "evaluate",
            "--scenario",
            "toy-linear",
            "--policy",
            "greedy",
            "--policy",
            "equal-share",
            "--policy",
            "freetrain",
            "--seed",
            "3",
            "--seeds",
            "3",
            "--out",
            str(out),
            "--no-progress",
            *extra,
        ]
    )


def test_evaluate__results_have_intervals_and_paired_differences(tmp_path, capsys):
    import numpy as np

    out = tmp_path / "ev"
    assert _evaluate_toy(out) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["reference"] == "freetrain"  # the default when it is compared
    assert res["ci"]["level"] == 0.95 and res["ci"]["n_boot"] > 1000
    for entry in res["policies"].values():
        assert set(RESULT_KEYS) <= set(entry["ci_low"]) == set(entry["ci_high"])
        assert set(RESULT_KEYS) <= set(entry["paired"])
        for k in ("throughput", "samples", "makespan"):
            lo, hi = entry["ci_low"][k], entry["ci_high"][k]
            assert lo <= entry[k] <= hi
        ref = res["policies"]["freetrain"]["per_seed"]
        for k in ("throughput", "makespan", "jct_common_mean"):
            p = entry["paired"][k]
            diffs = [a[k] - b[k] for a, b in zip(entry["per_seed"], ref, strict=True)]
            assert p["reference"] == "freetrain" and p["n"] == 3
            assert p["diff"] == pytest.approx(np.mean(diffs))
            assert p["diff_ci_low"] <= p["diff"] <= p["diff_ci_high"]
        for row in entry["per_seed"]:
            assert len(row["job_finish_s"]) == len(row["job_submit_s"]) > 0
            assert row["makespan_censored"] in (0.0, 1.0) and row["makespan"] > 0
    fr = res["policies"]["freetrain"]["paired"]["throughput"]
    assert fr["diff"] == 0.0 and fr["ratio"] == 1.0
    # the common jobs are completed by every policy: the same count for all, per seed
    common = {tuple(r["jobs_common"] for r in e["per_seed"]) for e in res["policies"].values()}
    assert len(common) == 1
    printed = capsys.readouterr().out
    assert "95 % bootstrap interval" in printed and "paired against freetrain" in printed


def test_evaluate__tensorboard_steps_summaries_and_hparams(tmp_path):
    from tensorboard.plugins.hparams import plugin_data_pb2

    out = tmp_path / "ev"
    assert _evaluate_toy(out, "--reference", "greedy") == 0
    res = json.loads((out / "results.json").read_text())
    assert res["reference"] == "greedy"
    for name, entry in res["policies"].items():
        acc = EventAccumulator(str(out / "tb" / name))
        acc.Reload()
        # one eval/* point per seed, the step is the seed number
        assert [e.step for e in acc.Scalars("eval/throughput")] == [3, 4, 5]
        assert [e.value for e in acc.Scalars("eval/makespan")] == pytest.approx(
            [r["makespan"] for r in entry["per_seed"]]
        )
        # one summary scalar per metric: the mean over seeds
        for key in ("throughput", "makespan", "jobs_completed", "jct_common_mean"):
            (ev,) = acc.Scalars(f"eval_mean/{key}")
            assert ev.value == pytest.approx(entry[key], rel=1e-6)
        content = acc.PluginTagToContent("hparams")
        start = [
            plugin_data_pb2.HParamsPluginData.FromString(c).session_start_info
            for c in content.values()
        ]
        hp = [s.hparams for s in start if s.hparams]
        assert hp and hp[0]["policy"].string_value == name
        assert hp[0]["reference"].string_value == "greedy"
        exp = [plugin_data_pb2.HParamsPluginData.FromString(c).experiment for c in content.values()]
        metrics = {m.name.tag for e in exp for m in e.metric_infos}
        assert "eval_mean/throughput" in metrics


def test_evaluate__unknown_reference_fails_before_simulating(capsys):
    args = ["evaluate", "--scenario", "toy-linear", "--policy", "greedy", "--reference", "pal"]
    code = main([*args, "--seeds", "1", "--no-progress"])
    assert code == 2
    assert "reference 'pal' is not among the compared policies: greedy" in capsys.readouterr().err


# -- scenario defaults: FreeTrain's T_fwd --------------------------------------------------
TINY = """
name: tiny-tfwd
generator:
  kind: synthetic
  cluster:
    num_nodes: 8
    gpus_per_node: 1
    levels:
      - {name: node, bandwidth_gbps: 100.0, latency_s: 0.0}
      - {name: group, group_size: 4, bandwidth_gbps: 25.0, latency_s: 0.0}
      - {name: system, bandwidth_gbps: 10.0, latency_s: 0.0}
  supply: {kind: always-idle}
  workload: {kind: mix, num_jobs: 3, arrival_rate_per_h: 20.0, work_hours: [0.1, 0.2]}
  horizon_s: 1800.0
episode: {t_fwd_s: 42.0}
"""


def test_freetrain__takes_t_fwd_from_the_scenario_unless_given(tmp_path):
    from baselines.milp.freetrain import FreeTrainPolicy, FreeTrainTfwd10
    from baselines.milp.malletrain import MalleTrainPolicy
    from mtgym.evaluate import evaluate
    from mtgym.scenario.registry import get_generator
    from mtgym.sim.dynamics import initial_state
    from mtgym.sim.view import ViewBuilder

    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    gen = get_generator(str(path))
    built = {}

    def keep(name, factory):
        def make():
            built[name] = factory()
            return built[name]

        return name, make

    evaluate(
        gen,
        [
            keep("freetrain", FreeTrainPolicy),
            keep("freetrain-tfwd10", FreeTrainTfwd10),
            keep("freetrain-t7", lambda: FreeTrainPolicy(t_fwd=7.0)),
            keep("malletrain", MalleTrainPolicy),
        ],
        [0],
        progress=False,
    )
    assert built["freetrain"].t_fwd == 42.0
    assert built["freetrain-tfwd10"].t_fwd == 10.0 and built["freetrain-tfwd10"].name == (
        "freetrain-tfwd10"
    )
    assert built["freetrain-t7"].t_fwd == 7.0  # an explicit value wins
    assert built["malletrain"].t_fwd == 42.0
    inst = gen(0)
    view = ViewBuilder(inst, built["freetrain"].info_mode)(initial_state(inst))
    assert built["freetrain"].problem(view).t_fwd == 42.0  # what the DP optimises with
    assert FreeTrainPolicy().t_fwd == 10.0  # no driver told it: the paper's value


def test_scenario_defaults__default_takes_the_swept_t_fwd_of_its_preset():
    from mtgym.evaluate import scenario_defaults
    from mtgym.scenario.load import load_scenario
    from mtgym.scenario.registry import PRESETS_DIR, get_generator
    from mtgym.scenario.schema import EpisodeSpec

    preset = load_scenario(PRESETS_DIR / "default.yaml").episode.t_fwd_s
    assert scenario_defaults(get_generator("default")).t_fwd_s == preset
    assert preset != EpisodeSpec().t_fwd_s == 10.0  # chosen by scripts/sweep_tfwd.py
    assert scenario_defaults(get_generator("toy-linear")) == EpisodeSpec()


def test_pyproject__registers_freetrain_tfwd10():
    import tomllib
    from pathlib import Path

    py = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    eps = py["project"]["entry-points"]["mtgym.policies"]
    assert eps["freetrain-tfwd10"] == "baselines.milp.freetrain:FreeTrainTfwd10"
