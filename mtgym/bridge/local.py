"""Start, stop and rescale real torch training jobs locally (``LocalLauncher``; under Slurm:
``mtgym.bridge.slurm``).

A job runs as *generations*: each generation is one agent launch at a fixed world size.
A rescale is **checkpoint -> stop -> restart** (the reliable path on this torch, see
``mtgym/bridge/README.md``): the launcher creates the generation's stop file, the workers
agree on it at their next vote, checkpoint, and exit; the next generation starts with the
new world size and resumes from the newest valid checkpoint.

Stopping escalates so that a job always lets go of its nodes by a deadline:
stop file -> (after ``graceful_s``) SIGTERM to the torchrun agent, which forwards it to its
workers -> (after ``term_grace_s``) SIGKILL to every worker PID and the agent. Worker PIDs come
from the files the workers write (``pids/g<gen>-r<rank>.pid``) and from the agent's
descendants in ``/proc``: a torchrun agent killed with SIGKILL orphans its workers, so the
launcher never relies on killing the agent alone. A PID is only signalled after checking
that its environment carries this launcher's run token and the generation
(``MTGYM_RUN_TOKEN``, ``MTGYM_LAUNCH``; PIDs are reused).

No orphans: each agent runs in its own process group (its forked workers share it) and
gets SIGKILL from the kernel when the thread that started it dies, even by SIGKILL
(``PR_SET_PDEATHSIG``, ``mtgym.bridge.procs``); each worker does the same for its agent.
``LocalLauncher.close`` kills every generation still running. The rendezvous store and
any worker store listen on ``store_bind`` (127.0.0.1) only.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from mtgym.bridge import gpu, procs
from mtgym.bridge.procs import descendants, pid_alive, signal_quietly
from mtgym.bridge.spec import (
    AGENT_SCRIPT,
    LAUNCH_MODES,
    RDZV_CONF,
    START_METHODS,
    TORCHRUN_SCRIPT,
    WORKER_SCRIPT,
    JobSpec,
    Launch,
    StopResult,
    free_port,
)


class LocalLauncher:
    """Runs each generation on this machine under a torch elastic agent.

    One agent per job with ``nproc-per-node = nodes x workers_per_node``, a c10d
    rendezvous on ``127.0.0.1:<free port>``, gloo bound to the loopback
    (``GLOO_SOCKET_IFNAME=lo``), one torch thread per worker. ``launch`` picks the agent:

    - ``"agent"`` (default): ``mtgym/bridge/agent.py``, the elastic agent API
      (``elastic_launch``) with forked workers: torch is imported once per generation,
      not once per worker, which halves restart costs on a small machine;
    - ``"torchrun"``: ``python mtgym/bridge/torchrun.py ... worker.py``: torchrun's own
      ``main`` (each worker a fresh interpreter, torchrun's arguments), with the store
      binding and parent-death signal applied first.

    A simulated "node" is a slot of ``workers_per_node`` worker processes; on a small
    machine all jobs share the cores, which the measurements then include.

    **GPUs** (``device`` cuda, or auto with a GPU visible): the job's ``i``-th simulated
    node gets GPUs ``[i*g, (i+1)*g)`` of the visible ones (``g = workers_per_node``), one
    per worker: the agent's ``CUDA_VISIBLE_DEVICES`` is the job's GPUs and each worker
    narrows it to its own (``MTGYM_RANK_DEVICES``, ``mtgym.bridge.gpu``) before CUDA
    starts, and uses ``cuda:0``. A generation needing more GPUs than are visible raises
    ``gpu.NotEnoughGpusError`` before anything starts, unless ``share_gpus``: then the list
    wraps around and the workers use gloo (NCCL refuses two ranks on one GPU). Concurrent
    jobs share the GPUs (each job numbers its nodes from 0). ``gpus`` overrides the
    detected list (``gpu.visible_gpus``). The agent starts CUDA workers with ``spawn``
    (see ``mtgym.bridge.agent`` for why not fork); ``start_method`` overrides it (never
    ``fork`` on CUDA).

    ``token`` (random by default) marks every process started, so that only those are ever
    signalled. ``store_bind`` is the address the torch stores listen on: ``127.0.0.1`` by
    default; ``""`` keeps torch's default (every interface), only for a launcher whose
    agents must be reached from other hosts.

    Args:
        workers_per_node: worker processes per simulated node (>= 1).
        python: the interpreter that runs the agent.
        env: variables added to every agent's environment (after the launcher's own, before
            the run token and launch id, which cannot be overridden).
        worker_script: the training script torchrun runs (``launch="torchrun"`` only; the
            agent always loads ``worker.py`` beside it).
        host: the rendezvous host and ``MASTER_ADDR``.
        launch: ``"agent"`` or ``"torchrun"`` (see above).
        exit_grace_s: how long workers that reported ``stop`` may take to exit before they
            are killed.
        token: the run token (None: 12 random hex digits).
        store_bind: the address the torch stores listen on (``""``: every interface).
        gpus: the GPU ids to use (None: detected on first use).
        share_gpus: let workers share GPUs (over gloo) when there are too few.
        start_method: ``"fork"`` or ``"spawn"`` for every job (None: by device).

    Raises:
        ValueError: ``workers_per_node`` < 1, or an unknown ``launch`` or ``start_method``.
    """

    def __init__(
        self,
        *,
        workers_per_node: int = 1,
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
        worker_script: Path = WORKER_SCRIPT,
        host: str = "127.0.0.1",
        launch: str = "agent",
        exit_grace_s: float = 3.0,
        token: str | None = None,
        store_bind: str = "127.0.0.1",
        gpus: Sequence[str] | None = None,
        share_gpus: bool = False,
        start_method: str | None = None,
    ) -> None:
        if workers_per_node < 1:
            raise ValueError(f"workers_per_node must be >= 1, got {workers_per_node}")
        if launch not in LAUNCH_MODES:
            raise ValueError(f"launch must be one of {LAUNCH_MODES}, got {launch!r}")
        if start_method not in (None, *START_METHODS):
            raise ValueError(f"start_method must be one of {START_METHODS}, got {start_method!r}")
        self._gpus = None if gpus is None else [str(g) for g in gpus]
        self.share_gpus = share_gpus
        self.start_method_override = start_method
        self.launch = launch
        self.exit_grace_s = exit_grace_s
        self.workers_per_node = workers_per_node
        self.python = python
        self.extra_env = dict(env or {})
        self.worker_script = Path(worker_script)
        self.host = host
        self.token = token or secrets.token_hex(6)
        self.store_bind = store_bind
        self._ports: set[int] = set()
        self._live: list[Launch] = []
        self._lock = threading.Lock()
        self._closed = False

    # -- devices -----------------------------------------------------------------------
    @property
    def gpus(self) -> list[str]:
        """The GPU ids jobs may use (detected once, without initialising CUDA here)."""
        if self._gpus is None:
            self._gpus = gpu.visible_gpus()
        return self._gpus

    def resolve_device(self, device: str) -> str:
        """``cuda`` or ``cpu``: ``auto`` is cuda when a GPU is visible.

        Args:
            device: ``"auto"``, ``"cpu"`` or ``"cuda"``.

        Raises:
            ValueError: any other value.
        """
        if device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be auto, cpu or cuda, got {device!r}")
        if device == "auto":
            return "cuda" if self.gpus else "cpu"
        return device

    def start_method(self, device: str) -> str:
        """How the agent starts its workers: ``spawn`` on CUDA, ``fork`` on CPU.

        A forked child cannot use CUDA once its parent has initialised it, and torch's
        elastic agent initialises it (``mtgym.bridge.agent``): CUDA workers are spawned.

        Args:
            device: the job's device (``auto`` resolved first).

        Returns:
            The override given to the launcher, else ``spawn`` on CUDA, ``fork`` on CPU.

        Raises:
            ValueError: the override is ``fork`` and the device is CUDA.
        """
        dev = self.resolve_device(device)
        m = self.start_method_override or ("spawn" if dev == "cuda" else "fork")
        if m == "fork" and dev == "cuda":
            raise ValueError(
                "start method fork cannot run CUDA workers (the agent initialises CUDA "
                "before it forks); use spawn"
            )
        return m

    def check_fits(self, job_id: str, n_nodes: int, device: str) -> None:
        """Raise ``gpu.NotEnoughGpusError`` (one line: job, world size, visible GPUs) when a
        CUDA generation of ``n_nodes`` nodes needs more GPUs than are visible.

        A no-op on CPU. ``mtgym.bridge.controller.replay`` calls it for every job's largest
        generation before anything starts; ``start`` calls it again per generation.

        Args:
            job_id: the job, named in the message.
            n_nodes: the generation's simulated nodes.
            device: the job's device.
        """
        if self.resolve_device(device) == "cuda":
            gpu.check_fits(
                job_id, n_nodes, self.workers_per_node, len(self.gpus), share=self.share_gpus
            )

    def rank_devices(self, spec: JobSpec, nodes: Sequence[int]) -> list[str] | None:
        """The GPU of every local rank of a generation (None on CPU).

        Each job numbers its nodes from 0 here: ``nodes`` only gives the count, so two
        concurrent jobs use the same first GPUs.

        Args:
            spec: the job.
            nodes: the generation's simulated nodes.

        Returns:
            ``gpu.rank_devices``'s list (local rank ``k`` at index ``k``), or None on CPU.
        """
        if self.resolve_device(spec.device) != "cuda":
            return None
        return gpu.rank_devices(
            len(nodes), self.workers_per_node, self.gpus, share=self.share_gpus, job=spec.job_id
        )

    def backend(self, spec: JobSpec) -> str | None:
        """``gloo`` for CUDA jobs when GPUs may be shared; None = the worker's default.

        Decided per launcher, not per generation: with ``share_gpus`` every CUDA job uses
        gloo, even a generation that would fit one GPU per worker.

        Args:
            spec: the job.
        """
        if self.share_gpus and self.resolve_device(spec.device) == "cuda":
            return "gloo"
        return None

    def _worker_args(self, spec: JobSpec, gen: int) -> list[str]:
        """``spec.worker_args`` with this launcher's resolved device and backend."""
        return spec.worker_args(
            gen, device=self.resolve_device(spec.device), backend=self.backend(spec)
        )

    # -- commands ----------------------------------------------------------------------
    def world_size(self, nodes: Sequence[int]) -> int:
        """Workers for a node set (``len(nodes) x workers_per_node``).

        Args:
            nodes: simulated node indices (only the count matters).
        """
        return len(nodes) * self.workers_per_node

    def command(self, spec: JobSpec, nodes: Sequence[int], gen: int, port: int) -> list[str]:
        """The exact command of one generation.

        Both modes run one agent with ``nproc-per-node`` = every worker of the generation,
        rendezvous id ``<job>-g<gen>``, no torch-level restarts (the controller restarts)
        and a 0.1 s monitor interval. ``--prewarm-ddp`` is added for DDP jobs whose workers
        are forked.

        Args:
            spec: the job.
            nodes: the generation's simulated nodes.
            gen: the generation number.
            port: the rendezvous port on ``host``.

        Returns:
            ``[python, agent.py | torchrun.py, ..., worker arguments]``.
        """
        if self.launch == "agent":
            method = self.start_method(spec.device)
            return [
                self.python,
                str(AGENT_SCRIPT),
                f"--nproc-per-node={self.world_size(nodes)}",
                f"--rdzv-endpoint={self.host}:{port}",
                f"--rdzv-id={spec.job_id}-g{gen}",
                f"--local-addr={self.host}",
                "--max-restarts=0",
                "--monitor-interval=0.1",
                f"--start-method={method}",
                *(["--prewarm-ddp"] if spec.dp == "ddp" and method == "fork" else []),
                "--",
                *self._worker_args(spec, gen),
            ]
        return [
            self.python,
            str(TORCHRUN_SCRIPT),
            "--nnodes=1",
            f"--nproc-per-node={self.world_size(nodes)}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={self.host}:{port}",
            f"--rdzv-id={spec.job_id}-g{gen}",
            f"--rdzv-conf={RDZV_CONF}",
            "--max-restarts=0",
            "--monitor-interval=0.1",
            f"--local-addr={self.host}",
            str(self.worker_script),
            *self._worker_args(spec, gen),
        ]

    def environment(
        self, spec: JobSpec, gen: int = 0, *, nodes: Sequence[int] | None = None
    ) -> dict[str, str]:
        """The environment of an agent and its workers (with the run token; on CUDA, the
        generation's GPUs for ``nodes``).

        This process's environment, plus gloo on the loopback, ``MASTER_ADDR``, the thread
        counts, unbuffered output and ``PYTORCH_NVML_BASED_CUDA_CHECK=1``; then ``env``;
        then ``MTGYM_RUN_TOKEN``, ``MTGYM_LAUNCH=<job>-g<gen>`` and ``MTGYM_STORE_BIND``.
        ``MTGYM_PARENT_PID`` is removed (the agent sets it for its workers). On CUDA,
        ``CUDA_VISIBLE_DEVICES`` lists the generation's distinct GPUs and
        ``MTGYM_RANK_DEVICES`` each rank's.

        Args:
            spec: the job.
            gen: the generation number (in ``MTGYM_LAUNCH``).
            nodes: the generation's simulated nodes; None: no GPU variables.
        """
        env = dict(os.environ)
        env.update(
            GLOO_SOCKET_IFNAME="lo",
            MASTER_ADDR=self.host,
            OMP_NUM_THREADS=str(spec.threads),
            MKL_NUM_THREADS=str(spec.threads),
            PYTHONUNBUFFERED="1",
            PYTORCH_NVML_BASED_CUDA_CHECK="1",  # availability checks never initialise CUDA
        )
        env.pop(gpu.RANK_DEVICES_ENV, None)
        devices = self.rank_devices(spec, nodes) if nodes is not None else None
        if devices is not None:
            env[gpu.RANK_DEVICES_ENV] = ",".join(devices)
            env["CUDA_VISIBLE_DEVICES"] = ",".join(dict.fromkeys(devices))
        env.update(self.extra_env)
        env[procs.TOKEN_ENV] = self.token
        env[procs.LAUNCH_ENV] = f"{spec.job_id}-g{gen}"
        env[procs.BIND_ENV] = self.store_bind
        env.pop(procs.PARENT_ENV, None)  # the agent is started by us, not by an agent
        return env

    def _port(self) -> int:
        """A free port that this launcher has not handed out before (50 tries)."""
        for _ in range(50):
            p = free_port(self.host)
            if p not in self._ports:
                self._ports.add(p)
                return p
        return free_port(self.host)  # pragma: no cover

    # -- life cycle --------------------------------------------------------------------
    def start(self, spec: JobSpec, nodes: Sequence[int], gen: int) -> Launch:
        """Launch generation ``gen`` of ``spec`` on ``nodes`` (returns at once).

        Creates the job's sub-folders, removes a stale stop file of ``gen``, and starts the
        agent in its own session (so ``killpg`` reaches forked workers) with the parent-death
        signal against the calling thread. Output goes to ``logs/g<gen>.log``, after the
        command line.

        Args:
            spec: the job.
            nodes: the generation's simulated nodes (at least one).
            gen: the generation number.

        Returns:
            The running launch, registered for ``kill_all``.

        Raises:
            ValueError: ``nodes`` is empty.
            RuntimeError: the launcher refuses new launches (``refuse_new``, ``close``).
            gpu.NotEnoughGpusError: a CUDA generation does not fit the visible GPUs.
        """
        if not nodes:
            raise ValueError("a generation needs at least one node")
        if self._closed:
            raise RuntimeError("the launcher is closed (the replay is shutting down)")
        self.check_fits(spec.job_id, len(nodes), spec.device)
        for sub in ("ckpt", "logs", "control", "pids"):
            (spec.job_dir / sub).mkdir(parents=True, exist_ok=True)
        stop = spec.stop_file(gen)
        if stop.exists():
            stop.unlink()
        port = self._port()
        cmd = self.command(spec, nodes, gen, port)
        log_path = spec.job_dir / "logs" / f"g{gen}.log"
        with open(log_path, "ab") as log:
            log.write(f"$ {shlex.join(cmd)}\n".encode())
            log.flush()
            with self._lock:
                if self._closed:
                    raise RuntimeError("the launcher is closed (the replay is shutting down)")
                proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self.environment(spec, gen, nodes=nodes),
                    start_new_session=True,  # own process group: killpg reaches its workers
                    preexec_fn=procs.pdeathsig_preexec(signal.SIGKILL),  # dies with us
                )
                la = Launch(
                    spec=spec,
                    gen=gen,
                    world_size=self.world_size(nodes),
                    nodes=tuple(nodes),
                    proc=proc,
                    cmd=cmd,
                    port=port,
                    t_launch=time.time(),
                    log_path=log_path,
                    known_pids={proc.pid},
                )
                # registered under the same lock: close() either refuses it or kills it
                self._live = [x for x in self._live if x.proc.poll() is None]
                self._live.append(la)
        return la

    def kill_all(self, *, term_grace_s: float = 1.0) -> int:
        """Kill every generation of this launcher still running; returns how many.

        Each gets ``kill``: SIGTERM, then SIGKILL after ``term_grace_s`` seconds. The list
        of launches is emptied, so a second call finds nothing.

        Args:
            term_grace_s: seconds between SIGTERM and SIGKILL.
        """
        with self._lock:
            live, self._live = list(self._live), []
        n = 0
        for la in live:
            if la.proc.poll() is None or self.alive_pids(la):
                self.kill(la, term_grace_s=term_grace_s)
                n += 1
        return n

    def refuse_new(self) -> None:
        """From now on ``start`` raises: nothing new starts while a replay shuts down."""
        with self._lock:
            self._closed = True

    def close(self, *, term_grace_s: float = 1.0) -> None:
        """Refuse new launches and kill every generation still running (idempotent).

        Args:
            term_grace_s: seconds between SIGTERM and SIGKILL.
        """
        self.refuse_new()
        self.kill_all(term_grace_s=term_grace_s)

    def request_stop(self, launch: Launch) -> None:
        """Create the generation's stop file (the workers checkpoint and exit).

        The workers see it at their next vote (every ``sync_every`` steps); nothing is
        signalled.

        Args:
            launch: the generation to stop.
        """
        f = launch.spec.stop_file(launch.gen)
        f.parent.mkdir(parents=True, exist_ok=True)
        f.touch()

    def poll(self, launch: Launch) -> int | None:
        """The agent's exit status, or None while it runs (also records worker PIDs).

        Args:
            launch: the generation.
        """
        self._collect_pids(launch)
        return launch.proc.poll()

    def _collect_pids(self, launch: Launch) -> None:
        """Add the generation's PID files and, while the agent runs, its descendants to
        ``known_pids`` (unchecked: ``_ours`` filters before any signal).
        """
        pid_dir = launch.spec.job_dir / "pids"
        for f in pid_dir.glob(f"g{launch.gen}-r*.pid"):
            try:
                launch.known_pids.add(int(f.read_text().strip()))
            except (OSError, ValueError):
                continue
        if launch.proc.poll() is None:
            launch.known_pids.update(descendants(launch.proc.pid))

    def worker_pids(self, launch: Launch) -> list[int]:
        """Live PIDs of the generation's workers (and the agent's other children).

        Only processes that carry this run's token and the launch id (``_ours``); the agent
        itself is left out.

        Args:
            launch: the generation.
        """
        self._collect_pids(launch)
        return sorted(p for p in launch.known_pids if p != launch.pid and self._ours(launch, p))

    def alive_pids(self, launch: Launch) -> list[int]:
        """Every live process of the generation, the agent included.

        Workers are checked as in ``worker_pids``; the agent counts while ``poll`` says it
        runs.

        Args:
            launch: the generation.

        Returns:
            Sorted PIDs; ``[]`` once everything is gone.
        """
        self._collect_pids(launch)
        out = [p for p in launch.known_pids if p != launch.pid and self._ours(launch, p)]
        if launch.proc.poll() is None:
            out.append(launch.pid)
        return sorted(out)

    def _ours(self, launch: Launch, pid: int) -> bool:
        """Alive, and started by this launch: its environment has our run token and the
        launch's ``<job>-g<gen>`` (a reused PID, or another run's process, has not).
        """
        if not pid_alive(pid):
            return False
        return procs.environ_matches(
            pid, **{procs.TOKEN_ENV: self.token, procs.LAUNCH_ENV: launch.launch_id}
        )

    def wait(self, launch: Launch, timeout: float) -> int | None:
        """Wait up to ``timeout`` s for the agent to exit; its status or None.

        Polls every 0.05 s; workers are not waited for.

        Args:
            launch: the generation.
            timeout: seconds (a negative value checks once).
        """
        end = time.time() + max(timeout, 0.0)
        while True:
            rc = self.poll(launch)
            if rc is not None or time.time() >= end:
                return rc
            time.sleep(0.05)

    def reported_stop(self, launch: Launch) -> bool:
        """True once the generation's rank 0 has reported ``stop`` (checkpoint durable).

        Reads only the last 8 KiB of ``progress.jsonl``, looking for a ``stop`` record of
        this generation (the compact JSON the worker writes); False when the file is missing.

        Args:
            launch: the generation.
        """
        prog = launch.spec.job_dir / "progress.jsonl"
        try:
            with open(prog, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 8192))
                tail = f.read().decode(errors="replace")
        except OSError:
            return False
        marker = '"event":"stop"'
        return any(marker in line and f'"gen":{launch.gen},' in line for line in tail.splitlines())

    def kill(self, launch: Launch, *, term_grace_s: float = 2.0) -> str:
        """SIGTERM the agent (it forwards to workers), then SIGKILL whatever is left.

        Every PID known for the launch and the agent's process group get SIGKILL when they
        outlive ``term_grace_s``. Waits up to 5 s for the agent to be reaped and up to 3 s
        more for the rest to go.

        Args:
            launch: the generation.
            term_grace_s: seconds between SIGTERM and SIGKILL.

        Returns:
            ``"SIGKILL"`` when SIGKILL was sent, else ``"SIGTERM"`` (also when the agent had
            already exited and nothing was signalled).
        """
        self._collect_pids(launch)
        sent = "SIGTERM"
        if launch.proc.poll() is None:
            signal_quietly(launch.pid, signal.SIGTERM)
            end = time.time() + term_grace_s
            while time.time() < end and self.alive_pids(launch):
                time.sleep(0.05)
        left = self.alive_pids(launch)
        if left:
            sent = "SIGKILL"
            for pid in left:
                signal_quietly(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(launch.pid, signal.SIGKILL)
        try:
            launch.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:  # pragma: no cover
            signal_quietly(launch.pid, signal.SIGKILL)
            launch.proc.wait(timeout=5.0)
        end = time.time() + 3.0
        while time.time() < end and self.alive_pids(launch):
            time.sleep(0.02)
        return sent

    def stop(
        self,
        launch: Launch,
        *,
        graceful_s: float = 60.0,
        term_grace_s: float = 2.0,
        already_requested: float | None = None,
    ) -> StopResult:
        """Stop a generation: stop file, then SIGTERM after ``graceful_s``, then SIGKILL.

        The generation counts as stopped gracefully once its workers have reported ``stop``
        (their checkpoint is durable) and exited: the agent's own teardown is not waited
        for (it is killed after ``0.3`` s; it holds no state). Workers that reported but
        hang in their teardown are killed after ``exit_grace_s``. Every process of the
        generation is gone when this returns (``leftover_pids`` lists any that survived
        SIGKILL, which should never happen).

        Args:
            launch: the generation.
            graceful_s: seconds from the request before escalating to ``kill`` (0: at once).
            term_grace_s: seconds between SIGTERM and SIGKILL once escalated.
            already_requested: wall time of an earlier request to count ``graceful_s`` from
                (None: now). The stop file is created in any case while the agent runs.

        Returns:
            How it ended: times, exit status, the signal sent and any survivors.
        """
        t_req = time.time() if already_requested is None else already_requested
        if launch.proc.poll() is None:
            self.request_stop(launch)
        deadline = t_req + graceful_s
        t_seen: float | None = None
        t_idle: float | None = None
        escalate = False
        while True:
            rc = self.poll(launch)
            if rc is not None:
                break
            now = time.time()
            if t_seen is None and self.reported_stop(launch):
                t_seen = now
            if t_seen is not None and not self.worker_pids(launch):
                t_idle = t_idle or now
                if now >= t_idle + 0.3:  # workers done: the agent only tears down
                    signal_quietly(launch.pid, signal.SIGKILL)
                    launch.proc.wait(timeout=5.0)
                    rc = launch.proc.returncode
                    break
            if now >= deadline or (t_seen is not None and now >= t_seen + self.exit_grace_s):
                escalate = True
                break
            time.sleep(0.05)
        signalled = ""
        if escalate:
            signalled = self.kill(launch, term_grace_s=term_grace_s)
            rc = launch.proc.poll()
        else:
            # the agent is gone; make sure no worker outlived it
            end = time.time() + term_grace_s
            while time.time() < end and self.worker_pids(launch):
                time.sleep(0.02)
            left = self.worker_pids(launch)
            if left:
                signalled = "SIGKILL"
                for pid in left:
                    signal_quietly(pid, signal.SIGKILL)
        end = time.time() + 2.0
        while time.time() < end and self.alive_pids(launch):
            time.sleep(0.02)
        left = tuple(self.alive_pids(launch))
        reported = self.reported_stop(launch)
        return StopResult(
            t_request=t_req,
            t_exit=time.time(),
            rc=rc,
            graceful=signalled == "" and reported,
            signalled=signalled,
            leftover_pids=left,
            reported_stop=reported,
        )
