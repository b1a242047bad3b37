"""``mtgym dataset collect``'s work: a policy's episodes and the two reference policies'
episodes on the same seeds, in parallel, in seed order whatever the backend.

The reference scores are measured, never assumed: uniformly random actions
(``uniform-random``) and the scenario's recorded
reference (``scenarios/tuning/<scenario>.json``; ``mtgym.evaluate.DEFAULT_REFERENCE`` for a
scenario never tuned, such as the train split's) play the dataset's seeds in the same env
and action mode, and their mean returns are ``ref_min_score`` and ``ref_max_score``. A
policy that is one of them is played once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mtgym.dataset.episode import UNIFORM_RANDOM, EnvSettings, EpisodeArrays, play_episode

#: (scenario, policy, seed, settings), or with a fifth item: the simulated time the
#: episode ends at (``play_episode``'s ``until``)
Task = tuple[str, str, int, EnvSettings] | tuple[str, str, int, EnvSettings, float | None]


@dataclass
class Collected:
    """What ``collect`` returns.

    Attributes:
        episodes: the policy's episodes, seed order.
        reference: the policy whose mean return is ``ref_max_score``.
        ref_min_score: random actions' mean return on the seeds.
        ref_max_score: the reference's mean return on the seeds.
        wall_s: seconds the episodes took (all three policies).
    """

    episodes: list[EpisodeArrays]
    reference: str
    ref_min_score: float
    ref_max_score: float
    wall_s: float


def scenario_reference(scenario: str) -> str:
    """The scenario's recorded reference policy, else ``DEFAULT_REFERENCE``."""
    from pathlib import Path

    from mtgym.evaluate import DEFAULT_REFERENCE
    from mtgym.scenario.tuning import load_record

    name = Path(scenario).stem if Path(scenario).suffix in (".yaml", ".yml", ".json") else scenario
    rec = load_record(name)
    return rec.reference if rec is not None and rec.reference else DEFAULT_REFERENCE


def _play(task: Task) -> EpisodeArrays:
    scenario, policy, seed, settings = task[:4]
    until = task[4] if len(task) > 4 else None
    return play_episode(scenario, policy, seed, settings, until=until)


def _map_local(tasks: list[Task], workers: int) -> list[EpisodeArrays]:
    if workers <= 1:
        return [_play(t) for t in tasks]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_play, tasks))


def _map_ray(tasks: list[Task], workers: int) -> list[EpisodeArrays]:
    from mtgym.backends.ray_backend import ray_session

    with ray_session(num_cpus=workers if workers > 1 else None) as ray:
        remote = ray.remote(_play)
        return list(ray.get([remote.remote(t) for t in tasks]))


def play_all(tasks: list[Task], workers: int = 1, backend: str = "local") -> list[EpisodeArrays]:
    """Play ``tasks`` (scenario, policy, seed, settings) in ``workers`` processes
    (``local``) or on Ray (``ray``); the episodes in the tasks' order, the same whatever
    the backend and the workers.

    Raises:
        ValueError: an unknown backend.
    """
    if backend == "local":
        return _map_local(tasks, workers)
    if backend == "ray":
        return _map_ray(tasks, workers)
    raise ValueError(f"unknown backend {backend!r}; use local or ray")


def collect(
    scenario: str,
    policy: str,
    seeds: Sequence[int],
    settings: EnvSettings,
    *,
    workers: int = 1,
    backend: str = "local",
    reference: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Collected:
    """Play ``policy``, random actions and the reference on ``seeds`` (module docstring).

    Args:
        scenario: a scenario name or file.
        policy: the registered policy string whose episodes make the dataset.
        seeds: instance seeds (none of the test split's: refused).
        settings: the env's keywords.
        workers: processes (``local``) or Ray CPUs (``ray``).
        backend: ``local`` or ``ray``; the episodes are equal either way.
        reference: the policy scoring 1 (default: ``scenario_reference``).
        progress: called with a line when the episodes are done.

    Raises:
        ValueError: no seeds, a test seed, or an unknown backend.
    """
    import time

    from mtgym.benchmark.splits import refuse_test_seeds

    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("no seeds to collect")
    refuse_test_seeds(seeds, what="mtgym dataset collect")
    ref = reference or scenario_reference(scenario)
    policies = list(dict.fromkeys([policy, UNIFORM_RANDOM, ref]))
    tasks = [(scenario, p, s, settings) for p in policies for s in seeds]
    t0 = time.perf_counter()
    played = play_all(tasks, workers, backend)
    by_policy = {p: played[i * len(seeds) : (i + 1) * len(seeds)] for i, p in enumerate(policies)}

    def mean_return(p: str) -> float:
        return sum(e.episode_return for e in by_policy[p]) / len(seeds)

    wall = time.perf_counter() - t0
    if progress is not None:
        progress(f"{len(tasks)} episodes ({', '.join(policies)}) in {wall:.1f} s")
    return Collected(by_policy[policy], ref, mean_return(UNIFORM_RANDOM), mean_return(ref), wall)
