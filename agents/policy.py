"""Learned agents behind mtgym's policy interface.

``AgentPolicy(path)`` loads a saved model (``model.zip``) and its ``agent.json`` (the env
settings it was trained with: action mode, slots, count cap, reward, info mode, decision
interval). It is a ``Policy`` like any baseline: ``decide(view)`` builds the env's
observation of the view (``mtgym.policy.observe.ViewObserver``: the env's own builder and
codec), runs the network (one torch thread, inference mode) and decodes its action into the
node map the env would apply. So ``play`` drives it, hence ``mtgym run``, ``evaluate``,
``compare``, the Ray backend, ``bridge record`` and ``scavenge``; it is registered as
``agent`` (``--policy agent:PATH``). An agent trained with a ``decision_interval_s`` carries
it as an attribute, which ``play`` uses unless its caller sets another.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mtgym.core.errors import PolicyUnsupportedError
from mtgym.core.types import Allocation
from mtgym.policy.observe import ViewObserver
from mtgym.sim.view import InfoMode, SchedulerView

PRETRAINED = Path(__file__).resolve().parent / "pretrained" / "default"
OBSERVATIONS = ("dict", "pooled", "flat", "masked")  # (flat, masked: RLlib agents)


@dataclass
class AgentConfig:
    """Env settings an agent was trained with (saved as ``agent.json`` beside the model).

    A field missing from an ``agent.json`` takes the default below.

    Attributes:
        algo: ``"maskable_ppo"``, ``"ppo"`` or ``"a2c"`` (``load_model``'s classes), or
            ``"rllib-ppo"`` (an RLlib run: ``agents.rllib_policy.RLlibAgentPolicy`` plays it).
        action_mode: the env's ``action_mode`` (``counts``, ``assign``, ``delta``,
            ``shares``).
        reward: the env's reward (``mtgym.env.reward.REWARDS``); a record, not used to act.
        info_mode: an ``InfoMode`` value: what the agent's observations show of the jobs.
        max_jobs: the slots S; None: ``mtgym.env.slots.slot_rule`` of each cluster (a
            scale-free agent serves any S).
        max_count: the count cap C of the action and the observation.
        decision_interval_s: simulated seconds between decisions; None: at every event.
        scenario: the scenario trained on (a record).
        observation: ``"dict"``, the env's Dict observation, or ``"pooled"``,
            ``agents.pooled``'s flat vector; an RLlib agent's ``obs_layout``, ``"flat"`` or
            ``"masked"``.
        sample: False: the most likely action; True: actions drawn from the policy with a
            generator seeded at every episode's start (``sample_seed``), so an episode is
            still reproducible.
        sample_seed: that generator's seed.
        temperature: draws come from softmax(logits / temperature), > 0: below 1 the
            agent re-sizes less at random.
        budget_masks: the agent draws its slots in order within the node budget
            (``agents.budget_dist``; ``mtgym train --budget-masks``, ``shares``), from the
            budget masks of the view it observes.
        features: the observation's features the agent was trained on, key -> [[name,
            width], ...] in column order (``agents.pooled.feature_record``); a pooled agent
            reads these columns by name, so features the env added since are not read.
            None: ``agents.pooled.FEATURES_V1`` (agents written before it was recorded).
        features_version: the env's feature set version then
            (``mtgym.env.observation.FEATURES_VERSION``); None: 1.
        extra: free-form notes kept in the file; nothing reads them.
    """

    algo: str = "maskable_ppo"
    action_mode: str = "counts"
    reward: str = "throughput"
    info_mode: str = "user"
    max_jobs: int | None = 16
    max_count: int = 16
    decision_interval_s: float | None = None
    scenario: str = "default"
    observation: str = "dict"
    sample: bool = False
    sample_seed: int = 0
    temperature: float = 1.0
    budget_masks: bool = False
    features: dict[str, list[list[Any]]] | None = None
    features_version: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def wanted_features(self) -> tuple[dict[str, Any], int]:
        """(key -> [(name, width), ...], version): ``features`` and ``features_version``,
        or feature set 1 when the file records none.
        """
        from agents.pooled import FEATURES_V1, FEATURES_V1_VERSION

        if self.features is None:
            return dict(FEATURES_V1), FEATURES_V1_VERSION
        ver = FEATURES_V1_VERSION if self.features_version is None else self.features_version
        return {k: [tuple(p) for p in v] for k, v in self.features.items()}, int(ver)

    def env_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``ScavengeEnv``: the action mode, reward, information
        mode, slots, count cap and decision interval (the scenario is the caller's).
        """
        return {
            "action_mode": self.action_mode,
            "reward": self.reward,
            "info_mode": self.info_mode,
            "max_jobs": self.max_jobs,
            "max_count": self.max_count,
            "decision_interval_s": self.decision_interval_s,
        }

    def save(self, path: Path) -> None:
        """Write ``agent.json`` (atomically: a reader never sees half a file).

        Args:
            path: the file to write.
        """
        from mtgym.core.io import atomic_write_json

        atomic_write_json(path, self.__dict__)

    @classmethod
    def load(cls, path: Path) -> AgentConfig:
        """Read ``agent.json``.

        Args:
            path: the file.

        Raises:
            TypeError: a key that is not a field.
            ValueError: an unknown ``observation`` or a temperature that is not > 0.
        """
        cfg = cls(**json.loads(path.read_text()))
        if cfg.observation not in OBSERVATIONS:
            raise ValueError(
                f"{path}: observation {cfg.observation!r} is not one of {OBSERVATIONS}"
            )
        _check_temperature(cfg.temperature, f"{path}: ")
        return cfg


def _check_temperature(value: float, where: str = "") -> None:
    """``ValueError`` (its message starting with ``where``) unless ``value`` is finite, > 0."""
    if not (value > 0 and np.isfinite(value)):
        raise ValueError(f"{where}temperature {value!r} is not a positive number")


def load_model(path: str | Path) -> tuple[Any, AgentConfig]:
    """A saved model and its config, on the CPU; sets torch to one thread (process-wide).

    Args:
        path: a ``model.zip`` or its folder; ``agent.json`` is read from the same folder
            (missing: ``AgentConfig()``'s defaults).

    Returns:
        (the SB3 model of ``config.algo``, the config).

    Raises:
        FileNotFoundError: no model there.
        ValueError: an unknown ``algo``, or an invalid ``agent.json`` (``AgentConfig.load``).
    """
    import torch

    p = Path(path)
    folder = p if p.is_dir() else p.parent
    zip_path = p if p.suffix == ".zip" else folder / "model.zip"
    if not zip_path.is_file():
        raise FileNotFoundError(f"no model at {zip_path} (train one with `mtgym train`)")
    cfg_path = folder / "agent.json"
    cfg = AgentConfig.load(cfg_path) if cfg_path.is_file() else AgentConfig()
    torch.set_num_threads(1)
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import A2C, PPO

    algos = {"maskable_ppo": MaskablePPO, "ppo": PPO, "a2c": A2C}
    if cfg.algo not in algos:
        raise ValueError(f"unknown algo {cfg.algo!r} in {cfg_path}; known: {sorted(algos)}")
    return algos[cfg.algo].load(str(zip_path), device="cpu"), cfg


class AgentPolicy:
    """A trained SB3 model as an mtgym ``Policy`` (see module docstring).

    Args:
        path: a ``model.zip`` or its folder; None or empty: the shipped agent
            (``PRETRAINED``).
        deterministic: True: the most likely action; False: a draw; None: as
            ``agent.json``'s ``sample`` says.
        temperature: overrides ``agent.json``'s (> 0); it shapes the draws of a
            MaskablePPO agent whose slots have one size (every shipped agent), not the mode.
        max_jobs: overrides ``agent.json``'s slots S (1..``MAX_SLOTS``); a scale-free agent
            (``shares``) plays any S, e.g. more than one per node on a machine that
            holds more jobs at once (``scripts/agent_slots.py``).
        budget_masks: overrides ``agent.json``'s: True draws the slots in order within the
            node budget (``agents.budget_dist``), False draws each slot from its own mask
            (``shares`` agents; ``scripts/select_agent.py --draws``).

    Attributes:
        info_mode: from ``agent.json``: the view the driver must build.
        decision_interval_s: from ``agent.json``; ``play`` uses it unless told another.
        layout: the pooled layout for the current cluster (None for a Dict agent, or
            before ``reset``).
        decisions: decisions made by this object (every episode).
        repaired: those whose action the codec repaired (``ActionCodec.repairs``).

    Raises:
        FileNotFoundError: no model at ``path``.
        ValueError: a temperature that is not > 0, an invalid ``agent.json``, or budget
            masks for another mode than ``shares``.
    """

    info_mode = InfoMode.USER

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        deterministic: bool | None = None,
        temperature: float | None = None,
        max_jobs: int | None = None,
        budget_masks: bool | None = None,
    ) -> None:
        import torch

        from mtgym.core.limits import MAX_SLOTS

        self.path = Path(path) if path else PRETRAINED
        self.model, self.config = load_model(self.path)
        if max_jobs is not None:  # the caller's slots, else agent.json's
            if not 1 <= int(max_jobs) <= MAX_SLOTS:
                raise ValueError(f"max_jobs must be in 1..{MAX_SLOTS}; got {max_jobs}")
            self.config.max_jobs = int(max_jobs)
        if temperature is not None:  # the caller's, else agent.json's
            _check_temperature(temperature)
            self.config.temperature = float(temperature)
        if budget_masks is not None:  # the caller's draws, else agent.json's
            if budget_masks and self.config.action_mode != "shares":
                mode = self.config.action_mode
                raise ValueError(f"budget masks need action_mode 'shares', not {mode!r}")
            self.config.budget_masks = bool(budget_masks)
        self.model.policy.set_training_mode(False)
        self.info_mode = InfoMode(self.config.info_mode)
        self.decision_interval_s = self.config.decision_interval_s
        # the config's choice unless the caller overrides it
        self.deterministic = (not self.config.sample) if deterministic is None else deterministic
        self._gen = torch.Generator().manual_seed(self.config.sample_seed)
        self.name = "agent"
        self.observer = ViewObserver(
            action_mode=self.config.action_mode,
            max_jobs=self.config.max_jobs,
            max_count=self.config.max_count,
            info_mode=self.info_mode,
        )
        self._torch = torch
        from agents.pooled import SCALE_FREE_MODES

        self._scale_free = self.config.action_mode in SCALE_FREE_MODES
        self.layout = None  # the pooled layout (``observation == "pooled"``), per reset
        self._layout_features: Any = None  # the feature map ``act`` last built it for
        self.decisions = 0  # decisions made, and those whose action the codec repaired
        self.repaired = 0

    def reset(self, view: SchedulerView) -> None:
        """Size the observation for the view's cluster (any node count: set-based extractor
        or pooled observation), and re-seed the draws (the same draws for the same episode).

        Args:
            view: the episode's first view.

        Raises:
            PolicyUnsupportedError: the network does not fit this cluster: its action head
                (``_check_fits``) or its pooled input's width (slot rows and global part
                when scale-free, else the whole vector).
        """
        self.observer.reset(view)
        self._check_fits(view)
        self._gen.manual_seed(self.config.sample_seed)  # the same draws for the same episode
        if self.config.observation == "pooled":
            self.layout = self._layout(self.observer.builder.space, self.observer.builder.features)
            want = self.model.observation_space.shape
            if self._scale_free:  # any S: the slot rows and the global part must match
                fx = self.model.policy.features_extractor
                have = (self.layout.slot_dim, self.layout.global_dim)
                if have != (fx.slot_dim, fx.glob_dim):
                    raise PolicyUnsupportedError(
                        self.name,
                        f"its slot rows and global part have {have} values, its network "
                        f"takes {(fx.slot_dim, fx.glob_dim)}",
                    )
            elif want is not None and (self.layout.size,) != tuple(want):
                raise PolicyUnsupportedError(
                    self.name,
                    f"its pooled observation has {self.layout.size} values on this cluster, "
                    f"its network takes {want[0]}",
                )

    def _layout(self, space: Any, features: Any) -> Any:
        """The pooled layout of an observation ``space`` whose columns ``features`` names,
        reading the agent's own features by name (``AgentConfig.wanted_features``).

        Raises:
            PolicyUnsupportedError: the observation lacks a feature the agent reads (named),
                has it with another width, or is of another feature set version.
        """
        from agents.pooled import FeatureError, PooledLayout

        wanted, version = self.config.wanted_features()
        have = getattr(features, "version", None)
        if have is not None and have != version:
            raise PolicyUnsupportedError(
                self.name,
                f"it was trained on observation features version {version}, the env's are "
                f"version {have} (a feature changed meaning)",
            )
        try:
            return PooledLayout.of(
                space,
                self.observer.codec.C if self.observer.codec is not None else self.config.max_count,
                scale_free=self._scale_free,
                features=features,
                wanted=wanted,
            )
        except FeatureError as exc:
            raise PolicyUnsupportedError(self.name, str(exc)) from exc

    def _check_fits(self, view: SchedulerView) -> None:
        """``PolicyUnsupportedError`` when the network's action head does not fit the cluster.

        The per-slot action modes (``counts``, ``delta``) size the head by slots and counts,
        not nodes; the codec caps the count at the node count, so a cluster with fewer nodes
        than the agent's ``max_count`` would need a narrower head than the one trained.
        A scale-free head fits when its per-slot width matches (any S); ``assign`` is not
        checked.

        Args:
            view: the view being reset to (its node count goes into the message).
        """
        codec = self.observer.codec
        have = getattr(self.model.action_space, "nvec", None)
        if codec is None or have is None or self.config.action_mode == "assign":
            return  # (assign: one head per node; nothing fixed to compare)
        if self._scale_free and int(np.asarray(have).reshape(-1)[0]) == int(codec.nvec[0]):
            return  # (a scale-free head serves any number of slots)
        have = np.asarray(have).reshape(-1)
        if have.shape == codec.nvec.shape and np.array_equal(have, codec.nvec):
            return
        if self.config.max_count > codec.C:
            reason = (
                f"the cluster has {view.num_nodes} nodes, fewer than the {self.config.max_count} "
                f"its action head counts up to (max_count); it needs at least "
                f"{self.config.max_count} nodes"
            )
        else:
            reason = (
                f"its action head is {have.tolist()[:4]}... ({have.size} values), "
                f"this cluster needs {codec.nvec.tolist()[:4]}... ({codec.nvec.size} values)"
            )
        raise PolicyUnsupportedError(self.name, reason)

    def decide(self, view: SchedulerView) -> Allocation:
        """Observe the view as the env would, run the network, decode its action.

        Args:
            view: what the policy sees now (``reset`` first, once per episode).

        Returns:
            The node map the env would apply for the agent's action (repairs included).
        """
        obs = self.observer.observe(view)
        mask = self._budget_mask() if self.config.budget_masks else self.observer.mask
        action = self.act(obs, mask)
        node_job = self.observer.decode(action)
        self.decisions += 1
        self.repaired += bool(self.observer.codec.repairs.any())  # (the decode's repairs)
        return Allocation(node_job)

    def _budget_mask(self) -> np.ndarray:
        """The budget mask (``mtgym.env.actions.budget``) of the view just observed: the
        codec's, on the observer's state of it.

        Read here rather than through a new ``ViewObserver`` method: ``mtgym/policy`` is
        part of the results registry's code hash, which a change there would turn over for
        every recorded baseline episode.
        """
        ob = self.observer
        return ob.codec.budget_mask(ob._state_now, ob._instance, ob.slots)  # type: ignore[union-attr]

    def act(
        self,
        obs: dict[str, np.ndarray],
        mask: np.ndarray | None = None,
        features: Any = None,
    ) -> np.ndarray:
        """One action for an env observation (``mask``: its legal actions, MaskablePPO only).

        Calls the policy network directly rather than ``model.predict``: SB3 checks the
        observation shape against the training env's, but the set-based extractor runs on
        any number of nodes, which is how one agent serves clusters of other sizes. The
        action is the one ``predict`` gives for the same observation and mask. A pooled
        agent gets ``agents.pooled``'s vector of ``obs``. Deterministic MaskablePPO actions
        skip SB3's distribution objects (16 masked ``Categorical``s, most of the cost): the
        masked logits' per-slot argmax is their mode.

        Args:
            obs: one env observation by key, no batch axis (as ``ScavengeEnv`` returns it).
            mask: the flat (sum of nvec,) legal-action mask; None: ``obs["action_mask"]``.
                Ignored by PPO and A2C agents. An agent with ``budget_masks`` needs the
                env's budget mask here (``env.unwrapped.budget_masks()``).
            features: the env's feature map (``env.unwrapped.features``) when ``obs`` is an
                env's rather than the policy's own observer's: a pooled agent then reads
                its own features by name (columns the env added are not read). None: the
                layout of the last ``reset``, else every column.

        Raises:
            PolicyUnsupportedError: ``features`` lacks a feature the agent reads.
            ValueError: a budget-mask agent given no budget mask.

        Returns:
            The (A,) int64 action for the env.
        """
        torch = self._torch
        if torch.get_num_threads() != 1:
            torch.set_num_threads(1)
        with torch.inference_mode():
            if self.config.observation == "pooled":
                if features is not None and features is not self._layout_features:
                    self.layout = self._layout(_dict_space(obs), features)
                    self._layout_features = features
                elif self.layout is None:
                    from agents.pooled import PooledLayout

                    space = _dict_space(obs)
                    self.layout = PooledLayout.of(
                        space, self.config.max_count, scale_free=self._scale_free
                    )
                t = torch.from_numpy(self.layout.pool(obs)).unsqueeze(0)
            else:
                t = {
                    k: torch.from_numpy(np.asarray(v, dtype=np.float32)).unsqueeze(0)
                    for k, v in obs.items()
                    if k != "action_mask"
                }
            policy = self.model.policy
            if self.config.budget_masks:
                if mask is None or np.asarray(mask).dtype != np.float32:
                    raise ValueError(
                        "this agent draws within the node budget: give act() the env's "
                        "budget mask (env.unwrapped.budget_masks())"
                    )
                return self._budget_draw(policy, t, np.asarray(mask)[None])
            if self.config.algo == "maskable_ppo":
                m = np.asarray(obs["action_mask"] if mask is None else mask, dtype=bool)[None]
                if self.deterministic:
                    return self._mode(policy, t, m)
                if len(set(policy.action_space.nvec.tolist())) == 1:
                    return self._sample(policy, t, m)
                dist = policy.get_distribution(t, action_masks=m)
            else:
                dist = policy.get_distribution(t)
            action = dist.get_actions(deterministic=self.deterministic)
        return action.numpy().reshape(-1).astype(np.int64)

    def _mode(self, policy: Any, t: Any, mask: np.ndarray) -> np.ndarray:
        """The most likely legal action: per-slot argmax of the masked logits.

        Args:
            policy: the model's SB3 policy.
            t: the observation as torch input, batch of 1 (a tensor, or a dict of them).
            mask: (1, A) bool legal actions.

        Returns:
            (A,) int64; a slot with no legal choice gets 0 (all its logits -inf).
        """
        torch = self._torch
        features = policy.extract_features(t, policy.pi_features_extractor)
        logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
        nvec = policy.action_space.nvec
        if len(set(nvec.tolist())) != 1:  # slots of different sizes: SB3's own path
            dist = policy.action_dist.proba_distribution(action_logits=logits)
            dist.apply_masking(mask)
            return dist.get_actions(deterministic=True).numpy().reshape(-1).astype(np.int64)
        logits = logits.reshape(-1, int(nvec[0]))  # (a scale-free head: any number of slots)
        legal = torch.from_numpy(mask.reshape(logits.shape))
        logits = logits.masked_fill(~legal, float("-inf"))
        return logits.argmax(dim=1).numpy().astype(np.int64)

    def _budget_draw(self, policy: Any, t: Any, encoded: np.ndarray) -> np.ndarray:
        """The slots in order within the node budget (``agents.budget_dist``): each slot's
        most likely choice that still fits, or a draw from softmax(logits / temperature)
        with the episode's seeded generator (Gumbel-max), in the rollout pass's compiled
        loop (``agents.rollout._draw_budget``: one call, whatever the number of slots).

        Args:
            policy: the model's SB3 policy.
            t: the observation as torch input, batch of 1.
            encoded: (1, A) float32 budget mask.

        Returns:
            (A,) int64.

        Raises:
            ValueError: ``encoded`` is not a budget mask.
        """
        from agents.rollout import _draw_budget
        from mtgym.env.actions.budget import check_encoded

        torch = self._torch
        features = policy.extract_features(t, policy.pi_features_extractor)
        logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
        K = int(policy.action_space.nvec[0])
        x = np.ascontiguousarray(logits.numpy().reshape(1, -1, K), dtype=np.float32)
        S = x.shape[1]
        enc = np.ascontiguousarray(encoded, dtype=np.float32).reshape(1, S, K)
        check_encoded(enc)
        u = x
        if not self.deterministic:
            x = x / np.float32(self.config.temperature)
            u = torch.rand((1, S, K), generator=self._gen).numpy()
        actions = np.empty((1, S), dtype=np.int64)
        log_prob = np.empty(1, dtype=np.float32)
        # (the logits carry the keep bonus already: no current counts, no bonus added)
        _draw_budget(x, np.zeros((1, S), dtype=np.int64), 0.0, enc, u, self.deterministic,
                     actions, log_prob)  # fmt: skip
        return actions.reshape(-1)

    def _sample(self, policy: Any, t: Any, mask: np.ndarray) -> np.ndarray:
        """A legal action drawn from the policy with the episode's seeded generator.

        One draw per slot from softmax(masked logits / temperature) by
        ``torch.multinomial``; the slots must have one size.

        Args:
            policy: the model's SB3 policy.
            t: the observation as torch input, batch of 1 (a tensor, or a dict of them).
            mask: (1, A) bool legal actions; a slot needs at least one.

        Returns:
            (A,) int64.
        """
        torch = self._torch
        features = policy.extract_features(t, policy.pi_features_extractor)
        logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
        nvec = policy.action_space.nvec
        logits = logits.reshape(-1, int(nvec[0]))
        legal = torch.from_numpy(mask.reshape(logits.shape))
        logits = logits.masked_fill(~legal, float("-inf"))
        if self.config.temperature != 1.0:
            logits = logits / self.config.temperature
        probs = torch.softmax(logits, dim=1)
        return torch.multinomial(probs, 1, generator=self._gen).reshape(-1).numpy().astype(np.int64)


def _dict_space(obs: dict[str, np.ndarray]) -> Any:
    """A Dict space with the shapes of ``obs`` (for the pooled layout).

    Args:
        obs: an env observation by key.

    Returns:
        ``spaces.Dict`` of unbounded float32 ``Box``es, one per key (only shapes matter).
    """
    from gymnasium import spaces

    return spaces.Dict(
        {k: spaces.Box(-np.inf, np.inf, np.shape(v), np.float32) for k, v in obs.items()}
    )
