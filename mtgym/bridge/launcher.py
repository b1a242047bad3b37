"""Start, stop and rescale real torch training jobs: locally (``LocalLauncher``,
``mtgym.bridge.local``) or under Slurm (``SlurmLauncher``, ``mtgym.bridge.slurm``); the job
spec and what a launch returns are ``mtgym.bridge.spec``, the ``/proc`` helpers
``mtgym.bridge.procs``. This module re-exports them (the launchers' one import).

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

from mtgym.bridge.local import LocalLauncher
from mtgym.bridge.procs import descendants, pid_alive
from mtgym.bridge.slurm import SlurmLauncher
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

__all__ = [
    "AGENT_SCRIPT",
    "LAUNCH_MODES",
    "RDZV_CONF",
    "START_METHODS",
    "TORCHRUN_SCRIPT",
    "WORKER_SCRIPT",
    "JobSpec",
    "Launch",
    "LocalLauncher",
    "SlurmLauncher",
    "StopResult",
    "descendants",
    "free_port",
    "pid_alive",
]
