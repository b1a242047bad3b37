"""The bridge: replay the decisions a policy takes in the simulator on real elastic torch
training jobs, and measure the simulator against reality.

Pipeline::

    mtgym bridge record --scenario S --policy P --out trace.jsonl     # trace.py, record.py
    mtgym bridge replay trace.jsonl --out run1 --time-scale 10        # controller.py,
        # launcher.py, agent.py, worker.py -> run1/{report.md,report.json,calibration.json}
    mtgym bridge replay trace.jsonl --out run2 --calibration run1/calibration.json

Modules import torch lazily: ``import mtgym.bridge`` is cheap. See ``mtgym/bridge/README.md``.
"""

__all__ = [
    "agent",
    "calibrate",
    "check",
    "checkpoint",
    "cli",
    "controller",
    "gpu",
    "launcher",
    "measure",
    "predict",
    "record",
    "report",
    "trace",
    "worker",
]
