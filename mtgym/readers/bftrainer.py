"""Reader of the BFTrainer job workloads (ImageNet 1001J and the ShuffleNet HPS files).

One CSV row per job with the columns of ``JOB_COLUMNS`` and one ``tput_n<k>`` column per
measured node count k (the whole job's samples/s on k nodes); other columns are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mtgym.core.errors import DataError
from mtgym.readers._csv import check, floats, ints, read_table, readonly, strs, unique_check

JOB_COLUMNS = (
    "job_id",
    "model",
    "submit_s",
    "jmin",
    "jmax",
    "pmax_samples",
    "rescale_up_s",
    "rescale_down_s",
)
TPUT_PATTERN = re.compile(r"tput_n(\d+)")


@dataclass(frozen=True)
class BFTrainerJobs:
    """Malleable jobs with their node bounds, work, rescale costs and scalability curves.

    Attributes:
        job_id: str job names (``J00000``...), in file order.
        model: str DNN model name.
        submit_s: float64 submission time, seconds since the Summit trace start.
        jmin: int32 fewest nodes the job may run on (>= 1).
        jmax: int32 most nodes the job may run on (>= jmin).
        pmax_samples: float64 work in samples; the job ends after this many.
        rescale_up_s: float64 seconds of lost progress charged when scaling up.
        rescale_down_s: float64 seconds of lost progress charged when scaling down or
            being pre-empted.
        curve_nodes: int32 (K+1,) breakpoints [0, n1, n2, ...], ascending.
        curve_tput: float64 (J, K+1) whole-job samples/s at each breakpoint (0 at 0 nodes);
            the Replayer interpolates linearly between breakpoints.
    """

    job_id: np.ndarray
    model: np.ndarray
    submit_s: np.ndarray
    jmin: np.ndarray
    jmax: np.ndarray
    pmax_samples: np.ndarray
    rescale_up_s: np.ndarray
    rescale_down_s: np.ndarray
    curve_nodes: np.ndarray
    curve_tput: np.ndarray

    def __len__(self) -> int:
        return len(self.job_id)


def _k(column: str) -> int:
    """Node count k of a ``tput_n<k>`` column."""
    return int(column[len("tput_n") :])


def read_bftrainer_jobs(path: str | Path) -> BFTrainerJobs:
    """Read a BFTrainer workload CSV; the curve columns are every ``tput_n<k>`` present.

    Args:
        path: the CSV, plain or gzip-compressed.

    Returns:
        The jobs in file order, their curves starting at (0 nodes, 0 samples/s) and then
        the ``tput_n<k>`` columns by increasing k.

    Raises:
        DataError: missing file or column, no ``tput_n<k>`` column (or k < 1, or one k
            twice), bad number, duplicated job_id, jmin < 1, jmax < jmin, pmax <= 0,
            negative rescale cost or a negative/non-finite throughput.
    """
    t = read_table(path, JOB_COLUMNS, keep=lambda h: TPUT_PATTERN.fullmatch(h) is not None)
    tput_cols = sorted((c for c in t.columns if TPUT_PATTERN.fullmatch(c)), key=_k)
    if not tput_cols:
        raise DataError(
            t.path,
            "tput_n<k>",
            "no such column",
            "at least one throughput column tput_n<k>, k >= 1",
            row=1,
        )
    ks = [_k(c) for c in tput_cols]
    for i, (c, k) in enumerate(zip(tput_cols, ks, strict=True)):
        if k < 1 or (i > 0 and ks[i - 1] == k):
            raise DataError(
                t.path, c, c, "tput_n<k> columns with distinct node counts k >= 1", row=1
            )

    job_id = strs(t, "job_id")
    unique_check(t, "job_id", job_id)
    jmin = ints(t, "jmin")
    check(t, "jmin", jmin >= 1, "an integer >= 1")
    jmax = ints(t, "jmax")
    check(t, "jmax", jmax >= jmin, "an integer >= jmin of the same row")
    pmax = floats(t, "pmax_samples")
    check(t, "pmax_samples", pmax > 0, "a finite number > 0")
    costs = {}
    for name in ("rescale_up_s", "rescale_down_s"):
        costs[name] = floats(t, name)
        check(t, name, costs[name] >= 0, "a finite number >= 0")
    curve = np.zeros((t.n_rows, len(ks) + 1), dtype=np.float64)
    for j, name in enumerate(tput_cols, start=1):
        curve[:, j] = floats(t, name)
        check(t, name, curve[:, j] >= 0, "a finite number >= 0 (samples/s)")
    return BFTrainerJobs(
        job_id=readonly(job_id),
        model=readonly(strs(t, "model")),
        submit_s=readonly(floats(t, "submit_s")),
        jmin=readonly(jmin),
        jmax=readonly(jmax),
        pmax_samples=readonly(pmax),
        rescale_up_s=readonly(costs["rescale_up_s"]),
        rescale_down_s=readonly(costs["rescale_down_s"]),
        curve_nodes=readonly(np.array([0, *ks], dtype=np.int32)),
        curve_tput=readonly(curve),
    )
