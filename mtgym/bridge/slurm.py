"""The launcher's Slurm form (``SlurmLauncher``): the same generations as ``LocalLauncher``,
one ``srun`` per generation on the scavenged nodes.
"""

from __future__ import annotations

import getpass
import secrets
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mtgym.bridge import gpu, procs
from mtgym.bridge.spec import (
    RDZV_CONF,
    WORKER_SCRIPT,
    JobSpec,
)


@dataclass
class SlurmLauncher:
    """The same generations on a real cluster: one ``srun`` per generation, one torchrun
    agent per node, c10d rendezvous hosted by the agent on the first node. On GPUs each
    node's local rank ``k`` takes ``cuda:k`` (one GPU per local rank; ``MTGYM_RANK_DEVICES``
    is exported empty so nothing narrows it).

    A generation is one Slurm job on exactly the scavenged nodes of the trace
    (``srun --nodes=N --ntasks=N --ntasks-per-node=1 --nodelist=<hosts>``), named
    ``mtgym-<token>-<job>-g<gen>``. Each task runs ``torchrun --nnodes=N --nproc-per-node=K
    --rdzv-backend=c10d --rdzv-endpoint=<first host>:29400``; all agents meet at the store of
    the first host's agent. The job folder (reports, checkpoints, stop files) must be on a
    shared file system. Graceful stop: the same stop file as locally. Forced stop (a node
    reclaimed past the deadline): ``scancel --signal=TERM --user=<user> --name=<step>``
    (torchrun forwards it to the workers), then ``scancel --user=<user> --name=<step>``
    (Slurm kills every task on every node after ``KillWait``). ``--user`` keeps the names
    from matching another user's steps.

    ``dry_run`` returns the commands without running anything (tested); ``start`` runs the
    launch commands. Step names carry the run's ``token`` (``mtgym-<token>-<job>-g<gen>``,
    random by default) and the tasks get ``MTGYM_RUN_TOKEN``, so ``scancel --name`` never
    reaches another run of the same user. The c10d store on the first host listens on
    every interface (the other hosts must reach it): Slurm keeps it inside the
    allocation's nodes; use a trusted network.

    Attributes:
        workers_per_node: torchrun's ``--nproc-per-node``: workers (and GPUs) per host.
        python: the interpreter on the compute nodes.
        rdzv_port: the rendezvous port on the first host.
        worker_script: ``worker.py``'s path on the compute nodes.
        partition: ``srun --partition`` (None: Slurm's default).
        account: ``srun --account``.
        time_limit: ``srun --time`` in Slurm's syntax (``"1:00:00"``).
        env: variables exported to the tasks (``{"NCCL_SOCKET_IFNAME": "ib0"}``).
        srun_extra: more ``srun`` options, placed before the program.
        node_names: simulator node index -> host name (None: ``node0000``...).
        user: the user whose steps ``scancel`` may reach (default: this user).
        token: in every step name (6 random hex digits by default).
    """

    workers_per_node: int = 1
    python: str = "python3"
    rdzv_port: int = 29400
    worker_script: str = str(WORKER_SCRIPT)
    partition: str | None = None
    account: str | None = None
    time_limit: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)  # e.g. {"NCCL_SOCKET_IFNAME": "ib0"}
    srun_extra: tuple[str, ...] = ()
    node_names: Sequence[str] | None = None  # simulator node index -> host name
    user: str = field(default_factory=getpass.getuser)  # scancel only this user's steps
    token: str = field(default_factory=lambda: secrets.token_hex(3))  # in every step name

    def hosts(self, nodes: Sequence[int | str]) -> list[str]:
        """Host names of simulator nodes (names pass through).

        Args:
            nodes: simulator node indices (looked up in ``node_names``, else
                ``node<4 digits>``) or host names (kept as they are).
        """
        out = []
        for n in nodes:
            if isinstance(n, str):
                out.append(n)
            elif self.node_names is not None:
                out.append(self.node_names[n])
            else:
                out.append(f"node{n:04d}")
        return out

    @property
    def own_prefix(self) -> str:
        """The name prefix of every Slurm job of this run: ``mtgym-<token>-``."""
        return f"mtgym-{self.token}-"

    def step_name(self, spec: JobSpec, gen: int) -> str:
        """The Slurm job name of a generation: ``mtgym-<token>-<job>-g<gen>``.

        Args:
            spec: the job.
            gen: the generation number.
        """
        return f"{self.own_prefix}{spec.job_id}-g{gen}"

    def launch_command(
        self, spec: JobSpec, nodes: Sequence[int | str], gen: int, *, job_dir: str | None = None
    ) -> list[str]:
        """``srun ... python -m torch.distributed.run ...`` for one generation.

        Args:
            spec: the job; its fields give the worker's arguments.
            nodes: simulator node indices or host names; the first hosts the rendezvous.
            gen: the generation number.
            job_dir: the job folder on the shared file system (None: ``spec.job_dir``).

        Raises:
            ValueError: ``nodes`` is empty.
        """
        hosts = self.hosts(nodes)
        n = len(hosts)
        if n == 0:
            raise ValueError("a generation needs at least one node")
        export = ",".join(
            [
                "ALL",
                f"OMP_NUM_THREADS={spec.threads}",
                f"{procs.TOKEN_ENV}={self.token}",
                f"{gpu.RANK_DEVICES_ENV}=",  # one torchrun per node: local rank k -> cuda:k
                *(f"{k}={v}" for k, v in self.env.items()),
            ]
        )
        opt = [
            *([f"--partition={self.partition}"] if self.partition else []),
            *([f"--account={self.account}"] if self.account else []),
            *([f"--time={self.time_limit}"] if self.time_limit else []),
        ]
        return [
            "srun",
            f"--job-name={self.step_name(spec, gen)}",
            *opt,
            f"--nodes={n}",
            f"--ntasks={n}",
            "--ntasks-per-node=1",
            f"--nodelist={','.join(hosts)}",
            "--kill-on-bad-exit=1",
            f"--export={export}",
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
        """The commands of a generation's life cycle: ``launch``, ``stop`` (graceful) and
        ``kill`` (forced, in order).

        Args:
            spec: the job.
            nodes: simulator node indices or host names.
            gen: the generation number.
            job_dir: the job folder on the shared file system (None: ``spec.job_dir``).

        Returns:
            Phase -> argument lists: ``launch`` is ``mkdir -p`` of the job's sub-folders
            then ``srun``; ``stop`` touches the stop file; ``kill`` is ``scancel
            --signal=TERM`` then ``scancel``.
        """
        jd = Path(job_dir) if job_dir is not None else spec.job_dir
        name = self.step_name(spec, gen)
        return {
            "launch": [
                ["mkdir", "-p", *(str(jd / s) for s in ("ckpt", "logs", "control", "pids"))],
                self.launch_command(spec, nodes, gen, job_dir=str(jd)),
            ],
            "stop": [["touch", str(jd / "control" / f"stop-g{gen}")]],
            "kill": [
                ["scancel", "--signal=TERM", f"--user={self.user}", f"--name={name}"],
                ["scancel", f"--user={self.user}", f"--name={name}"],
            ],
        }

    def dry_run_script(self, spec: JobSpec, nodes: Sequence[int | str], gen: int = 0) -> str:
        """``dry_run`` as shell lines (``mtgym bridge slurm-commands``).

        Args:
            spec: the job.
            nodes: simulator node indices or host names.
            gen: the generation number.

        Returns:
            A ``# <phase>`` line before each phase's commands, quoted with ``shlex.join``.
        """
        lines = []
        for phase, group in self.dry_run(spec, nodes, gen).items():
            lines.append(f"# {phase}")
            lines += [shlex.join(c) for c in group]
        return "\n".join(lines) + "\n"

    def start(self, spec: JobSpec, nodes: Sequence[int | str], gen: int) -> subprocess.Popen:
        """Run a generation's ``srun`` in the background (needs Slurm on this host).

        Creates the job's folders first (``dry_run``'s ``mkdir``), then starts ``srun`` in
        its own session with output to ``logs/g<gen>.log``; ``srun`` gets SIGTERM if the
        calling thread dies, and cancels its step.

        Args:
            spec: the job (``spec.job_dir`` must be on the shared file system).
            nodes: simulator node indices or host names.
            gen: the generation number.

        Returns:
            The ``srun`` process.

        Raises:
            subprocess.CalledProcessError: the ``mkdir`` failed.
        """
        cmds = self.dry_run(spec, nodes, gen)["launch"]
        subprocess.run(cmds[0], check=True)
        with open(spec.job_dir / "logs" / f"g{gen}.log", "ab") as log:
            return subprocess.Popen(
                cmds[1],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=procs.pdeathsig_preexec(signal.SIGTERM),  # srun cancels its step
            )
