"""The env's step as general Python code: the reference the compiled step
(``mtgym.env.step``) is checked against, bit for bit (``tests/env/test_step.py``).

This was the env's general path before the compiled step became the only one. It decodes
with the placement's Python entry (``pack_targets``), runs ``advance``, updates the
profiler and the slots through their Python methods, computes the reward with numpy, and
builds the observation with ``ObservationBuilder.build``. The info dict is assembled by the
package's ``step_info`` (its keys and order are the contract; its values come from here).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.types import DECISION_EVENTS, EventKind
from mtgym.env import ScavengeEnv
from mtgym.env.actions.assign import _decode_assign
from mtgym.env.actions.delta import _delta_targets
from mtgym.env.actions.pack import _repair_ordered
from mtgym.env.step import step_info
from mtgym.metrics import compute_metrics, reference_rate
from mtgym.model.placement import pack_targets
from mtgym.sim.dynamics import advance, throughput_model
from mtgym.sim.invariants import check_state
from mtgym.sim.numeric import dot, pairwise_sum
from mtgym.sim.state import ClusterState


@dataclass
class StepDelta:
    """What a reward needs from the state before the step."""

    progress: np.ndarray
    active_job_s: float


class RewardFn:
    """The rewards of ``mtgym.env.reward``, as numpy formulas."""

    def __init__(self, name: str, instance: Instance) -> None:
        self.name = name
        self._inv_work = 1.0 / instance.jobs.work
        # a job's sample in best-node-seconds, over the machine-hour (``normalized``)
        self._norm_weight = 1.0 / (reference_rate(instance) * max(instance.num_nodes, 1) * 3600.0)
        best = throughput_model(instance).best_node_rate()
        self._tput_scale = (
            1.0 / max(float(best.max()) * instance.num_nodes * 3600.0, 1e-12) if best.size else 0.0
        )

    def __call__(self, before: StepDelta, state: ClusterState) -> float:
        """The reward of the step that led from ``before`` to ``state``."""
        if self.name == "progress":
            return dot(state.progress - before.progress, self._inv_work)
        if self.name == "normalized":
            return dot(state.progress - before.progress, self._norm_weight)
        if self.name == "throughput":
            return (pairwise_sum(state.progress) - pairwise_sum(before.progress)) * self._tput_scale
        if self.name == "jct":
            return -(state.active_job_s - before.active_job_s) / 3600.0
        raise ValueError(f"reference reward: unknown reward {self.name!r}")


def decode(env: ScavengeEnv, action) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """The node map of an action and the decoder's repair counts (general path)."""
    a = env.codec.validate(action)
    s, inst, slots = env.state, env.instance, env.slots
    if env.action_mode == "assign":
        _, empty, node_job = _decode_assign(a, slots.job)
        return node_job, (empty, 0, 0, 0)
    jobs = inst.jobs
    if env.action_mode == "delta":
        target = _delta_targets(
            a, slots.job, s.n_nodes, jobs.min_nodes, jobs.max_nodes, env.max_count
        )
    else:
        target = np.array(a, dtype=np.int64)
    counts, order_jobs, order_targets = _repair_ordered(
        target, slots.present, np.maximum(slots.job, 0), jobs.min_nodes, jobs.max_nodes, s.available
    )
    cl = inst.cluster
    node_job = pack_targets(
        s.available, s.node_job, cl.profiled_slowdown, jobs.app_class, cl.topology.coords,
        order_jobs, order_targets,
    )  # fmt: skip
    return node_job, counts


class ReferenceEnv(ScavengeEnv):
    """``ScavengeEnv`` stepping through the general Python path."""

    def step(self, action):
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        s, inst = self.state, self.instance
        reward_fn = RewardFn(self.reward_name, inst)
        node_job, counts = decode(self, action)
        before = StepDelta(s.progress.copy(), s.active_job_s)
        t0, n0, d0 = s.time, s.n_nodes.copy(), s.debt.copy()
        if self.decision_interval_s is None:
            until, stop_on = inst.t_end, DECISION_EVENTS
        else:
            until, stop_on = min(inst.t_end, t0 + self.decision_interval_s), EventKind.HORIZON
        s, info = advance(s, inst, node_job, until=until, stop_on=stop_on, copy=False)
        if self.debug:
            check_state(s, inst)
        self.state = s
        self.profiler.observe(t0, before.progress, n0, d0, s)
        if self.render_mode == "rgb_array":
            self.history.record(t0, s.time, s.node_job, s.available)
        self.slots.update(s)
        reward = reward_fn(before, s)
        terminated = bool(info.all_done)
        stuck = info.t1 == info.t0 and info.kinds == EventKind.NONE
        truncated = (not terminated) and (s.time >= inst.t_end or stuck)
        obs = self._observe()
        rep = self.codec.repair_record(counts[: len(self.codec.repair_keys)], info.repair)
        out = step_info(
            float(s.time),
            self._mask,
            self.slots.job,
            self.builder.queued,
            rep,
            (
                int(info.kinds),
                info.reclaimed_nodes,
                info.idle_nodes,
                info.arrivals,
                info.completions,
                info.stops,
                float(info.samples),
                float(info.t1 - info.t0),
            ),
            compute_metrics(s, inst).as_dict() if terminated or truncated else None,
        )
        return obs, reward, terminated, truncated, out
