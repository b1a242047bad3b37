"""A torch elastic agent for the bridge's workers (``elastic_launch``; fork or spawn).

Run as a script: ``python agent.py --nproc-per-node K --rdzv-endpoint 127.0.0.1:PORT
--rdzv-id ID [--start-method fork|spawn] -- <worker arguments>``. It is torchrun's agent
(c10d rendezvous, worker monitoring, SIGTERM forwarding) driven through the
``torch.distributed.launcher.api`` API. Exit status: 0 when every worker returned, 1 when
one failed.

**Start method.** On CPU (``fork``, the default) the agent imports torch, DDP and the
optimiser once and *forks* its workers, so a restart pays ``import torch`` once instead of
once per worker (and DDP's lazy ``torch._dynamo`` import once, before the fork). On CUDA
the launcher passes ``--start-method spawn``: each worker is a fresh interpreter. Forking
is unsafe there because the agent cannot keep CUDA out of itself: torch's own
``LaunchConfig.__post_init__`` calls ``torch.cuda.is_available()`` (``cudaGetDeviceCount``,
which initialises the driver and marks the process "bad fork"), so every forked worker died
at ``torch.cuda.set_device`` ("Cannot re-initialize CUDA in forked subprocess"). Spawn
does not depend on what torch does in the parent; it costs one ``import torch`` per
worker, as torchrun does. As a second guard the agent sets
``PYTORCH_NVML_BASED_CUDA_CHECK=1`` (availability checks through NVML do not initialise
CUDA) and refuses to fork once CUDA is initialised in it.

The rendezvous store listens on ``$MTGYM_STORE_BIND`` (127.0.0.1 from ``LocalLauncher``)
only, and the workers get ``PR_SET_PDEATHSIG`` against this agent (``mtgym.bridge.procs``).
``--join-timeout`` (120 s) bounds the rendezvous: an agent whose peers never come gives up.
"""

from __future__ import annotations

import argparse
import atexit
import os
import runpy
import sys
from pathlib import Path


def _sibling(stem: str):
    """The bridge's ``<stem>.py`` loaded by path (once per process), without importing the
    ``mtgym`` package and its heavy dependencies into the workers (``siblings.load``).
    """
    return _load_sibling(stem)


#: ``mtgym.bridge.siblings.load``, reached by path (this file runs as a script).
_load_sibling = runpy.run_path(str(Path(__file__).with_name("siblings.py")))["load"]


def _worker_module():
    """``worker.py`` loaded by path: ``train`` is the workers' body.

    Loading it in the agent before the fork imports torch, the models and the optimiser once,
    so forked workers inherit them.
    """
    return _sibling("worker")


def _procs_module():
    """``procs.py`` loaded by path: store binding and the workers' parent-death signal."""
    return _sibling("procs")


START_METHODS = ("fork", "spawn")


def check_fork_safe(start_method: str) -> None:
    """Refuse to fork workers from a process in which CUDA is initialised.

    ``torch.cuda.is_initialized`` reads a flag; it never initialises CUDA itself. Called just
    before ``elastic_launch``, after torch's own ``LaunchConfig`` construction, which is the
    step that used to initialise CUDA in the agent (see the module docstring).

    Args:
        start_method: ``"fork"`` or ``"spawn"``; only ``"fork"`` is checked.

    Raises:
        RuntimeError: ``start_method`` is ``"fork"`` and CUDA is initialised in this process.
    """
    import torch

    if start_method == "fork" and torch.cuda.is_initialized():
        raise RuntimeError(
            "CUDA is initialised in the agent: forked workers cannot use it; "
            "use --start-method spawn"
        )


def run_worker(argv: list[str]) -> int:
    """The workers' entry point (module level: the elastic API calls it in each child).

    After a clean stop the child leaves without interpreter teardown, as ``worker.main``
    does: a forked child ends with ``os._exit`` anyway; a spawned one would run a full
    teardown (seconds, and gloo's sometimes aborts), so ``os._exit(0)`` is registered to
    run first thing at exit, after the agent has read the return value.

    Args:
        argv: the worker's command line (``worker.py``'s arguments, after the agent's ``--``).

    Returns:
        The global step the worker stopped at (``worker.train``'s return value).
    """
    step = int(_worker_module().train(argv))
    sys.stdout.flush()
    sys.stderr.flush()
    atexit.register(os._exit, 0)
    return step


def main(argv: list[str] | None = None) -> int:
    """Parse, pre-import, launch; returns the exit status.

    The agent's options come before ``--`` and the worker's after it. ``--nnodes`` sets both
    the minimum and the maximum of the rendezvous (a fixed world size per generation);
    ``--last-call-timeout`` and ``--join-timeout`` (seconds) go to the c10d rendezvous;
    ``--max-restarts`` is torch's own restart count (0: the controller restarts instead);
    ``--monitor-interval`` is how often (seconds) the agent polls its workers.

    Args:
        argv: the command line without the program name (None: ``sys.argv[1:]``).

    Returns:
        0 when every worker returned, 1 when the elastic launch raised (a worker failed, the
        rendezvous timed out); the error is printed on stderr.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" in argv:
        i = argv.index("--")
        own, worker_argv = argv[:i], argv[i + 1 :]
    else:
        own, worker_argv = argv, []
    p = argparse.ArgumentParser(prog="mtgym.bridge.agent", description=__doc__.splitlines()[0])
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--nproc-per-node", type=int, required=True)
    p.add_argument("--rdzv-endpoint", required=True)
    p.add_argument("--rdzv-id", required=True)
    p.add_argument("--local-addr", default="127.0.0.1")
    p.add_argument("--max-restarts", type=int, default=0)
    p.add_argument("--monitor-interval", type=float, default=0.1)
    p.add_argument("--last-call-timeout", type=float, default=1.0)
    p.add_argument("--join-timeout", type=float, default=120.0)
    p.add_argument("--prewarm-ddp", action="store_true", help="import DDP's torch._dynamo")
    p.add_argument(
        "--start-method",
        default="fork",
        choices=START_METHODS,
        help="fork (CPU: torch imported once) or spawn (CUDA: a fresh interpreter per worker)",
    )
    args = p.parse_args(own)
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")

    import torch
    import torch.distributed
    import torch.optim
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    if args.prewarm_ddp and args.start_method == "fork":
        import torch._dynamo
        import torch.nn.parallel  # noqa: F401
    _worker_module()
    procs = _procs_module()
    procs.bind_stores_from_env()  # the rendezvous store listens on $MTGYM_STORE_BIND only
    os.environ[procs.PARENT_ENV] = str(os.getpid())  # the workers die with this agent

    cfg = LaunchConfig(
        min_nodes=args.nnodes,
        max_nodes=args.nnodes,
        nproc_per_node=args.nproc_per_node,
        run_id=args.rdzv_id,
        rdzv_backend="c10d",
        rdzv_endpoint=args.rdzv_endpoint,
        rdzv_configs={
            "join_timeout": args.join_timeout,
            "last_call_timeout": args.last_call_timeout,
        },
        max_restarts=args.max_restarts,
        monitor_interval=args.monitor_interval,
        start_method=args.start_method,
        local_addr=args.local_addr,
    )
    check_fork_safe(args.start_method)
    try:
        elastic_launch(cfg, run_worker)(worker_argv)
    except Exception as exc:  # ChildFailedError and friends
        print(f"mtgym.bridge.agent: workers failed: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
