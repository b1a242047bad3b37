"""RLlib (issue 39): PPO trains on ``mtgym:mtgym/Scavenge-v0`` with no glue (one remote
runner, each layout RLlib takes), never draws a masked-out action in ``"masked"``;
``mtgym train --algo rllib-ppo`` writes the SB3 trainer's TensorBoard tags and a checkpoint
that resumes and that ``rllib-agent`` plays through ``mtgym evaluate``.

The suite runs under the gymnasium version ``ray[rllib]`` pins (the ``ray`` extra installs
it), so these run wherever ``make test`` does.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from agents.rllib_policy import RLlibAgentPolicy, find_run
from agents.rllib_train import (
    SHARED_TRAIN_TAGS,
    RLlibArgs,
    _local_cpus,
    check_args,
    ppo_config,
)
from mtgym.backends.ray_backend import ray_session
from mtgym.cli import main
from mtgym.core.errors import PolicyUnsupportedError
from mtgym.env.layout import MASK_KEY
from mtgym.policy.play import play
from mtgym.scenario.registry import get_generator

#: a short episode: 2 h at a decision every 120 s (60 steps), 8 slots
ENV = {"horizon_s": 7200.0, "max_jobs": 8, "action_mode": "shares", "decision_interval_s": 120.0}


@pytest.fixture(scope="module")
def ray_cluster():
    with ray_session(num_cpus=2) as ray:
        yield ray


def tiny(layout: str, runners: int = 1) -> object:
    """A one-iteration PPO config: 64 env steps, 2 batched envs per runner (``"slot"``: the
    ``"masked"`` layout and the per-slot module)."""
    args = RLlibArgs(
        module="slot" if layout == "slot" else "mlp",
        obs_layout={"dict": "flat", "slot": "masked"}.get(layout, layout),
        num_env_runners=runners,
        envs_per_runner=2,
        train_batch=64,
        minibatch=32,
        num_epochs=1,
        hidden=(32,),
        max_jobs=ENV["max_jobs"],
    )
    config = ppo_config(args).environment(
        "mtgym:mtgym/Scavenge-v0", env_config={**ENV, "obs_layout": args.obs_layout}
    )
    if layout == "dict":  # RLlib's default encoders take no Dict: its flattening connector
        from ray.rllib.connectors.env_to_module import FlattenObservations

        config = config.env_runners(env_to_module_connector=lambda *a, **k: FlattenObservations())
    return config


@pytest.mark.parametrize("layout", ["masked", "flat", "dict", "slot"])
def test_rllib_ppo__one_iteration_per_layout_with_a_remote_runner(ray_cluster, layout):
    algo = tiny(layout).build_algo()
    try:
        result = algo.train()
        learner = result["learners"]["default_policy"]
        for key in ("total_loss", "policy_loss", "vf_loss", "entropy"):
            assert math.isfinite(float(learner[key])), (key, learner[key])
        assert result["num_env_steps_sampled_lifetime"] >= 64
        if layout in ("masked", "slot"):  # every action drawn is legal in its observation
            episodes = algo.env_runner_group.foreach_env_runner(
                lambda r: r.sample(num_timesteps=64, random_actions=False),
                local_env_runner=False,
            )
            checked = 0
            slots = np.arange(ENV["max_jobs"])
            for ep in (e for runner in episodes for e in runner):
                masks = np.asarray(ep.get_observations()[MASK_KEY])  # (T + 1, M)
                acts = np.asarray(ep.get_actions())  # (T, S)
                for t in range(len(acts)):
                    picked = masks[t].reshape(slots.size, -1)[slots, acts[t]]
                    assert (picked == 1.0).all(), (t, acts[t])
                    checked += 1
            assert checked >= 32
    finally:
        algo.stop()


def test_check_args__names_the_setting():
    with pytest.raises(ValueError, match="obs_layout 'dict'"):
        check_args(RLlibArgs(obs_layout="dict"))
    with pytest.raises(ValueError, match="vectorize 'async'"):
        check_args(RLlibArgs(vectorize="async"))
    with pytest.raises(ValueError, match="module 'slot' needs action_mode 'shares'"):
        check_args(RLlibArgs(module="slot", action_mode="counts"))
    with pytest.raises(ValueError, match="minibatch 512"):
        check_args(RLlibArgs(train_batch=64))
    # a private local Ray gets a CPU per runner (else Ray waits for them forever)
    assert _local_cpus(RLlibArgs(num_env_runners=64)) >= 64
    assert _local_cpus(RLlibArgs(num_env_runners=64, address="auto")) is None


def train_argv(out: Path, timesteps: int, *extra: str) -> list[str]:
    """``mtgym train --algo rllib-ppo`` on a tiny budget (shares, 8 slots, 2 envs, 64-step
    rollouts and minibatches, one epoch, a decision every 600 s, evaluation on seed 1000),
    then ``extra``."""
    return [
        "train", "--algo", "rllib-ppo", "--scenario", "default", "--action-mode", "shares",
        "--max-jobs", "8", "--timesteps", str(timesteps), "--n-envs", "2", "--n-steps", "64",
        "--batch-size", "64", "--n-epochs", "1", "--eval-seeds", "1000",
        "--decision-interval", "600", "--out", str(out), *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def rllib_run(tmp_path_factory, ray_cluster) -> Path:
    """``mtgym train --algo rllib-ppo``: 256 steps in the driver, evaluated at 128 and 256."""
    out = tmp_path_factory.mktemp("rllib") / "run"
    assert main(train_argv(out, 256, "--eval-freq", "128", "--learning-rate", "3e-4")) == 0
    return out


def test_train_rllib__tags_checkpoint_and_config(rllib_run):
    out = rllib_run
    config = json.loads((out / "agent.json").read_text())
    assert (config["algo"], config["observation"], config["max_jobs"]) == ("rllib-ppo", "masked", 8)
    record = json.loads((out / "train.json").read_text())
    assert [p["steps"] for p in record["eval"]] == [128, 256]
    assert all(p["normalized_throughput"] > 0 for p in record["eval"])
    acc = EventAccumulator(str(next((out / "tb").iterdir())))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert set(SHARED_TRAIN_TAGS) <= tags  # the SB3 trainer's names (test_agents checks there)
    assert {"eval/normalized_throughput", "eval/fairness_jain", "eval/jct_mean"} <= tags
    assert [e.step for e in acc.Scalars("eval/normalized_throughput")] == [128, 256]
    assert not (out / "checkpoint.tmp").exists() and not (out / "checkpoint.old").exists()
    assert find_run(out) == find_run(out / "checkpoint")


def test_rllib_agent__evaluate_scores_it_beside_a_baseline(rllib_run, tmp_path):
    res_dir = tmp_path / "eval"
    argv = ["evaluate", "--scenario", "default", "--seeds", "1", "--out", str(res_dir)]
    argv += ["--policy", "freetrain", "--policy", f"rllib-agent:{rllib_run}", "--no-bound"]
    assert main(argv) == 0
    results = json.loads((res_dir / "results.json").read_text())
    name = f"rllib-agent:{rllib_run}"
    assert name in results["policies"]
    assert results["policies"][name]["normalized_throughput"] > 0


def test_rllib_agent__deterministic_legal_and_refuses_other_machines(rllib_run):
    gen = get_generator("default")
    a = play(gen(3), RLlibAgentPolicy(rllib_run), until=gen(3).t_start + 7200.0)
    b = play(gen(3), RLlibAgentPolicy(rllib_run), until=gen(3).t_start + 7200.0)
    assert a.metrics.as_dict()["samples"] == b.metrics.as_dict()["samples"] > 0
    pol = RLlibAgentPolicy(rllib_run)
    from mtgym.sim.dynamics import initial_state
    from mtgym.sim.view import ViewBuilder

    inst = gen(0)
    view = ViewBuilder(inst, pol.info_mode)(initial_state(inst))
    pol.reset(view)
    obs = pol.layout(pol.observer.observe(view))
    action = pol.act(obs, pol.observer.mask)
    mask = pol.observer.mask.reshape(action.size, -1)
    assert mask[np.arange(action.size), action].all()  # the argmax over legal actions only
    big = get_generator("default-128")(0)
    with pytest.raises(PolicyUnsupportedError, match="128 nodes"):
        pol.reset(ViewBuilder(big, pol.info_mode)(initial_state(big)))


def test_rllib_agent__clear_errors(tmp_path, rllib_run):
    with pytest.raises(ValueError, match="rllib-agent:PATH"):
        RLlibAgentPolicy()
    with pytest.raises(FileNotFoundError, match="not an RLlib run"):
        RLlibAgentPolicy(tmp_path)
    sb3 = Path(__file__).resolve().parents[2] / "agents" / "pretrained" / "default"
    with pytest.raises(FileNotFoundError, match="not an RLlib run"):
        RLlibAgentPolicy(sb3)


def test_train_rllib__resumes_from_its_checkpoint(rllib_run, tmp_path):
    out = tmp_path / "more"
    assert main(train_argv(out, 384, "--eval-freq", "0", "--resume", str(rllib_run))) == 0
    record = json.loads((out / "train.json").read_text())
    assert record["resumed_from"] == 256  # the checkpoint's steps, restored
    assert record["timesteps"] == 384  # and one more iteration of 128 to the total
    assert [p["steps"] for p in record["eval"]] == [384]  # (no catching-up evaluations)
    acc = EventAccumulator(str(next((out / "tb").iterdir())))
    acc.Reload()
    assert [e.step for e in acc.Scalars("train/value_loss")] == [384]


def test_train_rllib__refuses_the_sb3_trainers_options(capsys):
    argv = ["train", "--algo", "rllib-ppo", "--net", "set", "--target-kl", "0.01", "--out", "x"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "does not take --net, --target-kl (SB3 trainer only)" in err
    assert main(["train", "--algo", "rllib-ppo", "--embed-dim", "16", "--out", "x"]) == 2
    assert "--embed-dim is the slot module's width" in capsys.readouterr().err
    assert not Path("x").exists()


def test_env_config__the_class_in_vector_entry_point_mode_names_the_id():
    from mtgym.env import ScavengeEnv

    with pytest.raises(TypeError, match="mtgym:mtgym/Scavenge-v0"):
        ScavengeEnv({"obs_layout": "flat", "num_envs": 4})


def test_rllib_agent__the_bridge_records_its_decisions(rllib_run, tmp_path):
    trace = tmp_path / "trace.jsonl"
    argv = ["bridge", "record", "--scenario", "default", "--policy", f"rllib-agent:{rllib_run}"]
    assert main([*argv, "--out", str(trace), "--until", "3600"]) == 0
    lines = trace.read_text().splitlines()
    assert len(lines) > 2 and "rllib-agent" in lines[0]


def test_rllib_agent__loads_from_a_relative_path(rllib_run, monkeypatch):
    monkeypatch.chdir(rllib_run.parent)  # (RLlib reads checkpoints as URIs: made absolute)
    assert RLlibAgentPolicy(rllib_run.name).config.algo == "rllib-ppo"


@pytest.fixture(scope="module")
def slot_run(tmp_path_factory, ray_cluster) -> Path:
    """A 128-step run of the per-slot module (8 slots, in the driver)."""
    out = tmp_path_factory.mktemp("slot") / "run"
    assert main(train_argv(out, 128, "--eval-freq", "0", "--rllib-module", "slot")) == 0
    return out


def test_slot_module__one_set_of_weights_on_any_machine(slot_run):
    from agents.rllib_module import for_machine
    from mtgym.sim.dynamics import initial_state
    from mtgym.sim.view import ViewBuilder

    pol = RLlibAgentPolicy(slot_run)
    assert json.loads((slot_run / "agent.json").read_text())["max_jobs"] is None  # any S
    for scenario, slots in (("default", 64), ("default-128", 128)):  # (trained on 8 slots)
        inst = get_generator(scenario)(0)
        view = ViewBuilder(inst, pol.info_mode)(initial_state(inst))
        pol.reset(view)  # no refusal: the module is rebuilt for the machine
        assert pol.active is not pol.module and pol.observer.num_slots == slots
        action = pol.act(pol.layout(pol.observer.observe(view)), pol.observer.mask)
        mask = pol.observer.mask.reshape(slots, -1)
        assert action.shape == (slots,) and mask[np.arange(slots), action].all()
        for k, v in pol.module.state_dict().items():  # the trained weights, unchanged
            assert torch.equal(v, pol.active.state_dict()[k])
    # rebuilt for its own machine, the module computes what the trained one does
    import gymnasium as gym

    env = gym.make("mtgym/Scavenge-v0", max_jobs=8, action_mode="shares", obs_layout="masked")
    obs, _ = env.reset(seed=4)
    same = for_machine(pol.module, env.unwrapped.layout, env.action_space)
    batch = {"obs": {k: torch.from_numpy(v)[None] for k, v in obs.items()}}
    with torch.no_grad():
        a = pol.module.forward_inference(batch)["action_dist_inputs"]
        b = same.forward_inference(batch)["action_dist_inputs"]
    assert torch.equal(a, b)


def test_slot_module__evaluates_on_another_machine(slot_run, tmp_path):
    argv = ["evaluate", "--scenario", "default-128", "--seeds", "1", "--no-bound"]
    argv += ["--policy", f"rllib-agent:{slot_run}", "--out", str(tmp_path / "e")]
    assert main(argv) == 0
    results = json.loads((tmp_path / "e" / "results.json").read_text())
    assert results["policies"][f"rllib-agent:{slot_run}"]["normalized_throughput"] > 0


def test_slot_categorical__the_values_of_rllibs_multicategorical():
    from ray.rllib.core.distribution.torch.torch_distribution import TorchMultiCategorical
    from ray.rllib.utils.torch_utils import FLOAT_MIN

    from agents.rllib_module import SlotCategorical

    torch.manual_seed(0)
    b, s, k = 5, 7, 34
    mask = (torch.rand(b, s * k) > 0.5).float()
    mask.view(b, s, k)[..., 0] = 1.0  # (keep is always legal)
    illegal = torch.clamp(torch.log(mask), min=FLOAT_MIN)
    ours, theirs = (
        SlotCategorical.get_partial_dist_cls(choices=k),
        TorchMultiCategorical.get_partial_dist_cls(input_lens=[k] * s),
    )
    x_logits, y_logits = torch.randn(b, s * k) + illegal, torch.randn(b, s * k) + illegal
    a, ref = ours.from_logits(x_logits), theirs.from_logits(x_logits)
    draw = a.sample()
    assert draw.shape == (b, s) and (mask.view(b, s, k).gather(2, draw[..., None]) == 1).all()
    torch.testing.assert_close(a.logp(draw), ref.logp(draw))
    torch.testing.assert_close(a.entropy(), ref.entropy())
    kl = a.kl(ours.from_logits(y_logits))
    torch.testing.assert_close(kl, ref.kl(theirs.from_logits(y_logits)), rtol=1e-4, atol=1e-4)
    assert torch.equal(a.to_deterministic().sample(), ref.to_deterministic().sample())
