"""Scenario files never hang and never pass as "ok" when they cannot build (issue 17)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from mtgym.cli import main
from mtgym.core.limits import MAX_NODES
from mtgym.generate.synthetic import SyntheticGenerator
from mtgym.scenario import ScenarioError, check, load_scenario, safe_yaml
from mtgym.scenario.check import MAX_BUILD_BYTES, estimate_build_bytes
from mtgym.scenario.registry import PRESETS_DIR, get_generator
from mtgym.scenario.safe_yaml import MAX_BYTES, MAX_DEPTH
from mtgym.scenario.schema import GPU_TYPES, MODEL_NAMES, ScenarioSpec

PRESETS = sorted(PRESETS_DIR.glob("*.yaml"))
DEFAULT = (PRESETS_DIR / "default.yaml").read_text()


def _write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


def _rejected(f: Path, *needles: str) -> str:
    with pytest.raises(ScenarioError) as err:
        load_scenario(f)
    msg = str(err.value)
    assert str(f) in msg
    for n in needles:
        assert n in msg, msg
    return msg


@pytest.fixture
def never_constructed(monkeypatch):
    """Fail if YAML is ever turned into Python objects (where an alias bomb expands)."""

    def construct(*args, **kwargs):
        raise AssertionError("the YAML was constructed; a bomb would have expanded")

    monkeypatch.setattr(safe_yaml.yaml, "load", construct)


# -- limits: bombs, big files, deep nesting, absurd sizes --------------------------------
def test_alias_bomb_is_refused_before_anything_expands(tmp_path, never_constructed):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev, cur = chr(96 + i), chr(97 + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    _rejected(_write(tmp_path, "\n".join(lines) + "\n"), "YAML anchor &a is not allowed")


def test_alias_alone_is_refused(tmp_path):
    text = DEFAULT.replace("horizon_s: 21600.0", "horizon_s: 21600.0\nextra: *x")
    _rejected(_write(tmp_path, text), "YAML alias *x is not allowed")
    text = DEFAULT.replace("gpus_per_node: 4", "gpus_per_node: &g 4")
    _rejected(_write(tmp_path, text), "line 13: YAML anchor &g is not allowed")


def test_10mb_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    f = _write(tmp_path, "name: big\n" + ("x: " + "y" * 100 + "\n") * 100_000)
    assert f.stat().st_size > 10 * MAX_BYTES

    def never_opened(self, *args, **kwargs):
        raise AssertionError(f"{self} was opened; its size alone should refuse it")

    monkeypatch.setattr(Path, "open", never_opened)
    _rejected(f, f"limited to {MAX_BYTES:,} bytes")


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_deep_nesting_is_a_clear_error_not_recursion(tmp_path, suffix):
    f = _write(
        tmp_path, '{"name": "x", "generator": ' + "[" * 50_000 + "]" * 50_000 + "}", "d" + suffix
    )
    assert "nest" in _rejected(f).replace(str(f), "")  # (the message, not the path)
    ok = _write(tmp_path, "name: x\ngenerator: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))
    msg = _rejected(ok, "generator")  # within the depth cap: a schema error instead
    assert "nesting deeper" not in msg


def test_ten_million_nodes_is_refused_by_the_schema_before_any_build(tmp_path, monkeypatch):
    f = _write(tmp_path, DEFAULT.replace("num_nodes: 64", "num_nodes: 10000000"))

    def never(*args, **kwargs):
        raise AssertionError("the build was estimated or attempted")

    monkeypatch.setattr(check, "estimate_build_bytes", never)
    monkeypatch.setattr(SyntheticGenerator, "__call__", never)
    _rejected(f, f"generator.cluster.num_nodes: Input should be less than or equal to {MAX_NODES}")


def test_build_estimate_ceiling_and_allow_large(tmp_path):
    text = DEFAULT.replace("num_nodes: 64", "num_nodes: 99968").replace(
        "horizon_s: 21600.0", "horizon_s: 31000000.0"
    )
    f = _write(tmp_path, text)
    spec = load_scenario(f, check=False)
    assert estimate_build_bytes(spec) > MAX_BUILD_BYTES
    _rejected(f, "GiB", "--allow-large")
    assert load_scenario(f, allow_large=True).name == "default"
    small = load_scenario(PRESETS_DIR / "polaris.yaml")
    assert estimate_build_bytes(small) < 16 * 2**20  # the presets are far below the ceiling


# -- accepted nonsense --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("old", "new", "needles"),
    [
        ("num_nodes: 64", "num_nodes: true", ["cluster.num_nodes", "valid integer", "True"]),
        ("num_nodes: 64", "num_nodes: 64.0", ["cluster.num_nodes", "valid integer"]),
        ("drain_nodes_median: 6.0}", "drain_nodes_median: .inf}", ["finite", "inf"]),
        ("idle_fraction: 0.35,", "idle_fraction: .nan,", ["idle_fraction", "finite"]),
        ("max_nodes: 8}", "max_nodes: 8}\n  declaration: {curve_bias: .inf}", ["curve_bias"]),
        (
            "drains_per_hour: 1.0,",
            "drains_per_hour: 1.0e9,",
            ["drains_per_hour", "less than or equal to 60", "'1.0e9'"],
        ),
        (
            "work_ref_nodes: 4\n",
            "work_ref_nodes: 4\n    min_nodes: [8]\n    max_nodes: [4]\n",
            ["workload.min_nodes", "above max_nodes", "[8]"],
        ),
        (
            "group_size: 16,",
            "group_size: 0,",
            ["cluster.levels.1.group_size", "greater than or equal to 1", "got 0"],
        ),
        ("transformer: 2", "transfomer: 2", ["workload.models.transfomer", "'transfomer'"]),
        ("[A100, V100]", "[A100, V101]", ["cluster.gpu_types.1", "'V101'", "'H100'"]),
        ("model: resnet18", "model: resnet81", ["campaigns.0.model", "'resnet81'"]),
        (
            "action_mode: counts,",
            "action_mode: counts, decision_interval_s: 1.0e-9,",
            ["episode.decision_interval_s", "0.001"],
        ),
        ("horizon_s: 21600.0", "horizon_s: 1.0e300", ["generator.horizon_s", "'1.0e300'"]),
    ],
)
def test_nonsense_is_refused_naming_file_field_value(tmp_path, old, new, needles):
    assert old in DEFAULT
    _rejected(_write(tmp_path, DEFAULT.replace(old, new)), *needles)


def test_empty_supply_is_a_clear_error_at_build(tmp_path, shared_data):
    text = DEFAULT.replace(
        "supply: {kind: synthetic, idle_fraction: 0.35, drains_per_hour: 1.0, drain_nodes_median: 6.0}",
        "supply: {kind: trace, path: '${MTGYM_DATA}/summit-idle-fragments.csv.gz', "
        "trace_start_s: 1.0e9}",
    )
    f = _write(tmp_path, text)
    gen = get_generator(f)  # plain validation passes: the file is well formed
    with pytest.raises(ScenarioError, match=r"generator.supply: no idle window between"):
        gen(0)


# -- every preset, mutated, is rejected by plain validate -----------------------------------
def _first_path(d: dict) -> tuple[list[str], str] | None:
    g = d["generator"]
    for key in ("fragments", "trace"):
        if key in g:
            return ["generator", key], g[key]
    for sect in ("supply", "workload"):
        if isinstance(g.get(sect), dict) and "path" in g[sect]:
            return ["generator", sect, "path"], g[sect]["path"]
    return None


MUTATIONS = ["model", "gpu", "path"]


@pytest.mark.parametrize("mutation", MUTATIONS)
@pytest.mark.parametrize("preset", PRESETS, ids=[p.stem for p in PRESETS])
def test_every_preset_mutated_is_rejected_by_plain_validate(tmp_path, capsys, preset, mutation):
    d = yaml.safe_load(preset.read_text())
    g = copy.deepcopy(d["generator"])
    if mutation == "model":
        if g["kind"] != "synthetic":
            pytest.skip(f"{preset.stem}: its jobs come from a data table (no model names)")
        models = g.setdefault("workload", {}).setdefault("models", {"resnet50": 1})
        name = sorted(models)[0]
        models[name[:-1] + name[-1] * 2] = models.pop(name)  # a doubled last letter
        field, value = f"generator.workload.models.{name[:-1] + name[-1] * 2}", name + name[-1]
    elif mutation == "gpu":
        if g["kind"] != "synthetic":
            pytest.skip(f"{preset.stem}: the GPU types come from its data files")
        g["cluster"]["gpu_types"][-1] = g["cluster"]["gpu_types"][-1] + "x"
        field = f"generator.cluster.gpu_types.{len(g['cluster']['gpu_types']) - 1}"
        value = g["cluster"]["gpu_types"][-1]
    else:
        d["generator"] = g
        found = _first_path(d)
        if found is None:  # a synthetic preset: give it a trace supply with a missing file
            g["supply"] = {"kind": "trace", "path": "no/such/idle.csv.gz"}
            keys, value = ["generator", "supply", "path"], "no/such/idle.csv.gz"
        else:
            keys, _ = found
            value = "${MTGYM_DATA}/no-such-file.csv"
            tgt = d
            for k in keys[:-1]:
                tgt = tgt[k]
            tgt[keys[-1]] = value
        field = ".".join(keys)
    d["generator"] = g
    f = _write(tmp_path, yaml.safe_dump(d), f"{preset.stem}.yaml")
    assert main(["scenario", "validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and field in err and repr(value) in err, err


def test_unreadable_and_folder_paths_are_named(tmp_path):
    folder = tmp_path / "adir.csv"
    folder.mkdir()
    text = DEFAULT.replace(
        "supply: {kind: synthetic, idle_fraction: 0.35, drains_per_hour: 1.0, drain_nodes_median: 6.0}",
        f"supply: {{kind: trace, path: '{folder}'}}",
    )
    _rejected(_write(tmp_path, text), "generator.supply.path", "is not a file")
    text = text.replace(str(folder), "${NO_SUCH_VAR_17}/x.csv")
    _rejected(_write(tmp_path, text), "generator.supply.path", "${NO_SUCH_VAR_17}")


# -- the JSON Schema -----------------------------------------------------------------------
def test_schema_describes_every_field_and_lists_names():
    schema = ScenarioSpec.model_json_schema()
    missing = []
    for name, model in [("ScenarioSpec", schema), *schema["$defs"].items()]:
        for field, prop in model.get("properties", {}).items():
            if not prop.get("description"):
                missing.append(f"{name}.{field}")
    assert not missing, missing
    text = str(schema)
    for n in (*MODEL_NAMES, *GPU_TYPES):
        assert repr(n) in text
    assert set(GPU_TYPES) == {"A100", "H100", "K80", "P100", "V100"}


# -- the CLI ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["evaluate", "--scenario", "toy-linear", "--seeds", "0"], "0 is not >= 1"),
        (["evaluate", "--scenario", "toy-linear", "--seeds", "-1"], "-1 is not >= 1"),
        (["run", "--scenario", "toy-linear", "--decision-interval", "1e-9"], ">= 0.001 s"),
        (["evaluate", "--scenario", "toy-linear", "--decision-interval", "nan"], "finite"),
        (["run", "--scenario", "toy-linear", "--seed", "-3"], "not in 0..2**63-1"),
    ],
)
def test_cli_refuses_bad_numbers(capsys, argv, needle):
    with pytest.raises(SystemExit) as ex:
        main(argv)
    assert ex.value.code == 2
    assert needle in capsys.readouterr().err


def test_cli_scenario_help_says_paths_work(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "built-in name, preset name or scenario file path" in capsys.readouterr().out


def test_cli_validate_reports_one_line_and_exit_2(tmp_path, capsys):
    f = _write(tmp_path, DEFAULT.replace("num_nodes: 64", "num_nodes: true"))
    assert main(["scenario", "validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {f}: generator.cluster.num_nodes")
    assert main(["info", "--scenario", str(f)]) == 2


@pytest.mark.parametrize(
    "exc",
    [MemoryError(), OverflowError("int too large"), RecursionError("depth"), KeyError("k")],
)
def test_dispatch_turns_expected_failures_into_one_line(capsys, exc):
    import argparse

    from mtgym.command import dispatch

    def boom(_):
        raise exc

    assert dispatch(argparse.Namespace(func=boom)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
