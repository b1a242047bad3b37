"""No orphans, no exposed stores: a controller stopped by SIGTERM or killed by SIGKILL
mid-replay leaves no process behind, and every torch store listens on 127.0.0.1 only.

The controller is ``python -m mtgym.bridge replay`` in a subprocess (as a user runs it);
its processes are found by the replay folder on their command lines (the agent's forked
workers share its command line, the torchrun workers name the job folder).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from bridge_helpers import pids_mentioning

from mtgym.bridge.record import trace_header
from mtgym.bridge.trace import Trace, TraceEvent, write_trace
from mtgym.testing import linear_job, tiny_instance

LOOPBACK = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}


def _trace(path):
    """One job on two nodes for 1000 simulated s: it runs until it is stopped."""
    inst = tiny_instance(2, [linear_job("a", 100, 2, 1e9)], t_end=1000)
    h = trace_header(inst, scenario="orphans", policy="hand", seed=0)
    write_trace(path, Trace(h, [TraceEvent(0.0, "0", (0, 1), rate=200.0)], 1000.0))
    return path


def _start_controller(bridge_dir, launch):
    out = bridge_dir / "run"
    cmd = [
        sys.executable,
        "-m",
        "mtgym.bridge",
        "replay",
        str(_trace(bridge_dir / "t.jsonl")),
        "--out",
        str(out),
        "--model",
        "tiny-mlp",
        "--dp",
        "allreduce",
        "--launch",
        launch,
        "--quiet",
    ]
    ctl = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    prog = out / "jobs" / "0" / "progress.jsonl"
    end = time.time() + 180
    while time.time() < end:
        steps = prog.read_text().count('"event":"step"') if prog.exists() else 0
        if steps >= 3:
            return ctl, out
        if ctl.poll() is not None:
            raise AssertionError(f"controller exited early: {ctl.communicate()}")
        time.sleep(0.2)
    ctl.kill()
    raise AssertionError("the job never reported 3 steps")


def _listening(pids):
    """(address hex, port) of every listening TCP socket the given processes hold."""
    inodes = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                parts = line.split()
                addr, port = parts[1].split(":")
                if parts[3] == "0A" and parts[9] in inodes:  # 0A = LISTEN
                    out.add((addr, int(port, 16)))
    return out


def _wait_gone(pids, out, timeout):
    end = time.time() + timeout
    while time.time() < end:
        left = [p for p in pids if _alive(p)] + pids_mentioning(str(out))
        if not left:
            return []
        time.sleep(0.1)
    return sorted(set(left))


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.slow
def test_orphans__sigterm_mid_replay_stops_everything_and_stores_bind_loopback(bridge_dir):
    ctl, out = _start_controller(bridge_dir, "agent")
    try:
        pids = [p for p in pids_mentioning(str(out)) if p != ctl.pid]
        assert len(pids) >= 3, pids  # the agent and its two workers
        # every listening socket of the job is on the loopback, the rendezvous store too
        socks = _listening(pids)
        start = next(
            json.loads(x)
            for x in (out / "events.jsonl").read_text().splitlines()
            if '"event":"start"' in x
        )
        assert start["port"] in {port for _, port in socks}, (start["port"], socks)
        assert {addr for addr, _ in socks} <= LOOPBACK, socks
        t0 = time.time()
        ctl.send_signal(signal.SIGTERM)
        left = _wait_gone([*pids, ctl.pid], out, 10.0)
        assert not left, f"alive {time.time() - t0:.1f} s after SIGTERM: {left}"
        _, err = ctl.communicate(timeout=5)
        assert ctl.returncode == 128 + signal.SIGTERM and "stopped by signal 15" in err
        events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
        assert events[-1]["event"] == "replay_end" and events[-1]["ok"] is False
        assert any(e["event"] == "killed" for e in events)
    finally:
        if ctl.poll() is None:
            ctl.kill()
            ctl.wait()


@pytest.mark.slow
@pytest.mark.parametrize("launch", ["agent", "torchrun"])
def test_orphans__sigkill_of_the_controller_takes_the_job_with_it(bridge_dir, launch):
    """No handler runs on SIGKILL: the kernel's parent-death signal stops agent and workers."""
    ctl, out = _start_controller(bridge_dir, launch)
    pids = [p for p in pids_mentioning(str(out)) if p != ctl.pid]
    assert len(pids) >= 3, pids
    if launch == "torchrun":  # torchrun's own store binds through mtgym/bridge/torchrun.py
        assert {addr for addr, _ in _listening(pids)} <= LOOPBACK
    ctl.kill()
    ctl.wait()
    left = _wait_gone(pids, out, 10.0)
    assert not left, f"alive 10 s after the controller's SIGKILL: {left}"
