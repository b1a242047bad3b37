"""Load another file of ``mtgym/bridge/`` by path, as the bridge's scripts need.

``agent.py`` and ``worker.py`` run as scripts in fresh interpreters; importing the ``mtgym``
package there would pull in gymnasium and the simulator (about 0.35 s per restart). They
reach this file with ``runpy.run_path`` and load their siblings through ``load``: each file
once per process, as ``_mtgym_bridge_<stem>`` in ``sys.modules``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load(stem: str) -> ModuleType:
    """The bridge's ``<stem>.py`` loaded by path (once per process).

    Args:
        stem: the file name without ``.py`` (``"worker"``, ``"procs"``, ``"checkpoint"``).

    Returns:
        The module, registered as ``_mtgym_bridge_<stem>`` before it runs (so files that
        load each other get the same object).
    """
    name = f"_mtgym_bridge_{stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{stem}.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
