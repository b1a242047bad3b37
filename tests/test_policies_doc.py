"""``docs/policies.md``: its example is ``examples/min_then_grow.py`` word for word, its table
of the view's fields is ``SchedulerView``'s, and the example runs in ``mtgym evaluate``
(the CLI's main, in process) under its own name, from the current folder."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import pytest

from mtgym.cli import main
from mtgym.policy.registry import make_policy
from mtgym.sim.view import SchedulerView

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "policies.md"
EXAMPLE = REPO / "examples" / "min_then_grow.py"
SPEC = "examples.min_then_grow:factory"


def test_policies_doc__the_example_block_is_the_example_file():
    assert f"```python\n{EXAMPLE.read_text()}```" in DOC.read_text()


def test_policies_doc__the_view_table_is_the_dataclass_in_order():
    section = DOC.read_text().split("## The view", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \|", section, flags=re.M)
    assert rows == [f.name for f in dataclasses.fields(SchedulerView)]


@pytest.fixture
def in_repo(monkeypatch):
    """The repository's root as the current folder, ``sys.path`` restored afterwards."""
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(sys, "path", list(sys.path))


def test_policies_doc__the_example_runs_in_evaluate_under_its_name(in_repo, tmp_path, capsys):
    out = tmp_path / "ev"
    argv = ["evaluate", "--scenario", "toy-two-jobs", "--seeds", "1", "--no-progress"]
    argv += ["--policy", SPEC, "--policy", "equal-share", "--reference", SPEC]
    assert main([*argv, "--no-bound", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    res = json.loads((out / "results.json").read_text())
    assert list(res["policies"]) == ["min-then-grow", "equal-share"]
    assert res["reference"] == "min-then-grow"  # --reference takes the --policy string too
    # on the toy (4 nodes, 2 jobs) every node trains: the optimum, 100 samples/s per node
    assert res["policies"]["min-then-grow"]["samples"] == pytest.approx(100 * 4 * 3600.0)
    assert sorted(p.name for p in (out / "tb").iterdir()) == ["equal-share", "min-then-grow"]
    assert "min-then-grow" in printed and SPEC not in printed
    assert "warning: intervals from 1 seed (fewer than 5)" in " ".join(printed.split())


def test_registry__a_module_factory_is_found_in_the_current_folder(monkeypatch, tmp_path):
    (tmp_path / "mypolicy_cwd_test.py").write_text(
        "from examples.min_then_grow import MinThenGrow\n\n\n"
        "def make():\n    p = MinThenGrow()\n    p.name = 'mine'\n    return p\n"
    )
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.syspath_prepend(str(REPO))  # (examples/, as from the repository's root)
    monkeypatch.chdir(tmp_path)
    assert make_policy("mypolicy_cwd_test:make").name == "mine"
    assert sys.path[-1] == str(tmp_path)  # appended: it never shadows an installed package
    with pytest.raises(KeyError, match="neither registered"):
        make_policy("no_such_module_anywhere:make")
