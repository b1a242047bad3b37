"""Execution backends for ``mtgym evaluate`` and ``mtgym train``.

``local`` (the default) is :func:`mtgym.evaluate.evaluate` and :func:`agents.train.train`,
in this process. ``ray`` (:mod:`mtgym.backends.ray_backend`, needs ``pip install -e .[ray]``)
spreads the same work over a local or remote Ray cluster: one task per (policy, seed) for
evaluation, one task per seed for training. Nothing here imports Ray until a Ray function is
called.
"""

from __future__ import annotations

#: Backend names accepted by ``--backend``.
BACKENDS = ("local", "ray")
