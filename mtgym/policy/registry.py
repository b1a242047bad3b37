"""Find policies by name without importing ``baselines`` or ``agents``.

Policies are declared as entry points in the ``mtgym.policies`` group (see
``pyproject.toml``); a third-party package adds its own the same way::

    [project.entry-points."mtgym.policies"]
    my-policy = "my_pkg.policy:MyPolicy"

``make_policy("name", **kwargs)`` loads the entry point and calls it with ``kwargs``.
Without registering anything, ``make_policy("my_pkg.policy:make")`` (``--policy
my_pkg.policy:make`` on the command line) imports ``my_pkg.policy`` and calls its ``make``;
registered names win over module paths (``agent:PATH`` is the ``agent`` entry point). A
module that is not on ``sys.path`` is looked for in the current folder too, as ``python -m``
would (the ``mtgym`` script's own path does not hold it), so ``mypolicy.py`` beside the
shell runs as ``--policy mypolicy:make`` (``docs/policies.md``).
"""

from __future__ import annotations

import os
import sys
from importlib import import_module, invalidate_caches
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

from mtgym.policy.base import Policy

GROUP = "mtgym.policies"


def available_policies() -> dict[str, str]:
    """Name -> ``module:attr`` of every registered policy, sorted by name."""
    return {ep.name: ep.value for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name)}


def default_policies(*, learned: bool = True) -> list[str]:
    """The registered policies a sweep runs when none is named, sorted.

    All but the node-level MILP variants (``*-milp``: minutes per episode; the count-level
    solver they equal is in the set), those that cannot be built without an argument
    (a class with ``requires_argument = True``, e.g. ``rllib-agent:PATH``: no default model)
    and the reference points that are not online policies (a class with
    ``in_sweeps = False``: ``clairvoyant``, which plans every episode whole at its start).

    Args:
        learned: include the shipped learned agent (``agent``).
    """
    eps = sorted(entry_points(group=GROUP), key=lambda e: e.name)
    return [
        ep.name
        for ep in eps
        if not ep.name.endswith("-milp")
        and (learned or ep.name != "agent")
        and not getattr(ep.load(), "requires_argument", False)
        and getattr(ep.load(), "in_sweeps", True)
    ]


def make_policy(name: str, **kwargs: Any) -> Policy:
    """Instantiate the policy registered as ``name``.

    ``name:ARG`` passes ARG as the factory's first argument (e.g. ``agent:runs/a/model.zip``).
    A ``module:attr`` that is not a registered name is imported and called (module
    docstring).

    Args:
        name: A registered name, ``name:ARG``, or ``module:factory``.
        **kwargs: Keyword arguments of the factory (a policy's constructor).

    Raises:
        KeyError: an unknown name, or a ``module:factory`` that does not import (the
            message lists the registered names).
        TypeError: the factory (of a registered name, ``name:ARG`` or ``module:factory``)
            built something that is not a ``Policy``.
    """
    eps = {ep.name: ep for ep in entry_points(group=GROUP)}
    if ":" in name and name.split(":", 1)[0] in eps:
        name, arg = name.split(":", 1)
        factory = eps[name].load()
        return _checked(factory(arg, **kwargs), f"{name!r} ({eps[name].value}) with {arg!r}")
    if ":" in name and name not in eps:
        module, attr = name.split(":", 1)
        try:
            factory = getattr(_import(module), attr)
        except (ImportError, AttributeError) as e:
            known = ", ".join(sorted(eps))
            raise KeyError(
                f"policy {name!r} is neither registered ({known}) nor an importable "
                f"module:factory ({e})"
            ) from None
        return _checked(factory(**kwargs), name)
    if name not in eps:
        known = ", ".join(sorted(eps)) or "none (is mtgym installed with `pip install -e .`?)"
        raise KeyError(f"unknown policy {name!r}; registered policies: {known}")
    factory = eps[name].load()
    return _checked(factory(**kwargs), f"{name!r} ({eps[name].value})")


def _import(module: str) -> ModuleType:
    """``import_module(module)``, else from the current folder (module docstring).

    When the module, or a package above it, is not found and the current folder is not on
    ``sys.path``, the folder is appended to it (last: it never shadows an installed
    package; kept, so that the module's own imports of its neighbours work) and the import
    is tried again.

    Raises:
        ImportError: not found there either, or the module itself fails to import.
    """
    try:
        return import_module(module)
    except ModuleNotFoundError as exc:
        cwd = os.getcwd()
        parent = exc.name is not None and f"{module}.".startswith(f"{exc.name}.")
        if not parent or "" in sys.path or cwd in sys.path:
            raise
        sys.path.append(cwd)
        invalidate_caches()
        return import_module(module)


def _checked(policy: Any, what: str) -> Policy:
    """``policy`` if it has a ``Policy``'s members, else ``TypeError`` naming ``what``."""
    if not isinstance(policy, Policy):
        raise TypeError(f"policy {what} did not build a Policy (name, info_mode, reset, decide)")
    return policy
