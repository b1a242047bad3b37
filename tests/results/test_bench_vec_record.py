"""``scripts/bench_vec.py --record NAME``: its tables as a result file (kind ``bench_vec``),
built here from a fake table (the real benchmark is never run in the tests)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from rich.table import Table

from mtgym.results import store
from mtgym.results.provenance import capture

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_vec.py"


@pytest.fixture(scope="module")
def bench_vec():
    spec = importlib.util.spec_from_file_location("bench_vec", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_vec__result_file_holds_each_table_row_with_its_numbers(bench_vec, tmp_path):
    table = Table(title="env steps/s (fake)")
    for col in ("B", "batched", "batched / Sync", "note"):
        table.add_column(col)
    table.add_row("1", "12,345", "3.1x", "")
    table.add_row("256", "1,000,000", "40.0x", "n/a")
    options = {k: None for k in bench_vec.OPTIONS} | {"no_memory": False, "sizes": [1, 256]}
    measured = {"memory": "memory: default-512 at B = 256: 1 MiB", "train_rates": {"x": [1.5]}}
    prov = capture(["--record", "bv"])
    result = bench_vec.result_file(prov, [table], measured, options, 2.5)
    path = store.record(result, tmp_path, "bv")
    back = store.read_result(path)
    assert back.kind == "bench_vec" and back.wall_s == 2.5 and back.seeds == [0]
    assert [s.name for s in back.scenarios] == ["default", "default-512"]
    assert back.rows == [
        {
            "table": "env steps/s (fake)",
            "B": 1,
            "batched": 12345,
            "batched / Sync": 3.1,
            "note": "",
        },
        {
            "table": "env steps/s (fake)",
            "B": 256,
            "batched": 1_000_000,
            "batched / Sync": 40.0,
            "note": "n/a",
        },
    ]
    assert back.aggregates["tables"] == ["env steps/s (fake)"]
    assert back.aggregates["memory"].startswith("memory: default-512")
    assert back.aggregates["train_rates"] == {"x": [1.5]}
    assert back.aggregates["options"]["sizes"] == [1, 256]
    no_mem = bench_vec.result_file(prov, [], {}, {**options, "no_memory": True}, 1.0)
    assert [s.name for s in no_mem.scenarios] == ["default"] and no_mem.rows == []
