"""What a reward is: ``Reward``, the step's values its kernel may read, and the registry.

A reward is a subclass of ``Reward`` (one module in this folder, or anywhere with
``register``). It declares:

- ``name``, the ``reward`` keyword's value, and ``doc``, what one unit of it is and what an
  episode's return sums to (the env's docstring and ``docs/envs/scavenge.md`` list it);
- ``inputs``, the names (keys of ``INPUTS``) of the step's values its kernel reads, in the
  kernel's argument order;
- ``kernel(*inputs) -> float``, compiled (``numba.njit``): the step's reward;
- optionally ``weights(instance)`` ((J,) float64, the ``weight`` input: a weight per job,
  ones by default) and ``scale(instance)`` (float, the ``scale`` input: 1.0 by default),
  computed once per episode.

The env's ``mtgym.env.step.step_reward`` (and the batched core's ``reward_batch``) takes
the reward instance as an argument, typed by its class (``mtgym.env.classtype``), and calls
``compute(reward, step, t0, active0)``, which resolves to the reward's kernel with its
inputs when that small function is compiled: one compilation per reward, no branch and no
id at run time, and the step's large kernels stay compiled once per action mode.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numba.extending import overload

from mtgym.core.instance import Instance
from mtgym.env.classtype import class_key, class_of, typed_by_class

#: The step's values a reward kernel may read, by name: the expression that reads each one
#: in the compiled step (``step``: the ``mtgym.env.step.StepKernel``; ``t0`` and
#: ``active0``: the time and the active job-seconds before the step) and what it is.
INPUTS: dict[str, tuple[str, str]] = {
    "progress": ("step.sim.progress", "(J,) float64, each job's samples done, after the step"),
    "progress0": ("step.progress0", "(J,) float64, the same before the step"),
    "n_nodes": ("step.sim.n_nodes", "(J,) each job's node count after the step"),
    "n_nodes0": ("step.n_nodes0", "(J,) the same before the step"),
    "status": ("step.sim.status", "(J,) each job's status after the step (JobStatus)"),
    "active_job_s": (
        "step.sim.scalars[0].active_job_s",
        "float, the integral of submitted, unfinished jobs over time, after the step (s)",
    ),
    "active_job_s0": ("active0", "float, the same before the step"),
    "time": ("step.sim.scalars[0].time", "float, the simulated time after the step (s)"),
    "t0": ("t0", "float, the simulated time before the step (s)"),
    "weight": ("step.reward_weight", "(J,) float64, the reward's ``weights(instance)``"),
    "scale": ("step.reward_scale", "float, the reward's ``scale(instance)``"),
}


class Reward:
    """One reward (module docstring: what a subclass declares).

    Attributes:
        name: the ``reward`` keyword's value.
        doc: what one unit is and what the episode's return sums to.
        inputs: the ``INPUTS`` names the kernel takes, in order.
        kernel: the compiled kernel, ``kernel(*inputs) -> float``.
    """

    name: ClassVar[str] = ""
    doc: ClassVar[str] = ""
    inputs: ClassVar[tuple[str, ...]] = ()
    kernel: ClassVar[Any] = None

    def weights(self, instance: Instance) -> np.ndarray:
        """(J,) float64, the ``weight`` input for this episode (ones unless overridden)."""
        return np.ones(instance.num_jobs)

    def scale(self, instance: Instance) -> float:
        """The ``scale`` input for this episode (1.0 unless overridden)."""
        return 1.0


typed_by_class(Reward)  # a reward in the step's struct types as its class


def compute(reward: Any, step: Any, t0: float, active0: float) -> float:
    """In compiled code: the step's reward, by the kernel of ``reward``'s class.

    Args:
        reward: a ``Reward`` instance (its numba type names its class).
        step: the episode's ``StepKernel`` after the engine ran.
        t0: the time before the step, seconds.
        active0: the active job-seconds before the step.

    Raises:
        NotImplementedError: called from Python.
    """
    raise NotImplementedError("compiled code only")


@overload(compute)
def _compute(reward, step, t0, active0):  # pragma: no cover - compile time
    cls: type[Reward] = class_of(reward)
    args = ", ".join(INPUTS[name][0] for name in cls.inputs)
    namespace: dict[str, Any] = {"kernel": cls.kernel}
    exec(f"def impl(reward, step, t0, active0):\n    return kernel({args})\n", namespace)
    return namespace["impl"]


# ---------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------
#: name -> reward class: every reward the env accepts (``register``)
REWARDS: dict[str, type[Reward]] = {}


def register(cls: type[Reward]) -> type[Reward]:
    """Register a reward under ``cls.name`` (usable as a class decorator).

    Returns:
        ``cls``; registering the same class again changes nothing.

    Raises:
        ValueError: no name, no kernel, an input not in ``INPUTS``, or the name taken by
            another class.
    """
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{cls!r} has no name")
    if getattr(cls, "kernel", None) is None:
        raise ValueError(f"reward {name!r} has no kernel")
    unknown = [i for i in cls.inputs if i not in INPUTS]
    if unknown:
        raise ValueError(f"reward {name!r}: unknown inputs {unknown}; known: {list(INPUTS)}")
    if REWARDS.get(name, cls) is not cls:
        raise ValueError(f"reward {name!r} is registered already ({REWARDS[name]!r})")
    REWARDS[name] = cls
    class_key(cls)  # (known to the compiled step's dispatch)
    return cls


def unregister(name: str) -> None:
    """Remove a reward (tests register toy rewards for a while); an unknown name is ignored."""
    REWARDS.pop(name, None)


def make_reward(name: str) -> Reward:
    """A new instance of the registered reward ``name`` (``ValueError`` naming the
    registered rewards otherwise).
    """
    cls = REWARDS.get(name)
    if cls is None:
        raise ValueError(f"reward {name!r} is not one of {tuple(REWARDS)}")
    return cls()
