"""Start, stop and rescale real torch training jobs: locally (``LocalLauncher``,
``mtgym.bridge.local``) or under Slurm (``SlurmLauncher``, ``mtgym.bridge.slurm``); the job
spec and what a launch returns are ``mtgym.bridge.spec``, the ``/proc`` helpers
``mtgym.bridge.procs``. This module re-exports them (the launchers' one import).

How a job runs as generations, how a rescale and a stop proceed and why no process is
orphaned: ``mtgym.bridge.local``'s docstring.
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
