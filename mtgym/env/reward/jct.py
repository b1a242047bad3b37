"""``jct``: minus the job-hours the step added to the jobs' completion times (Park's)."""

from __future__ import annotations

from numba import njit

from mtgym.env.reward.base import Reward


@njit(cache=True)
def _minus_job_hours(active: float, active0: float) -> float:  # pragma: no cover - jit
    return -(active - active0) / 3600.0


class JCT(Reward):
    """Minus the integral of the submitted, unfinished jobs over the step."""

    name = "jct"
    doc = (
        "minus the integral of the number of submitted, unfinished jobs over the step, in "
        "job-hours (Park's JCT reward): the return is minus the sum of job completion times."
    )
    inputs = ("active_job_s", "active_job_s0")
    kernel = _minus_job_hours


REWARD = JCT
