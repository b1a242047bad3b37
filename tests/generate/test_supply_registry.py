"""A supply source is one module plus one line in ``SOURCES``: the scenario schema, its JSON
Schema and the builder take it from there (a toy source added in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

TOY = textwrap.dedent(
    """
    from dataclasses import dataclass
    from typing import ClassVar, Literal

    import numpy as np

    from mtgym.core.instance import Supply
    from mtgym.core.spec import Pos, Strict, desc
    import mtgym.generate.supply as supply


    class HalfIdleSpec(Strict):
        kind: Literal["half-idle"] = desc("the first half of the nodes idle all along")
        fraction: Pos = desc("share of the nodes idle", 0.5, le=1)


    @dataclass(frozen=True)
    class HalfIdle:
        fraction: float = 0.5
        Spec: ClassVar[type] = HalfIdleSpec

        @classmethod
        def from_spec(cls, spec, resolve):
            return cls(spec.fraction)

        def generate(self, rng, num_nodes, t0, t1):
            n = np.arange(max(1, int(num_nodes * self.fraction)))
            return Supply.from_windows(
                n, np.full(n.size, t0), np.full(n.size, t1), num_nodes=num_nodes
            )


    supply.SOURCES["half-idle"] = HalfIdle  # the one registry line

    import json
    from mtgym.scenario.load import parse_text
    from mtgym.scenario.schema import ScenarioSpec
    from mtgym.scenario.build import SpecGenerator

    text = '''
    name: toy
    generator:
      kind: synthetic
      cluster:
        num_nodes: 8
        gpus_per_node: 1
        gpu_types: [A100]
        group_types: [0]
        levels:
          - {name: node, bandwidth_gbps: 300.0, latency_s: 1.0e-6}
          - {name: rack, group_size: 4, bandwidth_gbps: 50.0, latency_s: 2.0e-6}
          - {name: system, bandwidth_gbps: 25.0, latency_s: 5.0e-6}
      supply: {kind: half-idle, fraction: 0.5}
      workload: {kind: mix, num_jobs: 3}
      horizon_s: 3600
    '''
    spec = ScenarioSpec.model_validate(parse_text(text, "toy.yaml"))
    inst = SpecGenerator(spec, __import__("pathlib").Path("."))(0)
    schema = json.dumps(ScenarioSpec.model_json_schema())
    print(inst.supply.num_windows, "half-idle" in schema)
    """
)


def test_supply_registry__a_new_source_is_one_module_and_one_line():
    out = subprocess.run(
        [sys.executable, "-c", TOY], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["4", "True"]
