"""torchrun (``torch.distributed.run``) for the bridge: the stores bound, the parent watched.

``python torchrun.py <torchrun arguments>`` is ``torchrun <torchrun arguments>`` with two
additions applied first (``mtgym.bridge.procs``): every torch store server this agent
hosts (the c10d rendezvous endpoint) listens on ``$MTGYM_STORE_BIND`` only, and the
workers die with this agent (``MTGYM_PARENT_PID`` names it for their ``PR_SET_PDEATHSIG``
check). The launcher gives the agent itself the parent-death signal.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
from pathlib import Path


def _procs():
    """``procs.py`` loaded by path as ``_mtgym_bridge_procs`` (no ``mtgym`` import).

    Registered in ``sys.modules`` before it runs, as ``siblings.load`` does, so a second
    load in the same process finds it.
    """
    spec = importlib.util.spec_from_file_location(
        "_mtgym_bridge_procs", Path(__file__).with_name("procs.py")
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    """Apply the binding, name this process as the workers' parent, run torchrun.

    ``sys.argv[1:]`` is passed to ``torch.distributed.run`` unchanged; it runs as
    ``__main__`` in this process, so the workers' parent is this PID
    (``MTGYM_PARENT_PID``). Does not return normally when torchrun calls ``sys.exit``.
    """
    procs = _procs()
    procs.bind_stores_from_env()
    os.environ[procs.PARENT_ENV] = str(os.getpid())
    sys.argv = ["torchrun", *sys.argv[1:]]
    runpy.run_module("torch.distributed.run", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
