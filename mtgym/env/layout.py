"""The observation's layouts (``ScavengeEnv(obs_layout=...)``): the same numbers, laid out
for the client that reads them.

- ``"dict"`` (default): the ``Dict`` of named arrays, the action mask under
  ``"action_mask"`` (int8): what sb3-contrib, TorchRL and the project's own agents read.
- ``"flat"``: one float32 ``Box``, every key but ``action_mask`` flattened and concatenated in
  the ``Dict``'s (sorted) key order: what a default MLP of any library takes (RLlib's default
  encoders take no ``Dict``). The mask stays in ``info["action_mask"]`` and
  ``action_masks()``.
- ``"masked"``: ``{"observations": <the flat Box>, "action_mask": Box(0, 1, (M,), float32)}``,
  the layout of RLlib's action-masking example module (``ActionMaskingTorchRLModule``),
  whose logits for a ``MultiDiscrete`` space are laid out as the mask (the per-dimension
  masks one after the other).

``ObsLayout.slices`` names where each key sits in the flat vector, so a flat observation can
be read by name (``unflatten``).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from gymnasium import spaces

#: The layouts ``obs_layout`` may take, the default first.
OBS_LAYOUTS = ("dict", "flat", "masked")
#: The key of the action mask in the ``"dict"`` and ``"masked"`` layouts.
MASK_KEY = "action_mask"
#: The key of the flat observation in the ``"masked"`` layout (RLlib's example's name).
OBSERVATIONS_KEY = "observations"


class ObsLayout:
    """Lay out the env's ``Dict`` observation as ``name`` says (module docstring).

    Args:
        name: one of ``OBS_LAYOUTS``.
        source: the env's ``Dict`` observation space (its ``"action_mask"`` key included).

    Attributes:
        name: the layout.
        keys: the keys in the flat vector, in order (all but ``"action_mask"``).
        slices: key -> its slice of the flat vector.
        shapes: key -> its shape in the ``Dict``.
        size: the flat vector's length.
        space: the observation space of this layout.

    Raises:
        ValueError: an unknown layout name.
    """

    def __init__(self, name: str, source: spaces.Dict) -> None:
        if name not in OBS_LAYOUTS:
            raise ValueError(f"obs_layout {name!r} is not one of {OBS_LAYOUTS}")
        self.name = name
        self.source = source
        self.keys = tuple(k for k in source.spaces if k != MASK_KEY)
        # (a Dict's subspaces have shapes: Space.shape is Optional only for spaces without one)
        self.shapes = {k: cast("tuple[int, ...]", source[k].shape) for k in self.keys}
        self.slices: dict[str, slice] = {}
        start = 0
        for k in self.keys:
            n = int(np.prod(self.shapes[k], dtype=np.int64))
            self.slices[k] = slice(start, start + n)
            start += n
        self.size = start
        if name == "dict":  # (no flat bounds: two arrays of the vector's size per env)
            self.space: spaces.Space = source
            return
        box = {k: cast(spaces.Box, source[k]) for k in self.keys}  # (every key is a Box)
        low = np.concatenate([np.ravel(box[k].low) for k in self.keys]).astype(np.float32)
        high = np.concatenate([np.ravel(box[k].high) for k in self.keys]).astype(np.float32)
        flat = spaces.Box(low, high, dtype=np.float32)
        if name == "flat":
            self.space = flat
        else:
            mask_shape = cast("tuple[int, ...]", source[MASK_KEY].shape)
            mask = spaces.Box(0.0, 1.0, (mask_shape[0],), np.float32)
            self.space = spaces.Dict({MASK_KEY: mask, OBSERVATIONS_KEY: flat})

    def flatten(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """The flat float32 vector of a ``Dict`` observation, or (B, size) of a batch.

        Args:
            obs: a ``Dict`` observation (each key of its own shape) or a batch of them
                (each key with a leading batch axis).

        Returns:
            A fresh float32 array: (size,) or (B, size).
        """
        first = obs[self.keys[0]]
        batch = first.shape[: first.ndim - len(self.shapes[self.keys[0]])]
        parts = [np.reshape(obs[k], (*batch, -1)) for k in self.keys]
        return np.concatenate(parts, axis=-1, dtype=np.float32)

    def __call__(self, obs: dict[str, np.ndarray]) -> Any:
        """``obs`` (one observation or a batch, as ``flatten``) in this layout.

        Args:
            obs: the ``Dict`` observation (with ``"action_mask"``); returned as it is in
                the ``"dict"`` layout.

        Returns:
            The ``Dict`` as given, the flat vector, or ``{"action_mask", "observations"}``.
        """
        if self.name == "dict":
            return obs
        flat = self.flatten(obs)
        if self.name == "flat":
            return flat
        return {MASK_KEY: obs[MASK_KEY].astype(np.float32), OBSERVATIONS_KEY: flat}

    def unflatten(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """The ``Dict`` observation's keys (but ``"action_mask"``) read back from a flat
        vector (or a (B, size) batch): views, not copies.

        Args:
            flat: a vector of ``size`` values, or a batch of them.

        Returns:
            key -> the key's array (its ``Dict`` shape, after the batch axes).

        Raises:
            ValueError: the last axis is not ``size`` long.
        """
        flat = np.asarray(flat)
        if flat.shape[-1] != self.size:
            raise ValueError(f"a flat observation has {self.size} values, got {flat.shape[-1]}")
        batch = flat.shape[:-1]
        return {k: flat[..., self.slices[k]].reshape(*batch, *self.shapes[k]) for k in self.keys}
