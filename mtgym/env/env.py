"""``ScavengeEnv``: the Gymnasium environment (id ``mtgym/Scavenge-v0``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from os import PathLike
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.names import SCALE_FREE_MODES
from mtgym.env.actions import make_codec
from mtgym.env.args import (
    EnvKeywords,
    check_keywords,
    check_reset_options,
    keywords_from_config,
    resolve_keywords,
    resolve_max_count,
)
from mtgym.env.layout import ObsLayout
from mtgym.env.observation import ObservationBuilder
from mtgym.env.render import History, render_ansi, render_gantt
from mtgym.env.slots import JobSlots, slot_rule
from mtgym.env.step import Step, step_info
from mtgym.generate.base import Generator
from mtgym.sim.dynamics import initial_state
from mtgym.sim.invariants import check_state
from mtgym.sim.profiling import PassiveProfiler
from mtgym.sim.view import InfoMode

if TYPE_CHECKING:
    from mtgym.sim.state import ClusterState


class ScavengeEnv(gym.Env):
    """Schedule malleable DL training jobs onto the idle nodes of a supercomputer.

    ## Description
    Nodes of a host machine become idle and are lent to the scavenger until the host
    reclaims them (from a synthetic supply calibrated to Summit, or a replayed trace).
    Malleable data-parallel jobs arrive over time; the agent decides how many (``counts``,
    ``delta``) or which (``assign``) idle nodes each admitted job runs on. Throughput depends
    on the node count, the slowest device of the set (per-GPU, per-class variability) and the
    topology level the set spans; every change of a job's node set costs a pause
    (rescale/start-up), and a reclaimed node costs its job a pre-emption penalty. The
    simulation is event-driven and exact (see ``docs/model.md``).

    ## Observation
    A ``Dict`` of float32 arrays with fixed shapes (N nodes, S job slots, P curve points):

    | key | shape | content |
    | --- | --- | --- |
    | ``nodes`` | (N, 11) | available, held, GPU type (0..1), profiled slowdown of classes A-D, log idle time so far, window end known, log time until reclaim (0 when unknown), the node's group at the coarsest topology level below the machine (0..1; 0 if flat; one column for any depth) |
    | ``node_mask`` | (N,) | 1 = node idle and lent now |
    | ``node_job`` | (N,) | slot of the job the node runs, -1 = none |
    | ``jobs`` | (S, 16) | present, class one-hot (4), nodes / cap, min / cap, max / cap, log measured rate, log age, pausing, log progress, log remaining work*, R_up / 60 s*, R_down / 60 s*, info level (known curve points / cap in ``profiled``) |
    | ``job_mask`` | (S,) | 1 = slot holds a job |
    | ``job_curve`` | (S, P) | log1p(samples/s) / 20 at 1, 2, 4, ..., cap nodes*: declared (``user``), measured (``profiled``), true (``oracle``) |
    | ``job_curve_known`` | (S, P) | 1 where ``job_curve`` holds a value |
    | ``global`` | (6,) | time / horizon, idle nodes / N, free nodes / N, queued jobs / S, occupied slots / S, log time |
    | ``job_scale`` | (S, 5) | ``shares`` only (``SCALE_FREE_MODES``), scale-free: nodes held, min and max / idle nodes; position in the job's own range ((n - min + 1) / (max - min + 1), 0 when not running); shown rate / the shown curve's rate at the job's max* |
    | ``job_shape`` | (S, 8) | ``shares`` only, scale-free: the shown curve at min + f (max - min), f = 0, 1/7, ..., 1, / its rate at max* |
    | ``global_scale`` | (3,) | ``shares`` only, scale-free: unheld idle nodes, the present slots' summed min and summed max, / idle nodes |
    | ``action_mask`` | (M,) int8 | the legal actions (as ``action_masks()``) |

    (*) zero in ``profiled`` mode: MalleTrain-style schedulers are told nothing up front.
    Hidden values (true curves in non-oracle modes, true slowdowns, unknown window ends)
    never appear.
    The columns of ``nodes``, ``jobs``, ``global``, ``job_scale`` and ``global_scale`` are
    named in ``env.unwrapped.features`` (key -> feature -> slice, e.g.
    ``features["jobs"]["nodes"]``; ``features.version``: the feature set's version, which
    rises only when a feature changes meaning or goes away): read them by name. The ``*_scale`` and ``job_shape`` keys
    mean the same on any machine (no N, S or cap in them): one set of weights reads all.

    ``obs_layout`` lays the same numbers out for other clients (``mtgym.env.layout``):
    ``"dict"`` (the table above), ``"flat"`` (one float32 ``Box``: every key but
    ``action_mask`` flattened and concatenated in the sorted key order, the mask in ``info``
    and ``action_masks()``: RLlib's default encoders take no ``Dict``) or ``"masked"``
    (``{"observations": <that Box>, "action_mask": float32 Box}``, the layout of RLlib's
    action-masking example module). ``env.unwrapped.layout.slices`` says where each key sits
    in the flat vector (``ObsLayout.unflatten`` reads it back).

    ## Action
    ``action_mode="counts"`` (default): ``MultiDiscrete([cap + 1] * S)``, the node count of
    each slot's job; nodes are placed sticky, topology- and speed-aware. ``"assign"``:
    ``MultiDiscrete([S + 1] * N)``, the slot (1-based) each node runs, 0 = none.
    ``"delta"``: ``MultiDiscrete([3] * S)``: shrink (halve) / keep / grow (double).
    ``"shares"`` (scale-free): ``MultiDiscrete([34] * S)``: 0 = keep the current count, 1 =
    stop, 1 + k = the k-th of 32 counts spread over the job's own [min, max] (exact for
    ranges of up to 32 counts, geometric above; ``mtgym.env.actions.shares``): no count cap,
    the same meaning on every machine. No-op: all zeros (``counts`` keeps nothing running!
    use the current counts to keep), all zeros in ``assign`` frees every node, all ones in
    ``delta`` and all zeros in ``shares`` keep everything. Masks follow
    sb3-contrib's MultiDiscrete layout. Out-of-space actions raise ``ValueError`` naming the
    entry and its value as given (``1e300``, a uint64, a Python int >= 2**63); in-space
    infeasible ones are repaired deterministically (``mtgym.env.actions``), reported in
    ``info["repair"]`` (counts by kind) and ``info["repaired"]`` (any repair).

    Masks (``action_masks()``, ``obs["action_mask"]``) are per dimension and guarantee only
    per-slot bounds: ``counts``: 0, or min..min(max, cap, idle nodes) for a present slot;
    ``shares``: keep always, stop a running job, a level whose count is new and at most the
    idle nodes;
    ``delta``: keep always, shrink a running job, grow a job below its cap when enough nodes are
    free for that slot alone; ``assign``: none always, any present slot on an idle node. They
    cannot express the shared node budget: an action drawn from them per slot can ask for more
    nodes than are idle in total, or (``assign``) give a job fewer than its minimum or more than
    its maximum, and is then repaired. ``env.unwrapped.sample_valid(rng)`` draws an action that
    needs no repair in every mode; in ``shares``, ``env.unwrapped.budget_masks()`` gives a
    learner each legal choice's node cost and the budget (float32,
    ``mtgym.env.actions.budget``), so that slots drawn in order never need one. ``info["repaired"]`` is True: in ``counts``, for a count on an
    empty slot, above the job's maximum, below its minimum, or beyond the idle nodes (FCFS);
    in ``delta``, for the same on the targets the moves give; in ``assign``, for a node given to
    an empty slot or an unavailable node, or a job given more than its maximum or fewer than
    its minimum nodes (``dyn_*`` keys).

    Mask types: ``obs["action_mask"]`` and ``info["action_mask"]`` are int8 (Gymnasium's
    ``MultiDiscrete.sample(mask=...)`` takes int8 masks, and the observation space saved
    with every trained agent says int8); ``action_masks()`` returns the same values as bool,
    sb3-contrib's convention; the masked observation layout carries them as float32, RLlib's.
    They hold the same 0/1 values everywhere, the batched envs' included. Through wrappers
    (``gym.make`` adds ``PassiveEnvChecker`` and ``OrderEnforcing``; Gymnasium 1.x forwards
    no attribute, so ``env.action_masks()`` raises ``AttributeError`` there), call
    ``env.get_wrapper_attr("action_masks")()`` (or ``env.unwrapped.action_masks()``), as
    sb3-contrib's ``get_action_masks`` and MaskablePPO do.

    ## Reward
    ``reward="normalized"`` (default): the training accrued over the step in best-node-seconds,
    each job's samples divided by its own reference rate (``mtgym.metrics.reference_rate``),
    / (N x 1 h): the integral of the headline ``normalized_throughput`` between two decisions
    (a semi-MDP reward), the same for every model. ``"throughput"``: raw samples this step /
    (best node rate x N x 1 h) (BFTrainer's objective; it adds samples of different models).
    ``"progress"``: sum of (samples this step / job's work). ``"jct"``: minus active
    job-hours this step. See ``mtgym.env.reward``. Steps last different simulated times:
    ``info["dt"]`` is the step's elapsed simulated seconds, and
    ``mtgym.env.wrappers.TimeDiscount`` turns a discount per simulated hour into the step's.

    Return and headline: with ``normalized``, an episode's undiscounted return is the
    headline times the episode's hours over the node count, return =
    ``normalized_throughput`` x (``duration_s`` / 3,600) / N, both read from the last
    step's ``info["metrics"]`` (``duration_s`` is the horizon unless every job finished
    before it). A return of 0.29 over a 2-hour episode on 64 nodes is a headline of
    0.29 x 64 / 2 = 9.3 best-node equivalents, what ``mtgym evaluate`` reports.

    ## Seeds
    ``reset(seed=s)`` plays the scenario's instance ``s``, the very instance
    ``mtgym evaluate --seed s`` (and ``compare``, and training evaluation) plays; ``reset()``
    without a seed draws the next instance seed from the env's generator (seeded by the last
    ``seed``), so a seeded run replays the same episodes.

    ## Episode end
    ``terminated``: every job completed or was stopped by its campaign. ``truncated``: the
    horizon (``horizon_s`` after the start, or the scenario's end) is reached, or no event is
    left to happen.

    ## Info
    ``reset`` and ``step`` return ``time`` (simulated s), ``action_mask``, ``slots`` (job index
    per slot, -1 = empty) and ``queued``. ``step`` adds ``repair``/``repaired`` (above),
    ``event_kinds`` (the kinds of the events processed this step: a bit set of ``EventKind``,
    not a count), ``reclaimed_nodes``, ``idle_nodes``, ``arrivals``, ``completions``,
    ``stops``, ``samples`` (this step), ``elapsed_s`` = ``dt`` (simulated seconds this step
    covered) and ``events``: deprecated, ``event_kinds`` under its old name (the same value;
    kept for one release, then removed). The last step of an episode adds ``metrics``
    (``mtgym.metrics.EpisodeMetrics``, whose docstring defines each): duration_s, samples,
    throughput (samples/s), offered_node_s, allocated_node_s, productive_node_s, utilisation,
    productive_utilisation, jobs_total, jobs_completed, jobs_stopped, jct_mean, jct_p50,
    jct_p99, jct_geomean (s; nan if none completed), makespan, makespan_censored, rescales,
    starts, preemptions, lost_rescale_s, lost_preempt_s, preempt_lost_samples,
    unpaid_debt_samples, stalled_job_s, upper_bound_samples, upper_bound_fraction,
    normalized_samples, normalized_throughput (the headline), normalized_efficiency,
    fairness_jain, decisions, events (engine events processed).

    ## State
    ``ClusterState`` (``self.state``): node map, availability, per-job progress, pauses,
    debts and accumulators; ``self.instance`` holds the episode's immutable ``Instance``.
    A step updates the state's arrays in place (copy what you keep); observations and
    infos are fresh arrays.

    ## Arguments
    | name | default | meaning |
    | --- | --- | --- |
    | ``scenario`` | ``"default"`` | a built-in or preset name, a scenario file path, a ``Generator`` or a fixed ``Instance`` |
    | ``action_mode`` | ``"counts"`` | ``"counts"``, ``"assign"``, ``"delta"`` or ``"shares"`` |
    | ``reward`` | ``"normalized"`` | ``"normalized"``, ``"throughput"``, ``"progress"`` or ``"jct"`` |
    | ``info_mode`` | ``"user"`` | ``"user"``, ``"profiled"`` or ``"oracle"`` |
    | ``horizon_s`` | None | episode length in simulated seconds (None: the scenario's) |
    | ``decision_interval_s`` | None | decide every that many seconds (None: at every event) |
    | ``max_jobs`` | None | job slots S, 1..8192 (jobs beyond wait in a FCFS queue); None: the scenario's, else one per node, at most 8192 (``mtgym.env.slots.slot_rule``) |
    | ``max_count`` | None | count cap of the action space, 1..N (None: the largest max_nodes, capped at N) |
    | ``obs_layout`` | ``"dict"`` | ``"dict"``, ``"flat"`` or ``"masked"`` (Observation) |
    | ``render_mode`` | None | ``"ansi"`` or ``"rgb_array"`` (640 x 480 Gantt) |
    | ``debug`` | False | check every invariant after each step |

    ``scenario`` may also be a mapping of ``"scenario"`` and the keywords (RLlib's
    ``env_config``: ``PPOConfig().environment(ScavengeEnv, env_config={...})``, with RLlib's
    ``"sync"`` vectorization); an unknown key raises ``TypeError``. In any process that has not imported ``mtgym`` (RLlib's and
    Ray's workers), the module-qualified id ``"mtgym:mtgym/Scavenge-v0"`` imports it and
    finds the env: ``gym.make("mtgym:mtgym/Scavenge-v0", obs_layout="flat")``,
    ``PPOConfig().environment("mtgym:mtgym/Scavenge-v0", env_config={...})``
    (``docs/clients.md``).

    Keywords left as None take the scenario file's ``episode`` section, then the defaults above.
    Each keyword is checked (``mtgym.env.args``): a wrong type raises ``TypeError``, a value out
    of range ``ValueError``, both naming the keyword; ``decision_interval_s`` must be finite and
    >= 0.001 s; an explicit ``max_count`` above N raises (nothing is clipped silently).
    ``reset(options=...)`` takes no options (any key raises ``ValueError``); ``noop()`` and
    ``sample_valid()`` before ``reset()``, and ``step()`` after the episode ended, raise
    ``RuntimeError``.

    ## Example
    >>> import gymnasium as gym, mtgym
    >>> env = gym.make("mtgym/Scavenge-v0", action_mode="delta")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(env.unwrapped.noop())
    >>> sorted(obs)[:3]
    ['action_mask', 'global', 'job_curve']
    >>> masks = env.get_wrapper_attr("action_masks")()  # through gym.make's wrappers
    >>> masks.dtype, bool((masks == obs["action_mask"].astype(bool)).all())
    (dtype('bool'), True)

    ## Version history
    - v0: initial release. Before 1.0 the id stays v0; changes that alter results:
      the default reward became ``normalized`` and ``nodes`` has one topology column for
      any depth (2026-12); the ``shares`` mode and the scale-free keys ``job_scale``,
      ``job_shape``, ``global_scale`` were added, and ``max_jobs`` left unset scales with the
      machine (``slot_rule``) instead of 16 (2026-12). ``obs_layout`` (``"flat"``,
      ``"masked"``) and the mapping form of ``scenario`` were added (2026-12; the default
      layout is unchanged).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        scenario: str | Generator | Instance | Mapping[str, Any] = "default",
        *,
        action_mode: str | None = None,
        reward: str | None = None,
        info_mode: str | None = None,
        horizon_s: float | None = None,
        decision_interval_s: float | None = None,
        max_jobs: int | None = None,
        max_count: int | None = None,
        obs_layout: str | None = None,
        render_mode: str | None = None,
        debug: bool = False,
    ) -> None:
        given = EnvKeywords(
            action_mode=action_mode,
            reward=reward,
            info_mode=info_mode,
            horizon_s=horizon_s,
            decision_interval_s=decision_interval_s,
            max_jobs=max_jobs,
            max_count=max_count,
            obs_layout=obs_layout,
            render_mode=render_mode,
            debug=debug,
        )
        if isinstance(scenario, Mapping):  # an RLlib ``env_config`` (or any mapping)
            scenario, given = keywords_from_config(scenario, given)
        self._fixed, self._generator = _scenario_source(scenario)
        # explicit keyword > the scenario file's episode section > built-in default, then
        # TypeError/ValueError naming the keyword (mtgym.env.args)
        section = getattr(self._generator, "episode", None)
        self._configure(check_keywords(resolve_keywords(given, section)))
        self._build_parts()

    def _configure(self, kw: EnvKeywords) -> None:
        """Set the env's settings and sizes from its checked keywords and the scenario.

        The sizes (nodes, topology levels, GPU types, the largest ``max_nodes``) come from a
        probe: the fixed instance, or the generator's instance 0 (every instance of a
        scenario has the same machine).

        Args:
            kw: the keywords, resolved and checked (``mtgym.env.args.check_keywords``).

        Raises:
            ValueError: ``max_count`` above the node count (``resolve_max_count``).
        """
        self.info_mode = InfoMode(kw.info_mode)
        probe = self._fixed if self._fixed is not None else self._generator(0)  # type: ignore[misc]  # sizes only
        self.num_nodes = probe.num_nodes
        cap = int(probe.jobs.max_nodes.max()) if probe.num_jobs else 1
        self.max_count = resolve_max_count(kw.max_count, cap, self.num_nodes)
        # None: the slots scale with the machine (``mtgym.env.slots.slot_rule``)
        max_jobs = kw.max_jobs
        self.num_slots = int(max_jobs) if max_jobs is not None else slot_rule(probe.num_nodes)
        self.action_mode = kw.action_mode
        self.reward_name = kw.reward
        self.horizon_s = kw.horizon_s
        self.decision_interval_s = kw.decision_interval_s
        self.obs_layout = kw.obs_layout
        self.render_mode = kw.render_mode
        self.debug = kw.debug
        self._num_levels = probe.cluster.topology.num_levels
        self._num_types = probe.cluster.num_gpu_types

    def _build_parts(self) -> None:
        """Build the action codec, the observation builder, the spaces and the per-episode
        holders (slots, render history), for the sizes ``_configure`` set; the episode
        itself (``instance``, ``state``) waits for ``reset``.
        """
        self.codec = make_codec(self.action_mode, self.num_nodes, self.num_slots, self.max_count)
        self.builder = ObservationBuilder(
            self.num_nodes,
            self.num_slots,
            self.max_count,
            self._num_levels,
            self._num_types,
            self.info_mode,
            self.codec.mask_size,
            scale_free=self.action_mode in SCALE_FREE_MODES,
        )
        self.action_space = self.codec.space
        self.layout = ObsLayout(self.obs_layout, self.builder.space)
        self.observation_space = self.layout.space
        self.features = self.builder.features  # each key's columns by name
        self.slots = JobSlots(self.num_slots)
        self.history = History()
        self.instance: Instance | None = None
        self.state: ClusterState | None = None
        self._step: Step | None = None
        self._mask = np.ones(self.codec.mask_size, dtype=np.int8)
        self.reset_obs: dict[str, np.ndarray] | None = None  # the last reset's ``Dict``
        self._ended = False

    # -- Gymnasium API ---------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode: the scenario's instance ``seed`` (class docstring: Seeds).

        Args:
            seed: the instance to play (also seeds ``np_random``); None: the next instance
                seed drawn from ``np_random``. A fixed ``Instance`` ignores it for the
                instance.
            options: None or empty (no option is supported).

        Returns:
            (observation, info): the first observation and ``time``, ``action_mask``,
            ``slots`` and ``queued``.

        Raises:
            ValueError: an option given, or an instance with another node count than the
                env was built for.
        """
        check_reset_options(options)
        super().reset(seed=seed)
        self._ended = False
        inst = self._fixed
        if inst is None:  # the evaluator's mapping: seed s -> the generator's instance s
            inst_seed = (
                int(seed) if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
            )
            inst = self._generator(inst_seed)  # type: ignore[misc]  # a generator when no fixed instance
        if inst.num_nodes != self.num_nodes:
            raise ValueError(
                f"the scenario's instance has {inst.num_nodes} nodes but the env was built for {self.num_nodes}"
            )
        if self.horizon_s is not None:
            inst = replace(inst, t_end=min(inst.t_end, inst.t_start + float(self.horizon_s)))
        self.instance = inst
        self.state = initial_state(inst)
        self.slots.reset()
        self.slots.update(self.state)
        self.profiler = PassiveProfiler(inst, self.max_count)
        self.builder.bind(inst)
        self.history.clear()
        self._step = None  # (built at the first step)
        obs = self._observe()
        return obs, step_info(
            float(self.state.time), self._mask, self.slots.job, self.builder.queued
        )

    def step(self, action):
        """Apply ``action`` now and simulate to the next decision (class docstring).

        Args:
            action: an action of ``action_space`` (any integer array-like; class
                docstring: Action). An infeasible one is repaired, not refused.

        Returns:
            (observation, reward, terminated, truncated, info), Gymnasium's step tuple.

        Raises:
            RuntimeError: before ``reset``, or after the episode ended.
            ValueError: an action outside the space (naming the entry and its value),
                or a placement that needs more nodes than are free; nothing changed.
        """
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        if self._ended:
            raise RuntimeError("the episode has ended (terminated or truncated); call reset()")
        # (ValueError before anything changes; the step's kernels check the range)
        a = self.codec.validate(action, check_range=False)
        step, s = self._step, self.state
        if step is None or step.state is not s:  # a new episode, or a state set from outside
            self._step = step = Step(
                s,
                self.instance,  # type: ignore[arg-type]  # set with the state
                self.codec,
                self.builder,
                self.slots,
                self.profiler,
                self.reward_name,
                self.decision_interval_s,
            )
        t0 = s.time
        out = step(a)
        self._mask = step.action_mask
        if self.debug:
            check_state(s, self.instance)  # type: ignore[arg-type]  # set with the state
        if self.render_mode == "rgb_array":
            self.history.record(t0, s.time, s.node_job, s.available)
        self._ended = out[2] or out[3]
        if self.obs_layout != "dict":
            out = (self.layout(out[0]), *out[1:])
        return out

    def __getstate__(self) -> dict[str, Any]:
        """Picklable and deep-copyable (for look-ahead search): the compiled step's arrays
        are not carried, the copy builds its own at its first step.

        Returns:
            The instance's ``__dict__``, ``_step`` set to None.
        """
        d = self.__dict__.copy()
        d["_step"] = None
        return d

    def render(self):
        """The current frame in ``render_mode`` (class docstring: Arguments).

        Returns:
            ``"ansi"``: a text summary (``render_ansi``); ``"rgb_array"``: a (480, 640, 3)
            uint8 Gantt chart of the last 400 steps since the reset (``render_gantt``);
            None without a render mode or before ``reset``.
        """
        if self.render_mode is None or self.state is None:
            return None
        if self.render_mode == "ansi":
            return render_ansi(self.state, self.instance, self.slots.job)  # type: ignore[arg-type]  # set with the state
        return render_gantt(self.history, self.instance, self.state.time)  # type: ignore[arg-type]  # set with the state

    # -- masks and helpers -----------------------------------------------------------
    def action_masks(self) -> np.ndarray:
        """Legal actions as a flat bool array (sb3-contrib's MaskablePPO convention).

        Returns:
            (mask size,) bool, the per-dimension masks one after the other (a fresh
            array); per-slot bounds only (class docstring: Action).
        """
        return self._mask.astype(bool)

    def budget_masks(self) -> np.ndarray:
        """The budget mask (``mtgym.env.actions.budget``): ``action_masks()``' legal
        choices, each with its node cost, and the shared budget in every keep entry, so a
        learner that draws the slots in order draws only actions that need no repair
        (``agents.budget_dist``; ``mtgym train --budget-masks``). ``shares`` only.

        Returns:
            (mask size,) float32, a fresh array.

        Raises:
            RuntimeError: before ``reset``.
            ValueError: another action mode.
        """
        if self.state is None:
            raise RuntimeError("call reset() before budget_masks()")
        step = self._step  # (its frame: the same arrays, kept current by the steps)
        frame = step.actions if step is not None and step.state is self.state else None
        return self.codec.budget_mask(self.state, self.instance, self.slots, frame)

    def sample_valid(self, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """A random action that needs no repair (``info["repaired"]`` stays False): unlike
        sampling per slot from ``action_masks()``, it respects the shared node budget.

        Args:
            rng: a ``numpy.random.Generator``, or a seed for a new one; None: the env's
                ``np_random``.

        Returns:
            An action of ``action_space``, (A,) int64.

        Raises:
            RuntimeError: before ``reset``.
        """
        if self.state is None:
            raise RuntimeError("call reset() before sample_valid()")
        if rng is None:
            rng = self.np_random
        elif not isinstance(rng, np.random.Generator):
            rng = np.random.default_rng(rng)
        return self.codec.sample_valid(self.state, self.instance, self.slots, rng)  # type: ignore[arg-type]  # set with the state

    def noop(self) -> np.ndarray:
        """The action that keeps every job's current allocation.

        Returns:
            (A,) int64 (the mode's ``noop``; in ``counts`` a job above ``max_count`` is
            asked for ``max_count``).

        Raises:
            RuntimeError: before ``reset``.
        """
        if self.state is None:
            raise RuntimeError("call reset() before noop()")
        return self.codec.noop(self.state, self.instance, self.slots)  # type: ignore[arg-type]  # set with the state

    def _observe(self) -> Any:
        """The observation of the state now (``ObservationBuilder.build``) in the env's
        ``obs_layout``, its mask recomputed and kept as ``_mask``.
        """
        self._mask = self.codec.mask(self.state, self.instance, self.slots).copy()
        obs = self.builder.build(
            self.state,  # type: ignore[arg-type]  # set by reset
            self.instance,  # type: ignore[arg-type]  # set by reset
            self.slots,
            self.profiler,
            self._mask,
            self.instance.t_end,  # type: ignore[union-attr]  # set by reset
        )
        self.reset_obs = obs  # (the ``Dict`` whatever the layout: the batched core's input)
        return self.layout(obs)


def _scenario_source(scenario: Any) -> tuple[Instance | None, Generator | None]:
    """Where the env's instances come from.

    Args:
        scenario: ``ScavengeEnv``'s first argument: a fixed ``Instance``; a built-in name,
            preset name or scenario file path (a ``str`` or ``os.PathLike``); or a
            ``Generator`` (any callable seed -> ``Instance``).

    Returns:
        (the fixed instance, None) for an ``Instance``, else (None, the generator), a
        name or path loaded by ``mtgym.scenario.registry.get_generator``.

    Raises:
        TypeError: ``scenario`` is none of these.
    """
    if isinstance(scenario, Instance):
        return scenario, None
    if isinstance(scenario, (str, PathLike)):
        from mtgym.scenario.registry import get_generator

        return None, get_generator(scenario)  # type: ignore[arg-type]  # any os.PathLike works
    if callable(scenario):
        return None, scenario
    raise TypeError(
        "scenario must be a built-in name, preset name or scenario file path, a "
        f"Generator or an Instance; got {scenario!r}"
    )
