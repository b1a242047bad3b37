"""Every registered policy on every shipped preset either completes a short episode or says
in one line why it cannot run there (``PolicyUnsupportedError``, naming the scenario), never a
traceback; the CLI prints that line and exits 2."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from mtgym.core.errors import PolicyUnsupportedError
from mtgym.evaluate import configure_policy, scenario_defaults
from mtgym.policy.play import play
from mtgym.policy.registry import available_policies, default_policies, make_policy
from mtgym.scenario.registry import get_generator, preset_names
from mtgym.testing.presets import BIG, REAL_DATA, TWINS

#: simulated seconds of the short episode
HORIZON_S = 900.0
#: the node-level MILP variants (``*-milp``) solve a model with a variable per node and job,
#: seconds per decision on large presets (default-512: ~20 min for 900 s on a loaded 2-core
#: machine), so they play 60 s, and only their first decisions (1 s) above MILP_NODES nodes
MILP_HORIZON_S = 60.0
MILP_BIG_HORIZON_S = 1.0
MILP_NODES = 256
#: (policy, preset) pairs expected to refuse, and a word their reason must contain (the
#: shipped ``shares`` agent runs on any machine; the retired ``counts`` agent refuses clusters
#: smaller than its count cap: ``test_every_policy__cli_prints_the_refusal_as_one_line``)
REFUSALS: dict[tuple[str, str], str] = {}
#: the retired ``counts`` agent (``agents/pretrained/README.md``, round 5)
COUNTS_AGENT = "agent:" + str(Path(__file__).resolve().parents[1] / "agents/pretrained/counts")


@functools.cache
def _generator_and_instance(name: str):
    gen = get_generator(name)
    return gen, gen(0)


def _cases():
    for preset in sorted(set(preset_names()) - TWINS):
        marks = [pytest.mark.slow] if preset in BIG else []
        for policy in default_policies() + [n for n in available_policies() if "-milp" in n]:
            yield pytest.param(preset, policy, marks=marks, id=f"{preset}-{policy}")


@pytest.mark.parametrize(("preset", "policy"), list(_cases()))
def test_every_policy__runs_a_short_episode_or_refuses_in_one_line(preset, policy, request):
    if preset in REAL_DATA:
        request.getfixturevalue("shared_data")  # skips without the real data
    gen, inst = _generator_and_instance(preset)
    horizon = HORIZON_S
    if policy.endswith("-milp"):
        horizon = MILP_BIG_HORIZON_S if inst.num_nodes > MILP_NODES else MILP_HORIZON_S
    pol = configure_policy(make_policy(policy), scenario_defaults(gen))
    try:
        res = play(inst, pol, until=inst.t_start + horizon)
    except PolicyUnsupportedError as exc:
        line = str(exc)
        assert (policy, preset) in REFUSALS, f"unexpected refusal: {line}"
        assert "\n" not in line and f"scenario {preset!r}" in line
        assert REFUSALS[policy, preset] in line
        return
    assert (policy, preset) not in REFUSALS, f"{policy} ran on {preset}: update REFUSALS"
    assert res.state.time == pytest.approx(inst.t_start + horizon) or res.state.time < (
        inst.t_start + horizon
    )
    assert res.decisions >= 1 and res.metrics.normalized_throughput >= 0


def test_every_policy__cli_prints_the_refusal_as_one_line(capsys):
    from mtgym.cli import main

    assert main(["run", "--scenario", "toy-two-jobs", "--policy", COUNTS_AGENT]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "cannot run on scenario 'toy-two-jobs': " in err and "4 nodes" in err
    argv = ["evaluate", "--scenario", "toy-linear", "--policy", COUNTS_AGENT, "--seeds", "1"]
    assert main([*argv, "--no-progress"]) == 2
    assert "cannot run on scenario 'toy-linear': " in capsys.readouterr().err


def test_every_policy__refusal_survives_pickling_with_its_fields():
    import pickle

    exc = PolicyUnsupportedError("agent", "too small").with_scenario("toy-two-jobs")
    back = pickle.loads(pickle.dumps(exc))  # how Ray ships a task's exception back
    assert (back.policy, back.reason, back.scenario) == ("agent", "too small", "toy-two-jobs")
    assert str(back) == "policy 'agent' cannot run on scenario 'toy-two-jobs': too small"
    assert back.with_scenario("other") is back
