"""What the launchers start: a job's spec (``JobSpec``), a started generation (``Launch``),
what stopping it did (``StopResult``), the scripts they run and a free local port.
"""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

WORKER_SCRIPT = Path(__file__).with_name("worker.py")
AGENT_SCRIPT = Path(__file__).with_name("agent.py")
TORCHRUN_SCRIPT = Path(__file__).with_name("torchrun.py")
LAUNCH_MODES = ("agent", "torchrun")
#: How the agent starts workers (``mtgym.bridge.agent``): fork on CPU, spawn on CUDA.
START_METHODS = ("fork", "spawn")
#: torchrun's rendezvous settings: one fixed-size round, no 30 s wait for late nodes.
RDZV_CONF = "join_timeout=120,last_call_timeout=1"


@dataclass
class JobSpec:
    """What to train for one trace job; ``job_dir`` holds its checkpoints and reports.

    The fields become ``worker.py``'s command line (``worker_args``), the same for every
    generation except ``--gen`` and the stop file.

    Attributes:
        job_id: the trace job id (a safe folder name, ``trace.check_job_id``).
        job_dir: the job's folder: ``ckpt/``, ``logs/g<gen>.log``, ``control/stop-g<gen>``,
            ``pids/g<gen>-r<rank>.pid`` and ``progress.jsonl``. Absolute, so workers find it
            whatever their working directory.
        model: a ``models.MODELS`` name (not a set: ``model_for_app_class`` resolves those).
        name: the simulator's job name, for reports only.
        batch: samples per worker per step.
        lr: SGD learning rate (momentum 0.9).
        seed: seeds the synthetic data and its teacher (the initial weights are always the
            same, seed 1234).
        ckpt_every: steps between periodic checkpoints (0: only at a stop).
        sync_every: steps between the ranks' votes on the stop file.
        threads: torch threads per worker (also ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``).
        dp: ``"ddp"`` (DistributedDataParallel) or ``"allreduce"`` (one flat all_reduce).
        device: ``"auto"``, ``"cpu"`` or ``"cuda"``; the launcher resolves ``auto``.
        extra_args: appended to the worker's arguments.
    """

    job_id: str
    job_dir: Path
    model: str = "mlp"
    name: str = ""
    batch: int | None = None  # None: the model's default (mtgym.bridge.models.MODELS)
    lr: float = 0.01
    seed: int = 0
    ckpt_every: int = 50
    sync_every: int = 2
    threads: int = 1
    dp: str = "ddp"
    device: str = "auto"
    extra_args: tuple[str, ...] = ()  # e.g. ("--ignore-stop",) for fault injection

    def stop_file(self, gen: int) -> Path:
        """The file that asks generation ``gen`` to checkpoint and exit.

        One file per generation, so a stale request never stops the next generation.

        Args:
            gen: the generation number (0 for the first launch).
        """
        return self.job_dir / "control" / f"stop-g{gen}"

    def worker_args(
        self,
        gen: int,
        *,
        job_dir: str | Path | None = None,
        device: str | None = None,
        backend: str | None = None,
    ) -> list[str]:
        """The worker's arguments for generation ``gen`` (``device``/``backend``: as
        resolved by a launcher; default the spec's device and the worker's own choice).

        Args:
            gen: the generation number, passed as ``--gen`` and naming the stop file.
            job_dir: the job folder as the workers see it (Slurm: a path on the shared file
                system); None: ``self.job_dir``.
            device: ``--device`` (None: the spec's, possibly ``auto``).
            backend: ``--backend`` (None: not passed; the worker picks nccl or gloo).

        Returns:
            The argument list, ``extra_args`` last.
        """
        jd = Path(job_dir) if job_dir is not None else self.job_dir
        return [
            "--job-dir",
            str(jd),
            "--model",
            self.model,
            *(["--batch", str(self.batch)] if self.batch is not None else []),
            *(["--backend", backend] if backend else []),
            "--lr",
            str(self.lr),
            "--seed",
            str(self.seed),
            "--gen",
            str(gen),
            "--ckpt-every",
            str(self.ckpt_every),
            "--sync-every",
            str(self.sync_every),
            "--threads",
            str(self.threads),
            "--dp",
            self.dp,
            "--device",
            device or self.device,
            "--stop-file",
            str(jd / "control" / f"stop-g{gen}"),
            *self.extra_args,
        ]


@dataclass
class Launch:
    """One running generation of a job.

    Attributes:
        spec: the job.
        gen: the generation number.
        world_size: real workers (nodes x workers per node).
        nodes: the simulator nodes it runs on.
        proc: the agent process (``agent.py`` or ``torchrun.py``).
        cmd: the agent's command line.
        port: the c10d rendezvous port on the launcher's host.
        t_launch: wall time (``time.time``) the agent was started.
        log_path: the generation's log (``logs/g<gen>.log``: the command, then the agent's
            and workers' output).
        known_pids: every PID seen for this launch (the agent, PID files, ``/proc``
            descendants); each is checked again before it is signalled.
    """

    spec: JobSpec
    gen: int
    world_size: int
    nodes: tuple[int, ...]
    proc: subprocess.Popen
    cmd: list[str]
    port: int
    t_launch: float
    log_path: Path
    known_pids: set[int] = field(default_factory=set)

    @property
    def pid(self) -> int:
        """The torchrun agent's PID."""
        return self.proc.pid

    @property
    def launch_id(self) -> str:
        """``<job>-g<gen>``: the ``MTGYM_LAUNCH`` value of every process of this launch."""
        return f"{self.spec.job_id}-g{self.gen}"


@dataclass
class StopResult:
    """How a generation ended.

    Attributes:
        t_request: wall time of the stop request.
        t_exit: wall time every process was gone (or the launcher gave up waiting).
        rc: the agent's exit status (negative: killed by that signal; None: unknown).
        graceful: exited on the stop file, before any signal, after reporting ``stop``.
        signalled: the strongest signal sent: ``""``, ``"SIGTERM"`` or ``"SIGKILL"``.
        leftover_pids: PIDs still alive after everything (should be none).
        reported_stop: the workers checkpointed and reported ``stop`` first.
    """

    t_request: float
    t_exit: float
    rc: int | None
    graceful: bool  # exited on the stop file, before any signal
    signalled: str = ""  # "", "SIGTERM" or "SIGKILL"
    leftover_pids: tuple[int, ...] = ()  # PIDs still alive after everything (should be none)
    reported_stop: bool = False  # the workers checkpointed and reported "stop" first

    @property
    def latency_s(self) -> float:
        """Seconds from the stop request to every process gone."""
        return self.t_exit - self.t_request


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (bind to port 0, read it, close).

    Another process may take it before it is used; ``LocalLauncher`` at least never hands
    the same port out twice.

    Args:
        host: the IPv4 address to probe.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
