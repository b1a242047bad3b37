"""Bridge traces as datasets (``mtgym dataset from-trace``): decisions recorded by ``mtgym
bridge record`` (and, when given, what ``mtgym bridge replay`` measured on the real jobs)
as Minari episodes of the same format as ``mtgym dataset collect``'s.

Each trace is one episode. Its header names the scenario and the seed, so the env is the
one ``collect`` makes (``recover_environment()`` builds it again); the trace's jobs must be
that instance's (the same number of nodes, and each job id the index of a job of the same
name), else ``TraceMismatchError``. The trace's node sets are played back by the bridge's
``TracePolicy`` at the env's decision points and encoded into the action mode as any
policy's decisions are (in ``shares`` the env places the nodes itself: the episode is the
trace *as expressed in that action mode*, as for every dataset). The decision interval is
the one the trace was recorded with (its header's ``extra``; ``--decision-interval`` for a
trace that does not say). A trace that stops early (``bridge record --until``) ends its
episode there, truncated.

Two infos join the three of every dataset, one value per job of the instance:

- ``measured_samples``: the real job's useful samples by that simulated time, read from the
  replay folder's progress reports (the replay's clock maps simulated time to wall time:
  ``t0_wall + (t - sim0) / time_scale``); NaN for a job the replay did not run, and
  everywhere without a replay;
- ``sim_samples``: the simulator's progress of each job in the env at that time (what the
  simulator predicts for the episode as played), to set beside it.

The reference scores are measured as ``collect`` measures them: uniformly random actions
and the scenario's reference on the traces' seeds, in the same env, each up to where its
trace stops. A trace of a
test-split seed is refused, as all training data is.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from mtgym.bridge.trace import INTERVAL_KEY
from mtgym.dataset.collect import Collected, Task, play_all, scenario_reference
from mtgym.dataset.episode import UNIFORM_RANDOM, EnvSettings, EpisodeArrays, play_episode
from mtgym.dataset.store import DatasetError


class TraceMismatchError(DatasetError):
    """A trace whose jobs or nodes are not those of its scenario and seed."""


@dataclass
class TraceEpisode:
    """One trace converted (``trace_episode``).

    Attributes:
        scenario: the trace's scenario.
        policy: the policy that took its decisions.
        settings: the env it was played in.
        episode: its steps.
        until: where the trace stops before its instance's end (None: it does not).
    """

    scenario: str
    policy: str
    settings: EnvSettings
    episode: EpisodeArrays
    until: float | None = None


def measured_progress(replay_dir: str | Path, num_jobs: int) -> Callable[[float], np.ndarray]:
    """The replay's measured useful samples of each job at a simulated time.

    Args:
        replay_dir: a ``mtgym bridge replay`` folder (``replay.json``, each job's
            ``progress.jsonl``).
        num_jobs: the instance's jobs; trace job ids are their indices.

    Returns:
        t (simulated seconds) -> (num_jobs,) float64: the most useful (not redone) samples
        a job had reported by the wall time of t; 0 before its first report, NaN for a
        job the replay did not run.

    Raises:
        FileNotFoundError: no ``replay.json``.
    """
    from mtgym.bridge.measure import read_jsonl

    out = Path(replay_dir)
    meta = json.loads((out / "replay.json").read_text())
    t0, scale = float(meta["t0_wall"]), float(meta["config"]["time_scale"])
    sim0 = float(meta.get("sim0", 0.0))
    series: dict[int, tuple[list[float], np.ndarray]] = {}
    for j, info in meta["jobs"].items():
        recs, _ = read_jsonl(out / info["job_dir"] / "progress.jsonl")
        steps = sorted(
            (float(r["t"]), int(r["samples"]))
            for r in recs
            if r.get("event") == "step" and not r.get("redo")
        )
        done = np.maximum.accumulate(np.array([s for _, s in steps], dtype=np.float64))
        series[int(j)] = ([t for t, _ in steps], done)

    def at(t_sim: float) -> np.ndarray:
        wall = t0 + (float(t_sim) - sim0) / scale
        got = np.full(num_jobs, np.nan)
        for j, (times, done) in series.items():
            k = bisect.bisect_right(times, wall)
            got[j] = done[k - 1] if k else 0.0
        return got

    return at


def _check_matches(trace: Any, instance: Any, path: Path) -> dict[str, int]:
    """Trace job id -> instance job index, after checking the trace is this instance's."""
    h = trace.header
    if h.num_nodes != instance.num_nodes:
        raise TraceMismatchError(
            f"{path}: {h.num_nodes} nodes, but {h.scenario} seed {h.seed} has {instance.num_nodes}"
        )
    index = {}
    for job_id, job in trace.jobs.items():
        j = int(job_id) if job_id.isdigit() else -1
        if not 0 <= j < instance.num_jobs or instance.jobs.name[j] != job.name:
            raise TraceMismatchError(
                f"{path}: job {job_id!r} ({job.name}) is not a job of {h.scenario} seed "
                f"{h.seed} (traces of mtgym bridge record name jobs by their index)"
            )
        index[job_id] = j
    return index


def trace_episode(
    path: str | Path,
    settings: EnvSettings,
    *,
    replay: str | Path | None = None,
    interval_given: bool = False,
) -> TraceEpisode:
    """The episode of the trace ``path`` (module docstring).

    Args:
        path: a ``mtgym bridge record`` trace.
        settings: the env's keywords; its decision interval is replaced by the trace's
            own when the header records it (unless ``interval_given``).
        replay: the trace's ``mtgym bridge replay`` folder, for ``measured_samples``.
        interval_given: keep ``settings.decision_interval_s`` even where the trace says
            otherwise (the user asked for it).

    Raises:
        TraceError: an unreadable trace; TraceMismatchError: not its scenario's instance;
        ValueError: a trace without a seed.
    """
    from mtgym.bridge.predict import TracePolicy
    from mtgym.bridge.trace import read_trace
    from mtgym.dataset.episode import make_env

    path = Path(path)
    trace = read_trace(path)
    h = trace.header
    if h.seed is None:
        raise ValueError(f"{path}: the trace records no seed; its instance is unknown")
    if INTERVAL_KEY in h.extra and not interval_given:
        settings = replace(settings, decision_interval_s=h.extra[INTERVAL_KEY])
    env = make_env(h.scenario, settings)
    try:
        env.reset(seed=int(h.seed))
        instance = env.unwrapped.instance
    finally:
        env.close()
    index = _check_matches(trace, instance, path)
    policy = TracePolicy(trace, index, instance.num_nodes, to_sim=lambda t: t)
    nan = np.full(instance.num_jobs, np.nan)
    measured = measured_progress(replay, instance.num_jobs) if replay else (lambda _t: nan)

    def extra(env: Any) -> dict[str, np.ndarray]:
        s = env.state
        return {"measured_samples": measured(s.time), "sim_samples": s.progress.astype(float)}

    until = trace.t_end if trace.t_end < instance.t_end else None
    ep = play_episode(h.scenario, policy, int(h.seed), settings, until=until, extra_info=extra)
    return TraceEpisode(h.scenario, h.policy, settings, ep, until)


def convert(
    traces: Sequence[str | Path],
    replays: Sequence[str | Path | None],
    settings: EnvSettings,
    *,
    interval_given: bool = False,
    reference: str | None = None,
    workers: int = 1,
) -> tuple[list[TraceEpisode], Collected]:
    """Every trace's episode (in the order given) and the reference scores on their seeds.

    Args:
        traces: trace files, one episode each, all of one scenario and policy.
        replays: each trace's replay folder or None (as many as ``traces``).
        settings: the env's keywords (``trace_episode``).
        interval_given: as ``trace_episode``.
        reference: the policy scoring 1 (default: the scenario's recorded reference).
        workers: processes for the reference episodes.

    Raises:
        ValueError: no trace, mismatched counts, traces of several scenarios, policies or
            envs, or a test-split seed.
    """
    from mtgym.benchmark.splits import refuse_test_seeds

    if not traces:
        raise ValueError("no trace to convert")
    if len(replays) != len(traces):
        raise ValueError(f"{len(replays)} replay folders for {len(traces)} traces")
    got = [
        trace_episode(t, settings, replay=r, interval_given=interval_given)
        for t, r in zip(traces, replays, strict=True)
    ]
    kinds = {(g.scenario, g.policy, g.settings) for g in got}
    if len(kinds) > 1:
        raise ValueError(
            "one dataset holds one env and one policy; these traces have "
            + "; ".join(f"{s} / {p} / every {e.decision_interval_s} s" for s, p, e in kinds)
        )
    seeds = [g.episode.seed for g in got]
    refuse_test_seeds(seeds, what="mtgym dataset from-trace")
    scenario, the_settings = got[0].scenario, got[0].settings
    ref = reference or scenario_reference(scenario)
    # the references play each trace's seed up to where the trace stops: like with like
    tasks: list[Task] = [
        (scenario, p, g.episode.seed, the_settings, g.until)
        for p in (UNIFORM_RANDOM, ref)
        for g in got
    ]
    played = play_all(tasks, workers)
    n = len(seeds)
    lo = sum(e.episode_return for e in played[:n]) / n
    hi = sum(e.episode_return for e in played[n:]) / n
    eps = [g.episode for g in got]
    return got, Collected(eps, ref, lo, hi, sum(e.wall_s for e in eps))
