"""The env's specification (``ScavengeEnv``'s docstring, issue 37) names exactly what the
env produces: every observation key (with its feature width), action mode, reward, info
mode and info key, and nothing else. The docstring is the one place the spec is written
(``docs/envs/scavenge.md`` mirrors it; the README links to it), so this keeps it true.
"""

from __future__ import annotations

import re
from dataclasses import fields

import pytest

from mtgym.core.names import ACTION_MODES, INFO_MODES, REWARD_NAMES
from mtgym.env.env import ScavengeEnv
from mtgym.env.layout import OBS_LAYOUTS
from mtgym.metrics import EpisodeMetrics

DOC = ScavengeEnv.__doc__ or ""


def section(title: str) -> str:
    """The text of the docstring's ``## title`` section."""
    m = re.search(rf"^\s*## {title}\n(.*?)(?=^\s*## |\Z)", DOC, re.S | re.M)
    assert m, f"the env docstring has no '## {title}' section"
    return m.group(1)


def table(title: str) -> dict[str, list[str]]:
    """The rows of the first Markdown table of a section: first cell (unquoted) -> cells."""
    rows = {}
    for line in section(title).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.strip().startswith("|") and cells[0].startswith("``"):
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def quoted(text: str) -> set[str]:
    """The quoted names of a text: ``"name"`` or ``keyword="name"``."""
    return set(re.findall(r'``(?:\w+=)?"([a-z_]+)"``', text))


def played(action_mode: str) -> tuple[dict, set[str], set[str], set[str]]:
    """One whole episode of no-ops: the reset observation, and the reset, step and
    last-step info keys."""
    env = ScavengeEnv("default", action_mode=action_mode, horizon_s=1800.0)
    obs, info = env.reset(seed=0)
    reset_keys, step_keys, last = set(info), set(), set()
    done = False
    while not done:
        _, _, term, trunc, info = env.step(env.noop())
        done = term or trunc
        (last if done else step_keys).update(info)
    return obs, reset_keys, step_keys or last - {"metrics"}, last


@pytest.fixture(scope="module")
def episodes() -> dict[str, tuple]:
    return {m: played(m) for m in ACTION_MODES}


def test_observation_table_is_exactly_the_keys_produced(episodes):
    rows = table("Observation")
    produced = set().union(*(set(ep[0]) for ep in episodes.values()))
    assert set(rows) == produced
    for mode, (obs, *_) in episodes.items():
        for key, value in obs.items():
            shape = rows[key][0]  # e.g. "(N, 11)", "(6,)", "(M,) int8"
            width = re.match(r"\(([^)]*)\)", shape).group(1).split(",")
            assert len(width) == value.ndim or (width[-1] == "" and value.ndim == 1), (key, mode)
            if width[-1].strip().isdigit():  # a fixed feature width: it must be the real one
                assert int(width[-1]) == value.shape[-1], (key, shape, value.shape)


def test_keys_marked_for_some_modes_appear_only_there(episodes):
    for key, cells in table("Observation").items():
        if "``shares`` only" in cells[1]:
            assert {m for m, ep in episodes.items() if key in ep[0]} == {"shares"}, key


def test_action_modes_rewards_and_info_modes_are_exactly_the_registered_ones():
    args = table("Arguments")
    assert quoted(args["action_mode"][1]) == set(ACTION_MODES)
    assert quoted(args["reward"][1]) == set(REWARD_NAMES)
    assert quoted(args["info_mode"][1]) == set(INFO_MODES)
    assert quoted(args["obs_layout"][1]) == set(OBS_LAYOUTS)
    # each mode's space is spelt out in the Action section, each reward in the Reward one
    assert quoted(section("Action")) == set(ACTION_MODES)
    assert quoted(section("Reward")) == set(REWARD_NAMES)


def test_info_section_names_exactly_the_keys_produced(episodes):
    text = section("Info")
    head, _, tail = text.partition("The last step")
    named = {
        k
        for k in re.findall(r"``([A-Za-z_]+)``", head)
        # (class names such as ``EventKind`` and the methods ``reset``/``step`` are not keys)
        if not k[0].isupper() and not hasattr(ScavengeEnv, k)
    }
    for mode, (_, reset_keys, step_keys, last) in episodes.items():
        assert reset_keys <= named and step_keys <= named, mode
        assert named == reset_keys | step_keys, (mode, named ^ (reset_keys | step_keys))
        assert last - step_keys == {"metrics"} and "``metrics``" in tail, mode
    listed = re.search(r"EpisodeMetrics``[^)]*\):(.*?)\.\n", tail, re.S).group(1)
    listed = re.sub(r"\([^)]*\)", "", listed)  # (the notes: units, what nan means)
    names = {w.strip() for w in listed.replace("\n", " ").split(",")}
    assert names == {f.name for f in fields(EpisodeMetrics)}
