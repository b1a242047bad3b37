"""``mtgym.naming``: labels of policies in results (a ``module:factory`` policy under its own
``name`` unless that is ambiguous) and folder names safe on every file system."""

from __future__ import annotations

import pytest

from mtgym.naming import policy_labels, safe_name, safe_names

REGISTERED = frozenset({"agent", "freetrain", "greedy"})


@pytest.mark.parametrize(
    ("text", "folder"),
    [
        ("min-then-grow", "min-then-grow"),
        ("agent:/abs/runs/a/model.zip", "agent_abs_runs_a_model.zip"),
        ("C:\\runs\\a b", "C_runs_a_b"),
        ("..", "policy"),
        ("../../etc", "etc"),
        (":", "policy"),
    ],
)
def test_safe_name__no_separator_colon_or_dot_folder(text, folder):
    assert safe_name(text) == folder


def test_safe_names__colliding_folders_are_numbered_in_order():
    got = safe_names(["a:b", "a/b", "A_b", "c"])
    assert got == {"a:b": "a_b", "a/b": "a_b-2", "A_b": "A_b-3", "c": "c"}


def test_policy_labels__a_module_factory_takes_its_name_unless_ambiguous():
    specs = [
        "examples.min_then_grow:factory",  # -> its name
        "freetrain",  # registered: itself
        "agent",
        "agent:/x/model.zip",  # a registered name with an argument keeps its string
        "mine:fake_freetrain",  # named after a registered policy: kept
        "m:one",  # two policies with the same name: both kept
        "m:two",
        "m:greedy_alias",  # named like another spec
        "m:nameless",
    ]
    names = {
        "examples.min_then_grow:factory": "min-then-grow",
        "freetrain": "freetrain",
        "agent": "agent",
        "agent:/x/model.zip": "agent",
        "mine:fake_freetrain": "freetrain",
        "m:one": "same",
        "m:two": "same",
        "m:greedy_alias": "m:one",
        "m:nameless": "",
    }
    labels = policy_labels(specs, names, REGISTERED)
    assert labels == {**{s: s for s in specs}, specs[0]: "min-then-grow"}
    assert len(set(labels.values())) == len(specs)
