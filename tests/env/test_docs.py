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


def test_docs__the_docstrings_name_every_built_in_mode_and_reward():
    """The Arguments table, the Reward section and the packages' docstrings list exactly the
    registries' built-ins, so adding a mode or a reward cannot leave them stale."""
    import re

    import mtgym.env.actions as actions
    import mtgym.env.reward as reward
    from mtgym.core.names import ACTION_MODES, REWARD_NAMES

    doc = inspect.getdoc(ScavengeEnv)
    rows = {line.split("|")[1].strip(): line.split("|") for line in doc.splitlines() if "|" in line}
    for key, names in (("``action_mode``", ACTION_MODES), ("``reward``", REWARD_NAMES)):
        assert sorted(re.findall(r'``"([a-z-]+)"``', rows[key][3])) == sorted(names), key
    section = doc[doc.index("## Reward") : doc.index("## Episode end")]
    for name in REWARD_NAMES:
        assert f'``"{name}"``' in section or f'``reward="{name}"``' in section, name
        assert f"``{name}``" in reward.__doc__, name
    for name in ACTION_MODES:
        assert f"``{name}``" in actions.__doc__, name
