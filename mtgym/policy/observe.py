"""``ViewObserver``: the env's observation and action decoding, driven by ``SchedulerView``s.

A learned policy is trained on ``ScavengeEnv``'s observations and acts through its action
codec. To run it as a ``Policy`` (``play``, ``evaluate``, the Ray backend, ``bridge record``,
``scavenge``), this module rebuilds exactly what the env would show from the views the
policy is given: it reuses the env's ``ObservationBuilder``, ``ActionCodec`` and
``JobSlots`` (one observation code path), fed with state-shaped and instance-shaped
stand-ins made of the view's public arrays. Nothing hidden reaches them: the view is already
information-limited (``mtgym.sim.view``).

What the view does not carry is derived:

- the slot admission cursor: jobs are stored in submission order, so the jobs submitted so
  far are those whose status left ``FUTURE``;
- a job pauses (rescale or start-up) when it holds nodes but its reported rate is 0 (the
  view shows 0 while a job pauses, and a running job's rate is positive);
- the number of GPU types: the largest type index in the cluster plus one.

With views from ``ViewBuilder`` and decisions at the same times as the env's steps, the
observations are the env's, bit for bit (``tests/agents/test_agent_policy.py``). The
``profiled`` information mode is not supported: its measured curves need the jobs' redo
debts, which views do not show.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from mtgym.core.names import SCALE_FREE_MODES
from mtgym.core.types import JobStatus
from mtgym.env.actions import ActionCodec, make_codec
from mtgym.env.observation import ObservationBuilder
from mtgym.env.slots import JobSlots, slot_rule
from mtgym.sim.view import InfoMode, SchedulerView

_FUTURE = int(JobStatus.FUTURE)


class ViewObserver:
    """Observations and action decoding for one agent's env settings (module docstring).

    Args:
        action_mode: The env's action mode (``mtgym.core.names.ACTION_MODES``).
        max_jobs: The env's job slots; None: ``slot_rule`` of each view's node count,
            set at ``reset``.
        max_count: The largest node count an action gives one job; None: the largest
            ``max_nodes`` of the episode's jobs. Either way at most the node count.
        info_mode: ``user`` or ``oracle`` (the env's ``info_mode``).

    Raises:
        ValueError: ``info_mode`` is ``profiled`` (module docstring).

    Attributes:
        mask: The action mask of the last ``observe`` (empty before the first).
    """

    def __init__(
        self,
        *,
        action_mode: str,
        max_jobs: int | None,
        max_count: int | None,
        info_mode: InfoMode | str,
    ) -> None:
        self.action_mode = action_mode
        self.max_jobs = max_jobs  # None: ``slot_rule`` of each view's cluster (at ``reset``)
        self.num_slots = int(max_jobs) if max_jobs is not None else 0
        self.max_count_arg = max_count
        self.info_mode = InfoMode(info_mode)
        if self.info_mode is InfoMode.PROFILED:
            raise ValueError(
                "info_mode 'profiled' cannot be observed from views (the passive profiler "
                "needs the jobs' redo debts); use 'user' or 'oracle'"
            )
        self.slots = JobSlots(max(self.num_slots, 1))
        self.codec: ActionCodec | None = None
        self.builder: ObservationBuilder | None = None
        self.mask = np.zeros(0, dtype=np.int8)

    def reset(self, view: SchedulerView) -> None:
        """Size the codec and builder for the view's cluster and bind its jobs.

        Args:
            view: The episode's first view, from a ``ViewBuilder`` (it carries
                ``idle_since``); its time is the episode's start.

        Raises:
            ValueError: the view has no ``idle_since``.
        """
        if view.idle_since is None:
            raise ValueError(
                "the view carries no idle_since (build views with mtgym.sim.view.ViewBuilder)"
            )
        N, J = view.num_nodes, view.num_jobs
        if self.max_jobs is None:
            self.num_slots = slot_rule(N)
            self.slots = JobSlots(self.num_slots)
        cap = int(view.max_nodes.max()) if J else 1
        max_count = int(min(self.max_count_arg if self.max_count_arg is not None else cap, N))
        self.codec = make_codec(self.action_mode, N, self.num_slots, max_count)
        levels = int(view.topology_coords.shape[1])
        types = int(view.gpu_type.max()) + 1 if N else 1
        self.builder = ObservationBuilder(
            N,
            self.num_slots,
            max_count,
            levels,
            types,
            self.info_mode,
            self.codec.mask_size,
            scale_free=self.action_mode in SCALE_FREE_MODES,
        )
        curve, up, down = view.curve_tput, view.r_up_s, view.r_down_s
        self._jobs = SimpleNamespace(
            app_class=view.app_class,
            min_nodes=view.min_nodes,
            max_nodes=view.max_nodes,
            submit_s=view.submit_s,
            work=view.work,
            curve_nodes=view.curve_nodes,
            # the view's curve and costs are already the mode's (declared or true)
            curve_tput=curve,
            declared_curve_tput=curve,
            r_up_s=up,
            declared_r_up_s=up,
            r_down_s=down,
            declared_r_down_s=down,
        )
        topo = SimpleNamespace(coords=view.topology_coords, num_levels=levels)
        cluster = SimpleNamespace(
            gpu_type=view.gpu_type, profiled_slowdown=view.slowdown, topology=topo
        )
        self._t_start = float(view.time)
        self._instance = SimpleNamespace(
            jobs=self._jobs, cluster=cluster, num_jobs=J, num_nodes=N, t_start=self._t_start
        )
        self.builder.bind(self._instance)  # type: ignore[arg-type]
        self._node_index = np.arange(N, dtype=np.int64)
        self.slots.reset()

    def observe(self, view: SchedulerView) -> dict[str, np.ndarray]:
        """The env's observation of the state ``view`` shows (call ``reset`` first).

        Also updates the job slots (jobs take and leave slots as the env's would) and
        ``mask``, and remembers the view for ``encode`` and ``decode``.

        Args:
            view: The current view, of the episode ``reset`` was given.

        Returns:
            The observation dict, as ``ScavengeEnv`` returns it at this state.

        Raises:
            RuntimeError: ``reset`` was not called.
        """
        if self.builder is None or self.codec is None:
            raise RuntimeError("call reset(view) before observe(view)")
        state = self._state(view)
        self.slots.update(state)  # type: ignore[arg-type]
        since = np.asarray(view.idle_since, dtype=np.float64)
        end = np.asarray(view.window_end, dtype=np.float64)
        # one "window" per node: the node's own index while it is lent
        self._instance.supply = SimpleNamespace(
            start_s=np.where(np.isnan(since), 0.0, since), end_s=end, end_known=np.isfinite(end)
        )
        self._state_now = state
        self.mask = self.codec.mask(state, self._instance, self.slots).copy()
        return self.builder.build(
            state,  # type: ignore[arg-type]
            self._instance,  # type: ignore[arg-type]
            self.slots,
            None,  # type: ignore[arg-type]  # no profiler outside ``profiled`` mode
            self.mask,
            float(view.t_end),
        )

    def encode(self, node_job: np.ndarray) -> np.ndarray:
        """The mode's action nearest the node map ``node_job`` on the last observed view
        (``ActionCodec.encode``).

        Args:
            node_job: (N,) the wanted job per node, -1 = none.
        """
        return self.codec.encode(node_job, self._state_now, self._instance, self.slots)  # type: ignore[union-attr,arg-type]

    def decode(self, action: np.ndarray) -> np.ndarray:
        """The node map the env would apply for ``action`` on the last observed view.

        Args:
            action: An action of the mode's action space.

        Returns:
            (N,) job per node, -1 = none.
        """
        node_job, _ = self.codec.decode(action, self._state_now, self._instance, self.slots)  # type: ignore[union-attr]
        return node_job

    def _state(self, view: SchedulerView) -> SimpleNamespace:
        """State-shaped copies of the view's arrays, with the dtypes the kernels take.

        Derived fields (module docstring): ``window`` is the node's own index while it is
        idle (one window per node), ``stall_until`` is +inf for a pausing job and -inf
        otherwise, and ``arrival_cursor`` counts the jobs no longer ``FUTURE``.
        """
        available = np.array(view.available, dtype=np.bool_)
        n_nodes = np.array(view.n_nodes, dtype=np.int32)
        rate = np.array(view.rate, dtype=np.float64)
        pausing = (n_nodes > 0) & (rate == 0.0)
        status = np.array(view.status, dtype=np.int8)
        return SimpleNamespace(
            time=float(view.time),
            available=available,
            node_job=np.array(view.node_job, dtype=np.int32),
            window=np.where(available, self._node_index, -1),
            status=status,
            n_nodes=n_nodes,
            rate=rate,
            stall_until=np.where(pausing, np.inf, -np.inf),
            progress=np.array(view.progress, dtype=np.float64),
            arrival_cursor=int(np.count_nonzero(status != _FUTURE)),
        )
