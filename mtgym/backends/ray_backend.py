"""The Ray backend: evaluation sweeps and training seed sweeps on a Ray cluster.

Install with ``pip install -e .[ray]``; Ray is imported only inside these functions, so
``import mtgym.backends.ray_backend`` works without it (the functions then raise
:class:`RayUnavailableError`, which names the install command).

``evaluate_ray(scenario, policy_names, seeds)``
    One Ray task per (policy, seed). Each task rebuilds the generator from the scenario
    *name or path* and the policy from its *registry name*, so nothing but strings and ints
    is shipped: the workers need only the installed package. The task runs the episode
    through the same code path as :func:`mtgym.evaluate.evaluate` (``play``, learned agents
    included) and returns the same row (``mtgym.evaluate.episode_row``), so the metrics are
    identical to the local backend for the same seeds; only
    the timing fields (``decision_ms``, ``wall_s``) differ. (Policies whose decisions depend
    on a solver *time limit*, the ``*-milp`` variants, can differ under load on either
    backend.)

``train_ray(args, seeds=...)``
    A seed sweep: :func:`agents.train.train` once per seed, each run a Ray task writing
    ``args.out/seed<k>/``. A single run's rollout envs stay in its own process (SB3's
    ``DummyVecEnv``/``SubprocVecEnv``; SB3 has no Ray vector env). For rollouts spread over
    Ray actors within one run: ``mtgym train --algo rllib-ppo`` (``agents.rllib_train``:
    RLlib's env runners on ``mtgym:mtgym/Scavenge-v0``).

Cluster handling (:func:`ray_session`): with no ``address``, a private local Ray is
started (``num_cpus`` CPUs, no dashboard, worker logs not forwarded) and shut down
afterwards; with ``address`` (``"auto"``, ``"HOST:PORT"`` or ``"ray://HOST:10001"``) the
driver connects to that cluster and only disconnects at the end; if Ray is already
initialised in this process it is used as is and left running. On a multi-node cluster
every node needs mtgym installed (same version), and scenario files and ``agent:PATH``
models must be on a shared filesystem (paths are made absolute here).

Authentication and files: Ray 2.60 turns token authentication on for a new local cluster
and saves the token to ``~/.ray/auth_token``. A private local cluster here keeps token auth
on but with a random token passed only through the environment (``RAY_AUTH_MODE=token``,
``RAY_AUTH_TOKEN``, set for the cluster's lifetime and restored afterwards), so nothing is
written in the home folder. This matters because Ray 2.60 ignores ``127.0.0.1`` as a node
address (it substitutes the host's reachable IP) and its gRPC servers listen on every
interface: without auth, anyone who can reach the machine (other users of a shared login
node included) could run code in the cluster. An explicit ``RAY_AUTH_MODE`` wins:
``RAY_AUTH_MODE=disabled`` also writes no token file (no auth), ``RAY_AUTH_MODE=token``
uses your own token (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``).
``RAY_USAGE_STATS_ENABLED=0`` is set unless set. Ray's session files (logs, sockets) go
under its temp folder, ``/tmp/ray/session_*``, and are left there as Ray leaves them.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtgym.core.errors import MtgymError

if TYPE_CHECKING:
    from mtgym.evaluate import PolicyRun

INSTALL_HINT = "pip install -e .[ray]"
#: row keys that measure time, not the schedule (they differ between runs and backends)
TIMING_KEYS = ("decision_ms", "wall_s")
#: environment variables a private local cluster sets for its lifetime
AUTH_ENV = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")


class RayUnavailableError(MtgymError, ImportError):
    """Ray is not installed (the optional ``ray`` extra)."""


def import_ray() -> Any:
    """``import ray``, or :class:`RayUnavailableError` naming the install command.

    Sets ``RAY_USAGE_STATS_ENABLED=0`` first unless it is already set, so a local start
    sends no usage report.

    Returns:
        The ``ray`` module.

    Raises:
        RayUnavailableError: Ray is not installed (also an ``ImportError``).
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report from local starts
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailableError(
            f"the ray backend needs Ray, which is not installed: run `{INSTALL_HINT}` "
            f"(or `pip install ray`) ({exc})"
        ) from exc
    return ray


def _refresh_ray_auth_config() -> None:
    """Make an already imported Ray re-read ``RAY_AUTH_MODE``/``RAY_AUTH_TOKEN``.

    Ray caches both in C++ on first use; this is what Ray itself does when it switches
    token auth on (``authentication_token_setup._enable_token_auth``).
    """
    try:
        from ray._raylet import AuthenticationTokenLoader, Config
    except ImportError:  # another Ray version: the environment is read at start-up
        return
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


@contextmanager
def _private_auth() -> Iterator[None]:
    """Token auth with a fresh random token held only in the environment, for a local start.

    Ray 2.60 turns token auth on for a new local cluster and saves the token to
    ``~/.ray/auth_token``; passing it as ``RAY_AUTH_TOKEN`` keeps auth on and writes nothing.
    An explicit ``RAY_AUTH_MODE`` (``disabled``, or ``token`` with your own token) wins.
    """
    if "RAY_AUTH_MODE" in os.environ:
        yield
        return
    saved = {k: os.environ.get(k) for k in AUTH_ENV}
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    _refresh_ray_auth_config()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _refresh_ray_auth_config()


@contextmanager
def ray_session(address: str | None = None, *, num_cpus: int | None = None) -> Iterator[Any]:
    """Yield the ``ray`` module connected to a cluster; clean up only what was started here.

    ``address=None`` starts a private local Ray (``num_cpus``, default all cores; token
    auth with a random in-memory token, see :func:`_private_auth`) and shuts it down on
    exit; an address connects to that cluster (your ``RAY_AUTH_MODE``/token settings apply)
    and disconnects on exit; an already initialised Ray is reused and left alone.

    Worker logs are not forwarded to the driver and Ray logs only warnings.

    Args:
        address: ``"auto"``, ``"HOST:PORT"`` or ``"ray://HOST:10001"``; None or empty: a
            private local cluster (``address="local"``, never one found through
            ``RAY_ADDRESS`` or ``/tmp/ray``).
        num_cpus: CPUs of a private local cluster; ignored when connecting.

    Raises:
        RayUnavailableError: Ray is not installed.
    """
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    if address:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        try:
            yield ray
        finally:
            ray.shutdown()
        return
    with _private_auth():
        ray.init(
            address="local",  # never attach to a cluster found via RAY_ADDRESS or /tmp/ray
            num_cpus=num_cpus if num_cpus is not None else os.cpu_count(),
            include_dashboard=False,
            # Ray 2.60 rewrites 127.0.0.1 to the host's reachable address and its gRPC
            # servers listen on every interface anyway: token auth is what keeps others out.
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
        try:
            yield ray
        finally:
            ray.shutdown()


def _abs_if_path(value: str, *, files_only: bool = False) -> str:
    """``value`` made absolute if it names an existing file (or folder, unless ``files_only``).

    The workers' working folder is not the driver's.

    Args:
        value: a scenario name or file, or a model path; ``~`` is expanded when it names a
            path.
        files_only: only an existing file counts (a scenario name that happens to be a
            folder here stays a name).
    """
    p = Path(value).expanduser()
    ok = p.is_file() if files_only else p.exists()
    return str(p.resolve()) if ok else value


def _portable_policy_name(name: str) -> str:
    """``agent:runs/a/model.zip`` -> ``agent:/abs/runs/a/model.zip``; other names unchanged.

    Only an argument that names an existing file or folder is made absolute.

    Args:
        name: a policy registry name.
    """
    if ":" in name:
        head, arg = name.split(":", 1)
        return f"{head}:{_abs_if_path(arg)}"
    return name


def _raise_cause(ray: Any, exc: BaseException, what: str) -> None:
    """Re-raise a task's own exception (KeyError, ScenarioError, ...) instead of Ray's wrapper.

    The cause gets a note naming the task; anything that is not a ``RayTaskError`` with an
    ``Exception`` cause (a lost worker, a cancellation) is re-raised as is.

    Args:
        ray: the ``ray`` module.
        exc: what ``ray.get`` raised.
        what: the task, for the note (e.g. ``"policy 'greedy', seed 3"``).
    """
    cause = getattr(exc, "cause", None)
    if isinstance(exc, ray.exceptions.RayTaskError) and isinstance(cause, Exception):
        cause.add_note(f"(raised in a Ray task: {what})")
        raise cause from None
    raise exc


def run_one(
    scenario: str, policy_name: str, seed: int, decision_interval_s: float | None = None
) -> dict[str, Any]:
    """One (policy, seed) episode, built from names; the row ``mtgym.evaluate`` records.

    This is the body of each Ray task; it is plain Python and runs anywhere mtgym is
    installed.

    Args:
        scenario: a scenario name, or an absolute path to a scenario file.
        policy_name: a registry name (``agent:PATH`` with an absolute path).
        seed: the instance's seed.
        decision_interval_s: decide every that many seconds; None: the policy's own
            schedule.
    """
    from mtgym.evaluate import configure_policy, episode_row, scenario_defaults
    from mtgym.policy.play import play
    from mtgym.policy.registry import make_policy
    from mtgym.scenario.registry import get_generator

    gen = get_generator(scenario)
    instance = gen(seed)
    policy = configure_policy(make_policy(policy_name), scenario_defaults(gen))
    res = play(instance, policy, decision_interval_s=decision_interval_s)
    return episode_row(instance, res, seed)


@dataclass(frozen=True)
class RayOutput:
    """What ``evaluate_ray`` writes and shows.

    Attributes:
        out: folder for ``results.json`` and TensorBoard runs, as ``evaluate`` writes them
            (None: nothing is written).
        progress: show a progress bar.
        table: print the comparison table.
        reference: the policy the others are compared with (the table's and the results').
        labels: the names the runs are reported under, one per policy in order
            (``mtgym.naming.policy_labels``); None: the policy strings as given.
    """

    out: Path | None = None
    progress: bool = False
    table: bool = False
    reference: str | None = None
    labels: Sequence[str] | None = None

    def run_names(self, policy_names: Sequence[str]) -> list[str]:
        """The runs' names: ``labels``, else ``policy_names`` as given.

        Raises:
            ValueError: ``labels`` has not one entry per policy.
        """
        names = list(policy_names if self.labels is None else self.labels)
        if len(names) != len(policy_names):
            raise ValueError(f"{len(names)} labels for {len(policy_names)} policies")
        return names


def evaluate_ray(
    scenario: str,
    policy_names: Sequence[str],
    seeds: Sequence[int],
    *,
    address: str | None = None,
    decision_interval_s: float | None = None,
    num_cpus: int | None = None,
    output: RayOutput | None = None,
    hindsight: bool = True,
) -> list[PolicyRun]:
    """Run every policy on every seed as Ray tasks; the same ``PolicyRun``s as ``evaluate``.

    Names and files are checked before any task (``KeyError``, ``ScenarioError``,
    ``FileNotFoundError``, as locally). If an episode task fails, the pending episode tasks
    are cancelled and its own exception is raised, with a note naming policy and seed.

    Args:
        scenario: a scenario name or file (made absolute for the workers).
        policy_names: registry names (``agent:PATH`` too), naming the runs (or labels).
        seeds: the seeds, one task per (policy, seed).
        address: the Ray cluster (``ray_session``); None: a private local one.
        decision_interval_s: decide every that many seconds; None: each policy's own.
        num_cpus: CPUs of a private local cluster (one CPU per task).
        output: what is written and shown (``RayOutput``; None: nothing).
        hindsight: each seed's hindsight bound as one more task, set in its rows.

    Returns:
        One ``PolicyRun`` per policy, in the order given, rows in seed order.
    """
    o = output or RayOutput()
    out, progress, table, reference = o.out, o.progress, o.table, o.reference
    from mtgym.evaluate import (
        PolicyRun,
        add_bound,
        add_common_metrics,
        print_table,
        write_results,
    )
    from mtgym.policy.registry import make_policy
    from mtgym.scenario.registry import get_generator

    names = [_portable_policy_name(n) for n in policy_names]
    scenario_arg = _abs_if_path(scenario, files_only=True)
    get_generator(scenario_arg)  # fail fast on an unknown scenario or a malformed file
    for name in names:
        make_policy(name)  # fail fast on an unknown policy / missing model
    seeds = [int(s) for s in seeds]
    t_start = time.perf_counter()
    runs = [PolicyRun(n, [None] * len(seeds)) for n in o.run_names(policy_names)]  # type: ignore[list-item]
    with ray_session(address, num_cpus=num_cpus) as ray:
        task = ray.remote(num_cpus=1)(run_one)
        bound_task = ray.remote(num_cpus=1)(_bound_one)
        pending = {
            task.remote(scenario_arg, name, seed, decision_interval_s): (i, k)
            for i, name in enumerate(names)
            for k, seed in enumerate(seeds)
        }
        bounds = [bound_task.remote(scenario_arg, s) for s in seeds] if hindsight else []
        _collect(ray, pending, runs, seeds, progress)
        for k, ref in enumerate(bounds):
            bound = ray.get(ref)
            for run in runs:
                if run.per_seed[k] is not None:
                    add_bound(run.per_seed[k], bound)
    add_common_metrics(runs)
    elapsed = time.perf_counter() - t_start
    if out is not None:
        write_results(Path(out), runs, seeds, scenario, reference=reference)
    if table:
        from rich.console import Console

        console = Console()  # the terminal's width, $COLUMNS, or 80 in a pipe
        print_table(
            runs,
            console,
            title=f"{scenario}: {len(seeds)} seed(s), {elapsed:.1f} s (ray)",
            reference=reference,
        )
    return runs


def _bound_one(scenario: str, seed: int) -> float:
    """The hindsight bound of one seed's episode (the body of a Ray task).

    For the whole episode, as ``run_one`` plays it (no horizon).

    Args:
        scenario: a scenario name or absolute file path.
        seed: the instance's seed.
    """
    from mtgym.evaluate import episode_bound
    from mtgym.scenario.registry import get_generator

    return episode_bound(get_generator(scenario)(seed))


def _collect(
    ray: Any,
    pending: dict[Any, tuple[int, int]],
    runs: list[PolicyRun],
    seeds: list[int],
    progress: bool,
) -> None:
    """Gather task results into ``runs`` (in policy and seed order, whatever finishes first).

    On any error (a task's, or an interrupt) every task not yet collected is cancelled
    before it propagates.

    Args:
        ray: the ``ray`` module.
        pending: task reference -> (policy index, seed index).
        runs: the runs to fill; ``runs[i].per_seed[k]`` gets its row.
        seeds: the seeds, for error notes.
        progress: show a transient progress bar.
    """
    from rich.progress import Progress

    refs = list(pending)
    try:
        with Progress(disable=not progress, transient=True) as bar:
            job = bar.add_task("evaluating (ray)", total=len(refs))
            while refs:
                done, refs = ray.wait(refs, num_returns=1)
                for ref in done:
                    i, k = pending[ref]
                    try:
                        runs[i].per_seed[k] = ray.get(ref)
                    except Exception as exc:
                        _raise_cause(ray, exc, f"policy {runs[i].name!r}, seed {seeds[k]}")
                    bar.advance(job)
    except BaseException:
        for ref in refs:  # do not leave the rest running on a shared cluster
            ray.cancel(ref, force=True)
        raise


def _train_one(train_fn: Callable[[Any], Path], args: Any) -> dict[str, Any]:
    """One training run (a Ray task): ``train_fn(args)``; the model path and timing.

    Args:
        train_fn: the trainer; it writes ``train.json`` into ``args.out``.
        args: this run's arguments (its own ``seed`` and ``out``).

    Returns:
        ``{"seed", "model"}`` merged with the run's ``train.json``.
    """
    path = train_fn(args)
    info = json.loads((Path(args.out) / "train.json").read_text())
    return {"seed": args.seed, "model": str(path), **info}


def train_ray(
    train_fn: Callable[[Any], Path],
    args: Any,
    *,
    address: str | None = None,
    num_workers: int = 2,
    seeds: Sequence[int] | None = None,
    num_cpus: int | None = None,
) -> list[Path]:
    """Run ``train_fn(args)`` once per seed, in parallel Ray tasks; the model paths, in seed
    order.

    ``train_fn`` is the trainer (``agents.train.train``: mtgym never imports ``agents``, the
    ``mtgym train`` command hands it over) and must write ``train.json`` beside its model;
    ``args`` is its dataclass of arguments (``seed``, ``out``, ``scenario``, ``resume``,
    ``progress``, ``vec``, ``n_envs``). The seeds are ``seeds`` or ``num_workers``
    consecutive seeds from ``args.seed``; run ``k`` writes ``args.out/seed<k>/`` and the
    sweep writes ``args.out/sweep.json``. Each run asks Ray for one CPU (``n_envs`` CPUs, at
    most the cluster's, with ``vec="subproc"``); its envs stay in its own process tree. A
    local cluster gets ``num_cpus`` CPUs (default: one per run, at most the machine's cores).

    Args:
        train_fn: the trainer, ``train_fn(args) -> model path``.
        args: the base arguments; each run gets its own ``seed`` and ``out``, no progress
            bar (worker output is not forwarded), and absolute scenario and resume paths.
        address: the Ray cluster (``ray_session``); None: a private local one.
        num_workers: runs when ``seeds`` is None.
        seeds: the seeds, distinct.
        num_cpus: CPUs of a private local cluster.

    Raises:
        ValueError: ``num_workers`` < 1, no seed, or a seed given twice.
        RayUnavailableError: Ray is not installed.
    """
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    seeds = list(range(args.seed, args.seed + num_workers)) if seeds is None else list(seeds)
    if not seeds:
        raise ValueError("train_ray needs at least one seed")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds}")
    root = Path(args.out).expanduser().resolve()
    runs = [
        dataclasses.replace(
            args,
            seed=int(s),
            out=root / f"seed{s}",
            progress=False,  # worker output is not forwarded to the driver
            scenario=_abs_if_path(args.scenario, files_only=True),
            resume=Path(_abs_if_path(str(args.resume))) if args.resume else None,
        )
        for s in seeds
    ]
    if num_cpus is None and not address:
        num_cpus = min(len(seeds), os.cpu_count() or 1)
    with ray_session(address, num_cpus=num_cpus) as ray:
        per_run = 1
        if args.vec == "subproc":
            total = int(ray.cluster_resources().get("CPU", 1))
            per_run = max(1, min(int(args.n_envs), total))
        task = ray.remote(num_cpus=per_run)(_train_one)
        refs = [task.remote(train_fn, a) for a in runs]
        results: list[dict[str, Any]] = []
        try:
            for ref, a in zip(refs, runs, strict=True):
                try:
                    results.append(ray.get(ref))
                except Exception as exc:
                    _raise_cause(ray, exc, f"training seed {a.seed}")
        except BaseException:
            for ref in refs:
                ray.cancel(ref, force=True)
            raise
    root.mkdir(parents=True, exist_ok=True)
    from mtgym.core.io import atomic_write_json

    atomic_write_json(root / "sweep.json", {"seeds": seeds, "runs": results})
    return [Path(r["model"]) for r in results]


def strip_timing(row: dict[str, float]) -> dict[str, float]:
    """A row without its timing fields (what must match between backends).

    Args:
        row: an ``episode_row``; ``TIMING_KEYS`` (``decision_ms``, ``wall_s``) are dropped.
    """
    return {k: v for k, v in row.items() if k not in TIMING_KEYS}
