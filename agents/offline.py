"""Behaviour cloning from a Minari dataset (``mtgym dataset collect``): ``mtgym train
--from-dataset ID``.

``demonstrations(ds_id, ...)`` reads every episode of the dataset as the imitation code's
``Demonstrations`` (each step's observation, action and action mask; the observation
pooled when the agent reads the pooled layout), after checking that the dataset was
collected in the env the agent trains in: the same action mode and action space (for a
scale-free agent, the same choices per slot: it serves any number of slots), the ``dict``
observation layout, and none of the benchmark's test seeds. ``agents.imitation.
pretrain`` then fits the policy to it, as after collecting an expert's episodes live.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.imitation import Demonstrations


def _load(ds_id: str) -> Any:
    try:
        import minari
    except ImportError as exc:
        raise ImportError(
            "--from-dataset needs minari: pip install -e '.[offline]' (make installs it)"
        ) from exc
    if ds_id not in minari.list_local_datasets():
        raise ValueError(
            f"dataset {ds_id!r} not found where Minari looks ($MINARI_DATASETS_PATH); "
            "mtgym dataset list shows the local ones"
        )
    return minari.load_dataset(ds_id)


def check_dataset(ds: Any, env_kwargs: dict[str, Any]) -> list[int]:
    """The dataset's episode seeds, after checking its env against the training env's
    keywords (``ValueError`` naming the first difference) and its seeds against the test
    split (``refuse_test_seeds``).
    """
    from mtgym.benchmark.splits import refuse_test_seeds

    kw = dict(ds.env_spec.kwargs) if ds.env_spec is not None else {}
    mode = kw.get("action_mode")
    if mode != env_kwargs.get("action_mode"):
        raise ValueError(
            f"dataset {ds.id} was collected in action mode {mode!r}, the agent trains in "
            f"{env_kwargs.get('action_mode')!r}"
        )
    if kw.get("obs_layout", "dict") != "dict":
        raise ValueError(f"dataset {ds.id}: observation layout {kw['obs_layout']!r}, not 'dict'")
    meta = ds.storage.get_episode_metadata(ds.episode_indices)
    seeds = [int(m["seed"]) for m in meta if "seed" in m]
    refuse_test_seeds(seeds, what=f"behaviour cloning from {ds.id}")
    return seeds


def demonstrations(
    ds_id: str, env_kwargs: dict[str, Any], action_space: Any, *, pooled: bool
) -> Demonstrations:
    """Every step of dataset ``ds_id`` as labelled states (module docstring).

    Args:
        ds_id: a local Minari dataset id (``mtgym/default/freetrain-speedup-v0``).
        env_kwargs: the training env's keywords (``Args.env_kwargs``): the action mode must
            be the dataset's.
        action_space: the training env's ``MultiDiscrete``: the dataset's must equal it.
        pooled: pool each observation (``agents.pooled``) as the agent reads it.

    Raises:
        ValueError: no such dataset, another action mode or space, another observation
            layout, or a test seed among its episodes.
    """
    from agents.pooled import SCALE_FREE_MODES, PooledLayout

    ds = _load(ds_id)
    check_dataset(ds, env_kwargs)
    scale_free = env_kwargs.get("action_mode") in SCALE_FREE_MODES
    theirs, ours = np.asarray(ds.action_space.nvec), np.asarray(action_space.nvec)
    # a scale-free agent serves any number of slots: only the choices per slot must agree
    same = (
        set(theirs.tolist()) == set(ours.tolist())
        if scale_free
        else theirs.shape == ours.shape and bool((theirs == ours).all())
    )
    if not same:
        raise ValueError(
            f"dataset {ds_id}'s action space {ds.action_space} does not fit the agent's "
            f"{action_space}"
        )
    layout = None
    if pooled:
        env = ds.recover_environment()
        layout = PooledLayout.of(
            ds.observation_space, env.unwrapped.max_count, scale_free=scale_free
        )
        env.close()
    obs_parts: list[Any] = []
    acts, masks = [], []
    for ep in ds.iterate_episodes():
        T = len(ep.actions)
        steps = {k: np.asarray(v)[:T] for k, v in ep.observations.items()}
        if layout is not None:
            obs_parts.append(
                np.stack([layout.pool({k: v[t] for k, v in steps.items()}) for t in range(T)])
            )
        else:
            obs_parts.append(steps)
        acts.append(np.asarray(ep.actions, dtype=np.int64))
        masks.append(np.asarray(ep.infos["action_mask"][:T], dtype=bool))
    if layout is not None:
        obs: dict[str, np.ndarray] | np.ndarray = np.concatenate(obs_parts)
    else:
        obs = {k: np.concatenate([p[k] for p in obs_parts]) for k in obs_parts[0]}
    return Demonstrations(obs, np.concatenate(acts), np.concatenate(masks))
