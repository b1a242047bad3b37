"""The standard set (``mtgym dataset standard``): a train-split scenario's datasets of four
qualities, D4RL's way, so that offline methods can be compared on data of known coverage.

On the same seeds (the train split's) three policies play every episode:

- ``expert``: the scenario's reference (``collect.scenario_reference``: its tuning record's,
  else ``mtgym.evaluate.DEFAULT_REFERENCE``), the policy the normalised score calls 1;
- ``medium``: the shipped agent (``MEDIUM``, ``agents/pretrained/default``);
- ``random``: uniformly random actions the env need not repair (``uniform-random``), the 0;
- ``clairvoyant`` (with ``StandardOptions.clairvoyant``): the clairvoyant planner
  (``baselines/clairvoyant.py``), told the whole episode: its plan, made in the simulator,
  expressed in the action mode (the env places the nodes itself in ``shares``), so a set
  of decisions no online policy could take, for methods that learn from hindsight;

and a fourth set is made of their episodes without playing again:

- ``mixed``: episode i of the seeds is taken from ``expert``, ``medium`` and ``random`` in
  turn (i mod 3), so the set is as large as the others and covers the three qualities in
  equal thirds, on the same seeds.

Every set's ids are ``mtgym/<scenario>/<quality>-v<version>`` with the policy as the
dataset's ``algorithm_name``; all four share ``ref_min_score`` (random's mean return) and
``ref_max_score`` (the expert's), measured on the seeds. ``StandardEntry`` is one set's line
of the table (``docs/offline.md``, rendered from the result file ``--record`` writes):
episodes, steps, size on disk, collection time (the sum of its episodes' play seconds:
what one core spends, whatever the workers) and write time, mean return, normalised score and
the share of steps the env repaired.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mtgym.dataset.collect import Collected, play_all, scenario_reference
from mtgym.dataset.episode import UNIFORM_RANDOM, EnvSettings, EpisodeArrays
from mtgym.dataset.store import VERSION

#: the qualities, in the table's order (``mixed`` is assembled from the first three)
QUALITIES = ("expert", "medium", "random", "mixed")
#: the optional quality (``StandardOptions.clairvoyant``), after the others
CLAIRVOYANT = "clairvoyant"
#: the medium policy: the shipped agent
MEDIUM = "agent"
#: the order in which ``mixed`` takes its episodes from the played sets
MIXED_FROM = ("expert", "medium", "random")


@dataclass
class StandardEntry:
    """One dataset of the standard set: a row of its table.

    Attributes:
        dataset_id: ``mtgym/<scenario>/<quality>-v<version>``.
        scenario: the scenario.
        quality: one of ``QUALITIES``.
        policy: the policy that played it (``mixed``: the three, ``+``-joined).
        episodes: its episodes.
        steps: its steps (transitions).
        size_bytes: its folder's size on disk.
        collect_s: the sum of its episodes' play seconds.
        write_s: the seconds Minari took to write it.
        mean_return: its episodes' mean return.
        normalized_score: ``minari.get_normalized_score`` of the mean return.
        normalized_ci: the 95% bootstrap interval of the episodes' mean normalised score
            (``mtgym.stats.mean_ci``; NaNs with one episode).
        repaired_share: the share of its steps whose action the env repaired.
    """

    dataset_id: str
    scenario: str
    quality: str
    policy: str
    episodes: int
    steps: int
    size_bytes: int
    collect_s: float
    write_s: float
    mean_return: float
    normalized_score: float
    normalized_ci: tuple[float, float]
    repaired_share: float

    def row(self) -> dict[str, Any]:
        """The result file's row."""
        return asdict(self)


def policies(scenario: str, medium: str = MEDIUM) -> dict[str, str]:
    """The policy that plays each quality (``mixed`` excluded: it is assembled)."""
    return {"expert": scenario_reference(scenario), "medium": medium, "random": UNIFORM_RANDOM}


def mixed(played: dict[str, list[EpisodeArrays]]) -> list[EpisodeArrays]:
    """The ``mixed`` set: seed i's episode from ``MIXED_FROM[i % 3]`` (module docstring)."""
    n = len(played[MIXED_FROM[0]])
    return [played[MIXED_FROM[i % len(MIXED_FROM)]][i] for i in range(n)]


def _interval(ds: Any, eps: list[EpisodeArrays]) -> tuple[float, float]:
    """The bootstrap interval of the mean of the episodes' normalised scores."""
    import minari
    import numpy as np

    from mtgym.stats import mean_ci

    scores = minari.get_normalized_score(ds, np.array([e.episode_return for e in eps]))
    ci = mean_ci(scores)
    return (ci.ci_low, ci.ci_high)


def folder_bytes(path: Path) -> int:
    """The bytes of every file under ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@dataclass(frozen=True)
class StandardOptions:
    """How ``build_standard`` builds a set.

    Attributes:
        medium: the medium policy (the shipped agent).
        workers: processes (``local``) or Ray CPUs (``ray``).
        backend: ``local`` or ``ray``; the datasets are equal either way.
        version: the ids' version.
        force: replace datasets of the same ids.
        clairvoyant: also build the ``clairvoyant`` set.
    """

    medium: str = MEDIUM
    workers: int = 1
    backend: str = "local"
    version: int = VERSION
    force: bool = False
    clairvoyant: bool = False


def build_standard(
    scenario: str,
    seeds: Sequence[int],
    settings: EnvSettings,
    options: StandardOptions = StandardOptions(),
    progress: Callable[[str], None] | None = None,
) -> list[StandardEntry]:
    """Play and write the standard set of ``scenario`` on ``seeds`` (module docstring).

    Args:
        scenario: a scenario name or file (the train split's).
        seeds: instance seeds (none of the test split's: refused).
        settings: the env's keywords.
        options: the medium policy, the workers and backend, the version, ``force``.
        progress: called with a line per set played and written.

    Returns:
        One entry per dataset, in ``QUALITIES`` order (then ``clairvoyant``).

    Raises:
        ValueError: no seeds, a test seed, an unknown backend; ``DatasetError``: an id
            that exists without ``force`` (checked before anything is played).
    """
    from mtgym.benchmark.splits import refuse_test_seeds
    from mtgym.dataset.store import DatasetError, dataset_id, local_datasets

    say = progress or (lambda _line: None)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("no seeds to collect")
    refuse_test_seeds(seeds, what="mtgym dataset standard")
    qualities = [*QUALITIES, *([CLAIRVOYANT] if options.clairvoyant else [])]
    ids = {q: dataset_id(scenario, q, options.version) for q in qualities}
    taken = sorted(set(ids.values()) & set(local_datasets()))
    if taken and not options.force:
        raise DatasetError(f"dataset {taken[0]} exists; --force replaces it")
    who = policies(scenario, options.medium)
    if options.clairvoyant:
        who[CLAIRVOYANT] = CLAIRVOYANT
    played: dict[str, list[EpisodeArrays]] = {}
    for quality, policy in who.items():
        t0 = time.perf_counter()
        tasks = [(scenario, policy, s, settings) for s in seeds]
        played[quality] = play_all(tasks, options.workers, options.backend)
        say(f"{quality} ({policy}): {len(seeds)} episodes in {time.perf_counter() - t0:.1f} s")
    played["mixed"] = mixed(played)
    entries = []
    for quality in qualities:
        entries.append(_write(scenario, quality, ids[quality], who, played, settings, options))
        say(f"{ids[quality]}: written in {entries[-1].write_s:.1f} s")
    return entries


def _mean(eps: list[EpisodeArrays]) -> float:
    return sum(e.episode_return for e in eps) / len(eps)


def _write(
    scenario: str,
    quality: str,
    ds_id: str,
    who: dict[str, str],
    played: dict[str, list[EpisodeArrays]],
    settings: EnvSettings,
    options: StandardOptions,
) -> StandardEntry:
    """Write one quality's set (the reference scores: random's and the expert's mean
    returns) and measure it: its table row.
    """
    import minari

    from mtgym.dataset.store import write_dataset

    eps = played[quality]
    policy = "+".join(who[q] for q in MIXED_FROM) if quality == "mixed" else who[quality]
    lo, hi = _mean(played["random"]), _mean(played["expert"])
    t0 = time.perf_counter()
    got = Collected(eps, who["expert"], lo, hi, sum(e.wall_s for e in eps))
    ds = write_dataset(ds_id, scenario, policy, got, settings, force=options.force)
    steps = sum(len(e) for e in eps)
    return StandardEntry(
        dataset_id=ds_id,
        scenario=str(scenario),
        quality=quality,
        policy=policy,
        episodes=len(eps),
        steps=steps,
        size_bytes=folder_bytes(minari.storage.get_dataset_path(ds_id)),
        collect_s=got.wall_s,
        write_s=time.perf_counter() - t0,
        mean_return=_mean(eps),
        normalized_score=float(minari.get_normalized_score(ds, _mean(eps))),
        normalized_ci=_interval(ds, eps),
        repaired_share=sum(e.repaired_share * len(e) for e in eps) / max(steps, 1),
    )
