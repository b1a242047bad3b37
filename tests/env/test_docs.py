"""The env's docstring is its specification; docs/envs/scavenge.md mirrors it."""

from __future__ import annotations

import inspect
from pathlib import Path

from mtgym.env.env import ScavengeEnv

DOC = Path(__file__).resolve().parents[2] / "docs" / "envs" / "scavenge.md"
SECTIONS = [
    "Description",
    "Observation",
    "Action",
    "Reward",
    "Episode end",
    "State",
    "Arguments",
    "Example",
    "Version history",
]


def test_docs__docstring_has_every_section_in_order():
    doc = inspect.getdoc(ScavengeEnv)
    pos = [doc.index(f"## {s}") for s in SECTIONS]
    assert pos == sorted(pos)


def test_docs__page_mirrors_the_docstring():
    page = DOC.read_text()
    doc = inspect.getdoc(ScavengeEnv)
    for line in doc.splitlines():
        assert line.strip() in page, line


def test_docs__docstring_example_runs():
    import doctest

    import mtgym.env.env as mod

    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert res.attempted >= 4 and res.failed == 0
