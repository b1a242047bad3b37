"""The package's layering: no import circle, ``mtgym`` never imports ``agents`` or
``baselines``, and it works with both absent."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "mtgym"


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _imports(path: Path) -> list[str]:
    """Every module named by an import in ``path``: lazy ones and those under ``if
    TYPE_CHECKING:`` included (a type-only import is an arrow too); ``from m import x``
    names ``m`` and ``m.x``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return out


def import_graph(level: int | None = None) -> dict[str, set[str]]:
    """Module -> the mtgym modules it imports; with ``level``, names cut to that many parts
    (``2``: subpackages such as ``mtgym.sim``)."""
    mods = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    def cut(name: str) -> str:
        return name if level is None else ".".join(name.split(".")[:level])

    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        deps = graph.setdefault(cut(mod), set())
        for name in _imports(path):
            target = resolve(name) if name.startswith("mtgym") else None
            if target is not None and cut(target) != cut(mod):
                deps.add(cut(target))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_layout__cycle_finder_sees_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_layout__no_import_circle_between_modules():
    assert cycles(import_graph()) == []


def test_layout__no_import_circle_between_subpackages():
    """``core`` at the bottom; nothing below imports what is above (docs/architecture.md)."""
    graph = import_graph(level=2)
    assert cycles(graph) == []
    assert graph["mtgym.core"] <= {"mtgym.core"}  # the core imports no other layer
    for low in ("mtgym.model", "mtgym.readers", "mtgym.sim"):
        assert not graph[low] & {"mtgym.env", "mtgym.policy", "mtgym.scenario", "mtgym.cli"}


def test_layout__mtgym_never_imports_agents_or_baselines():
    bad = [
        (str(p.relative_to(REPO)), name)
        for p in PKG.rglob("*.py")
        for name in _imports(p)
        if name.split(".")[0] in ("agents", "baselines")
    ]
    assert bad == []


def test_layout__only_the_test_kit_imports_the_test_kit():
    """``mtgym.testing`` is for tests: no production module builds with it."""
    bad = [
        (str(p.relative_to(REPO)), name)
        for p in PKG.rglob("*.py")
        if "testing" not in p.relative_to(PKG).parts
        for name in _imports(p)
        if name == "mtgym.testing" or name.startswith("mtgym.testing.")
    ]
    assert bad == []


BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("agents", "baselines"):
            raise ImportError(f"{name} is absent in this test")
sys.meta_path.insert(0, Block())
import numpy as np
import gymnasium as gym
import mtgym, mtgym.cli, mtgym.evaluate, mtgym.policy.registry, mtgym.backends.ray_backend
from mtgym.policy.play import play
from mtgym.policy.equal_share import EqualShare
from mtgym.scenario.registry import get_generator
env = gym.make("mtgym/Scavenge-v0", scenario="toy-two-jobs")
obs, info = env.reset(seed=0)
obs, r, term, trunc, info = env.step(env.unwrapped.noop())
res = play(get_generator("toy-two-jobs")(0), EqualShare())
print("ok", res.metrics.as_dict()["samples"] > 0)
"""


def test_layout__mtgym_works_without_agents_and_baselines(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", BLOCK],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "ok True"


def test_layout__cli_imports_no_sub_command_package():
    """``bridge``, ``scavenge``, ``reproduce`` and ``agents`` come through ``mtgym.commands``."""
    names = {n.split(".")[1] for n in _imports(PKG / "cli.py") if n.startswith("mtgym.")}
    assert not names & {"bridge", "scavenger", "reproduce"}
    assert not any(n.startswith("agents") for n in _imports(PKG / "cli.py"))


def test_layout__top_level_folders_as_specified():
    """The layout the project was specified with (issue 27)."""
    for name in ("pyproject.toml", "mtgym", "baselines", "agents", "scenarios", "tests", "scripts"):
        assert (REPO / name).exists(), name


def test_layout__presets_live_only_in_the_top_level_scenarios_folder():
    from mtgym.scenario.registry import PRESETS_DIR

    assert PRESETS_DIR == REPO / "scenarios"  # (a checkout reads the folder itself)
    assert len(list(PRESETS_DIR.glob("*.yaml"))) >= 8
    stray = [p for d in ("mtgym", "baselines", "agents") for p in (REPO / d).rglob("*.y*ml")]
    assert stray == []


def test_layout__pyproject_lists_every_package_and_maps_scenarios():
    """``pyproject.toml`` lists the packages (so ``scenarios/`` can be mapped to
    ``mtgym.scenarios`` in a wheel): the list must be every folder of tracked files."""
    import tomllib

    tracked = subprocess.run(
        ["git", "ls-files", "mtgym", "baselines", "agents"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    folders = {".".join(Path(f).parent.parts) for f in tracked.stdout.split()}
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert sorted(cfg["packages"]) == sorted(folders | {"mtgym.scenarios"})
    assert cfg["package-dir"] == {"mtgym.scenarios": "scenarios"}
    assert cfg["package-data"]["mtgym.scenarios"] == [
        "*.yaml",
        "tuning/*.json",
        "tuning/probes/*.json",
    ]
