"""Offline RL on an mtgym Minari dataset with TorchRL: a factored double DQN, then one
episode in the dataset's own env (``docs/offline.md``, "An offline-RL library").

    python -m examples.offline_torchrl mtgym/default/freetrain-speedup-v0 [--steps 2000]

Why this shape: the action is ``MultiDiscrete([34] * S)``. TorchRL's ``QValueModule`` and
``DQNLoss`` take it as S concatenated one-hots (``action_space="mult_one_hot"``), the
action's value being the sum of the slots' values; the head divides by S so that the sum
is a mean and does not grow with S (64 slots' maxima summed overestimate). Its
``DiscreteCQLLoss`` and ``DiscreteIQLLoss`` do not fit this action (a logsumexp over every
slot's choices at once; one-hot or categorical actions only), and TorchRL's own Minari
reader reads no ``MultiDiscrete``, so the episodes are read with ``minari`` itself into a
TorchRL replay buffer.
"""

from __future__ import annotations

import argparse

import minari
import numpy as np
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn
from torchrl.data import LazyTensorStorage, ReplayBuffer
from torchrl.modules import MLP, QValueModule
from torchrl.objectives import DQNLoss, SoftUpdate

MASK = ("observation", "action_mask")


def transitions(ds: minari.MinariDataset, choices: int) -> TensorDict:
    """Every step of every episode as (observation, one-hot action, next observation,
    reward, done); the mask as bool, the reward as float32.
    """
    parts = []
    for ep in ds.iterate_episodes():
        T = len(ep.actions)
        obs = {k: torch.as_tensor(np.asarray(v)) for k, v in ep.observations.items()}
        obs["action_mask"] = obs["action_mask"].bool()
        done = torch.as_tensor(ep.terminations | ep.truncations)[:, None]
        parts.append(
            TensorDict(
                {
                    "observation": {k: v[:-1] for k, v in obs.items()},
                    "action": nn.functional.one_hot(torch.as_tensor(ep.actions), choices)
                    .flatten(-2)
                    .long(),
                    "next": {
                        "observation": {k: v[1:] for k, v in obs.items()},
                        "reward": torch.as_tensor(ep.rewards, dtype=torch.float32)[:, None],
                        "done": done,
                        "terminated": torch.as_tensor(ep.terminations)[:, None],
                    },
                },
                batch_size=[T],
            )
        )
    return torch.cat(parts)


class SlotQ(nn.Module):
    """Every slot's value of every choice from the flattened observation, over S."""

    def __init__(self, slots: int, choices: int) -> None:
        super().__init__()
        self.slots = slots
        self.mlp = MLP(out_features=slots * choices, num_cells=[256, 256])

    def forward(self, *parts: torch.Tensor) -> torch.Tensor:
        """(B, S*K) values from the observation's parts (each flattened after the batch)."""
        x = torch.cat([p.flatten(1).float() for p in parts], dim=-1)
        return self.mlp(x) / self.slots


def train(dataset_id: str, steps: int, seed: int = 0) -> tuple[TensorDictSequential, list[str]]:
    """A masked Q-network trained offline for ``steps`` minibatches of 256; the keys read."""
    torch.manual_seed(seed)
    ds = minari.load_dataset(dataset_id)
    S, K = len(ds.action_space.nvec), int(ds.action_space.nvec[0])
    data = transitions(ds, K)
    keys = [k for k in ds.observation_space.spaces if k != "action_mask"]
    rb = ReplayBuffer(storage=LazyTensorStorage(len(data)), batch_size=256)
    rb.extend(data)
    qnet = TensorDictSequential(
        TensorDictModule(SlotQ(S, K), [("observation", k) for k in keys], ["action_value"]),
        QValueModule(action_space="mult_one_hot", var_nums=[K] * S, action_mask_key=MASK),
    )
    qnet(data[:2].clone())  # (the MLP's lazy input layer takes its width)
    loss = DQNLoss(qnet, action_space="mult_one_hot", delay_value=True, double_dqn=True)
    loss.make_value_estimator(gamma=0.99)
    target = SoftUpdate(loss, tau=0.005)
    opt = torch.optim.Adam(loss.parameters(), lr=3e-4)
    for _ in range(steps):
        out = loss(rb.sample())
        opt.zero_grad()
        out["loss"].backward()
        opt.step()
        target.step()
    return qnet, keys


@torch.no_grad()
def play(dataset_id: str, qnet: TensorDictSequential, seed: int) -> float:
    """One episode of the greedy masked policy in the dataset's env; its return."""
    ds = minari.load_dataset(dataset_id)
    env = ds.recover_environment()
    K = int(ds.action_space.nvec[0])
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        td = TensorDict({"observation": {k: torch.as_tensor(v)[None] for k, v in obs.items()}}, [1])
        td[MASK] = td[MASK].bool()
        qnet(td)  # (illegal choices masked to the lowest value)
        action = td["action_value"].view(-1, K).argmax(-1).numpy()
        obs, reward, term, trunc, _ = env.step(action)
        total += float(reward)
        done = term or trunc
    return total


def main(argv: list[str] | None = None) -> None:
    """Train on ``dataset_id`` for ``--steps`` minibatches, play one episode, print its
    return and Minari's normalised score (0: random actions, 1: the scenario's reference).
    """
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset_id")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--seed", type=int, default=2**30, help="the evaluation episode's seed")
    ns = p.parse_args(argv)
    qnet, _ = train(ns.dataset_id, ns.steps)
    ret = play(ns.dataset_id, qnet, ns.seed)
    ds = minari.load_dataset(ns.dataset_id)
    print(f"return {ret:.3f}, normalised {float(minari.get_normalized_score(ds, ret)):.3f}")


if __name__ == "__main__":
    main()
