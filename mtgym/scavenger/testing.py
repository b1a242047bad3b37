"""A throw-away Slurm cluster on this machine, for tests and benchmarks.

``LocalSlurm`` writes a scratch ``slurm.conf`` (``AuthType=auth/none``, root, 127.0.0.1 only,
free ports picked at start so it never meets a real Slurm or a parallel test worker), starts
``slurmctld`` and one ``slurmd -N nX`` per fake node in the foreground with known PIDs, waits
until ``sinfo`` shows the nodes idle, and on ``stop`` cancels every job and stops every
daemon it started, by PID. The measured set-up is in ``../shared/design/ecosystem.md`` s. 5.

Two partitions cover all nodes: ``scav`` (low priority tier; its jobs are *cancelled* when a
higher tier needs the node: the usual scavenger queue) and ``main`` (the host's jobs, the
default). ``SlurmdTimeout`` is short so a killed ``slurmd`` is noticed in seconds.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mtgym.bridge.launcher import free_port, pid_alive

DAEMONS = ("slurmctld", "slurmd", "sinfo", "scontrol", "squeue", "sbatch", "scancel", "srun")


def slurm_missing() -> str | None:
    """Why a local Slurm cannot run here (None when it can).

    Every program of ``DAEMONS`` (daemons and client commands) must be on ``PATH``, and
    this process must be root (``SlurmUser=root``). Tests skip with this text.
    """
    missing = [d for d in DAEMONS if shutil.which(d) is None]
    if missing:
        return f"Slurm not installed (missing {', '.join(missing)}; run scripts/install_slurm.sh)"
    if os.geteuid() != 0:
        return "a local Slurm with SlurmUser=root needs root"
    return None


@dataclass
class LocalSlurm:
    """A ``slurmctld`` and ``num_nodes`` ``slurmd`` on 127.0.0.1 (see module doc).

    Use it as a context manager (``with LocalSlurm(4) as s:``), or call ``start`` and
    ``stop``.

    Attributes:
        num_nodes: fake nodes ``n1`` .. ``nN``.
        root: the scratch folder (None: a new temporary folder, removed by ``stop``).
        slurmd_timeout_s: ``SlurmdTimeout``: seconds before a silent node is marked down.
        cpus_per_node: CPUs each fake node declares.
        gres: each node's generic resources (``"gpu:a100:4"``; declared only, no devices).
        ctl_port: ``slurmctld``'s port (picked by ``start``).
        node_ports: each ``slurmd``'s port (picked by ``start``).
        ctl_proc: the running ``slurmctld``, or None.
        slurmd_procs: node name -> its running ``slurmd``.
    """

    num_nodes: int = 4
    root: Path | None = None
    slurmd_timeout_s: int = 10
    cpus_per_node: int = 1
    gres: str | None = None  # e.g. "gpu:a100:4" (declared only; no devices needed)
    ctl_port: int = 0
    node_ports: list[int] = field(default_factory=list)
    ctl_proc: subprocess.Popen | None = None
    slurmd_procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    _own_root: bool = False

    @property
    def node_names(self) -> list[str]:
        """``n1 .. nN``."""
        return [f"n{i}" for i in range(1, self.num_nodes + 1)]

    @property
    def conf(self) -> Path:
        """The slurm.conf path (``SLURM_CONF``)."""
        assert self.root is not None
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """This process's environment with ``SLURM_CONF`` pointing here."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def _ports(self) -> None:
        """Pick ``num_nodes + 1`` distinct free ports: the lowest for ``slurmctld``."""
        taken: set[int] = set()
        while len(taken) < self.num_nodes + 1:
            taken.add(free_port())
        ports = sorted(taken)
        self.ctl_port, self.node_ports = ports[0], ports[1:]

    def config_text(self) -> str:
        """The slurm.conf (one ``NodeName`` line per node: each has its own port).

        Backfill every 2 s, partition-priority pre-emption with ``CANCEL``, nodes back in
        service on their own (``ReturnToService=2``), no accounting. Needs ``root`` and
        the ports set (``start`` does both).
        """
        r = self.root
        gres = f" Gres={self.gres}" if self.gres else ""
        lines = [
            f"ClusterName=mtgym{self.ctl_port}",
            "SlurmctldHost=localhost(127.0.0.1)",
            "AuthType=auth/none",
            "CredType=cred/none",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"SlurmctldPort={self.ctl_port}",
            f"StateSaveLocation={r}/state",
            f"SlurmdSpoolDir={r}/spool/%n",
            f"SlurmctldPidFile={r}/slurmctld.pid",
            f"SlurmdPidFile={r}/slurmd-%n.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log",
            f"SlurmdLogFile={r}/log/slurmd-%n.log",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=sched_interval=2,bf_interval=2",
            "PreemptType=preempt/partition_prio",
            "PreemptMode=CANCEL",
            "ReturnToService=2",
            "MpiDefault=none",
            # fake nodes: trust the configured CPUs, not what the host reports
            "SlurmdParameters=config_overrides",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            f"SlurmdTimeout={self.slurmd_timeout_s}",
            "InactiveLimit=0",
            "KillWait=2",
            "MinJobAge=30",
        ]
        if self.gres:
            lines.append(f"GresTypes={self.gres.split(':')[0]}")
        for name, port in zip(self.node_names, self.node_ports, strict=True):
            lines.append(
                f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} "
                f"CPUs={self.cpus_per_node} RealMemory=1000{gres} State=UNKNOWN"
            )
        nodes = ",".join(self.node_names)
        lines += [
            f"PartitionName=main Nodes={nodes} Default=YES MaxTime=INFINITE State=UP "
            "PriorityTier=10 PreemptMode=OFF",
            f"PartitionName=scav Nodes={nodes} MaxTime=INFINITE State=UP "
            "PriorityTier=1 PreemptMode=CANCEL",
        ]
        return "\n".join(lines) + "\n"

    # -- life cycle --------------------------------------------------------------------
    def start(self, timeout_s: float = 30.0) -> LocalSlurm:
        """Write the config, start the daemons, wait until every node is idle.

        With ``gres``, a ``gres.conf`` maps the declared GPUs to ``/dev/tty*`` files (never
        opened). On any failure everything started is stopped first.

        Args:
            timeout_s: seconds to wait for every node to be idle.

        Returns:
            ``self``.

        Raises:
            RuntimeError: Slurm is missing or this process is not root (``slurm_missing``).
            TimeoutError: the nodes were not idle in time.
        """
        why = slurm_missing()
        if why:
            raise RuntimeError(why)
        if self.root is None:
            self.root = Path(tempfile.mkdtemp(prefix="mtgym-slurm-"))
            self._own_root = True
        for sub in ("state", "spool", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self._ports()
        self.conf.write_text(self.config_text())
        if self.gres:
            # declared GPUs without devices: tty files stand in (task/none never opens them)
            name, *rest = self.gres.split(":")
            typ = f" Type={rest[0]}" if len(rest) > 1 else ""
            count = int(rest[-1]) if rest else 1
            (self.root / "gres.conf").write_text(
                f"AutoDetect=off\nName={name}{typ} File=/dev/tty[0-{count - 1}]\n"
            )
        try:
            self.ctl_proc = self._spawn(["slurmctld", "-D", "-c", "-f", str(self.conf)], "ctl")
            for name in self.node_names:
                self.start_slurmd(name)
            self.wait_states({n: "idle" for n in self.node_names}, timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, cmd: list[str], tag: str) -> subprocess.Popen:
        """Start a daemon in its own session, output appended to ``log/<tag>.out``."""
        assert self.root is not None
        log = open(self.root / "log" / f"{tag}.out", "ab")  # noqa: SIM115 (kept by the child)
        try:
            return subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
            )
        finally:
            log.close()

    def start_slurmd(self, name: str) -> None:
        """(Re)start the ``slurmd`` of one node (a no-op while it runs).

        Args:
            name: the node (``n1`` ..).
        """
        old = self.slurmd_procs.get(name)
        if old is not None and old.poll() is None:
            return
        self.slurmd_procs[name] = self._spawn(
            ["slurmd", "-D", "-N", name, "-f", str(self.conf)], f"slurmd-{name}"
        )

    def kill_slurmd(self, name: str) -> None:
        """SIGKILL one node's ``slurmd`` (a node that stops answering).

        Slurm marks the node ``idle*`` and then ``down*`` after ``SlurmdTimeout``;
        ``start_slurmd`` brings it back.

        Args:
            name: the node.

        Raises:
            KeyError: its ``slurmd`` is not running under this object.
        """
        proc = self.slurmd_procs.pop(name)
        _kill(proc, signal.SIGKILL)

    def stop_ctl(self) -> None:
        """Stop ``slurmctld`` only (Slurm unreachable): SIGTERM, SIGKILL after 10 s."""
        if self.ctl_proc is not None:
            _kill(self.ctl_proc, signal.SIGTERM)
            self.ctl_proc = None

    def pids(self) -> list[int]:
        """PIDs of the daemons still running."""
        procs = [self.ctl_proc, *self.slurmd_procs.values()]
        return [p.pid for p in procs if p is not None and pid_alive(p.pid)]

    def stop(self) -> None:
        """Cancel every job, stop every daemon this object started (by PID), remove files.

        Daemons get SIGTERM, then SIGKILL after 10 s. Only a temporary root created by
        ``start`` is removed. Safe to call twice.
        """
        if self.ctl_proc is not None and self.ctl_proc.poll() is None:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                self.run(["scancel", "--full", f"--user={os.getuid()}"], timeout=5, check=False)
        for proc in self.slurmd_procs.values():
            _kill(proc, signal.SIGTERM)
        self.slurmd_procs.clear()
        self.stop_ctl()
        if self._own_root and self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalSlurm:
        return self.start() if self.ctl_proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- helpers for tests -------------------------------------------------------------
    def run(
        self, argv: Sequence[str], *, timeout: float = 10.0, check: bool = True
    ) -> subprocess.CompletedProcess:
        """Run a Slurm command against this cluster.

        Args:
            argv: the command.
            timeout: seconds before ``subprocess.TimeoutExpired``.
            check: raise ``subprocess.CalledProcessError`` on a non-zero exit.

        Returns:
            The finished process, output as text.
        """
        return subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, timeout=timeout, check=check
        )

    def states(self) -> dict[str, str]:
        """Node name -> ``%t`` state (e.g. ``idle``, ``alloc``, ``drain``, ``idle*``).

        Read from partition ``main`` (every node); ``{}`` when ``sinfo`` fails.
        """
        out = self.run(["sinfo", "-h", "-N", "-p", "main", "-o", "%N %t"], check=False).stdout
        return dict(line.split()[:2] for line in out.splitlines() if len(line.split()) >= 2)

    def wait_states(self, want: dict[str, str], timeout_s: float = 30.0) -> dict[str, str]:
        """Wait until each named node shows the wanted state; returns the last states.

        Polls ``sinfo`` every 0.2 s.

        Args:
            want: node name -> ``%t`` state, compared exactly (``idle*`` is not ``idle``).
            timeout_s: seconds to wait.

        Raises:
            TimeoutError: not reached in time; the message has the last states.
        """
        end = time.monotonic() + timeout_s
        last: dict[str, str] = {}
        while time.monotonic() < end:
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                last = self.states()
                if all(last.get(n) == s for n, s in want.items()):
                    return last
            time.sleep(0.2)
        raise TimeoutError(f"nodes did not reach {want} in {timeout_s} s; last: {last}")

    def scontrol(self, *args: str) -> None:
        """``scontrol ARGS`` (raises on failure).

        Args:
            *args: ``scontrol``'s arguments.

        Raises:
            subprocess.CalledProcessError: ``scontrol`` exited non-zero.
        """
        self.run(["scontrol", *args])

    def drain(self, name: str, reason: str = "test") -> None:
        """Drain a node (the host takes it back).

        Args:
            name: the node.
            reason: Slurm's drain reason (required by Slurm).
        """
        self.scontrol("update", f"nodename={name}", "state=drain", f"reason={reason}")

    def resume(self, name: str) -> None:
        """Undo a drain.

        Args:
            name: the node.
        """
        self.scontrol("update", f"nodename={name}", "state=resume")

    def sbatch(self, *args: str) -> str:
        """Submit a batch job; returns its id.

        Args:
            *args: ``sbatch`` options and script (``--wrap``, ``-p``, ``-w``); output goes to
                ``/dev/null``.

        Raises:
            subprocess.CalledProcessError: ``sbatch`` refused it.
        """
        out = self.run(["sbatch", "--parsable", "-o", "/dev/null", *args]).stdout
        return out.strip().split(";")[0]

    def cancel_all(self) -> None:
        """Cancel every job of this user."""
        self.run(["scancel", "--full", f"--user={os.getuid()}"], check=False)


def _kill(proc: subprocess.Popen, sig: int, timeout_s: float = 10.0) -> None:
    """Send ``sig`` to a running process and reap it; SIGKILL after ``timeout_s`` seconds."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
