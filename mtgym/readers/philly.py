"""Reader of PAL's Sia-Philly job traces (``pal-philly/workload-*.csv``) and PAL's constants.

``duration`` is NOT a time: PAL's artifact simulator consumes it as an iteration count. A job
runs ``duration`` iterations, each lasting :data:`PAL_ITER_TIME_S` of its model, stretched by
the slowest GPU's slowdown and by a cross-node locality factor (1.7 by default).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from mtgym.readers._csv import check, floats, ints, read_table, readonly, strs, unique_check

PHILLY_COLUMNS = ("job_id", "num_gpus", "submit_time", "duration", "model")

#: Variability class (column of ``32gpu-variability.csv``) PAL assigns to each trace model.
PAL_APP_CLASS = MappingProxyType(
    {"resnet50": "A", "GPT2": "B", "DCGAN": "B", "BERT": "B", "vgg19": "C", "PointNet": "D"}
)

#: Base time of one iteration (s) per trace model in PAL's artifact simulator.
PAL_ITER_TIME_S = MappingProxyType(
    {
        "BERT": 0.179,
        "DCGAN": 0.0469,
        "GPT2": 3.5714,
        "PointNet": 0.28125,
        "resnet50": 0.1754,
        "vgg19": 0.3006,
    }
)


def pal_app_class(model: str) -> str:
    """PAL's variability class of ``model``; ``"A"`` for a model PAL does not list.

    Args:
        model: a trace model name, case-sensitive (``"resnet50"``, ``"GPT2"``, ...).

    Returns:
        ``"A"``, ``"B"``, ``"C"`` or ``"D"`` (``AppClass.parse`` takes it).
    """
    return PAL_APP_CLASS.get(model, "A")


@dataclass(frozen=True)
class PhillyTrace:
    """Rigid GPU jobs of one PAL Philly workload, in file order.

    Attributes:
        job_id: int32 job number.
        num_gpus: int32 GPUs requested (>= 1).
        submit_s: float64 arrival, seconds from the trace start (column ``submit_time``).
        duration: float64 work as an ITERATION COUNT (PAL multiplies it by
            ``PAL_ITER_TIME_S[model]``), not seconds.
        model: str model name (vgg19, PointNet, resnet50, DCGAN, BERT, GPT2).
    """

    job_id: np.ndarray
    num_gpus: np.ndarray
    submit_s: np.ndarray
    duration: np.ndarray
    model: np.ndarray

    def __len__(self) -> int:
        return len(self.job_id)


def read_philly_trace(path: str | Path) -> PhillyTrace:
    """Read one ``workload-<n>.csv`` trace.

    Args:
        path: the CSV (columns ``PHILLY_COLUMNS``; others ignored), plain or gzip.

    Returns:
        The jobs in file order; ``duration`` stays an iteration count.

    Raises:
        DataError: missing file or column, bad number, duplicated job_id, num_gpus < 1,
            submit_time < 0 or duration <= 0.
    """
    t = read_table(path, PHILLY_COLUMNS)
    job_id = ints(t, "job_id")
    unique_check(t, "job_id", job_id)
    num_gpus = ints(t, "num_gpus")
    check(t, "num_gpus", num_gpus >= 1, "an integer >= 1")
    submit = floats(t, "submit_time")
    check(t, "submit_time", submit >= 0, "a finite number >= 0 (s)")
    duration = floats(t, "duration")
    check(t, "duration", duration > 0, "a finite number > 0 (iterations)")
    return PhillyTrace(
        job_id=readonly(job_id),
        num_gpus=readonly(num_gpus),
        submit_s=readonly(submit),
        duration=readonly(duration),
        model=readonly(strs(t, "model")),
    )
