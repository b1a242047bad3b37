"""Start, stop and rescale real torch training jobs: locally (``LocalLauncher``) or under
Slurm (``SlurmLauncher``).

A job runs as *generations*: each generation is one torchrun launch at a fixed world size.
A rescale is **checkpoint -> stop -> restart** (the reliable path measured in
``docs/bridge.md``): the launcher creates the generation's stop file, the workers agree on it
at their next vote, checkpoint, and exit; the next generation starts with the new world size
and resumes from the newest valid checkpoint.

Stopping escalates so that a job always lets go of its nodes by a deadline:
stop file -> (after ``graceful_s``) SIGTERM to the torchrun agent, which forwards it to its
workers -> (after ``term_grace_s``) SIGKILL to every worker PID and the agent. Worker PIDs come
from the files the workers write (``pids/g<gen>-r<rank>.pid``) and from the agent's
descendants in ``/proc``: a torchrun agent killed with SIGKILL orphans its workers, so the
launcher never relies on killing the agent alone. A PID is only signalled after checking
that its command line still names the job folder (PIDs are reused).
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

WORKER_SCRIPT = Path(__file__).with_name("worker.py")
#: torchrun's rendezvous settings: one fixed-size round, no 30 s wait for late nodes.
RDZV_CONF = "join_timeout=120,last_call_timeout=1"


@dataclass
class JobSpec:
    """What to train for one trace job; ``job_dir`` holds its checkpoints and reports."""

    job_id: str
    job_dir: Path
    model: str = "mlp"
    name: str = ""
    batch: int = 64
    lr: float = 0.01
    seed: int = 0
    ckpt_every: int = 50
    sync_every: int = 2
    threads: int = 1
    dp: str = "ddp"
    device: str = "auto"
    extra_args: tuple[str, ...] = ()  # e.g. ("--ignore-stop",) for fault injection

    def stop_file(self, gen: int) -> Path:
        """The file that asks generation ``gen`` to checkpoint and exit."""
        return self.job_dir / "control" / f"stop-g{gen}"

    def worker_args(self, gen: int, *, job_dir: str | Path | None = None) -> list[str]:
        """The worker's arguments for generation ``gen``."""
        jd = Path(job_dir) if job_dir is not None else self.job_dir
        return [
            "--job-dir",
            str(jd),
            "--model",
            self.model,
            "--batch",
            str(self.batch),
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
            self.device,
            "--stop-file",
            str(jd / "control" / f"stop-g{gen}"),
            *self.extra_args,
        ]


@dataclass
class Launch:
    """One running generation of a job."""

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


@dataclass
class StopResult:
    """How a generation ended."""

    t_request: float
    t_exit: float
    rc: int | None
    graceful: bool  # exited on the stop file, before any signal
    signalled: str = ""  # "", "SIGTERM" or "SIGKILL"
    leftover_pids: tuple[int, ...] = ()  # PIDs still alive after everything (should be none)

    @property
    def latency_s(self) -> float:
        """Seconds from the stop request to every process gone."""
        return self.t_exit - self.t_request


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------------------------------
# /proc helpers (Linux; no psutil)
# ---------------------------------------------------------------------------------------
def _stat(pid: int) -> tuple[str, int] | None:
    """(state letter, parent PID) of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            data = f.read()
    except OSError:
        return None
    rest = data[data.rfind(")") + 2 :].split()
    return rest[0], int(rest[1])


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (one scan of ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None:
                children.setdefault(st[1], []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class LocalLauncher:
    """Runs each generation as ``python -m torch.distributed.run`` on this machine.

    One agent per job with ``--nproc-per-node = nodes x workers_per_node``, a c10d
    rendezvous on ``127.0.0.1:<free port>``, gloo bound to the loopback
    (``GLOO_SOCKET_IFNAME=lo``), one torch thread per worker. A simulated "node" is a
    slot of ``workers_per_node`` worker processes; on a small machine all jobs share the
    cores, which the measurements then include (see ``docs/bridge.md``).
    """

    def __init__(
        self,
        *,
        workers_per_node: int = 1,
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
        worker_script: Path = WORKER_SCRIPT,
        host: str = "127.0.0.1",
    ) -> None:
        if workers_per_node < 1:
            raise ValueError(f"workers_per_node must be >= 1, got {workers_per_node}")
        self.workers_per_node = workers_per_node
        self.python = python
        self.extra_env = dict(env or {})
        self.worker_script = Path(worker_script)
        self.host = host
        self._ports: set[int] = set()

    # -- commands ----------------------------------------------------------------------
    def world_size(self, nodes: Sequence[int]) -> int:
        """Workers for a node set."""
        return len(nodes) * self.workers_per_node

    def command(self, spec: JobSpec, nodes: Sequence[int], gen: int, port: int) -> list[str]:
        """The exact command of one generation."""
        return [
            self.python,
            "-m",
            "torch.distributed.run",
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
            *spec.worker_args(gen),
        ]

    def environment(self, spec: JobSpec) -> dict[str, str]:
        """The environment of an agent and its workers."""
        env = dict(os.environ)
        env.update(
            GLOO_SOCKET_IFNAME="lo",
            MASTER_ADDR=self.host,
            OMP_NUM_THREADS=str(spec.threads),
            MKL_NUM_THREADS=str(spec.threads),
            PYTHONUNBUFFERED="1",
        )
        env.update(self.extra_env)
        return env

    def _port(self) -> int:
        for _ in range(50):
            p = free_port(self.host)
            if p not in self._ports:
                self._ports.add(p)
                return p
        return free_port(self.host)  # pragma: no cover

    # -- life cycle --------------------------------------------------------------------
    def start(self, spec: JobSpec, nodes: Sequence[int], gen: int) -> Launch:
        """Launch generation ``gen`` of ``spec`` on ``nodes`` (returns at once)."""
        if not nodes:
            raise ValueError("a generation needs at least one node")
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
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.environment(spec),
                start_new_session=True,
            )
        return Launch(
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

    def request_stop(self, launch: Launch) -> None:
        """Create the generation's stop file (the workers checkpoint and exit)."""
        f = launch.spec.stop_file(launch.gen)
        f.parent.mkdir(parents=True, exist_ok=True)
        f.touch()

    def poll(self, launch: Launch) -> int | None:
        """The agent's exit status, or None while it runs (also records worker PIDs)."""
        self._collect_pids(launch)
        return launch.proc.poll()

    def _collect_pids(self, launch: Launch) -> None:
        pid_dir = launch.spec.job_dir / "pids"
        for f in pid_dir.glob(f"g{launch.gen}-r*.pid"):
            try:
                launch.known_pids.add(int(f.read_text().strip()))
            except (OSError, ValueError):
                continue
        if launch.proc.poll() is None:
            launch.known_pids.update(descendants(launch.proc.pid))

    def worker_pids(self, launch: Launch) -> list[int]:
        """Live PIDs of the generation's workers (and the agent's other children)."""
        self._collect_pids(launch)
        return sorted(p for p in launch.known_pids if p != launch.pid and self._ours(launch, p))

    def alive_pids(self, launch: Launch) -> list[int]:
        """Every live process of the generation, the agent included."""
        self._collect_pids(launch)
        out = [p for p in launch.known_pids if p != launch.pid and self._ours(launch, p)]
        if launch.proc.poll() is None:
            out.append(launch.pid)
        return sorted(out)

    def _ours(self, launch: Launch, pid: int) -> bool:
        if not pid_alive(pid):
            return False
        cmd = _cmdline(pid)
        # workers name the job folder; torchrun's helper children name torch
        return str(launch.spec.job_dir) in cmd or "torch" in cmd or "multiprocessing" in cmd

    def wait(self, launch: Launch, timeout: float) -> int | None:
        """Wait up to ``timeout`` s for the agent to exit; its status or None."""
        end = time.time() + max(timeout, 0.0)
        while True:
            rc = self.poll(launch)
            if rc is not None or time.time() >= end:
                return rc
            time.sleep(0.05)

    def kill(self, launch: Launch, *, term_grace_s: float = 2.0) -> str:
        """SIGTERM the agent (it forwards to workers), then SIGKILL whatever is left.

        Returns the strongest signal sent ("SIGTERM" or "SIGKILL").
        """
        self._collect_pids(launch)
        sent = "SIGTERM"
        if launch.proc.poll() is None:
            _signal(launch.pid, signal.SIGTERM)
            end = time.time() + term_grace_s
            while time.time() < end and self.alive_pids(launch):
                time.sleep(0.05)
        left = self.alive_pids(launch)
        if left:
            sent = "SIGKILL"
            for pid in left:
                _signal(pid, signal.SIGKILL)
            try:
                os.killpg(launch.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            launch.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:  # pragma: no cover
            _signal(launch.pid, signal.SIGKILL)
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

        Every process of the generation is gone when this returns (``leftover_pids`` lists
        any that survived SIGKILL, which should never happen).
        """
        t_req = time.time() if already_requested is None else already_requested
        if launch.proc.poll() is None:
            self.request_stop(launch)
        remaining = graceful_s - (time.time() - t_req)
        rc = self.wait(launch, remaining)
        signalled = ""
        if rc is None:
            signalled = self.kill(launch, term_grace_s=term_grace_s)
            rc = launch.proc.poll()
        else:
            # the agent exited; make sure no worker outlived it
            end = time.time() + term_grace_s
            while time.time() < end and self.worker_pids(launch):
                time.sleep(0.02)
            left = self.worker_pids(launch)
            if left:
                signalled = "SIGKILL"
                for pid in left:
                    _signal(pid, signal.SIGKILL)
        end = time.time() + 2.0
        while time.time() < end and self.alive_pids(launch):
            time.sleep(0.02)
        left = tuple(self.alive_pids(launch))
        return StopResult(
            t_request=t_req,
            t_exit=time.time(),
            rc=rc,
            graceful=signalled == "" and rc == 0,
            signalled=signalled,
            leftover_pids=left,
        )


# ---------------------------------------------------------------------------------------
# Slurm
# ---------------------------------------------------------------------------------------
@dataclass
class SlurmLauncher:
    """The same generations on a real cluster: ``srun`` one torchrun agent per node.

    Inside an allocation (``salloc``/``sbatch`` holding the scavenged nodes), each
    generation is one job step on the generation's nodes: ``srun --nodes=N --ntasks=N
    --ntasks-per-node=1 --nodelist=<nodes>`` running ``torchrun --nnodes=N
    --nproc-per-node=K --rdzv-backend=c10d --rdzv-endpoint=<first node>:29400``. Every agent
    meets at the c10d store hosted by the agent on the first node. The job folder (reports,
    checkpoints, stop files) must be on a shared file system; the stop file is the same
    protocol as locally. A forced stop signals the step with ``scancel --signal=TERM``, then
    ``scancel --signal=KILL`` (Slurm's step cleanup reaches every task on every node).

    ``dry_run`` returns the commands without running anything (tested); ``start`` runs them.
    """

    workers_per_node: int = 1
    python: str = "python3"
    rdzv_port: int = 29400
    worker_script: str = str(WORKER_SCRIPT)
    job_id_env: str = "SLURM_JOB_ID"
    srun_extra: tuple[str, ...] = ()
    node_names: Sequence[str] | None = None  # simulator node index -> host name

    def hosts(self, nodes: Sequence[int | str]) -> list[str]:
        """Host names of simulator nodes (names pass through)."""
        out = []
        for n in nodes:
            if isinstance(n, str):
                out.append(n)
            elif self.node_names is not None:
                out.append(self.node_names[n])
            else:
                out.append(f"node{n:04d}")
        return out

    def step_name(self, spec: JobSpec, gen: int) -> str:
        """The Slurm job-step name of a generation."""
        return f"mtgym-{spec.job_id}-g{gen}"

    def launch_command(
        self, spec: JobSpec, nodes: Sequence[int | str], gen: int, *, job_dir: str | None = None
    ) -> list[str]:
        """``srun ... torchrun ...`` for one generation."""
        hosts = self.hosts(nodes)
        n = len(hosts)
        if n == 0:
            raise ValueError("a generation needs at least one node")
        return [
            "srun",
            f"--job-name={self.step_name(spec, gen)}",
            f"--nodes={n}",
            f"--ntasks={n}",
            "--ntasks-per-node=1",
            f"--nodelist={','.join(hosts)}",
            "--kill-on-bad-exit=1",
            "--export=ALL,GLOO_SOCKET_IFNAME=,OMP_NUM_THREADS=" + str(spec.threads),
            *self.srun_extra,
            self.python,
            "-m",
            "torch.distributed.run",
            f"--nnodes={n}",
            f"--nproc-per-node={self.workers_per_node}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={hosts[0]}:{self.rdzv_port}",
            f"--rdzv-id={spec.job_id}-g{gen}",
            f"--rdzv-conf={RDZV_CONF}",
            "--max-restarts=0",
            "--monitor-interval=0.5",
            self.worker_script,
            *spec.worker_args(gen, job_dir=job_dir),
        ]

    def dry_run(
        self,
        spec: JobSpec,
        nodes: Sequence[int | str],
        gen: int = 0,
        *,
        job_dir: str | None = None,
    ) -> dict[str, list[list[str]]]:
        """The commands a generation's life cycle issues: launch, graceful stop, forced stop."""
        jd = Path(job_dir) if job_dir is not None else spec.job_dir
        step = self.step_name(spec, gen)
        job = f"${{{self.job_id_env}}}"
        stop_file = str(jd / "control" / f"stop-g{gen}")
        return {
            "launch": [
                ["mkdir", "-p", *(str(jd / s) for s in ("ckpt", "logs", "control", "pids"))],
                self.launch_command(spec, nodes, gen, job_dir=str(jd)),
            ],
            "stop": [["touch", stop_file]],
            "kill": [
                ["scancel", "--signal=TERM", f"--name={step}", job],
                ["scancel", "--signal=KILL", f"--name={step}", job],
            ],
        }

    def dry_run_script(
        self, spec: JobSpec, nodes: Sequence[int | str], gen: int = 0, **kw: str
    ) -> str:
        """``dry_run`` as shell lines (for ``mtgym bridge slurm-commands``)."""
        cmds = self.dry_run(spec, nodes, gen, **kw)
        lines = []
        for phase, group in cmds.items():
            lines.append(f"# {phase}")
            lines += [" ".join(_quote(a) for a in c) for c in group]
        return "\n".join(lines) + "\n"

    def start(self, spec: JobSpec, nodes: Sequence[int | str], gen: int) -> subprocess.Popen:
        """Run a generation's ``srun`` in the background (needs a Slurm allocation)."""
        for c in self.dry_run(spec, nodes, gen)["launch"][:-1]:
            subprocess.run(c, check=True)
        log = open(spec.job_dir / "logs" / f"g{gen}.log", "ab")  # noqa: SIM115
        return subprocess.Popen(
            self.launch_command(spec, nodes, gen),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _quote(arg: str) -> str:
    # keep ${SLURM_JOB_ID} expandable, quote everything else that needs it
    if arg.startswith("${") and arg.endswith("}"):
        return arg
    return shlex.quote(arg)
