"""The client's retries and back-off, the state mapping, the live supply and the loop, on a
fake Slurm (a scripted command runner): no daemon needed.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mtgym.policy.equal_share import EqualShare
from mtgym.scavenger.launch import ReportLauncher, TokenSlurmLauncher
from mtgym.scavenger.loop import Scavenger
from mtgym.scavenger.slurm import (
    Backoff,
    ClusterSnapshot,
    JobInfo,
    NodeInfo,
    Reservation,
    SlurmClient,
    SlurmParseError,
    SlurmTimeoutError,
    SlurmUnavailableError,
)
from mtgym.scavenger.source import SlurmSupply, classify
from mtgym.testing.kit import linear_job, tiny_instance


class FakeSlurm:
    """A scripted Slurm: node states, jobs and failures set by the test; records calls."""

    def __init__(self, states: dict[str, str]) -> None:
        self.states = dict(states)
        self.squeue = ""
        self.resv = "No reservations in the system\n"
        self.fail: list[str] = []  # "timeout", "exit", "garbage" for the next calls
        self.calls: list[list[str]] = []

    def __call__(self, argv, timeout_s, env):
        self.calls.append(list(argv))
        if self.fail:
            how = self.fail.pop(0)
            if how == "timeout":
                raise subprocess.TimeoutExpired(argv, timeout_s)
            if how == "exit":
                return 1, "", "sinfo: error: Unable to contact slurm controller (connect failure)"
            if how == "missing":
                raise FileNotFoundError(2, "No such file or directory", argv[0])
            return 0, "this is | not sinfo\n", ""
        if argv[0] == "sinfo":
            return 0, "".join(f"{n}|{s}|scav|(null)|none\n" for n, s in self.states.items()), ""
        if argv[0] == "squeue":
            return 0, self.squeue, ""
        if argv[0] == "scontrol":
            return 0, self.resv, ""
        return 0, "", ""


def client(fake, attempts=3, sleeps=None):
    return SlurmClient(
        runner=fake,
        backoff=Backoff(attempts=attempts, base_s=0.5, factor=2, cap_s=1.5, jitter=0.25, seed=1),
        sleep=(sleeps.append if sleeps is not None else lambda s: None),
        clock=lambda: 1000.0,
    )


# -- client ------------------------------------------------------------------------------
def test_retry_then_success_with_backoff():
    fake, sleeps = FakeSlurm({"n1": "idle"}), []
    c = client(fake, attempts=4, sleeps=sleeps)
    fake.fail = ["timeout", "exit", "garbage"]
    nodes = c.nodes()
    assert nodes["n1"].idle
    assert len(fake.calls) == 4 and len(sleeps) == 3
    # exponential (0.5, 1, 2 -> capped 1.5) within +-25 % jitter, deterministic per seed
    for d, nominal in zip(sleeps, (0.5, 1.0, 1.5), strict=True):
        assert 0.75 * nominal <= d <= 1.25 * nominal
    sleeps2 = []
    fake.fail = ["timeout", "exit", "garbage"]
    client(fake, attempts=4, sleeps=sleeps2).nodes()
    assert sleeps2 == sleeps
    assert Backoff(jitter=0).delay(3) == 4.0


@pytest.mark.parametrize(
    ("how", "err", "text"),
    [
        ("timeout", SlurmTimeoutError, "no answer within"),
        ("exit", SlurmUnavailableError, "Unable to contact slurm controller"),
        ("missing", SlurmUnavailableError, "cannot run it"),
        ("garbage", SlurmParseError, "line 1"),
    ],
)
def test_retries_exhausted_clear_error(how, err, text):
    fake, sleeps = FakeSlurm({"n1": "idle"}), []
    fake.fail = [how] * 3
    with pytest.raises(err) as exc:
        client(fake, attempts=3, sleeps=sleeps).nodes()
    assert text in str(exc.value) and "after 3 attempts" in str(exc.value)
    assert "sinfo" in str(exc.value)
    assert len(sleeps) == 2 and sleeps[1] > sleeps[0] * 1.2


# -- state mapping -----------------------------------------------------------------------
def snap(nodes, jobs=(), resv=(), t=1000.0):
    infos = {}
    for n, s in nodes.items():
        from mtgym.scavenger.slurm import parse_state

        base, flags = parse_state(s)
        infos[n] = NodeInfo(n, s, base, flags)
    return ClusterSnapshot(t, infos, tuple(jobs), tuple(resv))


def job(jid, name, state, nodes=(), start=math.nan, sched=()):
    return JobInfo(jid, name, "u", state, tuple(nodes), start, tuple(sched), "main")


def test_classify_rules():
    s = snap(
        {
            "a": "idle",
            "b": "drain",
            "c": "idle*",
            "d": "alloc",  # ours
            "e": "mix",  # foreign
            "f": "idle",  # planned for a pending job in 10 s
            "g": "idle",  # reservation in 1 h
            "h": "idle",  # inside an active reservation
            "i": "down",
            "j": "resv",
        },
        jobs=[
            job("1", "mtgym-tok-0-g0", "RUNNING", ["d"]),
            job("2", "other", "RUNNING", ["e"]),
            job("3", "big", "PENDING", start=1010.0, sched=["f"]),
            job("4", "mtgym-tok-1-g0", "PENDING", start=1005.0, sched=["a"]),  # ours: no end
        ],
        resv=[
            Reservation("later", 1000.0 + 3600, 1000.0 + 7200, ("g",), "INACTIVE"),
            Reservation("now", 900.0, 2000.0, ("h",), "ACTIVE"),
        ],
    )
    v = classify(s, own_prefix="mtgym-tok-", margin_s=30)
    lend = {n for n, x in v.items() if x.lendable}
    assert lend == {"a", "d", "g"}
    assert v["d"].reason == "held" and v["a"].known_end == math.inf
    assert v["g"].known_end == 4600.0
    assert v["b"].reason == "drain" and v["c"].reason == "not_responding"
    assert v["e"].reason == "mix by job 2"
    assert v["f"].reason == "needed soon" and v["f"].known_end == 1010.0
    assert v["h"].reason == "reservation now" and v["i"].reason == "down"
    assert v["j"].reason == "reserved"
    # without own-job knowledge our own allocation counts as foreign
    assert not classify(s, own_prefix=None)["d"].lendable


# -- live supply -------------------------------------------------------------------------
def test_poll_events_stable_indices_and_capture():
    fake = FakeSlurm({"n10": "idle", "n2": "idle", "n1": "alloc"})
    t = [1000.0]
    c = client(fake)
    c.clock = lambda: t[0]
    sup = SlurmSupply(c, clock=lambda: t[0])
    ev = sup.poll()
    assert sup.names == ["n1", "n2", "n10"]  # natural order
    assert [(e.kind, e.name) for e in ev] == [("appear", "n2"), ("appear", "n10")]
    t[0] = 1005.0
    fake.states.update(n2="drain", n1="idle")
    fake.squeue = "5|big|bob|PENDING||N/A|n10|main\n"
    ev = sup.poll()
    assert [(e.kind, e.name, e.reason) for e in ev] == [
        ("reclaim", "n2", "drain"),
        ("appear", "n1", "idle"),
    ]
    t[0] = 1010.0
    del fake.states["n10"]  # vanished
    ev = sup.poll()
    assert [(e.kind, e.name, e.reason) for e in ev] == [("reclaim", "n10", "vanished")]
    assert sup.index == {"n1": 0, "n2": 1, "n10": 2}
    t[0] = 1012.0
    fake.fail = ["exit"] * 3
    ev = sup.poll()
    assert [(e.kind, e.name) for e in ev] == [("reclaim", "n1")]
    assert ev[0].reason.startswith("slurm unreachable") and sup.lendable == {}
    assert isinstance(sup.error, SlurmUnavailableError)
    supply = sup.capture(1000.0, 1020.0)
    rows = sorted(
        zip(supply.node.tolist(), supply.start_s.tolist(), supply.end_s.tolist(), strict=True)
    )
    assert rows == [(0, 5.0, 12.0), (1, 0.0, 5.0), (2, 0.0, 10.0)]


def test_generate_records_a_supply():
    fake = FakeSlurm({"n1": "idle", "n2": "alloc"})
    t = [0.0]

    def sleep(d):
        t[0] += d
        if t[0] >= 4.0:
            fake.states.update(n1="alloc", n2="idle")

    c = client(fake)
    c.clock = lambda: t[0]
    sup = SlurmSupply(c, clock=lambda: t[0], sleep=sleep, poll_s=2.0)
    out = sup.generate(np.random.default_rng(0), 2, 100.0, 110.0)
    rows = sorted(zip(out.node.tolist(), out.start_s.tolist(), out.end_s.tolist(), strict=True))
    assert rows == [(0, 100.0, 104.0), (1, 104.0, 110.0)]


# -- the loop ----------------------------------------------------------------------------
def two_job_scavenger(fake: FakeSlurm, t: list[float], out: Path) -> Scavenger:
    """Equal share of ``fake``'s four nodes between two linear jobs, on the clock ``t[0]``
    (its sleeps advance it), launches reported, not run."""
    c = client(fake)
    c.clock = lambda: t[0]
    sup = SlurmSupply(c, clock=lambda: t[0], own_prefix="mtgym-x-")
    inst = tiny_instance(4, [linear_job("a", 10.0, 4, 1e9), linear_job("b", 10.0, 4, 1e9)])
    return Scavenger(
        sup,
        EqualShare(),
        inst,
        ReportLauncher(TokenSlurmLauncher(token="x")),
        out,
        poll_s=1.0,
        clock=lambda: t[0],
        sleep=lambda d: t.__setitem__(0, t[0] + d),
    )


def test_loop_releases_a_reclaimed_node_within_one_poll(tmp_path: Path):
    fake = FakeSlurm({f"n{i}": "idle" for i in range(1, 5)})
    t = [0.0]
    scav = two_job_scavenger(fake, t, tmp_path)
    scav.open()
    scav.step()
    held = scav.holdings()
    assert sorted(n for ns in held.values() for n in ns) == ["n1", "n2", "n3", "n4"]
    victim_job = next(j for j, ns in held.items() if "n3" in ns)
    t[0] = 1.0
    fake.states["n3"] = "drain"
    scav.step()
    assert all("n3" not in ns for ns in scav.holdings().values())
    t[0] = 2.0
    fake.fail = ["exit"] * 3  # Slurm unreachable: nothing is kept
    scav.step()
    assert scav.holdings() == {}
    summary = scav.close()
    lines = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    rel = [e for e in lines if e["event"] == "release"]
    assert rel[0]["job"] == victim_job and rel[0]["why"] == "reclaim" and "n3" in rel[0]["nodes"]
    assert any(e["event"] == "slurm_error" for e in lines)
    assert sum(e["event"] == "retry" for e in lines) == 2
    assert summary["reclaims_released"] >= 2
    assert (tmp_path / "summary.json").exists()


def test_loop_counts_a_rescale_as_a_rescale(tmp_path: Path):
    """A job re-sized by the policy (its generation stopped, the next started on the new
    set) counts one start and one rescale in ``summary.json``, as the simulator counts it,
    not two starts."""
    fake = FakeSlurm({"n1": "idle", "n2": "idle", "n3": "idle", "n4": "alloc"})
    t = [0.0]
    scav = two_job_scavenger(fake, t, tmp_path)
    scav.open()
    scav.step()
    before = {j: len(ns) for j, ns in scav.holdings().items()}
    assert sorted(before.values()) == [1, 2]  # three lendable nodes shared by two jobs
    t[0] = 1.0
    fake.states["n4"] = "idle"  # a fourth node: equal share re-sizes the one-node job
    scav.step()
    after = {j: len(ns) for j, ns in scav.holdings().items()}
    assert sorted(after.values()) == [2, 2]
    grown = next(j for j, k in before.items() if k == 1)
    jobs = scav.close()["jobs"]
    assert jobs[str(grown)]["starts"] == 1 and jobs[str(grown)]["rescales"] == 1
    lines = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    stops = [e for e in lines if e["event"] == "stop" and e["why"] == "rescale"]
    assert [e["job"] for e in stops] == [grown]


def test_loop_sigterm_stops_every_generation(tmp_path: Path):
    """SIGTERM mid-loop (as `mtgym scavenge` runs it): every generation is stopped, the
    summary is written, and the signal surfaces as ``Terminated`` (exit 143)."""
    import os
    import signal

    from mtgym.bridge.procs import Terminated, raise_on_signals

    fake = FakeSlurm({f"n{i}": "idle" for i in range(1, 5)})
    t = [0.0]
    c = client(fake)
    c.clock = lambda: t[0]
    sup = SlurmSupply(c, clock=lambda: t[0], own_prefix="mtgym-x-")
    inst = tiny_instance(4, [linear_job("a", 10.0, 4, 1e9), linear_job("b", 10.0, 4, 1e9)])
    launcher = ReportLauncher(TokenSlurmLauncher(token="x"))
    seen: list[int] = []

    def sleep(d):
        t[0] += d
        seen.append(len(launcher.running))
        if t[0] >= 3.0:
            os.kill(os.getpid(), signal.SIGTERM)

    scav = Scavenger(
        sup, EqualShare(), inst, launcher, tmp_path, poll_s=1.0, clock=lambda: t[0], sleep=sleep
    )
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated) as ei, raise_on_signals():
        scav.run(max_polls=100)
    assert ei.value.code == 143 and ei.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before  # handler restored
    assert max(seen) == 2 and launcher.running == set()  # both jobs ran, none is left
    lines = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert lines[-1]["event"] == "end" and scav.polls == 3
    assert sum(e["event"] == "release" and e["why"] == "shutdown" for e in lines) == 2
    assert json.loads((tmp_path / "summary.json").read_text())["polls"] == 3
