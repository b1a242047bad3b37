"""``scripts/gpu_check.sh --device cpu``: the GPU check's dry run, end to end on CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "scripts" / "gpu_check.sh"


@pytest.mark.slow
@pytest.mark.serial  # three real replays: it needs the cores to itself (see the Makefile)
def test_gpu_check__cpu_dry_run(bridge_dir):
    out = bridge_dir / "check"
    cmd = ["bash", str(SCRIPT), "--device", "cpu", "--out", str(out), "--python", sys.executable]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("gpu_check dry run on CPU")
    assert lines[-1] == "gpu_check: OK"
    runs = lines.index(
        "runs (start/up/down: seconds, mean (min-max); GPU: rank 0, mean over the run)"
    )
    rows = {x.split()[0]: x.split() for x in lines[runs + 2 : runs + 5]}
    assert list(rows) == ["agent", "torchrun", "calibrated"]
    # both launch modes; the agent spawns its workers, as it does on CUDA
    assert rows["agent"][1] == "agent/spawn" and rows["calibrated"][1] == "agent/spawn"
    assert rows["torchrun"][1] == "torchrun/torchrun"
    for name, row in rows.items():
        assert row[2] == "0" and row[3] == "0", (name, row)  # no crash, no failed job
        assert int(row[4].replace(",", "")) > 0, (name, row)  # samples
        rep = json.loads((out / name / "report.json").read_text())
        assert rep["ok"] and rep["jobs"]["0"]["torch_model"] == "resnet50-tiny"
        assert rep["jobs"]["0"]["device"] == "cpu" and rep["jobs"]["0"]["gpu"] is None
    # the third run was predicted with the first run's calibration, per job and node count
    assert (out / "agent" / "calibration.json").exists()
    cal = json.loads((out / "calibrated" / "report-calibrated.json").read_text())
    assert cal["prediction_source"] == f"calibration:{out / 'agent' / 'calibration.json'}"
    table = lines.index(
        "calibrated prediction of run 'calibrated' (error = predicted/measured - 1)"
    )
    err_rows = [x.split() for x in lines[table + 2 : -1]]
    assert err_rows and all(x[0] == "0" and x[1] == "resnet50-tiny" for x in err_rows)
    assert err_rows[-1][2] == "total"
