"""A permutation-equivariant actor-critic over job slots, for the pooled observation.

``SlotFeatures`` reads the pooled vector (``agents/pooled.py``) as an (S, slot_dim) table of
job slots plus global features. Every slot row goes through one shared MLP; a context
vector summarises the slots (masked mean) with the global features (idle pool, time, queue);
each slot's embedding is then mixed with that context, again with shared weights. So
permuting the slots permutes the slot embeddings and leaves the context unchanged.

``SlotPolicy`` (MaskablePPO) puts one shared action head on each slot embedding: a slot's
logits over its counts 0..max_count come from the same weights for every slot (DeepSets /
per-entity heads, as in AlphaStar's and Decima's schedulers), rather than one flat head
that must learn each slot separately. The value reads the context and the mean slot
embedding. Per decision the network costs a few small matrix products, whatever the node
count (the nodes were pooled before).

The distribution on the slots' logits is ``agents.slot_dist.SlotCategorical``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn
from torch.nn.functional import linear as _linear

from agents.budget_dist import BudgetSlotCategorical
from agents.features import mlp
from agents.pooled import SLOT_COUNT, SLOT_MASK
from agents.rollout import NumpySlotPass
from agents.slot_dist import SlotCategorical


def linear(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """``layer(x)`` without ``nn.Module.__call__`` (its hooks machinery costs about as much
    as a small product; these passes run thousands of times a second and set no hooks).

    Args:
        layer: a ``Linear`` of ``in_features`` -> ``out_features``.
        x: (..., in_features).

    Returns:
        (..., out_features): ``x @ layer.weight.T + layer.bias`` (no bias if it has none).
    """
    return _linear(x, layer.weight, layer.bias)


def layers(seq: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """``seq(x)``, with its (nested) ``Linear`` and ``ReLU`` layers applied as ``linear``
    does; any other module is called as usual.

    Args:
        seq: the stack, e.g. ``agents.features.mlp``'s (``SlotValue`` nests one in another).
        x: (..., the first layer's in_features).

    Returns:
        (..., the last layer's out_features): the same values as ``seq(x)``.
    """
    for m in seq:
        if isinstance(m, nn.Linear):
            x = linear(m, x)
        elif isinstance(m, nn.ReLU):
            x = torch.relu(x)
        elif isinstance(m, nn.Sequential):
            x = layers(m, x)
        else:
            x = m(x)
    return x


class SlotFeatures(BaseFeaturesExtractor):
    """Slot embeddings (S x d, slot order), the context (d), then each slot's current node
    count (S; the pooled row's ``held_count`` times ``max_count``): module docstring.

    ``features_dim`` is S*d + d + S for the S given here; ``encode`` reads S again from
    each batch's width, so the same weights run on any number of slots whose rows have
    ``slot_dim`` values and whose global part has ``glob_dim``.

    Args:
        observation_space: the pooled ``Box`` (``agents.pooled.PooledLayout.space``): S slot
            rows of ``slot_dim`` values, then the global part, whose width ``glob_dim`` is
            the rest.
        num_slots: S of the training env (``PooledLayout.num_slots``).
        slot_dim: values per slot row (``PooledLayout.slot_dim``).
        max_count: the count cap C; the current count is ``held_count`` x C (the
            scale-free layout's C is 1 and ``held_count`` a running flag: count 0 or 1).
        embed_dim: d, the width of a slot embedding and of the context (``mtgym train``'s
            ``--embed-dim``, 32).

    Raises:
        ValueError: the observation has no values left for the global part.
    """

    def __init__(
        self,
        observation_space: spaces.Box,
        num_slots: int,
        slot_dim: int,
        max_count: int,
        embed_dim: int = 32,
    ) -> None:
        size = int(observation_space.shape[0])
        glob = size - num_slots * slot_dim
        if glob <= 0:
            raise ValueError(
                f"observation of {size} values cannot hold {num_slots} slots of {slot_dim}"
            )
        d = embed_dim
        super().__init__(observation_space, features_dim=num_slots * d + d + num_slots)
        self.num_slots, self.slot_dim, self.embed_dim = num_slots, slot_dim, d
        self.glob_dim = glob  # the global part's width: S is read from a vector's length
        self.max_count = max_count
        self.slot_net = mlp([slot_dim, d, d])
        self.ctx_net = mlp([d + glob, d, d])
        # the mix layer of [slot embedding, context]: one linear map of the concatenation,
        # written as the slot's part plus the context's part, so that the context's product
        # is taken once per sample rather than once per slot (the same function)
        self.mix_slot = nn.Linear(d, d)
        self.mix_ctx = nn.Linear(d, d, bias=False)
        self._register_load_state_dict_pre_hook(
            _split_concat("mix_net.0", "mix_slot", "mix_ctx", d)
        )

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """``encode``'s three parts in one row (SB3's feature API).

        Args:
            obs: (B, S*slot_dim + glob_dim) pooled observations, float32.

        Returns:
            (B, S*d + d + S): the slot embeddings (slot-major), the context, the counts.
        """
        z, ctx, current = self.encode(obs)
        return torch.cat([z.flatten(1), ctx, current], dim=1)

    def encode(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Slot embeddings (B, S, d), the context (B, d) and each slot's current count
        (B, S), without the flat row's concatenation (``SlotPolicy``'s own passes). The
        per-slot layers run on (B*S, .) matrices: one fused product-plus-bias each.

        Args:
            obs: (B, S*slot_dim + glob_dim) pooled observations, float32; S is read from
                the width.

        Returns:
            (z, ctx, current). ``z``: an empty slot's row (``job_mask`` 0) is all zeros.
            ``ctx``: ``ctx_net`` of the mean of ``slot_net``'s rows over the slots
            holding a job (zeros when none does), joined to the global part.
            ``current``: float node counts, rounded.
        """
        D, d = self.slot_dim, self.embed_dim
        S = (obs.shape[1] - self.glob_dim) // D  # any S: the weights are per slot
        table = obs[:, : S * D].reshape(-1, D)  # (B*S, D)
        glob = obs[:, S * D :]
        mask = table[:, SLOT_MASK : SLOT_MASK + 1]  # job_mask (1 for a slot holding a job)
        h = layers(self.slot_net, table) * mask
        hb = h.view(-1, S, d)
        mean = hb.sum(dim=1) / mask.view(-1, S).sum(dim=1, keepdim=True).clamp(min=1.0)
        ctx = layers(self.ctx_net, torch.cat([mean, glob], dim=1))
        mixed = linear(self.mix_slot, h).view(-1, S, d) + linear(self.mix_ctx, ctx).unsqueeze(1)
        z = torch.relu(mixed) * mask.view(-1, S, 1)
        current = torch.round(table[:, SLOT_COUNT].view(-1, S) * self.max_count)
        return z, ctx, current


def _split_concat(old: str, first: str, second: str, d: int):
    """A load hook for models saved before a ``Linear`` of a concatenation ``[x, y]`` (x of
    ``d`` values) was split into ``first(x) + second(y)``: the old weight's columns are
    divided between the two, so such models load and compute the same function.

    Args:
        old: the old layer's name in the module (``"mix_net.0"``, ``"head"``).
        first: the new layer that takes x and the old bias (``"mix_slot"``).
        second: the new bias-free layer that takes y (``"mix_ctx"``).
        d: the width of x: the old weight's first ``d`` columns go to ``first``.

    Returns:
        A ``load_state_dict`` pre-hook; a state without ``old`` passes unchanged.
    """

    def hook(state_dict, prefix, *_args) -> None:
        w = state_dict.pop(prefix + old + ".weight", None)
        if w is None:
            return
        state_dict[prefix + first + ".weight"] = w[:, :d].contiguous()
        state_dict[prefix + second + ".weight"] = w[:, d:].contiguous()
        state_dict[prefix + first + ".bias"] = state_dict.pop(prefix + old + ".bias")

    return hook


class SlotHead(nn.Module):
    """One shared linear head per slot embedding, plus a learned bonus for keeping a running
    job's current count: (B, S*d + d + S) -> (B, S*K) logits.

    The bonus (``stay``, initially ``stay_init``) makes the untrained policy *sticky*: a
    uniform policy over counts re-sizes every job at every decision and pays a rescale each
    time, which buries the reward signal (rigid allocation, Blox's ``random``, beats the
    re-sizing ``equal-share`` on this scenario). A job without nodes gets no bonus, so it
    starts at a drawn size and then mostly keeps it: the untrained policy is a random rigid
    scheduler, and PPO learns which sizes and which re-sizes pay.

    Args:
        num_slots: S of the training env (``logits`` reads S from its input: any S).
        embed_dim: d of ``SlotFeatures``.
        choices: K, the choices per slot: C + 1 counts (``counts``) or 34 (``shares``).
        stay_init: the bonus's initial logit. With near-uniform logits elsewhere a running
            job keeps its count with probability e^b / (e^b + L - 1) over L legal
            choices: 0.82 at ``mtgym train``'s 5.0 and L = 34.
        keep_at_zero: where the bonus goes. False (``counts``): on choice c, the job's
            current count c. True (``shares``): on choice 0, which keeps the allocation.
    """

    def __init__(
        self,
        num_slots: int,
        embed_dim: int,
        choices: int,
        stay_init: float,
        keep_at_zero: bool = False,
    ) -> None:
        super().__init__()
        self.num_slots, self.embed_dim, self.choices = num_slots, embed_dim, choices
        # True: choice 0 keeps a running job's allocation (``shares``), else choice c keeps
        # a count of c (``counts``)
        self.keep_at_zero = keep_at_zero
        # one linear map of [slot embedding, context], split as in ``SlotFeatures``
        w = torch.empty(choices, 2 * embed_dim)
        nn.init.orthogonal_(w, gain=0.01)  # near-uniform apart from the bonus
        self.head_slot = nn.Linear(embed_dim, choices)
        self.head_ctx = nn.Linear(embed_dim, choices, bias=False)
        with torch.no_grad():
            self.head_slot.weight.copy_(w[:, :embed_dim])
            self.head_ctx.weight.copy_(w[:, embed_dim:])
            self.head_slot.bias.zero_()
        self.stay = nn.Parameter(torch.tensor(float(stay_init)))
        self._register_load_state_dict_pre_hook(
            _split_concat("head", "head_slot", "head_ctx", embed_dim)
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Splits ``SlotFeatures.forward``'s (B, S*d + d + S) row for ``logits``."""
        d = self.embed_dim
        S = (features.shape[1] - d) // (d + 1)  # ``SlotFeatures.forward``'s row: any S
        z = features[:, : S * d].reshape(-1, S, d)
        return self.logits(z, features[:, S * d : S * d + d], features[:, S * d + d :])

    def logits(self, z: torch.Tensor, ctx: torch.Tensor, current: torch.Tensor) -> torch.Tensor:
        """(B, S*K) logits from ``SlotFeatures.encode``'s parts.

        Args:
            z: (B, S, d) slot embeddings.
            ctx: (B, d) context.
            current: (B, S) current node counts (float, whole numbers), clamped to
                0..K-1 to pick the bonus's choice; 0 (no nodes) gets no bonus.

        Returns:
            (B, S*K), slot-major (slot s at columns s*K to s*K + K - 1), the layout of
            sb3-contrib's MultiDiscrete masks.
        """
        S, d, K = z.shape[1], self.embed_dim, self.choices
        idx = current.long().clamp(0, K - 1).unsqueeze(-1)
        # a running job keeps its count; a job without nodes gets no bonus for staying idle
        bonus = self.stay * (idx > 0).to(z.dtype)
        if self.keep_at_zero:
            idx = torch.zeros_like(idx)
        slot = linear(self.head_slot, z.reshape(-1, d)).view(-1, S, K)
        logits = (slot + linear(self.head_ctx, ctx).unsqueeze(1)).scatter_add(2, idx, bonus)
        return logits.flatten(1)


class SlotValue(nn.Module):
    """Value from the context and the mean slot embedding (invariant to slot order).

    Args:
        num_slots: S of the training env (kept for reference: ``value`` averages any S).
        embed_dim: d of ``SlotFeatures``; the value MLP is 2d -> 64 -> 1.
    """

    def __init__(self, num_slots: int, embed_dim: int) -> None:
        super().__init__()
        self.num_slots, self.embed_dim = num_slots, embed_dim
        self.net = nn.Sequential(mlp([2 * embed_dim, 64]), nn.Linear(64, 1))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Splits ``SlotFeatures.forward``'s (B, S*d + d + S) row for ``value``."""
        d = self.embed_dim
        S = (features.shape[1] - d) // (d + 1)  # ``SlotFeatures.forward``'s row: any S
        return self.value(features[:, : S * d].reshape(-1, S, d), features[:, S * d : S * d + d])

    def value(self, z: torch.Tensor, ctx: torch.Tensor) -> torch.Tensor:
        """(B, 1) from ``SlotFeatures.encode``'s slot embeddings and context.

        Args:
            z: (B, S, d) slot embeddings; the mean is over all S slots, the empty ones'
                zero rows included.
            ctx: (B, d) context.
        """
        return layers(self.net, torch.cat([z.mean(dim=1), ctx], dim=1))


class _Identity(nn.Module):
    """SB3's mlp_extractor slot: features pass through to both heads.

    Args:
        dim: ``SlotFeatures.features_dim``, which SB3 reads as both latent widths.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.latent_dim_pi = self.latent_dim_vf = dim

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(actor latent, critic latent): ``features`` twice, not copied."""
        return features, features

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return features

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return features


class SlotPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's policy with ``SlotFeatures``, a shared per-slot head and ``SlotValue``.

    Needs a ``MultiDiscrete`` action space of S equal sizes (the ``counts`` and ``shares``
    action modes).

    Args:
        observation_space: the pooled ``Box`` (``agents.pooled.PooledLayout.space``).
        action_space: ``MultiDiscrete([K] * S)``.
        *a: ``MaskableActorCriticPolicy``'s positional arguments (``lr_schedule``).
        stay_init: ``SlotHead``'s initial keep bonus (a logit).
        keep_at_zero: ``SlotHead``'s: True for ``shares`` (choice 0 keeps a job's count).
        budget_masks: the masks are budget masks (``mtgym.env.actions.budget``): the slots
            are drawn in order within the node budget (``agents.budget_dist``), so no draw
            needs the env's repair; ``shares`` only.
        **kw: ``MaskableActorCriticPolicy``'s keywords. ``features_extractor_class``
            defaults to ``SlotFeatures`` (``features_extractor_kwargs`` then need
            ``num_slots``, ``slot_dim`` and ``max_count``), ``ortho_init`` to False.

    Raises:
        ValueError: ``share_features_extractor=False``, another action space, or budget
            masks without ``keep_at_zero`` (their keep choice is 0).
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        *a: Any,
        stay_init: float = 5.0,
        keep_at_zero: bool = False,
        budget_masks: bool = False,
        **kw: Any,
    ):
        self.stay_init = stay_init
        self.keep_at_zero = keep_at_zero
        if budget_masks and not keep_at_zero:
            raise ValueError("budget masks need the shares head (keep_at_zero=True)")
        self.budget_masks = budget_masks
        self._numpy_pass: NumpySlotPass | None = None
        kw.setdefault("features_extractor_class", SlotFeatures)
        kw.setdefault("ortho_init", False)  # the heads initialise themselves
        if not kw.get("share_features_extractor", True):
            raise ValueError("SlotPolicy's actor and critic share one SlotFeatures")
        if not isinstance(action_space, spaces.MultiDiscrete) or len(set(action_space.nvec)) != 1:
            raise ValueError(
                f"SlotPolicy needs MultiDiscrete slots of one size (action_mode 'counts'), "
                f"got {action_space!r}"
            )
        super().__init__(observation_space, action_space, *a, **kw)

    def _build_mlp_extractor(self) -> None:
        """No MLP between the features and the heads: ``_Identity``."""
        self.mlp_extractor = _Identity(self.features_dim)

    def _build(self, lr_schedule) -> None:
        """SB3's build with ``SlotCategorical`` as the distribution; then ``SlotHead`` and
        ``SlotValue`` replace the heads SB3 made, and the optimizer is made again over the
        final parameters (with the hook that loads pre-split Adam states).

        Args:
            lr_schedule: SB3's schedule (progress remaining 1 -> 0 to a learning rate);
                the optimizer starts at ``lr_schedule(1)``.
        """
        nvec = self.action_space.nvec
        dist = BudgetSlotCategorical if self.budget_masks else SlotCategorical
        self.action_dist = dist(len(nvec), int(nvec[0]))
        super()._build(lr_schedule)
        fx = self.features_extractor
        choices = int(self.action_space.nvec[0])
        self.action_net = SlotHead(
            fx.num_slots, fx.embed_dim, choices, self.stay_init, self.keep_at_zero
        )
        self.value_net = SlotValue(fx.num_slots, fx.embed_dim)
        self.optimizer = self.optimizer_class(
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )
        self.optimizer.register_load_state_dict_pre_hook(self._split_optimizer_state)

    def _split_optimizer_state(self, _optimizer: Any, state_dict: dict) -> dict | None:
        """Optimizer states saved before the concat layers were split (``_split_concat``):
        each split weight takes its columns of the old weight's moments, so such
        checkpoints load and resume with the same Adam state. Other states pass as they are.

        Args:
            _optimizer: the optimizer loading the state (unused).
            state_dict: ``torch.optim.Optimizer.state_dict()``'s layout: ``state`` (index ->
                moments) and ``param_groups``.

        Returns:
            The state re-indexed to ``named_parameters``' order, or None to load it as
            it is: one group already of today's length, several groups, or a count of
            parameters that is not the old layout's.
        """
        names = [n for n, _ in self.named_parameters()]
        groups = state_dict["param_groups"]
        if len(groups) != 1 or len(groups[0]["params"]) == len(names):
            return None
        d = self.features_extractor.embed_dim
        pairs = (("mix_slot", "mix_ctx"), ("head_slot", "head_ctx"))
        old: dict[str, tuple[int, slice | None]] = {}
        pos = 0
        for n in names:
            second = next((p for p in pairs if n.endswith(f"{p[1]}.weight")), None)
            if second is not None:  # the old weight's right-hand columns
                old[n] = (old[n.replace(second[1], second[0])][0], slice(d, None))
                continue
            left = any(n.endswith(f"{p[0]}.weight") for p in pairs)
            old[n] = (pos, slice(0, d) if left else None)
            pos += 1
        saved = groups[0]["params"]
        if pos != len(saved):
            return None  # not this layout: let the optimizer refuse it
        state = {}
        for i, n in enumerate(names):
            k, cols = old[n]
            st = state_dict["state"].get(saved[k])
            if st is not None:
                state[i] = {
                    key: v[:, cols].clone() if cols is not None and v.dim() == 2 else v
                    for key, v in st.items()
                }
        group = {**groups[0], "params": list(range(len(names)))}
        return {"state": state, "param_groups": [group]}

    def _get_constructor_parameters(self) -> dict[str, Any]:
        """SB3's saved constructor arguments plus ``stay_init``, ``keep_at_zero`` and
        ``budget_masks``, so that ``MaskablePPO.load`` rebuilds the same head and draws.
        """
        data = super()._get_constructor_parameters()
        data["stay_init"] = self.stay_init
        data["keep_at_zero"] = self.keep_at_zero
        data["budget_masks"] = self.budget_masks
        return data

    # The passes below compute what MaskableActorCriticPolicy's do through
    # ``extract_features`` -> ``action_net`` / ``value_net`` (tested equal), from
    # ``SlotFeatures.encode``'s parts rather than the flat feature row: no concatenation
    # and re-slicing in every rollout step and minibatch.

    def _encoded(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``SlotFeatures.encode`` of ``obs`` (B, size) as float32."""
        return self.features_extractor.encode(obs.float())  # (SB3's preprocessing of a Box)

    def _distribution(self, parts: tuple, action_masks: Any) -> SlotCategorical:
        """``self.action_dist`` set up on the logits of ``parts`` (``encode``'s (z, ctx,
        current)) and masked by ``action_masks`` ((B, S*K) of 0/1, any array type; None:
        all legal). One object serves every call: the next call replaces its logits.
        """
        dist = self.action_dist.proba_distribution(self.action_net.logits(*parts))
        if action_masks is not None:
            dist.apply_masking(action_masks)
        return dist

    def forward(
        self, obs: torch.Tensor, deterministic: bool = False, action_masks: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Actions, values and log-probabilities. Without gradients (SB3's rollouts, whose
        outputs are only read, never trained through) on a CPU float32 batch, the same
        function runs in numpy (``agents.rollout``: half the cost at a batch of 8).

        Args:
            obs: (B, S*slot_dim + glob_dim) pooled observations.
            deterministic: each slot's most likely legal choice rather than a draw.
            action_masks: (B, S*K) of 0/1 (numpy or torch); None: all legal.

        Returns:
            (actions (B, S) int64, values (B, 1), log-probabilities of the actions (B,),
            summed over the slots).
        """
        if torch.is_grad_enabled() or obs.device.type != "cpu":
            return self._forward(obs, deterministic, action_masks)
        if isinstance(action_masks, torch.Tensor):
            action_masks = action_masks.numpy()
        actions, values, log_prob = self._numpy()(_as_numpy(obs), action_masks, deterministic)
        return (
            torch.from_numpy(actions).reshape(obs.shape[0], -1),
            torch.from_numpy(values),
            torch.from_numpy(log_prob),
        )

    def _numpy(self) -> NumpySlotPass:
        """The numpy pass on the current parameters, made at first use."""
        if self._numpy_pass is None:
            self._numpy_pass = NumpySlotPass(self)
        return self._numpy_pass

    def _apply(self, fn: Any, *a: Any, **kw: Any) -> SlotPolicy:
        """``nn.Module._apply`` (``.to()``, ``.float()``, ...) may replace the parameter
        tensors: the numpy pass's views are rebuilt at its next use.
        """
        self._numpy_pass = None
        return super()._apply(fn, *a, **kw)

    def _forward(
        self, obs: torch.Tensor, deterministic: bool, action_masks: Any
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``forward`` in torch: with gradients or off the CPU (the same arguments)."""
        parts = self._encoded(obs)
        values = self.value_net.value(parts[0], parts[1])
        dist = self._distribution(parts, action_masks)
        actions = dist.get_actions(deterministic=deterministic)
        log_prob = dist.log_prob(actions)
        return actions.reshape(obs.shape[0], -1), values, log_prob

    def evaluate_actions(
        self, obs: torch.Tensor, actions: torch.Tensor, action_masks: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """From ``encode``'s parts, not SB3's flat feature row; the same values."""
        parts = self._encoded(obs)
        dist = self._distribution(parts, action_masks)
        return self.value_net.value(parts[0], parts[1]), dist.log_prob(actions), dist.entropy()

    def get_distribution(self, obs: torch.Tensor, action_masks: Any = None) -> SlotCategorical:
        """From ``encode``'s parts, not SB3's flat feature row; the same distribution."""
        return self._distribution(self._encoded(obs), action_masks)

    def predict_values(self, obs: torch.Tensor) -> torch.Tensor:
        """Values; without gradients on CPU in numpy, as ``forward`` (SB3 bootstraps each
        truncated episode's last observation with it).

        Args:
            obs: (B, S*slot_dim + glob_dim) pooled observations.

        Returns:
            (B, 1) values.
        """
        if torch.is_grad_enabled() or obs.device.type != "cpu":
            z, ctx, _ = self._encoded(obs)
            return self.value_net.value(z, ctx)
        z, ctx, _ = self._numpy().encode(_as_numpy(obs))
        return torch.from_numpy(self._numpy().value(z, ctx))


def _as_numpy(obs: torch.Tensor) -> np.ndarray:
    """A CPU batch as a float32 numpy array (a view when it is float32 already).

    Args:
        obs: a CPU tensor of any float dtype; gradients are detached.
    """
    return obs.detach().numpy() if obs.dtype == torch.float32 else obs.float().numpy()
