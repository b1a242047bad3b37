"""How the scavenger runs a job's generation on lent nodes: through the bridge's launchers.

``NodeLauncher`` is the small interface the loop drives: ``start`` a generation of a job on
named nodes, ``stop`` it (``reclaim=True``: at once, the host wants a node back; False: a
graceful checkpoint-and-exit first), ``alive``, ``close``. Three implementations:

- ``ReportLauncher``: runs nothing; records the ``srun``/``scancel`` commands
  ``SlurmLauncher.dry_run`` gives (``mtgym scavenge`` without ``--bridge``, ``--dry-run``).
- ``SlurmStepLauncher``: a real ``srun`` per generation through ``SlurmLauncher`` (one task
  per lent node, torchrun on each); a reclaim is ``scancel`` at once, a rescale first
  touches the stop file. Step names carry a per-run token, so the supply knows its own jobs
  (a node they hold stays lendable) and ``scancel --name`` can never hit another run.
- ``LocalStepLauncher``: ``LocalLauncher`` (real elastic torch jobs on 127.0.0.1).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mtgym.bridge.launcher import JobSpec, LocalLauncher, SlurmLauncher
from mtgym.bridge.procs import pdeathsig_preexec
from mtgym.scavenger.slurm import SlurmClient, SlurmError


class NodeLauncher(Protocol):
    """What the scavenger loop needs from a launcher (see module doc)."""

    def start(self, spec: JobSpec, names: Sequence[str], nodes: Sequence[int], gen: int) -> Any:
        """Start generation ``gen`` of ``spec`` on the named nodes; returns a handle.

        Args:
            spec: the job (its folder, model and training settings).
            names: the lent nodes' host names (what Slurm launchers use).
            nodes: the same nodes' stable indices (what a local launcher uses).
            gen: the generation number, from 0 per job.
        """
        ...

    def stop(self, handle: Any, *, reclaim: bool) -> dict[str, Any]:
        """Stop a generation (at once when ``reclaim``); returns facts for the log.

        Args:
            handle: ``start``'s answer.
            reclaim: the host wants a node back: no graceful checkpoint wait.

        Returns:
            JSON-ready facts merged into the loop's ``release``/``stop`` event.
        """
        ...

    def alive(self, handle: Any) -> bool:
        """True while the generation runs.

        Args:
            handle: ``start``'s answer.
        """
        ...

    def close(self) -> None:
        """Release whatever the launcher holds."""
        ...


@dataclass
class TokenSlurmLauncher(SlurmLauncher):
    """``SlurmLauncher`` (step names ``mtgym-<token>-<job>-g<gen>``, ``own_prefix``) with a
    replaceable task command.

    ``command`` replaces torchrun + the worker with another command per task (e.g. a
    smoke test's ``sleep``); None runs the bridge's training job.

    Attributes:
        command: the task's argument list, after the ``srun`` options (None: torchrun).
    """

    command: tuple[str, ...] | None = None

    def launch_command(
        self, spec: JobSpec, nodes: Sequence[int | str], gen: int, *, job_dir: str | None = None
    ) -> list[str]:
        """The bridge's ``srun`` line, with ``command`` in place of torchrun if set.

        Everything from the first argument equal to ``python`` on is replaced.

        Args:
            spec: the job.
            nodes: simulator node indices or host names.
            gen: the generation number.
            job_dir: the job folder on the shared file system (None: ``spec.job_dir``).
        """
        cmd = super().launch_command(spec, nodes, gen, job_dir=job_dir)
        if self.command is None:
            return cmd
        cut = cmd.index(self.python)
        return [*cmd[:cut], *self.command]


@dataclass
class ReportLauncher:
    """Runs nothing: records the commands a Slurm launch would run (see module doc).

    Attributes:
        slurm: builds the commands.
        running: ``(job id, generation)`` of the generations "running" (started, not
            stopped).
    """

    slurm: TokenSlurmLauncher = field(default_factory=TokenSlurmLauncher)
    running: set[tuple[str, int]] = field(default_factory=set)

    def start(
        self, spec: JobSpec, names: Sequence[str], nodes: Sequence[int], gen: int
    ) -> dict[str, Any]:
        """The commands of the generation (nothing runs).

        Args:
            spec: the job.
            names: the lent nodes' host names.
            nodes: unused (the commands name hosts).
            gen: the generation number.

        Returns:
            The handle: ``job``, ``gen`` and ``commands`` (``SlurmLauncher.dry_run``); the
            loop logs the commands with the launch.
        """
        cmds = self.slurm.dry_run(spec, list(names), gen)
        self.running.add((spec.job_id, gen))
        return {"job": spec.job_id, "gen": gen, "commands": cmds}

    def stop(self, handle: dict[str, Any], *, reclaim: bool) -> dict[str, Any]:
        """What would be run to stop it.

        Args:
            handle: ``start``'s answer.
            reclaim: report the forced stop (``scancel``) rather than the stop file.

        Returns:
            ``{"would_run": [commands]}``.
        """
        self.running.discard((handle["job"], handle["gen"]))
        return {"would_run": handle["commands"]["kill" if reclaim else "stop"]}

    def alive(self, handle: dict[str, Any]) -> bool:
        """A reported generation "runs" until stopped.

        Args:
            handle: ``start``'s answer.
        """
        return (handle["job"], handle["gen"]) in self.running

    def close(self) -> None:
        """Nothing to release."""
        self.running.clear()


@dataclass
class SlurmStep:
    """One generation running under ``srun``.

    Attributes:
        spec: the job.
        gen: the generation number.
        name: its step name (``mtgym-<token>-<job>-g<gen>``), what ``scancel --name`` uses.
        proc: the local ``srun`` process (its own session).
        t_start: wall time ``srun`` was started.
    """

    spec: JobSpec
    gen: int
    name: str
    proc: subprocess.Popen
    t_start: float


@dataclass
class SlurmStepLauncher:
    """Real ``srun`` generations (see module doc).

    Args:
        slurm: builds the commands (its ``partition`` is the scavenger's queue).
        client: runs ``scancel`` with retries.
        graceful_s: how long a non-reclaim stop waits for the stop file to work before
            ``scancel``.
        exit_s: how long ``scancel`` is repeated while waiting for ``srun`` to exit; then
            ``srun``'s process group gets SIGTERM, and SIGKILL 3 s later.
        steps: the generations started and not yet stopped.
    """

    slurm: TokenSlurmLauncher
    client: SlurmClient
    graceful_s: float = 30.0
    exit_s: float = 10.0
    steps: list[SlurmStep] = field(default_factory=list)

    def start(
        self, spec: JobSpec, names: Sequence[str], nodes: Sequence[int], gen: int
    ) -> SlurmStep:
        """``srun`` in the background (returns at once).

        Creates the job's sub-folders and removes a stale stop file of ``gen`` first.
        ``srun`` runs in its own session with the client's environment (``SLURM_CONF``),
        output to ``logs/g<gen>.log``, and gets SIGTERM if the scavenger dies.

        Args:
            spec: the job (its folder must be on a file system the nodes share).
            names: the lent nodes' host names (``--nodelist``).
            nodes: unused (the step is placed by host name).
            gen: the generation number.

        Returns:
            The running step.
        """
        for sub in ("ckpt", "logs", "control", "pids"):
            (spec.job_dir / sub).mkdir(parents=True, exist_ok=True)
        stop = spec.stop_file(gen)
        if stop.exists():
            stop.unlink()
        cmd = self.slurm.launch_command(spec, list(names), gen)
        env = dict(self.client.env) if self.client.env is not None else dict(os.environ)
        with open(spec.job_dir / "logs" / f"g{gen}.log", "ab") as log:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                # srun gets SIGTERM if the scavenger dies, even by SIGKILL: it cancels the step
                preexec_fn=pdeathsig_preexec(signal.SIGTERM),
            )
        step = SlurmStep(spec, gen, self.slurm.step_name(spec, gen), proc, time.time())
        self.steps.append(step)
        return step

    def stop(self, handle: SlurmStep, *, reclaim: bool) -> dict[str, Any]:
        """Reclaim: ``scancel`` now. Otherwise: stop file, ``graceful_s``, then ``scancel``.

        A reclaim runs ``scancel`` even if ``srun`` already exited. When ``srun`` outlives
        ``scancel`` (``exit_s``), its process group gets SIGTERM, then SIGKILL 3 s later,
        and ``scancel`` runs once more.

        Args:
            handle: ``start``'s answer.
            reclaim: skip the graceful stop.

        Returns:
            ``step``, ``graceful`` (``srun`` exited on the stop file), ``rc``, ``stop_s``
            (seconds the stop took) and ``scancel_error`` when ``scancel`` kept failing.
        """
        t0 = time.time()
        graceful = False
        if not reclaim and handle.proc.poll() is None:
            handle.spec.stop_file(handle.gen).touch()
            try:
                handle.proc.wait(timeout=self.graceful_s)
                graceful = True
            except subprocess.TimeoutExpired:
                pass
        err = self._cancel(handle) if handle.proc.poll() is None or reclaim else ""
        if handle.proc.poll() is None:
            # srun outlived scancel: SIGTERM makes it release its own allocation
            with contextlib.suppress(ProcessLookupError):
                os.killpg(handle.proc.pid, signal.SIGTERM)
            try:
                handle.proc.wait(timeout=3.0)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(handle.proc.pid, signal.SIGKILL)
                handle.proc.wait(timeout=5.0)
            err = self._cancel(handle, once=True) or err
        if handle in self.steps:
            self.steps.remove(handle)
        out: dict[str, Any] = {
            "step": handle.name,
            "graceful": graceful,
            "rc": handle.proc.returncode,
            "stop_s": round(time.time() - t0, 3),
        }
        if err:
            out["scancel_error"] = err
        return out

    def _cancel(self, handle: SlurmStep, *, once: bool = False) -> str:
        """``scancel --name`` until ``srun`` exits (a job submitted a moment ago may not be
        registered yet, so one ``scancel`` can miss it), for at most ``exit_s``.
        Returns the last ``scancel`` error ("" if none).

        Args:
            handle: the step.
            once: run ``scancel`` once and do not wait.
        """
        err = ""
        deadline = time.time() + self.exit_s
        while True:
            try:
                self.client.scancel(f"--user={self.slurm.user}", f"--name={handle.name}")
            except SlurmError as exc:  # srun is signalled next anyway
                err = str(exc)
            if once:
                return err
            try:
                handle.proc.wait(timeout=0.5)
                return err
            except subprocess.TimeoutExpired:
                if time.time() >= deadline:
                    return err

    def alive(self, handle: SlurmStep) -> bool:
        """True while ``srun`` runs (the local process; Slurm is not asked).

        Args:
            handle: ``start``'s answer.
        """
        return handle.proc.poll() is None

    def close(self) -> None:
        """Cancel every step this launcher started and has not stopped, and reap ``srun``.

        Each gets a reclaim ``stop`` (``scancel --name=<step>``, then signals).
        """
        for step in list(self.steps):
            self.stop(step, reclaim=True)


@dataclass
class LocalStepLauncher:
    """Real elastic torch generations on this machine through ``LocalLauncher``.

    Attributes:
        local: the bridge's launcher (its workers per node, token and store binding).
        graceful_s: how long a voluntary stop waits on the stop file before SIGTERM.
        reclaim_grace_s: the same for a reclaim (short: the host wants the node).
        launches: the generations started and not yet stopped.
    """

    local: LocalLauncher = field(default_factory=LocalLauncher)
    graceful_s: float = 30.0
    reclaim_grace_s: float = 2.0
    launches: list[Any] = field(default_factory=list)

    def start(self, spec: JobSpec, names: Sequence[str], nodes: Sequence[int], gen: int) -> Any:
        """``LocalLauncher.start`` (one slot of workers per lent node).

        Args:
            spec: the job.
            names: unused (everything runs on this machine).
            nodes: the lent nodes' indices (their count sets the world size; on CUDA the
                GPUs).
            gen: the generation number.

        Returns:
            The bridge's ``Launch``.
        """
        launch = self.local.start(spec, list(nodes), gen)
        self.launches.append(launch)
        return launch

    def stop(self, handle: Any, *, reclaim: bool) -> dict[str, Any]:
        """``LocalLauncher.stop``: stop file, then SIGTERM, then SIGKILL.

        A reclaim waits ``reclaim_grace_s`` before SIGTERM and 1 s before SIGKILL; other
        stops ``graceful_s`` and 2 s.

        Args:
            handle: ``start``'s answer.
            reclaim: use the short grace periods.

        Returns:
            ``graceful``, ``signalled``, ``stop_s`` and ``leftover_pids`` of the stop.
        """
        res = self.local.stop(
            handle,
            graceful_s=self.reclaim_grace_s if reclaim else self.graceful_s,
            term_grace_s=1.0 if reclaim else 2.0,
        )
        if handle in self.launches:
            self.launches.remove(handle)
        return {
            "graceful": res.graceful,
            "signalled": res.signalled,
            "stop_s": round(res.latency_s, 3),
            "leftover_pids": list(res.leftover_pids),
        }

    def alive(self, handle: Any) -> bool:
        """True while the agent runs.

        Args:
            handle: ``start``'s answer.
        """
        return self.local.poll(handle) is None

    def close(self) -> None:
        """Stop every generation still running, then kill anything the launcher still has."""
        for launch in list(self.launches):
            self.stop(launch, reclaim=True)
        self.local.close()


def default_python() -> str:
    """The interpreter the Slurm tasks run (this one: same venv on a shared file system)."""
    return sys.executable


def job_spec(out_dir: Path, job: int, name: str, model: str = "mlp", **kw: Any) -> JobSpec:
    """The bridge ``JobSpec`` of a scenario job under ``out_dir/jobs/<job>``.

    Args:
        out_dir: the scavenger's output folder.
        job: the job's index in the live instance (its id, as text).
        name: the job's name.
        model: a ``models.MODELS`` name.
        **kw: other ``JobSpec`` fields (``batch``, ``threads``...).
    """
    return JobSpec(
        job_id=str(job), job_dir=out_dir / "jobs" / str(job), model=model, name=name, **kw
    )
