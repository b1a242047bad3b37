"""Episodes written as a Minari dataset, and the datasets found on disk.

A dataset id names the scenario, the policy and the version:
``mtgym/<scenario>/<policy>-v<VERSION>`` (``mtgym/default-family/freetrain-speedup-v0``;
a policy string with a path becomes a safe name, ``mtgym.naming.safe_name``). The dataset
holds the env's spec (the ``MinariDataset``'s ``recover_environment()`` makes the same env, and
``env.reset(seed=<the episode's seed>)`` the same instance), the observation and action
spaces, the episodes in seed order, and two reference scores: ``ref_min_score``, the mean
return of uniformly random actions (``uniform-random``) on the same seeds, and
``ref_max_score``, the mean return of the scenario's recorded reference policy on the same
seeds (both played in the same env and action mode), so ``minari.get_normalized_score`` is
0 for random actions and 1 for the reference, D4RL's convention. The datasets live where
Minari looks (``$MINARI_DATASETS_PATH``, default ``~/.minari/datasets``), never in the
repository.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtgym.dataset.episode import UNIFORM_RANDOM, EnvSettings, EpisodeArrays, make_env
from mtgym.naming import safe_name

if TYPE_CHECKING:
    from mtgym.dataset.collect import Collected

#: the namespace of every mtgym dataset
NAMESPACE = "mtgym"
#: the version in new dataset ids (raised when the recorded data changes meaning)
VERSION = 0


class DatasetError(ValueError):
    """A dataset that cannot be written or read (the message says why)."""


def dataset_id(scenario: str, policy: str, version: int = VERSION) -> str:
    """``mtgym/<scenario>/<policy>-v<version>``; a scenario file contributes its stem."""
    name = Path(scenario).stem if Path(scenario).suffix in (".yaml", ".yml", ".json") else scenario
    return f"{NAMESPACE}/{safe_name(name)}/{safe_name(policy)}-v{int(version)}"


def use_root(root: str | Path | None) -> None:
    """Point Minari at ``root`` (``$MINARI_DATASETS_PATH``) when given."""
    if root is not None:
        Path(root).mkdir(parents=True, exist_ok=True)
        os.environ["MINARI_DATASETS_PATH"] = str(Path(root).resolve())


def _buffer(index: int, ep: EpisodeArrays) -> Any:
    from minari.data_collector import EpisodeBuffer

    return EpisodeBuffer(
        id=index,
        seed=ep.seed,
        observations=ep.observations,
        actions=ep.actions,
        rewards=ep.rewards,
        terminations=ep.terminations,
        truncations=ep.truncations,
        infos=ep.infos,
    )


def write_dataset(
    ds_id: str,
    scenario: str,
    policy: str,
    collected: Collected,
    settings: EnvSettings,
    *,
    force: bool = False,
) -> Any:
    """Write ``episodes`` (in the order given) as the Minari dataset ``ds_id``.

    Args:
        ds_id: the dataset id (``dataset_id``).
        scenario: the scenario name or file the env was made with.
        policy: the policy string that played them (the dataset's ``algorithm_name``).
        collected: the episodes (seed order) and the reference scores
            (``mtgym.dataset.collect.collect``).
        settings: the env's keywords (its spec is stored).
        force: replace an existing dataset of that id.

    Returns:
        The ``minari.MinariDataset``.

    Raises:
        DatasetError: no episodes, the id exists and not ``force``, or equal reference scores
            (no normalisation possible).
    """
    import minari

    episodes = collected.episodes
    ref_min_score, ref_max_score = collected.ref_min_score, collected.ref_max_score
    reference = collected.reference
    if not episodes:
        raise DatasetError("no episodes to write")
    if ref_max_score == ref_min_score:
        raise DatasetError(
            f"{reference} and {UNIFORM_RANDOM} have the same mean return "
            f"({ref_max_score}): the normalised score is undefined"
        )
    if ds_id in minari.list_local_datasets():
        if not force:
            raise DatasetError(f"dataset {ds_id} exists; --force replaces it")
        minari.delete_dataset(ds_id)
    env = make_env(scenario, settings)
    try:
        with warnings.catch_warnings():
            # Minari asks for a code permalink and an author e-mail: mtgym has neither
            warnings.filterwarnings("ignore", message="`(code_permalink|author_email)` is set")
            spec = env.spec
            seeds = [ep.seed for ep in episodes]
            return minari.create_dataset_from_buffers(
                dataset_id=ds_id,
                buffer=[_buffer(i, ep) for i, ep in enumerate(episodes)],
                env=spec,
                eval_env=spec,
                algorithm_name=policy,
                author="mtgym dataset collect",
                ref_min_score=float(ref_min_score),
                ref_max_score=float(ref_max_score),
                description=(
                    f"{len(episodes)} episodes of {policy} on {scenario} (seeds {seeds[0]}.."
                    f"{seeds[-1]}), action mode {settings.action_mode}, observation layout "
                    f"{settings.obs_layout}, decision interval {settings.decision_interval_s} s; "
                    f"scores normalised between {UNIFORM_RANDOM} (0) and {reference} (1)"
                ),
                requirements=["mtgym"],
                data_format="hdf5",
            )
    finally:
        env.close()


def local_datasets() -> dict[str, dict[str, Any]]:
    """The mtgym datasets where Minari looks: id -> metadata (``minari.list_local_datasets``)."""
    import minari

    return {
        k: dict(v)
        for k, v in sorted(minari.list_local_datasets().items())
        if k.startswith(f"{NAMESPACE}/")
    }
