"""The learned agent is a ``Policy``: ``play`` drives it exactly as the env drives its model."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from agents.policy import PRETRAINED, AgentPolicy
from agents.pooled import PooledObservation
from mtgym.bridge.record import record_episode
from mtgym.bridge.trace import read_trace
from mtgym.env.env import ScavengeEnv
from mtgym.policy.base import Policy
from mtgym.policy.play import play
from mtgym.scenario.registry import get_generator

HOURS = 4.0  # a cut of the default scenario's 6-hour episode (keeps the test short)


@pytest.fixture(scope="module")
def agent() -> AgentPolicy:
    # its mode, to compare with ``predict(deterministic=True)`` (the shipped agent samples)
    return AgentPolicy(PRETRAINED, deterministic=True)


def agent_env(agent: AgentPolicy, **kw):
    """The env the agent was trained on (pooled observation where its agent.json says so)."""
    env = ScavengeEnv("default", **kw)
    return PooledObservation(env) if agent.config.observation == "pooled" else env


def env_episode(agent: AgentPolicy, seed: int, interval: float | None):
    """Step the env with the model's ``predict``: actions, observations, return, metrics."""
    kw = agent.config.env_kwargs() | {"decision_interval_s": interval, "horizon_s": HOURS * 3600}
    env = agent_env(agent, **kw)
    obs, _ = env.reset(seed=seed)
    actions, observations, ret = [], [obs], 0.0
    while True:
        a, _ = agent.model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        actions.append(np.asarray(a, dtype=np.int64))
        obs, r, term, trunc, info = env.step(a)
        ret += r
        observations.append(obs)
        if term or trunc:
            return env, actions, observations, ret, info["metrics"]


def same_metrics(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        va, vb = a[k], b[k]
        if isinstance(va, float) and math.isnan(va):
            assert isinstance(vb, float) and math.isnan(vb), k
        else:
            assert va == vb, (k, va, vb)


@pytest.mark.parametrize("interval", [None, 600.0])
def test_agent_policy__play_takes_the_env_and_predict_decisions(agent, interval):
    env, actions, observations, _, env_metrics = env_episode(agent, seed=300, interval=interval)
    assert len(actions) > 20
    assert isinstance(agent, Policy)
    seen_obs, seen_actions = [], []
    decide = agent.decide

    class Spy:
        name, info_mode = agent.name, agent.info_mode
        decision_interval_s = interval

        def reset(self, view):
            agent.reset(view)

        def decide(self, view):
            alloc = decide(view)
            seen_obs.append(agent.observer.observe(view))  # (idempotent: the same view)
            seen_actions.append(agent.act(seen_obs[-1], agent.observer.mask))
            return alloc

    res = play(env.unwrapped.instance, Spy())  # the env's instance: seed 300, cut at HOURS
    assert res.decisions == len(actions)
    for k, (a, b) in enumerate(zip(actions, seen_actions, strict=True)):
        assert np.array_equal(a, b), f"decision {k}"
    for k, o in enumerate(seen_obs):  # the very observations, bit for bit
        if agent.config.observation == "pooled":
            assert np.array_equal(agent.layout.pool(o), observations[k]), k
            continue
        for key in o:
            assert np.array_equal(o[key], observations[k][key]), (k, key)
    same_metrics(res.metrics.as_dict(), env_metrics)
    # the policy's own interval is what play uses when the caller sets none
    agent.decision_interval_s = interval
    try:
        again = play(env.unwrapped.instance, agent)
    finally:
        agent.decision_interval_s = agent.config.decision_interval_s
    assert again.decisions == len(actions)
    same_metrics(again.metrics.as_dict(), env_metrics)


def test_bridge_record__writes_the_agents_decisions(agent, tmp_path):
    gen = get_generator("default")
    inst = gen(301)
    until = inst.t_start + 3 * 3600  # (mid-episode: the nodes are still held)
    res, path = record_episode(
        inst, agent, tmp_path / "agent.jsonl", scenario="default", seed=301, until=until
    )
    plain = play(inst, agent, until=until)
    same_metrics(res.metrics.as_dict(), plain.metrics.as_dict())  # recording changes nothing
    tr = read_trace(path)
    assert tr.header.policy == "agent"
    decisions = [e for e in tr.events if e.reason == "decision"]
    assert len(decisions) > 10
    # replaying the trace's node sets gives the node map the agent's episode ended with
    held: dict[int, tuple[int, ...]] = {}
    for e in tr.events:
        held[int(e.job)] = tuple(e.nodes)
    node_job = np.full(inst.num_nodes, -1)
    for j, nodes in held.items():
        node_job[list(nodes)] = j
    assert np.array_equal(node_job, res.state.node_job)
    assert node_job.max() >= 0


def test_agent_policy__profiled_agents_are_refused_clearly():
    from mtgym.policy.observe import ViewObserver

    with pytest.raises(ValueError, match="profiled"):
        ViewObserver(action_mode="counts", max_jobs=16, max_count=16, info_mode="profiled")


def test_registry__module_factory_builds_a_python_policy():
    from mtgym.policy.registry import make_policy

    pol = make_policy("mtgym.policy.equal_share:EqualShare")
    assert isinstance(pol, Policy) and pol.name == "equal-share"
    with pytest.raises(KeyError, match="neither registered"):
        make_policy("mtgym.policy.equal_share:Nope")
    with pytest.raises(TypeError, match="did not build a Policy"):
        make_policy("builtins:object")


def test_agent_policy__temperature_sharpens_its_draws_and_is_checked(tmp_path):
    from dataclasses import replace

    from mtgym.generate.default import default_generator

    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="temperature"):
            AgentPolicy(PRETRAINED, temperature=bad)
    inst = replace(default_generator(), horizon_s=3 * 3600.0)(4)
    runs = {}
    for t in (1.0, 0.25):
        pol = AgentPolicy(PRETRAINED, temperature=t)
        a, b = play(inst, pol), play(inst, pol)
        assert a.metrics.samples == b.metrics.samples  # seeded per episode at any temperature
        runs[t] = a.metrics
    plain = play(inst, AgentPolicy(PRETRAINED))
    assert plain.metrics.samples == runs[1.0].samples  # 1.0: the untempered draws, bit for bit
    assert runs[0.25].samples != runs[1.0].samples
    # a sharper policy draws its mode more often (same observation, 300 draws each)
    env = ScavengeEnv("default", **AgentPolicy(PRETRAINED).config.env_kwargs())
    obs, _ = env.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(20):
        obs, *_ = env.step(env.sample_valid(rng))
    agree = {}
    for t in (1.0, 0.25):
        pol = AgentPolicy(PRETRAINED, temperature=t)
        mode = AgentPolicy(PRETRAINED, deterministic=True).act(obs)
        agree[t] = np.mean([np.mean(pol.act(obs) == mode) for _ in range(300)])
    assert agree[0.25] > agree[1.0]
    cfg = json.loads((PRETRAINED / "agent.json").read_text())
    d = tmp_path / "agent"
    d.mkdir()
    (d / "model.zip").write_bytes((PRETRAINED / "model.zip").read_bytes())
    (d / "agent.json").write_text(json.dumps(cfg | {"temperature": 0.0}))
    with pytest.raises(ValueError, match="temperature"):
        AgentPolicy(d)
