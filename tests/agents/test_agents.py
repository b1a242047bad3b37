"""Learned agents: the set-based extractor, learnability on a toy, training and comparison
outputs read back from TensorBoard, and the shipped agent on another cluster size."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from agents.features import SetFeatures
from agents.policy import PRETRAINED, AgentPolicy
from mtgym.env.env import ScavengeEnv
from mtgym.generate.default import default_generator
from mtgym.generate.toy import TwoJobToy
from mtgym.policy.play import play
from mtgym.testing import checked_rollout


def obs_tensors(obs):
    return {k: torch.as_tensor(v, dtype=torch.float32).unsqueeze(0) for k, v in obs.items()}


@pytest.mark.parametrize("context", [False, True])
def test_features__invariant_to_node_order_and_any_cluster_size(context):
    env = ScavengeEnv("default", max_jobs=16)
    obs, _ = env.reset(seed=0)
    env.step(env.noop())
    obs, *_ = env.step(np.where(obs["job_mask"] > 0, 2, 0))
    torch.manual_seed(0)
    net = SetFeatures(env.observation_space, embed_dim=16, context=context)
    a = net(obs_tensors(obs))
    perm = np.random.default_rng(0).permutation(env.num_nodes)
    shuffled = dict(obs)
    for k in ("nodes", "node_mask", "node_job"):
        shuffled[k] = obs[k][perm]
    b = net(obs_tensors(shuffled))
    assert torch.allclose(a, b, atol=1e-5)
    # the same weights run on a twice larger cluster
    big = ScavengeEnv(replace(default_generator(), num_nodes=128), max_jobs=16)
    obs_big, _ = big.reset(seed=0)
    assert net(obs_tensors(obs_big)).shape == a.shape


def toy_env(seed: int = 0) -> ScavengeEnv:
    env = ScavengeEnv(
        TwoJobToy(num_nodes=4, horizon_s=3600.0),
        action_mode="counts",
        reward="throughput",
        max_jobs=2,
        max_count=4,
        decision_interval_s=600.0,
    )
    env.reset(seed=seed)
    return env


def episode_return(env: ScavengeEnv, act) -> float:
    obs, _ = env.reset(seed=0)
    while True:
        obs, _, term, trunc, info = env.step(act(env, obs))
        if term or trunc:
            return info["metrics"]["samples"]


def test_maskable_ppo__learns_the_two_job_toy_optimum():
    """Known optimum: 100 samples/s per node on all 4 nodes for 3,600 s (TwoJobToy docstring)."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(1)
    optimum = 100.0 * 4 * 3600.0
    rng = np.random.default_rng(0)

    def random_act(env, obs):
        m, out, off = env.action_masks(), [], 0
        for k in env.action_space.nvec:
            out.append(rng.choice(np.flatnonzero(m[off : off + k])))
            off += int(k)
        return np.array(out)

    random_mean = np.mean([episode_return(toy_env(), random_act) for _ in range(10)])
    assert random_mean < 0.9 * optimum  # the toy is not trivially solved by chance
    venv = DummyVecEnv([lambda i=i: Monitor(toy_env(i)) for i in range(4)])
    model = MaskablePPO(
        "MultiInputPolicy",
        venv,
        n_steps=64,
        batch_size=64,
        n_epochs=4,
        learning_rate=1e-3,
        seed=0,
        device="cpu",
        policy_kwargs={
            "features_extractor_class": SetFeatures,
            "features_extractor_kwargs": {"embed_dim": 16},
            "net_arch": {"pi": [32], "vf": [32]},
        },
    )
    model.learn(3000)
    learned = episode_return(
        toy_env(),
        lambda env, obs: model.predict(obs, action_masks=env.action_masks(), deterministic=True)[0],
    )
    assert learned >= 0.95 * optimum


def test_train_and_compare__write_shared_tags_for_every_policy(tmp_path, capsys):
    from mtgym.cli import main

    out = tmp_path / "agent"
    assert (
        main(
            [
                "train",
                "--scenario",
                "toy-two-jobs",
                "--timesteps",
                "1024",
                "--n-envs",
                "2",
                "--max-jobs",
                "2",
                "--max-count",
                "4",
                "--eval-freq",
                "128",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    assert (out / "model.zip").is_file() and json.loads((out / "agent.json").read_text())[
        "max_count"
    ] == 4
    # the defaults train the shipped recipe's scale-free agent, and say what they evaluated
    args = json.loads((out / "args.json").read_text())
    assert args["action_mode"] == "shares" and args["decision_interval_s"] == 60.0
    assert json.loads((out / "agent.json").read_text())["max_jobs"] is None
    log = capsys.readouterr().out
    points = json.loads((out / "train.json").read_text())["eval_points"]
    assert [p["steps"] for p in points] == list(range(128, 1025, 128))
    lines = [x for x in log.splitlines() if x.startswith("eval @ ")]
    assert len(lines) == len(points) and lines[0].startswith("eval @ 128 steps: headline ")
    assert " over 8 seeds, selection score " in lines[0]
    assert lines[0].endswith("(best so far: kept if the run ended now)")  # the first is
    assert sum(p["best"] for p in points) == sum(x.endswith("ended now)") for x in lines)
    assert all(p["lo"] <= p["headline"] <= p["hi"] for p in points)
    assert "kept: " in log
    run = next((out / "tb").iterdir())
    acc = EventAccumulator(str(run))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {
        "eval/normalized_throughput",  # the headline, shared with the baselines' runs
        "eval/fairness_jain",
        "eval/throughput",
        "eval/utilisation",
        "eval/upper_bound_fraction",
    } <= tags
    assert any(t.startswith("train/") for t in tags)
    from agents.rllib_train import SHARED_TRAIN_TAGS

    assert set(SHARED_TRAIN_TAGS) <= tags  # what the RLlib trainer writes too (test_rllib)
    cmp_dir = tmp_path / "cmp"
    assert (
        main(
            [
                "compare",
                "--scenario",
                "toy-two-jobs",
                "--agent",
                str(out / "model.zip"),
                "--policy",
                "freetrain",
                "--policy",
                "equal-share",
                "--seeds",
                "1",
                "--out",
                str(cmp_dir),
                "--no-progress",
            ]
        )
        == 0
    )
    res = json.loads((cmp_dir / "results.json").read_text())
    assert set(res["policies"]) == {"agent", "freetrain", "equal-share"}
    for name in res["policies"]:
        acc = EventAccumulator(str(cmp_dir / "tb" / name))
        acc.Reload()
        assert {
            "eval/normalized_throughput",
            "eval/throughput",
            "eval/upper_bound_fraction",
            "solver/time_ms",
        } <= set(acc.Tags()["scalars"])
    assert (cmp_dir / "compare.png").stat().st_size > 1000
    # the trade-off chart and the markdown tables beside results.json
    assert (cmp_dir / "tradeoff.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (cmp_dir / "results.md").read_text()
    assert "| policy | norm. tput |" in md and "\n| agent" in md


def test_train__resume_from_checkpoint(tmp_path, monkeypatch):
    """A resumed run starts from the checkpoint's weights and step count and counts on."""
    from sb3_contrib import MaskablePPO

    from agents.train import Args, train

    starts = []  # (weights, num_timesteps) of the model each learn() call starts from
    learn = MaskablePPO.learn

    def spy(self, *a, **k):
        w = {n: t.detach().clone() for n, t in self.policy.state_dict().items()}
        starts.append((w, self.num_timesteps))
        return learn(self, *a, **k)

    monkeypatch.setattr(MaskablePPO, "learn", spy)
    out = tmp_path / "a"
    args = Args(
        scenario="toy-two-jobs",
        timesteps=128,
        n_envs=2,
        max_jobs=2,
        max_count=4,
        eval_freq=0,
        checkpoint_freq=64,
        out=out,
        progress=False,
    )
    first = train(args)
    second = train(replace(args, out=tmp_path / "b", resume=first))
    a = MaskablePPO.load(first, device="cpu")
    b = MaskablePPO.load(second, device="cpu")
    saved = a.policy.state_dict()
    # one rollout of n_steps x n_envs = 256 steps reaches 128; the resumed run adds one more
    assert a.num_timesteps == 256 and b.num_timesteps == 2 * a.num_timesteps
    (w0, n0), (w1, n1) = starts
    assert n0 == 0 and n1 == a.num_timesteps
    assert all(torch.equal(w1[k], saved[k]) for k in saved)  # resumed from the checkpoint
    assert not all(torch.equal(w0[k], saved[k]) for k in saved)  # (the first run learnt)
    assert not all(torch.equal(b.policy.state_dict()[k], saved[k]) for k in saved)


def test_train__critic_warmup_fits_only_the_value_head_first(tmp_path, monkeypatch, tiny_train):
    """``critic_warmup`` steps of PPO change the value head and nothing else (the actor and
    the shared encoder are frozen); then PPO trains every weight, counting steps on, and the
    weights can take gradients again."""
    from sb3_contrib import MaskablePPO

    calls = []  # (weights before, weights after, steps before, requires_grad) per learn()
    learn = MaskablePPO.learn

    def spy(self, *a, **k):
        w0 = {n: t.detach().clone() for n, t in self.policy.state_dict().items()}
        n0, grads = self.num_timesteps, [p.requires_grad for p in self.policy.parameters()]
        out = learn(self, *a, **k)
        w1 = {n: t.detach().clone() for n, t in self.policy.state_dict().items()}
        calls.append((w0, w1, n0, grads))
        return out

    monkeypatch.setattr(MaskablePPO, "learn", spy)
    path = tiny_train(tmp_path / "w", critic_warmup=128)
    (w0, w1, n0, g0), (v0, v1, n1, g1) = calls
    value = [k for k in w0 if k.startswith("value_net.")]
    rest = [k for k in w0 if not k.startswith("value_net.")]
    assert value and rest and n0 == 0 and n1 == 128
    assert any(g0) and not all(g0)  # frozen: only the value head takes gradients
    assert not all(torch.equal(w0[k], w1[k]) for k in value)
    assert all(torch.equal(w0[k], w1[k]) for k in rest)
    assert all(g1)  # unfrozen for PPO
    assert not all(torch.equal(v0[k], v1[k]) for k in rest)
    assert MaskablePPO.load(path, device="cpu").num_timesteps == 128 + 256


@pytest.mark.parametrize(
    ("final", "kept"), [(9.0, "ppo"), (7.0, "ppo"), (5.0, "ppo@300"), (6.5, "ppo@300")]
)
def test_keep_best__keeps_the_best_evaluated_weights(tmp_path, monkeypatch, final, kept):
    """The clone (6.0), the best PPO evaluation point (7.0 at 300 steps) and the final
    model compete on the evaluation score; a tie goes to the final model."""
    from sb3_contrib import MaskablePPO

    from agents import train as tr

    path = tmp_path / "model.zip"
    MaskablePPO.load(PRETRAINED / "model.zip", device="cpu").save(str(path))
    model = MaskablePPO.load(path, device="cpu")
    w = {k: v.clone() for k, v in model.policy.state_dict().items()}
    marked = {k: v + 1.0 if v.is_floating_point() else v for k, v in w.items()}
    monkeypatch.setattr(tr, "evaluate_agent", lambda *a: {"normalized_samples": final})
    got = tr.keep_best(model, tr.Args(), tmp_path, (6.0, w), (7.0, marked, 300))
    assert got == kept
    saved = MaskablePPO.load(path, device="cpu").policy.state_dict()
    want = w if kept == "ppo" else marked
    assert all(torch.equal(saved[k], want[k]) for k in w)


def test_keep_best__the_clone_wins_a_tie_with_a_ppo_point(tmp_path, monkeypatch):
    from agents import train as tr

    class Model:
        policy = type("P", (), {"load_state_dict": lambda self, w: setattr(self, "w", w)})()

        def save(self, path):
            Path(path).write_text("x")

    monkeypatch.setattr(tr, "evaluate_agent", lambda *a: {"normalized_samples": 1.0})
    assert tr.keep_best(Model(), tr.Args(), tmp_path, (2.0, {"a": 1}), (2.0, {"a": 2}, 9)) == (
        "imitation"
    )
    assert tr.keep_best(Model(), tr.Args(), tmp_path, (-np.inf, None), (-np.inf, None, 0)) == (
        "ppo"
    )


def test_train__same_seed_same_model_bit_for_bit(tmp_path, tiny_train):
    """Two runs of ``mtgym train``'s default model (pooled observation, per-slot net, its
    sampled rollouts in inference mode) with one seed give the same weights; another seed
    does not."""
    from sb3_contrib import MaskablePPO

    def weights(seed: int, name: str) -> dict[str, torch.Tensor]:
        model = tiny_train(tmp_path / name, seed=seed)
        return MaskablePPO.load(model, device="cpu").policy.state_dict()

    a, b, c = weights(3, "a"), weights(3, "b"), weights(4, "c")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


@pytest.mark.skipif(not (PRETRAINED / "model.zip").is_file(), reason="no shipped agent")
def test_shipped_agent__evaluates_on_a_different_cluster_size():
    pol = AgentPolicy(PRETRAINED)
    bigger = replace(default_generator(), num_nodes=128)
    res = play(bigger(5), pol)
    assert res.metrics.samples > 0 and res.decisions > 10
    assert Path(PRETRAINED / "agent.json").is_file()


@pytest.mark.skipif(not (PRETRAINED / "model.zip").is_file(), reason="no shipped agent")
def test_shipped_agent__checked_rollout_keeps_every_invariant():
    """The shipped agent deciding at every event, every invariant checked after each step
    (``checked_rollout``), and through ``play`` at its own interval with ``debug=True``,
    which must not change the episode."""
    inst = default_generator()(3)
    traj = checked_rollout(inst, AgentPolicy(PRETRAINED), max_steps=300)
    assert len(traj) == 300  # the 6-hour episode is far from over after 300 events
    held = [int(s.n_nodes.sum()) for s, _ in traj]
    assert max(held) > 0 and traj[-1][0].progress.sum() > 0
    until = inst.t_start + 2 * 3600.0
    checked = play(inst, AgentPolicy(PRETRAINED), until=until, debug=True)
    plain = play(inst, AgentPolicy(PRETRAINED), until=until, debug=False)
    assert checked.decisions == plain.decisions > 10
    assert checked.metrics.samples == plain.metrics.samples > 0


@pytest.mark.parametrize("net", ["set", "slot"])
def test_imitation__clones_freetrain_on_the_default_scenario(tmp_path, net):
    """BC fits the expert's per-slot counts (an untrained policy does not), and the train
    command runs BC + DAgger end to end and says which policy it kept."""
    from agents.imitation import collect, pretrain
    from agents.pooled import PooledObservation
    from agents.train import Args, build_model
    from mtgym.cli import main

    pooled = net == "slot"
    args = Args(
        scenario="default",
        max_jobs=16,
        max_count=16,
        net=net,
        observation="pooled" if pooled else "dict",
        decision_interval_s=None,
        embed_dim=32 if pooled else 64,
    )
    data = collect("default", "freetrain", [11], args.config().env_kwargs(), pooled=pooled)
    env = ScavengeEnv("default", **args.config().env_kwargs())
    model = build_model(args, PooledObservation(env) if pooled else env, None)
    if pooled:
        width = PooledObservation(env).layout.slot_dim
        present = data.obs[:, : 16 * width].reshape(-1, 16, width)[..., 0] > 0
    else:
        present = data.obs["job_mask"] > 0

    def slot_accuracy() -> float:
        if pooled:
            obs = torch.as_tensor(data.obs, dtype=torch.float32)
        else:
            obs = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in data.obs.items()}
        with torch.no_grad():
            dist = model.policy.get_distribution(obs, action_masks=data.masks)
            pred = dist.get_actions(deterministic=True).numpy()
        return float((pred == data.actions)[present].mean())

    before = slot_accuracy()
    losses = pretrain(model, data, epochs=25, lr=3e-3, seed=0)
    after = slot_accuracy()
    assert losses[-1] < 0.5 * losses[0]
    print(f"slot accuracy {before:.3f} -> {after:.3f}")
    # BC removes more than half of the untrained policy's error (the slot net starts near
    # the expert: its learned keep-count bonus already matches a sticky expert most steps)
    assert after > 0.9 and (1 - after) < 0.5 * (1 - before), (before, after)
    if not pooled:
        assert before < 0.5
    if pooled:
        return

    out = tmp_path / "bc"
    argv = ["train", "--scenario", "toy-two-jobs", "--timesteps", "256", "--n-envs", "1"]
    argv += ["--max-jobs", "2", "--max-count", "4", "--eval-freq", "0", "--no-progress"]
    argv += ["--bc-expert", "freetrain", "--bc-episodes", "2", "--dagger-rounds", "1"]
    assert main([*argv, "--out", str(out)]) == 0
    info = json.loads((out / "train.json").read_text())
    assert info["kept"] in ("imitation", "ppo")
    assert info["imitation_s"] > 0 and info["rl_s"] > 0  # the RL rate counts RL time only
    assert info["wall_s"] == pytest.approx(info["imitation_s"] + info["rl_s"])
    assert info["steps_per_s"] == pytest.approx(256 / info["rl_s"])
    saved = json.loads((out / "args.json").read_text())
    assert saved["bc_seeds"] == [11, 12] and saved["context"] is True


def test_compare_plot__bars_carry_the_95_percent_intervals(tmp_path):
    import numpy as np

    from agents.compare import PANELS, figure, plot

    def entry(m, lo, hi):
        keys = [k for k, _, _ in PANELS]
        return {
            **{k: m for k in keys},
            "ci_low": {k: lo for k in keys},
            "ci_high": {k: hi for k in keys},
        }

    results = {
        "scenario": "s",
        "seeds": [0, 1, 2],
        "reference": "freetrain",
        "policies": {
            "agent": entry(10.0, 8.0, 13.0),
            "freetrain": entry(20.0, 19.0, 21.0),
            "none": {"ci_low": {}, "ci_high": {}},  # missing values draw no bar
        },
    }
    fig = figure(results)
    for ax, (_, _, scale) in zip(fig.axes, PANELS, strict=True):
        from matplotlib.container import BarContainer

        bars = next(c for c in ax.containers if isinstance(c, BarContainer))
        assert [b.get_height() for b in bars] == pytest.approx([10 * scale, 20 * scale, 0.0])
        segs = bars.errorbar.lines[2][0].get_segments()
        lows = [s[0][1] for s in segs]
        highs = [s[1][1] for s in segs]
        assert lows[:2] == pytest.approx([8 * scale, 19 * scale])
        assert highs[:2] == pytest.approx([13 * scale, 21 * scale])
    plot(results, tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 1000
    assert np.isfinite(fig.axes[0].get_ylim()).all()


def test_imitation__expert_runs_with_the_scenarios_t_fwd(monkeypatch):
    """The cloned expert is the one ``evaluate`` runs: FreeTrain with the scenario's knobs
    (its tuned T_fwd, else the scenario's)."""
    import agents.imitation as imitation
    from mtgym.evaluate import configure_policy, scenario_defaults
    from mtgym.policy.registry import make_policy as real_make
    from mtgym.scenario.registry import get_generator

    made = []

    def spy(name, **kw):
        made.append(real_make(name, **kw))
        return made[-1]

    monkeypatch.setattr(imitation, "make_policy", spy)
    imitation.collect("default", "freetrain", [3], {"horizon_s": 600.0})
    want = configure_policy(real_make("freetrain"), scenario_defaults(get_generator("default")))
    assert want.t_fwd != 10.0 and made
    assert all(
        (p.t_fwd, p.max_jobs, p.objective) == (want.t_fwd, want.max_jobs, want.objective)
        for p in made
    )
