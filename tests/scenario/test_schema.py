"""Scenario files: 30+ malformed files rejected with the field, the value and what is allowed."""

from __future__ import annotations

import textwrap

import pytest

from mtgym.cli import main
from mtgym.scenario import ScenarioError, load_scenario

GOOD = """
name: ok
generator:
  kind: synthetic
  cluster:
    num_nodes: 8
    levels:
      - {name: node, bandwidth_gbps: 100, latency_s: 1.0e-6}
      - {name: group, group_size: 4, bandwidth_gbps: 20, latency_s: 2.0e-6}
      - {name: system, bandwidth_gbps: 10, latency_s: 5.0e-6}
  workload: {kind: mix, num_jobs: 3}
  horizon_s: 3600
"""


def edit(path: str, value: str) -> str:
    """GOOD with one line replaced (by its key path) or extra lines appended."""
    return GOOD.replace(path, value)


CASES = [
    # (file text, substring the error must contain)
    ("", "top level must be a mapping"),
    ("- a\n- b\n", "top level must be a mapping"),
    ("name: [unclosed\n", "not valid YAML"),
    (GOOD.replace("name: ok", "name: 'has space'"), "name: String should match pattern"),
    (GOOD.replace("name: ok\n", ""), "name: Field required"),
    (GOOD.replace("kind: synthetic", "kind: simulated"), "does not match any of the expected tags"),
    (
        GOOD.replace("num_nodes: 8", "num_nodes: 0"),
        "cluster.num_nodes: Input should be greater than or equal to 1; got 0",
    ),
    (
        GOOD.replace("num_nodes: 8", "num_nodes: eight"),
        "num_nodes: Input should be a valid integer",
    ),
    (GOOD.replace("num_nodes: 8", "num_nodes: 8.5"), "num_nodes: Input should be a valid integer"),
    (
        GOOD.replace("bandwidth_gbps: 100", "bandwidth_gbps: 0"),
        "bandwidth_gbps: Input should be greater than 0; got 0",
    ),
    (
        GOOD.replace("latency_s: 1.0e-6}", "latency_s: -1}"),
        "latency_s: Input should be greater than or equal to 0; got -1",
    ),
    (
        GOOD.replace("group_size: 4", "group_size: 0"),
        "group_size: Input should be greater than or equal to 1; got 0",
    ),
    (GOOD.replace("{name: group, group_size: 4,", "{name: group,"), "needs group_size"),
    (GOOD.replace("{name: system,", "{name: system, group_size: 8,"), "take no group_size"),
    (
        GOOD.replace(
            "      - {name: group, group_size: 4, bandwidth_gbps: 20, latency_s: 2.0e-6}\n", ""
        ),
        "levels: List should have at least 3 items",
    ),
    (
        GOOD.replace(
            "      - {name: group, group_size: 4, bandwidth_gbps: 20, latency_s: 2.0e-6}\n",
            "      - {name: group, group_size: 4, bandwidth_gbps: 20, latency_s: 2.0e-6}\n      - {name: row, group_size: 6, bandwidth_gbps: 20, latency_s: 2.0e-6}\n",
        ),
        "not a multiple of 4",
    ),
    (
        GOOD.replace("latency_s: 2.0e-6}", "latency_s: 2.0e-6, locality_factor: 0.5}"),
        "locality_factor: Input should be greater than or equal to 1",
    ),
    (
        GOOD.replace("num_nodes: 8", "num_nodes: 8\n    group_types: [3]"),
        "group_types: indices must be in 0..0",
    ),
    (
        GOOD.replace("num_nodes: 8", "num_nodes: 8\n    gpu_types: []"),
        "gpu_types: List should have at least 1 item",
    ),
    (
        GOOD.replace("num_nodes: 8", "num_nodes: 8\n    variability: {kind: parametric}"),
        "kind 'parametric' needs 'classes'",
    ),
    (
        GOOD.replace("num_nodes: 8", "num_nodes: 8\n    variability: {kind: measured}"),
        "kind 'measured' needs 'measured'",
    ),
    (
        GOOD.replace("num_nodes: 8", "num_nodes: 8\n    variability: {profile_noise: 0.9}"),
        "profile_noise: Input should be less than 0.5",
    ),
    (
        GOOD.replace("num_nodes: 8", "num_nodes: 8\n    variability: {classes: {E: {sigma: 0.1}}}"),
        "Input should be 'A', 'B', 'C' or 'D'",
    ),
    (
        GOOD.replace(
            "horizon_s: 3600", "horizon_s: 3600\n  supply: {kind: synthetic, idle_fraction: 1.5}"
        ),
        "idle_fraction: Input should be less than 1; got 1.5",
    ),
    (
        GOOD.replace(
            "horizon_s: 3600",
            "horizon_s: 3600\n  supply: {kind: synthetic, window_median_s: 2000, window_mean_s: 1000}",
        ),
        "window_median_s must be <= window_mean_s",
    ),
    (
        GOOD.replace("horizon_s: 3600", "horizon_s: 3600\n  supply: {kind: trace}"),
        "path: Field required",
    ),
    (
        GOOD.replace(
            "horizon_s: 3600",
            "horizon_s: 3600\n  supply: {kind: swf, path: x.swf, procs_per_node: 0}",
        ),
        "procs_per_node: Input should be greater than or equal to 1",
    ),
    (
        GOOD.replace("horizon_s: 3600", "horizon_s: 3600\n  supply: {kind: magic}"),
        "does not match any of the expected tags",
    ),
    (
        GOOD.replace("num_jobs: 3}", "num_jobs: -1}"),
        "num_jobs: Input should be greater than or equal to 0; got -1",
    ),
    (
        GOOD.replace("num_jobs: 3}", "num_jobs: 3, work_hours: [2, 1]}"),
        "work_hours: low 2.0 > high 1.0",
    ),
    (
        GOOD.replace("num_jobs: 3}", "num_jobs: 3, models: {resnet50: -1}}"),
        "Input should be greater than 0",
    ),
    (
        GOOD.replace("num_jobs: 3}", "num_jobs: 3, min_nodes: []}"),
        "min_nodes: List should have at least 1 item",
    ),
    (
        GOOD.replace(
            "horizon_s: 3600", "horizon_s: 3600\n  campaigns: [{kind: hpo, rungs: [0.5, 0.2]}]"
        ),
        "rungs must increase",
    ),
    (
        GOOD.replace(
            "horizon_s: 3600", "horizon_s: 3600\n  campaigns: [{kind: hpo, rungs: [1.5]}]"
        ),
        "Input should be less than 1",
    ),
    (
        GOOD.replace(
            "horizon_s: 3600",
            "horizon_s: 3600\n  campaigns: [{kind: hpo, min_nodes: 4, max_nodes: 2}]",
        ),
        "min_nodes 4 must be <= max_nodes 2",
    ),
    (
        GOOD.replace("horizon_s: 3600", "horizon_s: 3600\n  campaigns: [{kind: tuning}]"),
        "Input should be 'hpo' or 'nas'",
    ),
    (
        GOOD.replace("horizon_s: 3600", "horizon_s: 3600\n  costs: {rescale: free}"),
        "Input should be 'pause' or 'bftrainer'",
    ),
    (
        GOOD.replace("horizon_s: 3600", "horizon_s: 3600\n  declaration: {curve_bias: 0}"),
        "curve_bias: Input should be greater than 0",
    ),
    (
        GOOD.replace("horizon_s: 3600", "horizon_s: -5"),
        "horizon_s: Input should be greater than or equal to 1; got -5",
    ),
    (
        GOOD + "episode: {reward: money}\n",
        "episode.reward: Input should be 'progress', 'throughput', 'jct' or 'normalized'",
    ),
    (
        GOOD + "episode: {max_jobs: 0}\n",
        "episode.max_jobs: Input should be greater than or equal to 1",
    ),
    (
        GOOD + "episode: {decision_interval_s: 0}\n",
        "decision_interval_s: Input should be greater than or equal to 0.001",
    ),
    (
        GOOD + "extra_top_level: 1\n",
        "extra_top_level: unknown field (remove it or check its spelling)",
    ),
    (
        GOOD.replace("num_nodes: 8", "num_nodes: 8\n    gpus_per_nodes: 4"),
        "gpus_per_nodes: unknown field",
    ),
    ("name: x\ngenerator: {kind: summit-replay, fragments: a, nodes: b}\n", "jobs: Field required"),
    (
        "name: x\ngenerator: {kind: pal-philly, trace: t, variability_dir: v, locality: 0.9}\n",
        "locality: Input should be greater than or equal to 1",
    ),
]


@pytest.mark.parametrize(("text", "expect"), CASES, ids=[f"case{i:02d}" for i in range(len(CASES))])
def test_load_scenario__malformed_file_is_rejected_clearly(tmp_path, text, expect):
    f = tmp_path / "s.yaml"
    f.write_text(text)
    with pytest.raises(ScenarioError) as exc:
        load_scenario(f)
    msg = str(exc.value).replace("\n", " ")
    assert str(f) in msg
    assert expect in msg


def test_load_scenario__at_least_30_malformed_cases():
    assert len(CASES) >= 30


def test_load_scenario__good_file_and_json(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(GOOD)
    spec = load_scenario(f)
    assert spec.generator.cluster.num_nodes == 8
    j = tmp_path / "s.json"
    j.write_text(spec.model_dump_json())
    assert load_scenario(j) == spec


def test_cli__validate_prints_problems_without_traceback(tmp_path, capsys):
    f = tmp_path / "bad.yaml"
    f.write_text(GOOD.replace("num_nodes: 8", "num_nodes: -2"))
    assert main(["scenario", "validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert "num_nodes" in err and "got -2" in err and "Traceback" not in err
    g = tmp_path / "good.yaml"
    g.write_text(GOOD)
    assert main(["scenario", "validate", str(g), "--build"]) == 0
    assert "8 nodes, 3 jobs" in capsys.readouterr().out


def test_cli__missing_file(capsys):
    assert main(["scenario", "validate", "/nonexistent/x.yaml"]) == 2
    assert "no such scenario file" in capsys.readouterr().err


def test_cli__schema_is_json_schema(capsys):
    import json

    assert main(["scenario", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "ScenarioSpec" and "generator" in schema["properties"]


def test_env__accepts_a_scenario_file_and_its_episode_defaults(tmp_path):
    from mtgym.env import ScavengeEnv

    f = tmp_path / "s.yaml"
    f.write_text(
        GOOD
        + textwrap.dedent("""
    episode: {action_mode: delta, reward: jct, max_jobs: 4, decision_interval_s: 600}
    """)
    )
    env = ScavengeEnv(str(f))
    assert env.action_mode == "delta" and env.reward_name == "jct" and env.num_slots == 4
    assert env.decision_interval_s == 600
    env2 = ScavengeEnv(str(f), action_mode="counts")  # explicit keywords win
    assert env2.action_mode == "counts"


def test_schema__mix_defaults_are_the_generators():
    from dataclasses import asdict

    from mtgym.generate.workload import JobMix
    from mtgym.scenario.schema import MixSpec

    spec = MixSpec().model_dump(exclude={"kind"})
    gen = {
        k: (list(v) if isinstance(v, tuple) and k.endswith("nodes") else v)
        for k, v in asdict(JobMix()).items()
    }
    assert spec == gen
