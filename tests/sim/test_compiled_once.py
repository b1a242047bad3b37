"""Each kernel compiles once per type of what it computes on, not once more per array flag
or constant: an instance whose arrays are writable (a copy, an unpickled or a replaced
one) and a copied env reuse the kernels compiled for the instance itself
(``mtgym.core.instance.readonly_view``), and the env's step calls the engine's ``loop``
that ``advance`` compiled (``mtgym.sim.engine``)."""

from __future__ import annotations

import copy
import pickle
from dataclasses import replace

from numba.core import event

from mtgym.env.env import ScavengeEnv
from mtgym.policy.play import play
from mtgym.policy.registry import make_policy
from mtgym.scenario.registry import get_generator


class Compiles(event.Listener):
    """The names of the functions numba compiles (not those it loads from its cache)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def on_start(self, ev: event.Event) -> None:
        self.names.append(ev.data["dispatcher"].py_func.__qualname__)

    def on_end(self, ev: event.Event) -> None:
        pass


def _episodes(inst, envs=None) -> list[ScavengeEnv]:
    play(inst, make_policy("equal-share"))
    envs = envs or [
        ScavengeEnv(inst, action_mode="shares", info_mode=m) for m in ("user", "profiled")
    ]
    for env in envs:
        env.reset(seed=0)
        for _ in range(3):
            env.step(env.noop())
    return envs


def test_compiled_once__writable_instances_and_copied_envs_reuse_the_kernels():
    inst = get_generator("default")(0)
    inst = replace(inst, t_end=inst.t_start + 1800.0)
    envs = _episodes(inst)  # (compiled here, or loaded from the cache)
    jobs = inst.jobs
    writable = replace(inst, jobs=replace(jobs, work=jobs.work * 2.0, r_up_s=jobs.r_up_s + 1))
    assert writable.jobs.work.flags.writeable and not inst.jobs.work.flags.writeable
    with event.install_listener("numba:compile", Compiles()) as seen:
        _episodes(writable)
        _episodes(inst, [copy.deepcopy(e) for e in envs])
        _episodes(inst, [pickle.loads(pickle.dumps(e)) for e in envs])
    assert seen.names == []
