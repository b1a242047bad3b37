"""The state's fields are declared once (``ClusterState``); the engine's bundles, the
registers and the generated argument code follow that declaration."""

from __future__ import annotations

from dataclasses import fields

from mtgym.sim import codegen, engine
from mtgym.sim.state import FLOAT_SCALARS, INT_SCALARS, JOB_ARRAYS, NODE_ARRAYS, ClusterState


def test_codegen__kernel_args_is_current():
    # Stale after a change of ClusterState's fields: run ``python -m mtgym.sim.codegen``.
    assert codegen.TARGET.read_text() == codegen.render()


def test_codegen__every_state_field_has_one_place_in_the_kernels():
    kernel = (*NODE_ARRAYS, *JOB_ARRAYS, *FLOAT_SCALARS, *INT_SCALARS)
    assert sorted(kernel) == sorted(f.name for f in fields(ClusterState) if f.name != "timers")
    assert engine.Nodes._fields == NODE_ARRAYS and engine.JobVars._fields == JOB_ARRAYS
    assert FLOAT_SCALARS[engine.F_TIME] == "time" and len(FLOAT_SCALARS) == engine.F_SAMPLES
    assert INT_SCALARS[engine.R_ARRIVAL] == "arrival_cursor"
    assert len(INT_SCALARS) == engine.R_KINDS and engine.NUM_R == engine.R_HORIZON + 1
