"""``SimKernel``: the one struct through which the compiled kernels see a simulated episode.

Python keeps the state in ``ClusterState`` (a dataclass of numpy arrays) and the constants in
``Instance``. The kernels (``mtgym.sim.engine``, and the env's step through it) take one
``SimKernel`` (a numba ``StructRef``) whole and read the fields they use into locals. Its
fields are declared once, here and in ``ClusterState``:

- the state's node and job arrays, by their ``ClusterState`` names (the same arrays, not
  copies: the engine's in-place updates are the state's);
- the instance's arrays the kernels read (``INSTANCE_FIELDS``: name -> where ``bind`` takes
  it), the throughput model's constants (``rates``, a ``RateConsts``) and three constants
  (``t_end``, ``bftrainer``, ``preempt_mode``);
- ``scalars``: a one-row record array (dtype ``SCALARS``) holding the state's scalars
  (``ClusterState``'s float and int fields: time, accumulators, cursors) and what one engine
  call did (``RESULTS``: the ``COUNTERS`` a step reports, then pre-emptions, rescales and
  the end flags). Python loads the state's scalars into it before a call (``load``) and
  stores them back after (``store``); the kernels read and write its fields by name.

``advance`` and the env's step both enter the engine (``engine.run``, ``engine.apply`` and
``engine.loop``) through a ``SimKernel`` built by ``bind``.
"""

from __future__ import annotations

import weakref
from collections import namedtuple
from operator import attrgetter, is_
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numba import njit
from numba.experimental import structref

from mtgym.core.instance import Instance, readonly_views
from mtgym.core.types import PreemptionMode, RescaleMode
from mtgym.model.throughput import ThroughputModel
from mtgym.sim.state import FLOAT_SCALARS, INT_SCALARS, JOB_ARRAYS, NODE_ARRAYS, ClusterState
from mtgym.sim.struct import ValueTyped, define

#: The instance's arrays the kernels read: field name -> attribute path in ``Instance``.
INSTANCE_FIELDS = {
    "submit_s": "jobs.submit_s",  # (J,) jobs are sorted by submission
    "min_nodes": "jobs.min_nodes",
    "max_nodes": "jobs.max_nodes",
    "work": "jobs.work",  # samples to completion
    "ckpt_every": "jobs.ckpt_every",  # samples between periodic checkpoints (inf: none)
    "startup_s": "jobs.startup_s",
    "r_up_s": "jobs.r_up_s",
    "r_down_s": "jobs.r_down_s",
    "campaign": "jobs.campaign",  # (J,) campaign index, -1 = none
    "quality": "jobs.quality",
    "rungs": "jobs.rungs",  # (J, R) rung fractions of the work, NaN-padded
    "eta": "campaigns.eta",  # (C,) successive-halving factor
    "start_s": "supply.start_s",  # (W,) idle windows, sorted by start
    "end_s": "supply.end_s",
    "end_sorted_s": "supply.end_sorted_s",  # window ends in increasing order ...
    "end_order": "supply.end_order",  # ... and the windows in that order
    "win_node": "supply.node",  # (W,) each window's node
    "slowdown": "cluster.slowdown",  # (N, classes) true per-device slowdowns
    "gpu_type": "cluster.gpu_type",
    "coords": "cluster.topology.coords",  # (N, levels) group index per level
}
#: The per-step counters, declared here once: what one engine call counts that the env's
#: step reports, in ``info``'s order and under these names (``mtgym.env.step.STEP_COUNTERS``
#: adds ``elapsed_s``; the batched core's columns follow this order). ``event_kinds``: the
#: ``EventKind`` bits of the events processed (a bit set, not a count); then nodes the host
#: reclaimed, nodes it lent (became idle), jobs submitted, jobs completed, campaign trials
#: stopped at a rung, and the useful samples processed (float).
COUNTERS = (
    ("event_kinds", np.int64),
    ("reclaimed_nodes", np.int64),
    ("idle_nodes", np.int64),
    ("arrivals", np.int64),
    ("completions", np.int64),
    ("stops", np.int64),
    ("samples", np.float64),
)
#: What one engine call did (zeroed by ``load``): the ``COUNTERS``, then the job
#: pre-emptions, the jobs whose node set the call's map changed, and the end flags (every
#: job done; ``t_end`` reached).
RESULTS = (
    *COUNTERS,
    ("preempted_jobs", np.int64),
    ("rescaled_jobs", np.int64),
    ("all_done", np.int64),
    ("horizon", np.int64),
)
#: ``SimKernel.scalars``' record: the state's scalars, then ``RESULTS``.
SCALARS = np.dtype(
    [
        *((name, np.float64) for name in FLOAT_SCALARS),
        *((name, np.int64) for name in INT_SCALARS),
        *RESULTS,
    ]
)
#: One engine call's record as a Python named tuple (``store``'s result). Its fields are
#: computed from ``SCALARS``: the type checker sees a tuple whose attributes are ``Any``.
if TYPE_CHECKING:
    from collections.abc import Iterable

    class Scalars(tuple[Any, ...]):  # noqa: D101
        def __getattr__(self, name: str) -> Any: ...
        @classmethod
        def _make(cls, iterable: Iterable[Any]) -> Scalars: ...

else:
    Scalars = namedtuple("Scalars", SCALARS.names)

CONSTANTS = ("t_end", "bftrainer", "preempt_mode")
FIELDS = (*NODE_ARRAYS, *JOB_ARRAYS, *INSTANCE_FIELDS, "rates", "scalars", *CONSTANTS)

# How a reclaim is charged (``engine._preempt``): from the instance's cost model.
PREEMPT_CHECKPOINT, PREEMPT_BFTRAINER, PREEMPT_PAUSE = 0, 1, 2


@structref.register
class SimKernelType(ValueTyped):
    """numba type of ``SimKernel``: a ``StructRef`` whose fields take the types of the values
    it is built with (``mtgym.sim.struct.ValueTyped``), so one type per combination of
    array dtypes and layouts.
    """


class SimKernel(structref.StructRefProxy):
    """A simulated episode as the kernels see it (module docstring). Built by ``bind``; on
    the Python side it carries ``scalars``, the record array its kernel field shares.

    Its fields, in ``FIELDS`` order, are passed positionally: the state's node and job
    arrays, the ``INSTANCE_FIELDS`` arrays, ``rates`` (``RateConsts``), ``scalars`` and the
    ``CONSTANTS``.

    Attributes:
        scalars: (1,) record array of dtype ``SCALARS``, the same memory as the kernel
            field: ``scalars[0]["time"]`` is the engine's clock during and after a call.
    """

    scalars: np.ndarray

    def __new__(cls, *values: Any) -> SimKernel:  # noqa: D102
        return _new_sim_kernel(*values)


define(SimKernel, SimKernelType, FIELDS)


@njit(cache=True)
def _new_sim_kernel(*values: Any) -> SimKernel:  # pragma: no cover - jit
    """``SimKernel(*values)``, compiled once and cached (numba's own constructor of a
    ``StructRefProxy`` is compiled anew in every process: ~1 s for this one).
    """
    return SimKernel(*values)


_STATE = attrgetter(*NODE_ARRAYS, *JOB_ARRAYS)
_INSTANCE = attrgetter(*INSTANCE_FIELDS.values())
_STATE_SCALARS = attrgetter(*FLOAT_SCALARS, *INT_SCALARS)
_NUM_STATE_SCALARS = len(FLOAT_SCALARS) + len(INT_SCALARS)
_NO_RESULTS = tuple(np.zeros(1, dtype=SCALARS).item(0)[_NUM_STATE_SCALARS:])
_STATE_SCALAR_NAMES = cast("tuple[str, ...]", SCALARS.names)[:_NUM_STATE_SCALARS]
_SCALARS_AT = FIELDS.index("scalars")

_MODELS: weakref.WeakKeyDictionary[Instance, ThroughputModel] = weakref.WeakKeyDictionary()
_INSTANCE_PARTS: weakref.WeakKeyDictionary[Instance, tuple] = weakref.WeakKeyDictionary()
# state -> (its instance, its arrays, its SimKernel): ``bound``'s cache
_BOUND: weakref.WeakKeyDictionary[ClusterState, tuple] = weakref.WeakKeyDictionary()


def throughput_model(instance: Instance) -> ThroughputModel:
    """The (cached) throughput model of an instance.

    Args:
        instance: the instance; the model is kept while it lives (a weak-keyed cache).

    Returns:
        ``ThroughputModel(instance.cluster, instance.jobs)``, the same object on every call.
    """
    model = _MODELS.get(instance)
    if model is None:
        model = ThroughputModel(instance.cluster, instance.jobs)
        _MODELS[instance] = model
    return model


def preempt_mode(instance: Instance) -> int:
    """How the engine charges a reclaim under the instance's cost model.

    Args:
        instance: the instance whose ``costs`` decide.

    Returns:
        ``PREEMPT_CHECKPOINT`` under ``PreemptionMode.CHECKPOINT`` (whatever the rescale
        mode), else ``PREEMPT_BFTRAINER`` under ``RescaleMode.BFTRAINER``, else
        ``PREEMPT_PAUSE``.
    """
    costs = instance.costs
    if costs.preemption == PreemptionMode.CHECKPOINT:
        return PREEMPT_CHECKPOINT
    if costs.rescale == RescaleMode.BFTRAINER:
        return PREEMPT_BFTRAINER
    return PREEMPT_PAUSE


def instance_fields(instance: Instance) -> tuple:
    """The instance's part of a ``SimKernel``, in ``FIELDS`` order after the state's arrays:
    ``INSTANCE_FIELDS``, ``rates`` and, after ``scalars``, the ``CONSTANTS`` (cached per
    instance).

    Args:
        instance: the instance (kept in a weak-keyed cache).

    Returns:
        (arrays, constants): the ``INSTANCE_FIELDS`` values followed by the ``RateConsts``,
        and (``t_end``, whether rescales are charged BFTrainer's way, ``preempt_mode``).
    """
    got = _INSTANCE_PARTS.get(instance)
    if got is None:
        consts = (
            float(instance.t_end),
            instance.costs.rescale == RescaleMode.BFTRAINER,
            preempt_mode(instance),
        )
        # read-only views: one compiled type whatever the instance's flags (readonly_view)
        got = ((*readonly_views(_INSTANCE(instance)), throughput_model(instance)._consts), consts)
        _INSTANCE_PARTS[instance] = got
    return got


def _values(state: ClusterState, instance: Instance) -> tuple:
    """The ``SimKernel``'s field values in ``FIELDS`` order, ``scalars`` a fresh record loaded
    from the state.
    """
    arrays, consts = instance_fields(instance)
    scalars = np.empty(1, dtype=SCALARS)
    scalars[0] = _STATE_SCALARS(state) + _NO_RESULTS
    return (*_STATE(state), *arrays, scalars, *consts)


def fields_of(state: ClusterState, instance: Instance) -> dict[str, Any]:
    """Every field of the ``SimKernel`` of ``state`` on ``instance``, by name (``scalars``
    loaded with the state's scalars).

    Args:
        state: the state whose arrays the fields are (not copies).
        instance: its instance.

    Returns:
        ``FIELDS`` name -> value; change some and pass the dict to ``from_fields``.
    """
    return dict(zip(FIELDS, _values(state, instance), strict=True))


def from_fields(values: dict[str, Any]) -> SimKernel:
    """A ``SimKernel`` with these fields (every name of ``FIELDS``; tests change some).

    Args:
        values: ``FIELDS`` name -> value, as ``fields_of`` returns; extra names are ignored.

    Returns:
        The struct, its Python-side ``scalars`` set to ``values["scalars"]``.

    Raises:
        KeyError: a name of ``FIELDS`` is missing.
    """
    sim = SimKernel(*(values[name] for name in FIELDS))
    sim.scalars = values["scalars"]
    return sim


def bind(state: ClusterState, instance: Instance) -> SimKernel:
    """The ``SimKernel`` of ``state`` on ``instance``: the state's arrays themselves (keep
    the state object: replacing one of its arrays needs a new ``bind``), its scalars loaded.

    Args:
        state: the state; the engine's updates of the struct's arrays are its updates.
        instance: its instance.

    Returns:
        A new struct (``bound`` keeps one per state and reuses it).
    """
    values = _values(state, instance)
    sim = SimKernel(*values)
    sim.scalars = values[_SCALARS_AT]  # (the same memory as the kernel field)
    return sim


def bound(state: ClusterState, instance: Instance) -> SimKernel:
    """``bind``, kept per state object and reused while the state holds the same arrays
    and runs on the same instance (``advance(copy=False)`` in a loop binds once); its
    scalars loaded from the state.

    Args:
        state: the state.
        instance: its instance; another instance than the last call's binds anew.

    Returns:
        The state's struct, its ``scalars`` loaded from the state and its results zeroed.
    """
    arrays = _STATE(state)
    hit = _BOUND.get(state)
    if hit is not None and hit[0] is instance and all(map(is_, hit[1], arrays)):
        sim = hit[2]
        load(sim, state)
        return sim
    sim = bind(state, instance)
    _BOUND[state] = (instance, arrays, sim)
    return sim


def load(sim: SimKernel, state: ClusterState) -> None:
    """Before an engine call: the state's scalars into ``sim.scalars``, results zeroed.

    Args:
        sim: the struct, written in place.
        state: the state whose float and int fields are copied.
    """
    sim.scalars[0] = _STATE_SCALARS(state) + _NO_RESULTS


def store(sim: SimKernel, state: ClusterState) -> Scalars:
    """After an engine call: the scalars back into the state (Python floats and ints);
    returns the whole record (the call's results by name).

    Args:
        sim: the struct after the call.
        state: its state, whose scalar fields are set.

    Returns:
        The record as a ``Scalars`` named tuple: the state's scalars, then ``RESULTS``.
    """
    values = sim.scalars.item(0)
    for name, value in zip(_STATE_SCALAR_NAMES, values, strict=False):
        setattr(state, name, value)
    return Scalars._make(values)
