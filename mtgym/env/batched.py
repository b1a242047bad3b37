"""The batched core: B episodes advanced by one decision each in one compiled call.

``mtgym.env.step`` steps one episode in two compiled calls (``_pre``, ``_post``) around a
little Python (``dynamics.settle``, ``sim_kernel.load``/``store``, the info dict): ~10 Python
calls and ~80 array arguments' worth of boxing per step. ``BatchedCore`` keeps B episodes'
``StepKernel`` structs in one numba typed ``List`` and steps all of them in one call,
``step_batch``, that runs for each episode the very kernels the single env runs:

- ``_pre`` (decode with the mode's kernel, apply, run the engine) and ``_post`` (profiler,
  slots, mask, observation), the same compiled functions, then (``reward_batch``) the
  reward by ``step_reward``, as the single env computes it;
- between them what ``dynamics.settle`` does in Python for the env: a node map the engine
  asked to repair (``NEEDS_REPAIR``) is repaired by ``engine.repair`` (the kernel behind
  ``dynamics.repair_allocation``) and applied by ``engine.run``, as there. Due timers are
  Python's (``EventQueue``): nothing in the env schedules one, so a batched episode has
  none (``t_timer`` is +inf) and ``TIMER_DUE`` cannot come back;
- the episode's scalars stay in its record (``SimKernel.scalars``) between steps instead of
  going through the ``ClusterState``'s attributes and back (``sim_kernel.store`` then
  ``sim_kernel.load``: the same values, bit for bit); the call zeroes the record's results
  (``sim_kernel.RESULTS``) as ``sim_kernel.load`` does. ``sync(b)`` writes them to the state
  when Python needs it (the metrics at an episode's end, ``noop``, ``sample_valid``, ...);
- the observation is written straight into batched arrays (a leading B axis), each
  episode's rows first set from the template ``ObservationBuilder.outputs()`` gave at its
  reset (the static node columns, zeros), then filled by ``observation.fill`` as in the
  single env; the mask, the slots and the info's counters into batched arrays too.

So episode b of a batch is, bit for bit, the single ``ScavengeEnv`` on the same seed and
actions (``tests/env/test_batched.py``, every action mode of ``CODECS`` and every reward).

Resets stay in Python, for the episodes that need one only: a generator (Python) builds
the new instance, and ``ScavengeEnv.reset`` of episode b's own env object (its wrappers
too: ``SeedOffset``) builds its state and first observation, exactly as the single env
does; ``BatchedCore.reset(b)`` then binds its ``StepKernel`` into slot b of the list.
What an auto-reset needs inside the call is its bookkeeping: ``step_batch`` steps only the
episodes marked ``live`` (Gymnasium's next-step auto-reset skips the ones being reset).

In ``profiled`` information mode the measured curves of the observation are added in
Python after the call (``ObservationBuilder.complete``, per episode), as in the single env.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from numba import njit, typeof
from numba.extending import overload
from numba.typed import List

from mtgym.env import step as single
from mtgym.env.actions.base import pack_failed
from mtgym.env.step import PACK_FAILED, STEP_COUNTERS, Step, _post, _pre, step_reward
from mtgym.sim import engine
from mtgym.sim import kernel as sim_kernel
from mtgym.sim.engine import OUT_OF_RANGE
from mtgym.sim.invariants import check_state
from mtgym.sim.view import InfoMode

#: ``mtgym.sim.kernel.COUNTERS``' names split by type: the integer ones are ``ints``' first
#: columns, the float ones ``floats``' columns after the time (``F_COUNTERS``), in order.
INT_COUNTERS = tuple(name for name, dtype in sim_kernel.COUNTERS if np.dtype(dtype).kind == "i")
FLOAT_COUNTERS = tuple(name for name, dtype in sim_kernel.COUNTERS if np.dtype(dtype).kind == "f")
# ``ints``' columns: the integer counters, then the observation's counts, the engine's repair
# counts (``ENGINE_REPAIRS``) and whether the engine repaired, then ``step_batch``'s code (the
# engine's, or ``PACK_FAILED``) and its two values (the bad entry, or needed and free nodes).
_K = len(INT_COUNTERS)
I_NODES_IDLE, I_ACTIVE, I_HELD, I_PRESENT = range(_K, _K + 4)
I_REPAIR = _K + 4  # 4 columns: unavailable, inactive-job, over-max nodes, below-min jobs
I_ENGINE_REPAIRED = _K + 8
I_CODE, I_X, I_Y = _K + 9, _K + 10, _K + 11
NUM_INTS = _K + 12
# ``floats``' columns: time after the step, the float counters, elapsed simulated seconds.
F_TIME = 0
F_COUNTERS = 1
F_ELAPSED = F_COUNTERS + len(FLOAT_COUNTERS)
F_SAMPLES = F_COUNTERS + FLOAT_COUNTERS.index("samples")  # (``agents.batched_vec`` reads it)
NUM_FLOATS = F_ELAPSED + 1


def _counter_column(name: str) -> tuple[bool, int]:
    """Where the step counter ``name`` (one of ``STEP_COUNTERS``) is after ``step_batch``.

    Returns:
        (True, its column of ``floats``) for ``elapsed_s`` and the ``FLOAT_COUNTERS``, else
        (False, its column of ``ints``).
    """
    if name == "elapsed_s":
        return True, F_ELAPSED
    if name in FLOAT_COUNTERS:
        return True, F_COUNTERS + FLOAT_COUNTERS.index(name)
    return False, INT_COUNTERS.index(name)


#: Where each of ``STEP_COUNTERS`` is, in its order (``_counter_column``).
COUNTER_COLUMNS = tuple(_counter_column(name) for name in STEP_COUNTERS)

_INF = float("inf")
_DONE, _NEEDS_REPAIR, _TIMER_DUE = engine.DONE, engine.NEEDS_REPAIR, engine.TIMER_DUE
_THEN_LOOP = engine.THEN_LOOP
_RESULT_NAMES = tuple(name for name, _ in sim_kernel.RESULTS)


# ---------------------------------------------------------------------------------------
# Helpers generated for the declared fields (compiled into their callers)
# ---------------------------------------------------------------------------------------
def _generated(name: str, args: str, body: list[str]) -> Any:
    """A Python function from source lines (an overload's implementation).

    numba compiles the returned function into the overload's caller, so a loop over the
    declared fields written out here costs nothing at run time.

    Args:
        name: the function's name (also in its pseudo file name, for tracebacks).
        args: its parameter list, as written in a ``def``.
        body: its lines, without indentation.
    """
    src = f"def {name}({args}):\n" + "".join(f"    {line}\n" for line in body)
    ns: dict[str, Any] = {}
    exec(compile(src, f"<mtgym.env.batched.{name}>", "exec"), ns)
    return ns[name]


def zero_results(rec: Any) -> None:
    """In compiled code: zero the results of a ``SimKernel.scalars`` record (``RESULTS``),
    as ``sim_kernel.load`` does before an engine call.

    Args:
        rec: the record (``scalars[0]``), written in place; its state scalars are kept.

    Raises:
        NotImplementedError: called from Python.
    """
    raise NotImplementedError("compiled code only")


@overload(zero_results)
def _zero_results(rec):  # pragma: no cover - compile time
    return _generated("impl", "rec", [f"rec.{name} = 0" for name in _RESULT_NAMES] + ["return"])


def store_counters(rec: Any, row: np.ndarray, f: np.ndarray) -> None:
    """In compiled code: the ``COUNTERS`` of a ``SimKernel.scalars`` record into an episode's
    row of ``ints`` (``INT_COUNTERS``, columns 0, 1, ...) and of ``floats``
    (``FLOAT_COUNTERS``, from ``F_COUNTERS``).

    Args:
        rec: the record after the engine call.
        row: (NUM_INTS,) int64, the episode's row of ``ints``.
        f: (NUM_FLOATS,) float64, its row of ``floats``.

    Raises:
        NotImplementedError: called from Python.
    """
    raise NotImplementedError("compiled code only")


@overload(store_counters)
def _store_counters(rec, row, f):  # pragma: no cover - compile time
    body = [f"row[{i}] = rec.{name}" for i, name in enumerate(INT_COUNTERS)]
    body += [f"f[{F_COUNTERS + i}] = rec.{name}" for i, name in enumerate(FLOAT_COUNTERS)]
    return _generated("impl", "rec, row, f", [*body, "return"])


def rows(arrays: tuple, b: int) -> tuple:
    """In compiled code: ``tuple(a[b] for a in arrays)`` (row b of each batched array).

    Args:
        arrays: a tuple of arrays with a leading B axis (of any types: a heterogeneous
            tuple, which compiled code cannot loop over).
        b: the row.

    Returns:
        The rows, views into ``arrays``.

    Raises:
        NotImplementedError: called from Python.
    """
    raise NotImplementedError("compiled code only")


@overload(rows)
def _rows(arrays, b):  # pragma: no cover - compile time
    items = "".join(f"arrays[{i}][b], " for i in range(len(arrays)))
    return _generated("impl", "arrays, b", [f"return ({items})"])


def copy_rows(dst: tuple, src: tuple, b: int) -> None:
    """In compiled code: row b of each array of ``src`` into the same row of ``dst``.

    Args:
        dst: a tuple of arrays with a leading B axis, written.
        src: a tuple of arrays of the same shapes, read.
        b: the row.

    Raises:
        NotImplementedError: called from Python.
    """
    raise NotImplementedError("compiled code only")


@overload(copy_rows)
def _copy_rows(dst, src, b):  # pragma: no cover - compile time
    body = [f"dst[{i}][b] = src[{i}][b]" for i in range(len(dst))]
    return _generated("impl", "dst, src, b", [*body, "return"])


# ---------------------------------------------------------------------------------------
# The batched step
# ---------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def step_batch(
    kernels: Any,
    actions: np.ndarray,
    live: np.ndarray,
    t_end: np.ndarray,
    interval: float,
    stop_on: int,
    cursors: np.ndarray,
    template: tuple,
    out: tuple,
    mask: np.ndarray,
    slots: np.ndarray,
    starts: np.ndarray,
    ended: np.ndarray,
    ints: np.ndarray,
    floats: np.ndarray,
    decoded: np.ndarray,
) -> int:  # pragma: no cover - jit
    """One decision of every ``live`` episode of ``kernels`` (``StepKernel``s), with
    ``actions[b]`` (int64, in range): what ``Step.__call__`` does, in one call (module
    docstring), the reward aside (``reward_batch``). ``interval`` <= 0: decide at every event
    (``stop_on`` the decision events), else every ``interval`` simulated seconds (``stop_on``
    the horizon). ``out`` holds the batched observation arrays in
    ``ObservationBuilder.outputs()``'s order and ``template`` their rows' values before
    ``fill``. Writes per episode the time and the active job-seconds before the step
    (``starts``), ``ended`` (0, or 1 terminated, 2 truncated), the counters (``ints``,
    ``floats``), the decoder's repair counts (``decoded``), the mask and the slots. Returns
    how many episodes stopped on an error (``ints[b, I_CODE]``: ``PACK_FAILED``; nothing
    changed for them).

    Args:
        kernels: numba typed ``List`` of the B episodes' ``StepKernel``s.
        actions: (B, A) int64.
        live: (B,) bool, the episodes to step (the others are left as they are).
        t_end: (B,) float64, each episode's end, seconds.
        interval: the decision interval, seconds; <= 0: at every decision event.
        stop_on: the ``EventKind`` bits that end a step.
        cursors: (B,) int64, the slots' admission cursors (``JobSlots.cursor``), updated.
        template: the output rows' values before ``fill`` (``outputs()`` at each reset).
        out: the batched output arrays, (B, ...) each, written.
        mask: (B, mask size) int8, written.
        slots: (B, S) int64, the slots' jobs, written.
        starts: (B, 2) float64, written: each stepped episode's time and active job-seconds
            before the step.
        ended: (B,) int8, written: 0 running, 1 terminated, 2 truncated.
        ints: (B, NUM_INTS) int64, zeroed then written per live episode (column names
            ``I_*`` and ``INT_COUNTERS``).
        floats: (B, NUM_FLOATS) float64, written (``F_*``).
        decoded: (B, len(repair_keys)) int64, the decoder's repair counts, written.
    """
    errors = 0
    for b in range(len(kernels)):
        if not live[b]:
            continue
        step = kernels[b]
        ep = step.sim
        rec = ep.scalars[0]
        t0 = rec.time
        active0 = rec.active_job_s
        zero_results(rec)  # (``sim_kernel.load``; the state's scalars are the record's)
        until = min(t_end[b], t0 + interval) if interval > 0 else t_end[b]
        code, x, y = _pre(step, actions[b], until, stop_on, _INF)
        row = ints[b]
        row[:] = 0
        if code in (PACK_FAILED, OUT_OF_RANGE):  # nothing changed
            row[I_CODE] = code
            row[I_X] = x
            row[I_Y] = y
            errors += 1
            continue
        if code == _NEEDS_REPAIR:  # ``dynamics.settle``: repair the map, apply it, run on
            node_map = step.actions.node_map
            if not engine.feasible(
                node_map, ep.available, ep.status, ep.min_nodes, ep.max_nodes
            ):  # (``repair_allocation``'s test)
                u, i, o, w, _ = engine.repair(
                    node_map, ep.available, ep.status, ep.node_job, ep.min_nodes, ep.max_nodes
                )
                row[I_REPAIR] = u
                row[I_REPAIR + 1] = i
                row[I_REPAIR + 2] = o
                row[I_REPAIR + 3] = w
            row[I_ENGINE_REPAIRED] = 1
            # (plain values, not literals: the compiled ``run`` that ``advance`` uses;
            # ``bool(True)`` types as a bool where ``True`` types as a constant)
            code, _ = engine.run(
                ep,
                node_map,
                bool(True),  # noqa: UP018
                bool(False),  # noqa: UP018
                int(_THEN_LOOP),
                until,
                stop_on,
                _INF,
                bool(False),  # noqa: UP018
            )
        if code != _DONE:  # (``TIMER_DUE``: no timer is ever scheduled in a batch)
            row[I_CODE] = code
            errors += 1
            continue
        view = rows(out, b)
        copy_rows(out, template, b)  # (``ObservationBuilder.outputs()``)
        cursors[b], counts = _post(step, t0, cursors[b], view)
        starts[b, 0] = t0  # (for ``reward_batch``: the values before the step)
        starts[b, 1] = active0
        t = rec.time
        if rec.all_done:  # ``episode_end``
            ended[b] = 1
        elif t >= t_end[b] or (t == t0 and rec.event_kinds == 0):
            ended[b] = 2
        else:
            ended[b] = 0
        f = floats[b]
        store_counters(rec, row, f)
        row[I_NODES_IDLE] = counts[0]
        row[I_ACTIVE] = counts[1]
        row[I_HELD] = counts[2]
        row[I_PRESENT] = counts[3]
        f[F_TIME] = t
        f[F_ELAPSED] = t - t0
        act = step.actions
        mask[b, :] = act.mask
        slots[b, :] = act.slot_job
        decoded[b, :] = act.repairs
    return errors


# ---------------------------------------------------------------------------------------
# The core
# ---------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def reward_batch(
    kernels: Any,
    reward: Any,
    live: np.ndarray,
    ints: np.ndarray,
    starts: np.ndarray,
    rewards: np.ndarray,
) -> None:  # pragma: no cover - jit
    """Each episode ``step_batch`` stepped (live, code ``DONE``): its reward by ``reward``'s
    kernel (``mtgym.env.step.step_reward``: compiled per reward class, the step per mode),
    into ``rewards``; the others' are left as they are.

    Args:
        kernels: the B episodes' ``StepKernel``s.
        reward: the batch's ``Reward`` (one for every episode).
        live: (B,) bool, the episodes ``step_batch`` was asked to step.
        ints: (B, NUM_INTS) int64, ``step_batch``'s (``I_CODE``: the episode's code).
        starts: (B, 2) float64, ``step_batch``'s: time and active job-seconds before.
        rewards: (B,) float64, written.
    """
    for b in range(len(kernels)):
        if live[b] and ints[b, I_CODE] == _DONE:
            rewards[b] = step_reward(reward, kernels[b], starts[b, 0], starts[b, 1])


class BatchedCore:
    """B ``ScavengeEnv`` episodes stepped together (module docstring).

    ``envs``: the episodes' env objects, each a ``ScavengeEnv`` possibly under wrappers
    that act on ``reset`` only (``SeedOffset``): their resets are the episodes' resets. They
    must share the action mode, the spaces and the decision interval. The core owns their
    stepping: step them through it only (``env(b)`` hands one back in sync, to read).

    After ``step(actions, live)``: ``obs`` (key -> (B, ...) arrays, the observation),
    ``rewards``, ``terminated``, ``truncated`` and the info's values (``info(b)``: episode
    b's info dict, as the single env's ``step`` returns it).

    Args:
        envs: the B env objects (above).

    Attributes:
        inner: the B unwrapped ``ScavengeEnv``s.
        obs: key -> (B, ...) array, the last observation of every episode (overwritten by
            each step: copy what you keep).
        mask: (B, mask size) int8, the action masks (``obs["action_mask"]`` itself).
        slots: (B, S) int64, each episode's slots' jobs, -1 = empty.
        rewards: (B,) float64, the last step's rewards.
        ended: (B,) int8, 0 running, 1 terminated, 2 truncated.
        ints: (B, NUM_INTS) int64, the last step's integer counters, the observation's
            counts, the engine's repairs and the call's code, by column (``I_*``,
            ``INT_COUNTERS``).
        floats: (B, NUM_FLOATS) float64, the time, the float counters and the elapsed
            seconds (``F_*``).
        decoded: (B, len(repair_keys)) int64, the decoder's repair counts.
        live: (B,) bool, the episodes ``step`` steps when given none (all).
        queued: (B,) int64, submitted jobs without a slot.
        time: (B,) float64, each episode's simulated time, seconds.
        steps: each episode's ``Step`` (None before its first reset).

    Raises:
        ValueError: no env, or envs that cannot share a call (``_check_alike``).
    """

    def __init__(self, envs: Sequence[gym.Env]) -> None:
        if not envs:
            raise ValueError("a batch needs at least one env")
        self._envs = list(envs)
        # (ScavengeEnvs, typed Any: their state and instance are Optional until a reset)
        self.inner: list[Any] = [e.unwrapped for e in self._envs]
        _check_alike(self.inner)
        first = self.inner[0]
        self.num_envs = B = len(self._envs)
        self.codec = first.codec
        self.observation_space = first.builder.space  # (the Dict, whatever the obs_layout)
        self.action_space = first.action_space
        self.interval = (
            -1.0 if first.decision_interval_s is None else float(first.decision_interval_s)
        )
        self.stop_on = int(
            single._DECISION if first.decision_interval_s is None else single._HORIZON
        )
        self.profiled = first.info_mode is InfoMode.PROFILED
        # (B, ...) arrays by key, in the order of the env's observations (its first reset's)
        self.obs: dict[str, np.ndarray] = {}
        self.keys: tuple[str | None, ...] = ()  # ``outputs()``'s arrays by key (at the first reset)
        self._out: tuple[np.ndarray, ...] = ()
        self._template: tuple[np.ndarray, ...] = ()
        self.mask = np.zeros((B, self.codec.mask_size), dtype=np.int8)
        self.slots = np.full((B, first.num_slots), -1, dtype=np.int64)
        self.rewards = np.zeros(B)
        self._starts = np.zeros((B, 2))  # each step's time and active job-seconds before
        self.ended = np.zeros(B, dtype=np.int8)
        self.ints = np.zeros((B, NUM_INTS), dtype=np.int64)
        self.floats = np.zeros((B, NUM_FLOATS))
        self.decoded = np.zeros((B, len(self.codec.repair_keys)), dtype=np.int64)
        self.cursors = np.zeros(B, dtype=np.int64)
        self.t_end = np.zeros(B)
        self.live = np.ones(B, dtype=np.bool_)
        self.queued = np.zeros(B, dtype=np.int64)
        self.time = np.zeros(B)
        self.steps: list[Step | None] = [None] * B
        self._synced = np.ones(B, dtype=np.bool_)
        self._kernels: Any = None
        self._reward: Any = None
        self._type: Any = None
        self._unreset = B  # episodes never reset yet
        self._debug = any(env.debug for env in self.inner)

    @staticmethod
    def _output_keys(env: Any) -> tuple[tuple[str | None, tuple[int, ...], Any], ...]:
        """The observation keys of ``ObservationBuilder.outputs()``'s arrays, in order (by
        identity through ``complete``, which maps them to keys; after a ``bind``), each with
        its shape and dtype; None for an output the observation leaves out (the empty
        scale-free parts of a mode without them).

        Args:
            env: a ``ScavengeEnv`` after ``reset`` (its builder's ``queued`` is restored).

        Raises:
            TypeError: ``complete`` no longer returns ``fill``'s arrays themselves.
        """
        builder = env.builder
        queued = builder.queued
        out = builder.outputs()
        obs = builder.complete(env.slots, None, env.codec.mask_buffer, out, (0, 0, 0, 0))
        builder.queued = queued
        keys = []
        for a in out:
            key = [k for k, v in obs.items() if v is a]
            if len(key) > 1 or (not key and a.size):
                raise TypeError("ObservationBuilder.complete no longer returns fill's arrays")
            keys.append((key[0] if key else None, a.shape, a.dtype))
        return tuple(keys)

    # -- resets (Python: the generator builds the instance) ---------------------------
    def reset(self, b: int, seed: int | None = None, options: dict | None = None) -> tuple:
        """Reset episode b through its env (``env.reset``: its wrappers, its seeds) and bind
        its step into the batch; returns the env's (obs, info), also written into ``obs``.

        Args:
            b: the episode, 0..B-1.
            seed: the env's ``reset`` seed (instance ``seed``, through its wrappers); None:
                the env draws the next one from its generator.
            options: the env's ``reset`` options (``ScavengeEnv`` takes none).

        Returns:
            The env's (observation, info), as ``ScavengeEnv.reset`` returns them.

        Raises:
            TypeError: the episode's step has another numba type than the batch's (its
                arrays' dtypes differ), or the observation has a key the kernels do not
                fill.
        """
        obs, info = self._envs[b].reset(seed=seed, options=options)
        env = self.inner[b]
        dict_obs = env.reset_obs  # (the ``Dict``, whatever the env's ``obs_layout``)
        if not self.keys:
            self._lay_out(dict_obs, env)
        step = self._bind(b, env)
        self.t_end[b] = step.t_end
        self.cursors[b] = env.slots.cursor
        for i, a in enumerate(env.builder.outputs()):
            self._template[i][b] = a
        for key, value in dict_obs.items():
            self.obs[key][b] = value
        env.reset_obs = None  # (copied: not kept once per episode)
        self.slots[b] = env.slots.job
        self.time[b] = env.state.time
        self.queued[b] = env.builder.queued
        self.ended[b] = 0
        self.rewards[b] = 0.0
        self._synced[b] = True
        return obs, info

    def _lay_out(self, obs: dict[str, np.ndarray], env: Any) -> None:
        """At the first reset: the batched observation ``obs`` (one zeroed (B, ...) array per
        key of the first observation, the mask among them), the kernels' output arrays
        (``_out``, in ``ObservationBuilder.outputs()`` order: the batched observation's
        arrays, or a private one for an output the observation leaves out) and their
        templates (``_template``, each episode's row set at its reset).

        Args:
            obs: the first reset's observation (its keys and order).
            env: that episode's ``ScavengeEnv`` (after ``reset``: its builder is bound).

        Raises:
            TypeError: an observation key the step's kernels do not fill.
        """
        spaces = self.observation_space.spaces
        self.obs = {k: np.zeros((self.num_envs, *spaces[k].shape), spaces[k].dtype) for k in obs}
        self.mask = self.obs["action_mask"]
        outputs = self._output_keys(env)
        self.keys = tuple(k for k, _, _ in outputs)
        missing = set(obs) - set(self.keys) - {"action_mask"}
        if missing:  # (a key ``complete`` builds in Python: the call would leave it stale)
            raise TypeError(f"observation keys not filled by the step's kernels: {missing}")
        self._out = tuple(
            self.obs[k] if k is not None else np.zeros((self.num_envs, *shape), dtype)
            for k, shape, dtype in outputs
        )
        self._template = tuple(np.zeros_like(a) for a in self._out)

    def _bind(self, b: int, env: Any) -> Step:
        """Build episode b's ``Step`` on its env's new state (what the env's own first step
        would build, and the env keeps it) and put its ``StepKernel`` into slot b of the
        typed list ``step_batch`` takes (made at the first reset, with placeholders).

        Args:
            b: the episode.
            env: its ``ScavengeEnv``, just reset.

        Returns:
            The new step (also ``steps[b]``).

        Raises:
            TypeError: its ``StepKernel``'s numba type is not the batch's.
        """
        step = Step(
            env.state,
            env.instance,
            env.codec,
            env.builder,
            env.slots,
            env.profiler,
            env.reward_name,
            env.decision_interval_s,
        )
        env._step = step  # (what the env's own first step would build)
        kernel = step.kernel
        typ = typeof(kernel)
        if self._kernels is None:
            self._type = typ
            self._reward = step.reward  # (the batch's envs share their reward: _check_alike)
            self._kernels = List.empty_list(typ)
            for _ in range(self.num_envs):
                self._kernels.append(kernel)  # (placeholders until each episode's reset)
        elif typ != self._type:
            raise TypeError(f"episode {b}'s step has another numba type than the batch's")
        self._kernels[b] = kernel
        if self.steps[b] is None:
            self._unreset -= 1
        self.steps[b] = step
        return step

    # -- steps (one compiled call) -------------------------------------------------------
    def check_actions(self, actions: Any) -> np.ndarray:
        """The actions as a (B, A) int64 array, or ``ValueError`` naming the episode and
        the entry (``ActionCodec.validate``) before anything changes.

        Args:
            actions: B actions, anything ``np.asarray`` takes; an int64 (B, A) array in
                range is returned as it is.

        Returns:
            (B, A) int64.

        Raises:
            ValueError: not B actions, or ``env b: `` and the first bad entry of the first
                bad episode.
        """
        a = np.asarray(actions)
        nvec = self.codec.nvec
        if (
            a.dtype == np.int64
            and a.shape == (self.num_envs, nvec.size)
            and not ((a < 0) | (a >= nvec)).any()
        ):
            return a
        if a.ndim == 0 or len(a) != self.num_envs:
            raise ValueError(
                f"actions have shape {a.shape}; expected ({self.num_envs}, {nvec.size})"
            )
        out = np.empty((self.num_envs, nvec.size), dtype=np.int64)
        for b in range(self.num_envs):
            try:
                out[b] = self.codec.validate(actions[b])
            except ValueError as e:
                raise ValueError(f"env {b}: {e}") from None
        return out

    def step(self, actions: np.ndarray, live: np.ndarray | None = None) -> np.ndarray:
        """One decision of each ``live`` episode (all when None) in one compiled call;
        returns the indices of the episodes stepped that ended (terminated or truncated).

        Args:
            actions: (B, A) int64 in range (``check_actions``); the rows of episodes not
                live are not read.
            live: (B,) bool, the episodes to step; None: ``self.live`` (every episode).

        Returns:
            The indices of the stepped episodes that ended, ascending.

        Raises:
            RuntimeError: an episode was never reset, or the engine stopped with an
                unexpected code.
            ValueError: an episode's placement needs more nodes than are free
                (``env b: ...``); the first such episode is named.
        """
        if self._kernels is None or self._unreset:
            raise RuntimeError("reset every episode before stepping the batch")
        live = self.live if live is None else live
        errors = step_batch(
            self._kernels,
            actions,
            live,
            self.t_end,
            self.interval,
            self.stop_on,
            self.cursors,
            self._template,
            self._out,
            self.mask,
            self.slots,
            self._starts,
            self.ended,
            self.ints,
            self.floats,
            self.decoded,
        )
        reward_batch(self._kernels, self._reward, live, self.ints, self._starts, self.rewards)
        self._synced[live] = False
        if errors:
            bad = np.flatnonzero(live & (self.ints[:, I_CODE] != _DONE))
            b = int(bad[0])
            code, x, y = self.ints[b, I_CODE], self.ints[b, I_X], self.ints[b, I_Y]
            if code == PACK_FAILED:
                raise ValueError(f"env {b}: {pack_failed(int(x), int(y))}")
            raise RuntimeError(f"env {b}: the engine stopped with code {int(code)}")
        ints = self.ints
        self.queued[live] = ints[live, I_ACTIVE] - ints[live, I_PRESENT]
        self.time[live] = self.floats[live, F_TIME]
        if self.profiled:  # the measured curves (Python, as the single env)
            for b in np.flatnonzero(live):  # type: ignore[assignment]  # b: an int above
                env = self.inner[b]
                counts = tuple(int(c) for c in ints[b, I_NODES_IDLE : I_PRESENT + 1])
                view = tuple(a[b] for a in self._out)
                env.builder.complete(env.slots, env.profiler, self.mask[b], view, counts)
        if self._debug:
            for b in np.flatnonzero(live):  # type: ignore[assignment]  # b: an int above
                if self.inner[b].debug:
                    self.sync(b)
                    check_state(self.inner[b].state, self.inner[b].instance)
        return np.flatnonzero(live & (self.ended != 0))

    @property
    def terminated(self) -> np.ndarray:
        """(B,) bool: the last step ended the episode with every job finished."""
        return self.ended == 1

    @property
    def truncated(self) -> np.ndarray:
        """(B,) bool: the last step reached the horizon or found nothing left to happen."""
        return self.ended == 2

    # -- Python's view of an episode -----------------------------------------------------
    def sync(self, b: int) -> None:
        """Write episode b's scalars, slot cursor, mask and end flag back to its env object
        (``sim_kernel.store``), so its Python methods see the state the batch reached.

        Args:
            b: the episode; nothing happens when it is in sync already (not stepped since
                its last sync or reset).
        """
        if self._synced[b]:
            return
        env, step = self.inner[b], self.steps[b]
        sim_kernel.store(step.sim, env.state)  # type: ignore[union-attr]  # set at its reset
        env.slots.cursor = int(self.cursors[b])
        env._mask = step.action_mask = self.mask[b].copy()  # type: ignore[union-attr]  # set at its reset
        env._ended = bool(self.ended[b])
        self._synced[b] = True

    def env(self, b: int) -> gym.Env:
        """Episode b's env object, in sync with the batch (to read: step it through here).

        Args:
            b: the episode.

        Returns:
            The env as given to the core (with its wrappers).
        """
        self.sync(b)
        return self._envs[b]

    @property
    def envs(self) -> list[gym.Env]:
        """The episodes' env objects, in sync with the batch (``env``)."""
        for b in np.flatnonzero(~self._synced):
            self.sync(int(b))
        return list(self._envs)

    def metrics(self, b: int) -> dict[str, Any]:
        """Episode b's metrics (``compute_metrics``: the info of an episode's last step).

        Args:
            b: the episode (synced first).

        Returns:
            ``EpisodeMetrics.as_dict()`` of its state now.
        """
        from mtgym.metrics import compute_metrics

        self.sync(b)
        env = self.inner[b]
        return compute_metrics(env.state, env.instance).as_dict()

    def info(self, b: int) -> dict[str, Any]:
        """Episode b's info of the last step, as the single env's ``step`` returns it.

        Args:
            b: the episode; its ``metrics`` are added when its last step ended it.

        Returns:
            ``step_info``'s dict, the same keys and values as ``ScavengeEnv.step``'s.
        """
        i, f = self.ints[b], self.floats[b]
        engine_rep = None
        if i[I_ENGINE_REPAIRED]:
            from mtgym.core.types import Repair

            engine_rep = Repair(*(int(v) for v in i[I_REPAIR : I_REPAIR + 4]), [])  # type: ignore[call-arg, arg-type]  # 4 ints
        counters = tuple(float(f[c]) if is_float else int(i[c]) for is_float, c in COUNTER_COLUMNS)
        return single.step_info(
            float(f[F_TIME]),
            self.mask[b],
            self.slots[b],
            int(self.queued[b]),
            self.codec.repair_record(self.decoded[b].tolist(), engine_rep),
            counters,
            self.metrics(b) if self.ended[b] else None,
        )

    def observation(self, b: int) -> dict[str, np.ndarray]:
        """Episode b's observation of the last step (fresh arrays).

        Args:
            b: the episode.

        Returns:
            key -> a copy of row b of ``obs``.
        """
        return {key: a[b].copy() for key, a in self.obs.items()}


def _check_alike(envs: list[Any]) -> None:
    """Check that a batch's envs can share one compiled call.

    Args:
        envs: the episodes' ``ScavengeEnv``s (unwrapped).

    Raises:
        ValueError: an env renders, or the envs differ in action mode, reward, action or
            observation space, information mode or decision interval (the compiled step is
            specialised per action mode and reward).
    """
    first = envs[0]
    for env in envs:
        if env.render_mode is not None:
            raise ValueError("the batched env does not render")
        same = (
            env.action_mode == first.action_mode
            and env.reward_name == first.reward_name
            and env.action_space == first.action_space
            and env.observation_space == first.observation_space
            and env.decision_interval_s == first.decision_interval_s
            and env.info_mode == first.info_mode
        )
        if not same:
            raise ValueError(
                "the batch's envs differ in action mode, reward, spaces, information mode or "
                "decision interval"
            )
