"""Live Slurm fixtures: a throw-away cluster on 127.0.0.1, stopped by PID even on failure.

The tests skip when Slurm is not installed (``scripts/install_slurm.sh``; ``make test``
runs it), except when ``MTGYM_REQUIRE_SLURM=1`` (``make test`` as root with apt, i.e. CI):
then a missing Slurm fails them.
"""

from __future__ import annotations

import contextlib
import os
import time

import pytest

from mtgym.scavenger.testing import LocalSlurm, slurm_missing


def _need_slurm() -> None:
    why = slurm_missing()
    if why is None:
        return
    if os.environ.get("MTGYM_REQUIRE_SLURM") == "1":
        pytest.fail(f"MTGYM_REQUIRE_SLURM=1 but {why}")
    pytest.skip(why)


@pytest.fixture
def need_slurm() -> None:
    """Skip (or fail, under ``MTGYM_REQUIRE_SLURM=1``) when Slurm is not installed."""
    _need_slurm()


@pytest.fixture(scope="module")
def slurm_cluster():
    """Four nodes n1..n4 (2 x a100 each), partitions main (default) and scav (preemptible)."""
    _need_slurm()
    cluster = LocalSlurm(num_nodes=4, gres="gpu:a100:2", slurmd_timeout_s=6)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        assert cluster.pids() == [], f"Slurm daemons left running: {cluster.pids()}"


@pytest.fixture
def slurm(slurm_cluster: LocalSlurm):
    """The module's cluster, back to four idle nodes and no jobs after the test."""
    yield slurm_cluster
    c = slurm_cluster
    c.cancel_all()
    for name in c.node_names:
        c.start_slurmd(name)
        with contextlib.suppress(Exception):
            c.resume(name)
    with contextlib.suppress(Exception):
        c.run(["scontrol", "delete", "reservationname=soon"], check=False)
        c.run(["scontrol", "delete", "reservationname=later"], check=False)
    c.wait_states({n: "idle" for n in c.node_names}, timeout_s=40)
    time.sleep(0.2)
