"""``SimKernel``, the kernels' one struct: every state field has its place, the arrays are
the state's own, the scalars travel by name, and a cached struct never outlives its arrays."""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from mtgym.sim import dynamics, engine, kernel
from mtgym.sim.state import FLOAT_SCALARS, INT_SCALARS, JOB_ARRAYS, NODE_ARRAYS, ClusterState
from mtgym.testing import linear_job, tiny_instance


def _instance():
    return tiny_instance(
        4,
        [linear_job("a", 10.0, 4, 5_000.0), linear_job("b", 20.0, 2, 8_000.0, submit_s=30.0)],
        windows=[(n, 0.0, 900.0) for n in range(4)],
    )


def test_sim_kernel__every_state_field_has_one_place():
    state_fields = {f.name for f in fields(ClusterState)} - {"timers"}  # (the heap: Python's)
    arrays = set(NODE_ARRAYS) | set(JOB_ARRAYS)
    scalars = set(FLOAT_SCALARS) | set(INT_SCALARS)
    assert arrays | scalars == state_fields and not arrays & scalars
    assert arrays <= set(kernel.FIELDS)
    assert scalars <= set(kernel.SCALARS.names)
    names = [*kernel.FIELDS, *kernel.SCALARS.names]
    assert len(names) == len(set(names))  # declared once, no name twice
    result_names = [name for name, _ in kernel.RESULTS]
    assert list(kernel.SCALARS.names[-len(result_names) :]) == result_names


def test_sim_kernel__instance_fields_resolve_and_bind_shares_the_state_arrays():
    inst = _instance()
    state = dynamics.initial_state(inst)
    values = kernel.fields_of(state, inst)
    assert set(values) == set(kernel.FIELDS)
    for name in (*NODE_ARRAYS, *JOB_ARRAYS):
        assert values[name] is getattr(state, name)
    np.testing.assert_array_equal(values["submit_s"], inst.jobs.submit_s)
    assert values["coords"] is inst.cluster.topology.coords
    assert values["t_end"] == inst.t_end and "end_known" not in values  # (the observation's)
    # the engine writes the state's own arrays: apply a map through the struct
    ep = kernel.bind(state, inst)
    node_map = np.array([0, 0, -1, -1], dtype=np.int32)
    code, bad = engine.run(ep, node_map, True, True, engine.THEN_NOTHING, 0.0, 0, np.inf, False)
    assert (code, bad) == (engine.DONE, -1)
    done = kernel.store(ep, state)
    np.testing.assert_array_equal(state.node_job, node_map)
    assert state.n_nodes[0] == 2 and state.rate[0] > 0
    assert done.decisions == 1 and done.rescaled_jobs == 1 and state.decisions == 1


def test_sim_kernel__scalars_load_and_store_by_name():
    inst = _instance()
    state = dynamics.initial_state(inst)
    ep = kernel.bind(state, inst)
    state.time, state.events, state.arrival_cursor = 12.5, 7, 1
    kernel.load(ep, state)
    row = ep.scalars[0]
    assert row["time"] == 12.5 and row["events"] == 7 and row["arrival_cursor"] == 1
    assert row["samples"] == 0.0 and row["event_kinds"] == 0  # a call's results start at zero
    row["time"], row["completions"], row["samples"] = 99.0, 3, 1.5
    done = kernel.store(ep, state)
    assert state.time == 99.0 and type(state.time) is float and type(state.events) is int
    assert done.completions == 3 and done.samples == 1.5 and done.time == 99.0


def test_sim_kernel__a_cached_struct_follows_the_state_object_and_its_arrays():
    inst = _instance()
    state = dynamics.initial_state(inst)
    first = kernel.bound(state, inst)
    assert kernel.bound(state, inst) is first  # in-place steps reuse it
    state.progress = state.progress.copy()  # an array replaced from outside
    second = kernel.bound(state, inst)
    assert second is not first
    copy = state.copy()  # a copy has its own arrays: its own struct
    assert kernel.bound(copy, inst) is not second
    # and advancing either never touches the other
    a = np.array([0, 0, 0, 0], dtype=np.int32)
    dynamics.advance(copy, inst, a, until=300.0, copy=False)
    assert copy.progress[0] > 0 and state.progress[0] == 0.0
    assert np.all(state.node_job == -1)


def test_sim_kernel__advance_in_place_matches_advance_on_copies():
    inst = _instance()
    a = np.array([0, 0, 1, 1], dtype=np.int32)
    s_copy = dynamics.initial_state(inst)
    s_inplace = dynamics.initial_state(inst)
    for until in (100.0, 200.0, 400.0, 900.0):
        s_copy, info_copy = dynamics.advance(s_copy, inst, a, until=until)
        s_inplace, info_inplace = dynamics.advance(s_inplace, inst, a, until=until, copy=False)
        assert info_copy == info_inplace
        for name in (*NODE_ARRAYS, *JOB_ARRAYS):
            np.testing.assert_array_equal(getattr(s_copy, name), getattr(s_inplace, name))
        for name in (*FLOAT_SCALARS, *INT_SCALARS):
            assert getattr(s_copy, name) == getattr(s_inplace, name)
