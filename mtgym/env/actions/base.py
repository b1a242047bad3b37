"""What an action mode is: ``ActionCodec``, the frame its kernels read, and the registry.

A mode is a subclass of ``ActionCodec`` (one module in this folder) registered by name
(``register``; the built-ins in ``mtgym.env.actions``). It declares:

- ``name``, the ``action_mode`` keyword's value, and ``entry``, what an action entry
  stands for (``"slot"`` or ``"node"``: error messages);
- ``nvec(num_nodes, num_slots, max_count)``, its ``MultiDiscrete`` space;
- ``decode_kernel(frame, action) -> (bad, node_map, need, free)``, compiled: the first
  entry outside the space (or -1; then nothing else is read), the node map to apply (int32
  (N,), a job per node, -1 none) and the nodes the placement needs and has (``need > free``
  is a ``ValueError``, nothing changed). It counts its own repairs into ``frame.repairs``
  (zeroed before), one entry per name of ``repair_keys``;
- ``check_feasible``: True when its node maps can be infeasible (nodes not idle, jobs not
  active, counts outside min..max): the engine then checks them and repairs them
  (``mtgym.sim.dynamics.settle``); False when they are feasible by construction;
- ``mask_kernel(frame)``, compiled: the action mask into ``frame.mask`` (sb3-contrib's
  MultiDiscrete layout: the dimensions' masks one after the other);
- ``noop`` (the action that keeps every allocation), ``sample_valid`` (a random action
  that needs no repair) and, optionally, ``encode`` (the action closest to a node map).

The kernels read one ``ActionFrame`` (a numba struct, as ``mtgym.sim.kernel.SimKernel``):
the state's arrays (the same arrays, so a frame kept across in-place steps stays current),
the jobs' bounds and classes, the slots, the count cap, the placement's static node order,
and the mask, node map and repair buffers. Its ``mode`` field carries the codec's numba type
(``mtgym.env.classtype.ClassType``), so the env's compiled step is specialised per mode at
compile time: the step calls ``decode(frame, action)`` and ``mask(frame)`` below, which
resolve to the mode's kernels when the step is compiled (no branch on the mode at run
time, no mode id).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from numba import njit
from numba.experimental import structref
from numba.extending import overload

from mtgym.core.instance import Instance, readonly_views
from mtgym.core.types import Repair
from mtgym.env.classtype import class_key, class_of, typed_by_class
from mtgym.env.slots import JobSlots
from mtgym.model.placement import _classes64, _static_order
from mtgym.sim.state import ClusterState
from mtgym.sim.struct import ValueTyped, define

#: ``info["repair"]``'s keys after the decoder's (``ActionCodec.repair_keys``): the engine's
#: (``mtgym.sim.dynamics.repair_allocation``; zeros when nothing was repaired).
ENGINE_REPAIRS = (
    "unavailable_nodes",
    "inactive_job_nodes",
    "dyn_over_max_nodes",
    "dyn_below_min_jobs",
)


def repair_record(keys: tuple[str, ...], decoded: Any, engine: Repair | None) -> dict[str, int]:
    """``info["repair"]``: the decoder's repair counts by ``keys``, then the engine's
    (``None``: none).

    Args:
        keys: the mode's ``ActionCodec.repair_keys``.
        decoded: the decoder's counts, one per key (``ActionFrame.repairs`` as a list).
        engine: the engine's repair of the decoded map, or None when it needed none.

    Returns:
        key -> count: ``keys`` then ``ENGINE_REPAIRS`` (zeros when ``engine`` is None).

    Raises:
        ValueError: ``decoded`` does not have one count per key.
    """
    rep = dict(zip(keys, decoded, strict=True))
    if engine is None:
        rep.update(dict.fromkeys(ENGINE_REPAIRS, 0))
    else:
        rep.update(
            zip(
                ENGINE_REPAIRS,
                (
                    engine.unavailable_nodes,
                    engine.inactive_job_nodes,
                    engine.over_max_nodes,
                    engine.below_min_jobs,
                ),
                strict=True,
            )
        )
    return rep


def pack_failed(total: int, free: int) -> ValueError:
    """The error of a placement that needs more nodes than are free (as ``pack_targets``).

    Args:
        total: the nodes the placement needs.
        free: the nodes free for it.

    Returns:
        The ``ValueError`` to raise (its message names both numbers).
    """
    return ValueError(f"targets need {total} free nodes but only {free} are free")


# ---------------------------------------------------------------------------------------
# The frame the kernels read
# ---------------------------------------------------------------------------------------
#: the state's arrays, by their ``ClusterState`` names
FROM_STATE = ("available", "node_job", "n_nodes", "status")
#: the instance's: field name -> attribute path
FROM_INSTANCE = {"min_nodes": "jobs.min_nodes", "max_nodes": "jobs.max_nodes"}
#: the codec (its numba type selects the kernels), the slots' jobs, the count cap, the jobs'
#: classes and the placement's inputs (profiled slowdowns, the static node order: group of
#: each node, each group's first position and the nodes in order), and the buffers: the
#: mask, the last decoded node map, the decoder's repair counts
OWN = (
    "mode",
    "slot_job",
    "max_count",
    "app_class",
    "p_slowdown",
    "group",
    "seg_start",
    "seg_nodes",
    "mask",
    "node_map",
    "repairs",
)
FRAME_FIELDS = (*FROM_STATE, *FROM_INSTANCE, *OWN)
_STATE = attrgetter(*FROM_STATE)
_INSTANCE = attrgetter(*FROM_INSTANCE.values())


@structref.register
class ActionFrameType(ValueTyped):
    """numba type of ``ActionFrame``."""


class ActionFrame(structref.StructRefProxy):
    """Everything an action mode's kernels read (``FRAME_FIELDS``; ``ActionCodec.frame``).

    Its fields, in ``FRAME_FIELDS`` order and passed positionally: ``FROM_STATE`` (the
    state's own arrays), ``FROM_INSTANCE`` and ``OWN`` (module docstring). The buffers
    (``mask``, ``node_map``, ``repairs``) are the codec's: a frame's kernels write what the
    codec's Python side reads.
    """

    def __new__(cls, *values: Any) -> ActionFrame:  # noqa: D102
        return _new_frame(*values)


define(ActionFrame, ActionFrameType, FRAME_FIELDS)


@njit(cache=True)
def _new_frame(*values: Any) -> ActionFrame:  # pragma: no cover - jit
    """``ActionFrame(*values)``, compiled once and cached (as ``mtgym.sim.kernel.SimKernel``)."""
    return ActionFrame(*values)


def _codec_of(frame: Any) -> type[ActionCodec]:
    """The codec class of a frame's numba type (compile time): its ``mode`` field's
    ``ClassType`` names the class.

    Raises:
        KeyError: the class was never registered in this process (``register``).
    """
    return class_of(frame.field_dict["mode"])


def decode(frame: Any, action: np.ndarray) -> tuple:
    """In compiled code: the frame's mode's ``decode_kernel`` (repairs zeroed first), and
    its ``check_feasible`` as a constant: (bad, node_map, need, free, check_feasible).

    Args:
        frame: an ``ActionFrame``; its numba type picks the kernel when the caller is
            compiled.
        action: (A,) int64, the action as given (the kernel checks its range).

    Raises:
        NotImplementedError: called from Python (``ActionCodec.decode`` is the Python way).
    """
    raise NotImplementedError("compiled code only")


def mask(frame: Any) -> None:
    """In compiled code: the frame's mode's ``mask_kernel``, into ``frame.mask``.

    Args:
        frame: an ``ActionFrame``; its numba type picks the kernel.

    Raises:
        NotImplementedError: called from Python (``ActionCodec.mask`` is the Python way).
    """
    raise NotImplementedError("compiled code only")


@overload(decode)
def _decode(frame, action):  # pragma: no cover - compile time
    codec = _codec_of(frame)
    kernel, check = codec.decode_kernel, bool(codec.check_feasible)

    def impl(frame, action):
        frame.repairs[:] = 0
        bad, node_map, need, free = kernel(frame, action)
        return bad, node_map, need, free, check

    return impl


@overload(mask)
def _mask(frame):  # pragma: no cover - compile time
    kernel = _codec_of(frame).mask_kernel

    def impl(frame):
        kernel(frame)

    return impl


# ---------------------------------------------------------------------------------------
# The codec
# ---------------------------------------------------------------------------------------
class ActionCodec:
    """One action mode for fixed sizes (nodes, slots, count cap): its space, validation,
    mask and decoding (module docstring: what a subclass declares).

    Args:
        num_nodes: N, the machine's nodes.
        num_slots: S, the env's job slots.
        max_count: C, the count cap (``counts``' largest count; ``delta``'s cap on growth).

    Attributes:
        mode: the mode's name (``name``), for messages.
        N: the nodes.
        S: the job slots.
        C: the count cap.
        nvec: (A,) int64, each action entry's number of values (``nvec_of``).
        space: ``MultiDiscrete(nvec)``.
        mask_size: ``nvec.sum()``, the flat mask's length.
        mask_buffer: (mask_size,) int8, the mask the kernels write (the same array each
            step: copy what you keep).
        node_map: (N,) int32, the last decoded node map, kept for a repair.
        repairs: (len(repair_keys),) int64, the decoder's last repair counts.
    """

    name: ClassVar[str]
    entry: ClassVar[str] = "slot"
    repair_keys: ClassVar[tuple[str, ...]] = ()
    check_feasible: ClassVar[bool] = False
    decode_kernel: ClassVar[Any]
    mask_kernel: ClassVar[Any]
    #: ``(frame, out)``: the budget mask (``mtgym.env.actions.budget``); None: not offered
    budget_kernel: ClassVar[Any] = None

    def __init__(self, num_nodes: int, num_slots: int, max_count: int) -> None:
        self.mode = self.name
        self.N, self.S, self.C = num_nodes, num_slots, max_count
        self.nvec = np.asarray(self.nvec_of(num_nodes, num_slots, max_count), dtype=np.int64)
        self.space = spaces.MultiDiscrete(self.nvec)
        self.mask_size = int(self.nvec.sum())
        self.mask_buffer = np.zeros(self.mask_size, dtype=np.int8)  # filled by the kernels
        self.node_map = np.full(num_nodes, -1, dtype=np.int32)  # the last decoded map
        self.repairs = np.zeros(len(self.repair_keys), dtype=np.int64)
        self._placement: tuple[Any, tuple] = (None, ())

    # -- what a mode defines ---------------------------------------------------------
    @classmethod
    def nvec_of(cls, num_nodes: int, num_slots: int, max_count: int) -> np.ndarray:
        """The ``MultiDiscrete`` space's sizes.

        Args:
            num_nodes: N, the machine's nodes.
            num_slots: S, the env's job slots.
            max_count: the count cap.

        Returns:
            (A,) int64, the number of values of each action entry.
        """
        raise NotImplementedError

    def noop(self, state: ClusterState, instance: Instance, slots: JobSlots) -> np.ndarray:
        """The action that keeps every job's current allocation.

        Args:
            state: the state now.
            instance: its instance.
            slots: the env's ``JobSlots``.

        Returns:
            (A,) int64.
        """
        raise NotImplementedError

    def sample_valid(
        self, state: ClusterState, instance: Instance, slots: JobSlots, rng: np.random.Generator
    ) -> np.ndarray:
        """A random action that needs no repair (the shared node budget respected).

        Args:
            state: the state now.
            instance: its instance.
            slots: the env's ``JobSlots``.
            rng: the random generator drawn from.

        Returns:
            (A,) int64; ``info["repaired"]`` stays False when it is stepped.
        """
        raise NotImplementedError

    def encode(
        self, node_job: np.ndarray, state: ClusterState, instance: Instance, slots: JobSlots
    ) -> np.ndarray:
        """The action that realises the node map ``node_job`` as closely as the mode allows
        (an expert's allocation as an action: ``agents.imitation``).

        Args:
            node_job: (N,) the job of each node, -1 = none.
            state: the state now.
            instance: its instance.
            slots: the env's ``JobSlots``.

        Returns:
            (A,) int64.

        Raises:
            NotImplementedError: the mode has no ``encode``.
        """
        raise NotImplementedError(f"action mode {self.name!r} has no encode")

    # -- the frame -------------------------------------------------------------------
    def frame(self, state: Any, instance: Any, slot_job: np.ndarray) -> ActionFrame:
        """The kernels' view of ``state`` on ``instance`` with these slots: the same arrays
        (kept current by in-place steps) and the codec's buffers.

        The placement's static inputs (job classes, profiled slowdowns, the static node
        order) are computed once per instance and kept.

        Args:
            state: the state (its arrays are the frame's, not copies).
            instance: its instance.
            slot_job: (S,) the slots' jobs (the env's ``JobSlots.job``, updated in place).

        Returns:
            A new ``ActionFrame``.
        """
        cached, placement = self._placement
        if cached is not instance:
            jobs, cl = instance.jobs, instance.cluster
            slowdown = cl.profiled_slowdown
            group, seg_start, seg_nodes = _static_order(slowdown, cl.topology.coords)
            placement = (
                _classes64(jobs.app_class),
                np.ascontiguousarray(slowdown, dtype=np.float64),
                group,
                seg_start,
                seg_nodes,
            )
            self._placement = (instance, placement)
        # (read-only views, also of a copied env's cache: one compiled type, ``readonly_view``)
        placement = readonly_views(placement)
        own = (self, slot_job, int(self.C), *placement, self.mask_buffer, self.node_map)
        return ActionFrame(*_STATE(state), *readonly_views(_INSTANCE(instance)), *own, self.repairs)

    # -- validation ------------------------------------------------------------------
    def validate(self, action: np.ndarray, *, check_range: bool = True) -> np.ndarray:
        """The action as the int64 array the kernels take (the given array itself when it
        is one already), or ``ValueError`` naming the shape, dtype or entry and its bound.

        ``check_range=False`` leaves an int64 array of the right shape to the step's decode
        kernel, which checks every entry anyway and changes nothing on one out of range
        (``mtgym.env.step`` then calls this again to name it): one pass less per step.

        Args:
            action: anything ``np.asarray`` takes (a list of Python ints keeps values
                >= 2**63 exact for the message).
            check_range: check each entry's range here (False: leave it to the kernel).

        Returns:
            (A,) int64.

        Raises:
            ValueError: as ``_check_slow``: wrong shape, non-numeric, non-finite,
                non-integer or out-of-range entries.
        """
        a = np.asarray(action)
        if (
            a.dtype == np.int64
            and a.shape == self.nvec.shape
            and (not check_range or _out_of_range(a, self.nvec) < 0)
        ):
            return a  # the common case
        if a.dtype.kind == "f" and not isinstance(action, np.ndarray):
            # a list of Python ints numpy made float (one >= 2**63): keep the exact values
            exact = np.asarray(action, dtype=object)
            if all(isinstance(x, int) for x in exact.ravel()):
                a = exact
        return self._check_slow(a)

    def _check_slow(self, a: np.ndarray) -> np.ndarray:
        """Shape, integer values and range, with the offending value as given.

        Args:
            a: the action as an array of any dtype (``object`` for Python ints >= 2**63).

        Returns:
            The action as int64.

        Raises:
            ValueError: the first problem found, in this order: the shape, a non-numeric
                dtype, a non-finite entry, a non-integer value, an entry out of range
                (named with its index, its value as given and the allowed range).
        """
        if a.shape != self.nvec.shape:
            raise ValueError(
                f"action has shape {a.shape}; expected {self.nvec.shape} "
                f"for action_mode {self.mode!r}"
            )
        if a.dtype == object or a.dtype.kind not in "biuf":  # Python ints >= 2**63, ...
            try:
                a = np.asarray(a, dtype=np.float64) if a.dtype != object else a
            except (TypeError, ValueError):
                raise ValueError(f"action dtype {a.dtype} is not numeric") from None
        if a.size and a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            i = int(np.flatnonzero(~np.isfinite(a))[0])
            raise ValueError(f"action[{i}] = {a[i]!r} is not a finite number")
        integral = np.issubdtype(a.dtype, np.integer) or np.all(np.equal(np.mod(a, 1), 0))
        if a.size and not integral:
            raise ValueError(f"action dtype {a.dtype} holds non-integer values")
        # range checked on the values as given (a cast first would wrap 1e300 or 2**64-1)
        bad = np.flatnonzero((a < 0) | (a >= self.nvec))
        if bad.size:
            i = int(bad[0])
            v = a[i]
            shown = int(v) if a.dtype.kind in "iu" or (a.dtype == object) else float(v)
            raise ValueError(
                f"action[{i}] ({self.entry} {i}) = {shown!r} is out of range; "
                f"allowed 0..{int(self.nvec[i]) - 1}"
            )
        return a.astype(np.int64)

    # -- decoding and masks from Python ----------------------------------------------
    def decode(
        self, action: np.ndarray, state: Any, instance: Any, slots: JobSlots
    ) -> tuple[np.ndarray, tuple[int, ...]]:
        """The node map the env's step would apply for ``action`` (its kernel) and the
        decoder's repair counts (``repair_keys``), for callers outside the env
        (``mtgym.policy.observe``).

        Args:
            action: the action (validated first).
            state: the state now.
            instance: its instance.
            slots: the env's ``JobSlots``.

        Returns:
            ((N,) int32 node map, -1 = none; the repair counts). The map is the decoder's:
            for a ``check_feasible`` mode the engine may still repair it.

        Raises:
            ValueError: the action is out of the space, or its placement needs more nodes
                than are free.
        """
        a = self.validate(action)
        frame = self.frame(state, instance, slots.job)
        self.repairs[:] = 0
        _, node_map, need, free = type(self).decode_kernel(frame, a)
        if need > free:
            raise pack_failed(need, free)
        return node_map, tuple(self.repairs.tolist())

    def mask(self, state: Any, instance: Any, slots: JobSlots) -> np.ndarray:
        """Flat concatenation of per-dimension masks (sb3-contrib's MultiDiscrete layout),
        into ``mask_buffer`` (the step's kernel fills the same buffer after each step).

        Args:
            state: the state now.
            instance: its instance.
            slots: the env's ``JobSlots``.

        Returns:
            ``mask_buffer`` itself, (mask_size,) int8: copy it to keep it.
        """
        type(self).mask_kernel(self.frame(state, instance, slots.job))
        return self.mask_buffer

    def budget_mask(
        self, state: Any, instance: Any, slots: JobSlots, frame: ActionFrame | None = None
    ) -> np.ndarray:
        """The budget mask (``mtgym.env.actions.budget``): the per-slot mask with each
        legal choice's node cost and the shared budget, for learners that draw the slots
        in order (feasible by construction). Also refreshes ``mask_buffer``.

        Args:
            state: the state now.
            instance: its instance.
            slots: the env's ``JobSlots``.
            frame: this codec's frame of ``state`` (a step's: building one costs some
                hundreds of microseconds); None: built here.

        Returns:
            (mask_size,) float32, a fresh array.

        Raises:
            ValueError: the mode has no budget mask (only ``shares`` has one).
        """
        kernel = type(self).budget_kernel
        if kernel is None:
            raise ValueError(
                f"action mode {self.mode!r} has no budget mask: use action_mode 'shares'"
            )
        if frame is None:
            frame = self.frame(state, instance, slots.job)
        type(self).mask_kernel(frame)
        out = np.empty(self.mask_size, dtype=np.float32)
        kernel(frame, out)
        return out

    def repair_record(self, decoded: Any, engine: Repair | None) -> dict[str, int]:
        """``info["repair"]`` of a step: the decoder's counts, then the engine's.

        Args:
            decoded: the decoder's counts, one per ``repair_keys``.
            engine: the engine's repair, or None.

        Returns:
            ``repair_record(repair_keys, decoded, engine)``.
        """
        return repair_record(self.repair_keys, decoded, engine)


typed_by_class(ActionCodec)  # a codec in a frame types as its class (mtgym.env.classtype)


@njit(cache=True)
def _out_of_range(a: np.ndarray, nvec: np.ndarray) -> int:  # pragma: no cover - jit
    """Index of the first entry outside ``0..nvec-1``, or -1.

    Args:
        a: (A,) int64, the action.
        nvec: (A,) int64, each entry's number of values.
    """
    for i in range(a.shape[0]):
        if a[i] < 0 or a[i] >= nvec[i]:
            return i
    return -1


# ---------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------
#: name -> codec class: every action mode the env accepts (``register``)
CODECS: dict[str, type[ActionCodec]] = {}


def register(cls: type[ActionCodec]) -> type[ActionCodec]:
    """Register an action mode under ``cls.name`` (usable as a class decorator); a name
    taken by another class raises ``ValueError``.

    Args:
        cls: an ``ActionCodec`` subclass with a ``name``, a ``decode_kernel`` and a
            ``mask_kernel``.

    Returns:
        ``cls``; registering the same class again changes nothing.

    Raises:
        ValueError: no name, a kernel missing, or the name taken by another class.
    """
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"{cls!r} has no name")
    for attr in ("decode_kernel", "mask_kernel"):
        if not hasattr(cls, attr):
            raise ValueError(f"action mode {name!r} has no {attr}")
    if CODECS.get(name, cls) is not cls:
        raise ValueError(f"action mode {name!r} is registered already ({CODECS[name]!r})")
    CODECS[name] = cls
    class_key(cls)  # (known to the compiled step's dispatch: mtgym.env.classtype)
    return cls


def unregister(name: str) -> None:
    """Remove an action mode (tests register toy modes for a while).

    Args:
        name: the mode's name; an unknown name is ignored.
    """
    CODECS.pop(name, None)


def make_codec(name: str, num_nodes: int, num_slots: int, max_count: int) -> ActionCodec:
    """The codec of the registered mode ``name`` for these sizes (``ValueError`` naming the
    registered modes otherwise).

    Args:
        name: the mode (the env's ``action_mode``).
        num_nodes: N, the machine's nodes.
        num_slots: S, the env's job slots.
        max_count: the count cap.

    Returns:
        A new codec of the mode's class.
    """
    cls = CODECS.get(name)
    if cls is None:
        raise ValueError(f"action_mode {name!r} is not one of {tuple(CODECS)}")
    return cls(num_nodes, num_slots, max_count)
