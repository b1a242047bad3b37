"""Launcher commands (Slurm dry run, local command lines) and the CLI wiring (fast)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from mtgym.bridge.cli import add_bridge_commands, build_parser, main
from mtgym.bridge.launcher import (
    AGENT_SCRIPT,
    TORCHRUN_SCRIPT,
    WORKER_SCRIPT,
    JobSpec,
    LocalLauncher,
    SlurmLauncher,
)


def test_slurm__dry_run_commands():
    spec = JobSpec("3", Path("/shared/run/jobs/3"), model="cnn", dp="ddp")
    sl = SlurmLauncher(
        workers_per_node=4,
        python="/opt/venv/bin/python",
        partition="scav",
        node_names=[f"n{i}" for i in range(1, 9)],
        worker_script="/opt/mtgym/mtgym/bridge/worker.py",
        env={"NCCL_SOCKET_IFNAME": "ib0"},
        token="ab12cd",
    )
    cmds = sl.dry_run(spec, [4, 5, 6], gen=2)
    assert cmds["launch"][0] == [
        "mkdir",
        "-p",
        "/shared/run/jobs/3/ckpt",
        "/shared/run/jobs/3/logs",
        "/shared/run/jobs/3/control",
        "/shared/run/jobs/3/pids",
    ]
    launch = cmds["launch"][1]
    assert launch[:11] == [
        "srun",
        "--job-name=mtgym-ab12cd-3-g2",
        "--partition=scav",
        "--nodes=3",
        "--ntasks=3",
        "--ntasks-per-node=1",
        "--nodelist=n5,n6,n7",
        "--kill-on-bad-exit=1",
        "--export=ALL,OMP_NUM_THREADS=1,MTGYM_RUN_TOKEN=ab12cd,MTGYM_RANK_DEVICES=,NCCL_SOCKET_IFNAME=ib0",
        "/opt/venv/bin/python",
        "-m",
    ]
    i = launch.index("torch.distributed.run")
    assert launch[i + 1 : i + 9] == [
        "--nnodes=3",
        "--nproc-per-node=4",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=n5:29400",  # the first node hosts the c10d store
        "--rdzv-id=3-g2",
        "--rdzv-conf=join_timeout=120,last_call_timeout=1",
        "--max-restarts=0",
        "--monitor-interval=0.5",
    ]
    w = launch[i + 9 :]
    assert w[0] == "/opt/mtgym/mtgym/bridge/worker.py"
    assert w[w.index("--gen") + 1] == "2" and w[w.index("--model") + 1] == "cnn"
    assert w[w.index("--stop-file") + 1] == "/shared/run/jobs/3/control/stop-g2"
    assert cmds["stop"] == [["touch", "/shared/run/jobs/3/control/stop-g2"]]
    assert cmds["kill"] == [
        ["scancel", "--signal=TERM", f"--user={sl.user}", "--name=mtgym-ab12cd-3-g2"],
        ["scancel", f"--user={sl.user}", "--name=mtgym-ab12cd-3-g2"],
    ]
    script = sl.dry_run_script(spec, [4, 5, 6], gen=2)
    assert "# launch" in script and shlex.split(script.splitlines()[2]) == launch
    with pytest.raises(ValueError):
        sl.launch_command(spec, [], 0)


def test_local__command_lines():
    spec = JobSpec("0", Path("/tmp/x/jobs/0"), model="mlp", dp="ddp")
    agent = LocalLauncher(workers_per_node=2).command(spec, [0, 1], 3, 29999)
    assert agent[:2] == [sys.executable, str(AGENT_SCRIPT)]
    assert "--nproc-per-node=4" in agent and "--rdzv-endpoint=127.0.0.1:29999" in agent
    assert "--prewarm-ddp" in agent and agent[agent.index("--") + 1] == "--job-dir"
    tr = LocalLauncher(launch="torchrun").command(spec, [0], 0, 29998)
    assert tr[1] == str(TORCHRUN_SCRIPT)  # torchrun's main, with the store binding
    assert "--rdzv-backend=c10d" in tr and "--local-addr=127.0.0.1" in tr
    assert str(WORKER_SCRIPT) in tr
    env = LocalLauncher(token="tok").environment(spec, 3)
    assert env["GLOO_SOCKET_IFNAME"] == "lo" and env["MASTER_ADDR"] == "127.0.0.1"
    assert env["MTGYM_RUN_TOKEN"] == "tok" and env["MTGYM_LAUNCH"] == "0-g3"
    assert env["MTGYM_STORE_BIND"] == "127.0.0.1"
    assert LocalLauncher(store_bind="").environment(spec)["MTGYM_STORE_BIND"] == ""
    a, b = LocalLauncher(), LocalLauncher()
    assert a.token != b.token and len(a.token) == 12  # random per launcher


def test_slurm__step_names_carry_the_run_token():
    spec = JobSpec("3", Path("/shared/run/jobs/3"))
    a, b = SlurmLauncher(), SlurmLauncher()
    assert a.token != b.token  # two runs of one user never share a step name
    assert a.step_name(spec, 0) == f"mtgym-{a.token}-3-g0" != b.step_name(spec, 0)
    kill = a.dry_run(spec, ["n1"], 0)["kill"]
    assert all(c[-1] == f"--name=mtgym-{a.token}-3-g0" for c in kill)


def test_local__pids_matched_by_run_token(tmp_path):
    """A live process with the job folder and "torch" in its command line is not ours
    unless its environment carries this launcher's token and the launch id."""
    import subprocess

    from mtgym.bridge.launcher import Launch

    spec = JobSpec("0", tmp_path / "jobs" / "0")
    ll = LocalLauncher(token="mine")
    la = Launch(spec, 0, 1, (0,), None, [], 0, 0.0, tmp_path / "log")  # type: ignore[arg-type]
    cmd = [sys.executable, "-c", "import time; time.sleep(30)", str(spec.job_dir), "torch"]
    env_ok = {**os.environ, "MTGYM_RUN_TOKEN": "mine", "MTGYM_LAUNCH": "0-g0"}
    procs = {
        "ours": subprocess.Popen(cmd, env=env_ok),
        "other run": subprocess.Popen(cmd, env={**env_ok, "MTGYM_RUN_TOKEN": "theirs"}),
        "other gen": subprocess.Popen(cmd, env={**env_ok, "MTGYM_LAUNCH": "0-g1"}),
        "no token": subprocess.Popen(cmd),
    }
    try:
        got = {k: ll._ours(la, p.pid) for k, p in procs.items()}
        assert got == {"ours": True, "other run": False, "other gen": False, "no token": False}
    finally:
        for p in procs.values():
            p.kill()
            p.wait()
    assert not ll._ours(la, procs["ours"].pid)  # gone
    with pytest.raises(ValueError):
        LocalLauncher(launch="mpirun")


def test_cli__help_on_every_command(capsys):
    top = argparse.ArgumentParser(prog="mtgym")
    sub = top.add_subparsers(dest="command", required=True)
    bridge = sub.add_parser("bridge")
    add_bridge_commands(bridge.add_subparsers(dest="bridge_command", required=True))
    for cmd in ("record", "replay", "report", "calibrate", "slurm-commands"):
        with pytest.raises(SystemExit) as exc:
            top.parse_args(["bridge", cmd, "--help"])
        assert exc.value.code == 0
        assert "usage: mtgym bridge " + cmd in capsys.readouterr().out
    args = top.parse_args(
        [
            "bridge",
            "replay",
            "t.jsonl",
            "--out",
            "d",
            "--time-scale",
            "5",
            "--workers-per-node",
            "2",
        ]
    )
    assert args.time_scale == 5.0 and args.workers_per_node == 2 and callable(args.func)
    # given the top-level action, a bridge group is made
    top2 = argparse.ArgumentParser(prog="mtgym")
    sub2 = top2.add_subparsers(dest="command")
    sub2.add_parser("run")
    add_bridge_commands(sub2)
    assert (
        top2.parse_args(
            ["bridge", "record", "--scenario", "s", "--policy", "p", "--out", "o"]
        ).func.__name__
        == "_cmd_record"
    )


def test_cli__record_then_slurm_commands(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    assert (
        main(
            [
                "record",
                "--scenario",
                "toy-two-jobs",
                "--policy",
                "equal-share",
                "--out",
                str(trace),
                "--until",
                "600",
            ]
        )
        == 0
    )
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    assert lines[0]["format"] == "mtgym-trace" and lines[0]["version"] == 1
    assert lines[-1] == {"t": 600.0, "end": True}
    assert {x["world_size"] for x in lines[1:-1]} == {2}
    capsys.readouterr()
    assert (
        main(
            [
                "slurm-commands",
                str(trace),
                "--job",
                "0",
                "--node-names",
                "a,b,c,d",
                "--workers-per-node",
                "4",
                "--token",
                "t1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "srun --job-name=mtgym-t1-0-g0" in out and "--rdzv-endpoint=a:29400" in out
    assert "--nproc-per-node=4" in out
    assert main(["replay", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o")]) == 2
    assert main(["report", str(tmp_path)]) == 2
    assert build_parser().prog == "mtgym bridge"
