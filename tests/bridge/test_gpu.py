"""GPUs without a GPU (fast, CPU): which GPU each worker gets, the pre-launch check, the
start method of CUDA workers, the GPU models, and the workers' GPU reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtgym.bridge import agent, gpu
from mtgym.bridge.controller import ReplayConfig
from mtgym.bridge.launcher import AGENT_SCRIPT, JobSpec, LocalLauncher, SlurmLauncher
from mtgym.bridge.measure import gpu_stats
from mtgym.bridge.models import (
    MODELS,
    SyntheticData,
    build_model,
    default_batch,
    model_for_app_class,
)


def test_gpu__visible_and_own_device():
    assert gpu.parse_visible("2,5") == ["2", "5"]
    assert gpu.parse_visible("") == []
    assert gpu.parse_visible("0,-1,2") == ["0"]  # CUDA stops at the first invalid id
    assert gpu.parse_visible("0,1,0") == ["0", "1"]
    assert gpu.visible_gpus({"CUDA_VISIBLE_DEVICES": "3,1"}) == ["3", "1"]
    assert gpu.visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == []
    # LocalLauncher: each worker sees its own GPU as cuda:0; Slurm: local rank k -> cuda:k
    assert gpu.own_device(1, {gpu.RANK_DEVICES_ENV: "3,5"}) == ("5", 0)
    assert gpu.own_device(1, {}) == (None, 1)
    assert gpu.own_device(2, {gpu.RANK_DEVICES_ENV: ""}) == (None, 2)
    with pytest.raises(SystemExit, match="local rank 2 has no GPU"):
        gpu.own_device(2, {gpu.RANK_DEVICES_ENV: "3,5"})


def test_gpu__node_i_gets_devices_i_g_to_i_plus_1_g():
    four = ["0", "1", "2", "3"]
    assert gpu.rank_devices(2, 2, four) == ["0", "1", "2", "3"]  # node 1 -> GPUs 2, 3
    assert gpu.rank_devices(1, 2, four) == ["0", "1"]
    assert gpu.rank_devices(2, 1, ["4", "6"]) == ["4", "6"]  # the visible ids, in order
    # wrap-around only when asked for
    assert gpu.rank_devices(3, 1, ["0", "1"], share=True) == ["0", "1", "0"]
    assert gpu.shares_gpus(["0", "1", "0"]) and not gpu.shares_gpus(["0", "1"])
    with pytest.raises(gpu.NotEnoughGpusError) as exc:
        gpu.rank_devices(3, 2, four, job="7")
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("job 7: world size 3 node(s) x 2 worker(s) needs 6 GPUs, 4 visible")
    assert "--share-gpus" in msg
    with pytest.raises(gpu.NotEnoughGpusError, match="job 1: device cuda, but no GPU"):
        gpu.rank_devices(1, 1, [], share=True, job="1")


def test_launcher__one_gpu_per_simulated_node():
    ll = LocalLauncher(workers_per_node=2, gpus=["0", "1", "2", "3"])
    spec = JobSpec("0", Path("/tmp/x/jobs/0"), model="cnn", device="cuda")
    env = ll.environment(spec, 0, nodes=[5, 9])  # the job's nodes 0 and 1 (trace ids 5, 9)
    assert env[gpu.RANK_DEVICES_ENV] == "0,1,2,3"
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
    assert env["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1"
    assert ll.environment(spec, 1, nodes=[7])[gpu.RANK_DEVICES_ENV] == "0,1"
    cmd = ll.command(spec, [5, 9], 0, 29999)
    w = cmd[cmd.index("--") + 1 :]
    assert w[w.index("--device") + 1] == "cuda" and "--backend" not in w  # NCCL
    assert "--nproc-per-node=4" in cmd
    # more GPUs than visible: refused before anything starts, in one line
    with pytest.raises(gpu.NotEnoughGpusError, match="job 0: world size 3 node"):
        ll.start(spec, [1, 2, 3], 0)
    assert not spec.job_dir.exists()
    # --share-gpus: round robin, and gloo (NCCL refuses two ranks on one GPU)
    sh = LocalLauncher(workers_per_node=1, gpus=["0"], share_gpus=True)
    env = sh.environment(spec, 0, nodes=[0, 1])
    assert env[gpu.RANK_DEVICES_ENV] == "0,0" and env["CUDA_VISIBLE_DEVICES"] == "0"
    w = sh.command(spec, [0, 1], 0, 1)
    assert w[w.index("--backend") + 1] == "gloo"
    # CPU jobs get no GPU
    cpu = JobSpec("1", Path("/tmp/x/jobs/1"), device="cpu")
    assert gpu.RANK_DEVICES_ENV not in ll.environment(cpu, 0, nodes=[0, 1])
    # Slurm: one torchrun per node, local rank k -> cuda:k (nothing narrows it)
    sl = SlurmLauncher(workers_per_node=4, token="t")
    line = sl.launch_command(spec, ["n1", "n2"], 0)
    export = next(x for x in line if x.startswith("--export="))
    assert export.endswith(f",{gpu.RANK_DEVICES_ENV}=") and "--nproc-per-node=4" in line


def test_launcher__start_method_by_device():
    spec = lambda d: JobSpec("0", Path("/tmp/x/jobs/0"), dp="ddp", device=d)  # noqa: E731
    ll = LocalLauncher(gpus=["0"])
    cuda = ll.command(spec("cuda"), [0], 0, 1)
    assert "--start-method=spawn" in cuda and "--prewarm-ddp" not in cuda
    cpu = ll.command(spec("cpu"), [0], 0, 1)
    assert "--start-method=fork" in cpu and "--prewarm-ddp" in cpu
    assert "--start-method=spawn" in ll.command(spec("auto"), [0], 0, 1)  # a GPU is visible
    none = LocalLauncher(gpus=[])
    auto = none.command(spec("auto"), [0], 0, 1)
    assert "--start-method=fork" in auto and auto[auto.index("--device") + 1] == "cpu"
    assert "--start-method=spawn" in LocalLauncher(start_method="spawn").command(
        spec("cpu"), [0], 0, 1
    )
    with pytest.raises(ValueError, match="fork cannot run CUDA workers"):
        LocalLauncher(gpus=["0"], start_method="fork").command(spec("cuda"), [0], 0, 1)
    with pytest.raises(ValueError):
        LocalLauncher(start_method="forkserver")


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_agent__never_forks_after_cuda_init(monkeypatch, device):
    """The agent's whole pre-launch path, run with a torch that *initialises CUDA* whenever
    asked whether CUDA is available (as a CUDA build does): CUDA workers must not be forked
    from a parent in which anything touched CUDA."""
    import torch
    import torch.distributed.launcher.api as api

    touched: list[str] = []
    seen: dict[str, object] = {}

    def available() -> bool:
        touched.append("is_available")
        return True

    def count() -> int:
        touched.append("device_count")
        return 99  # != nproc: keeps torch's NUMA binding (more CUDA calls) out

    def fake_launch(cfg, entry):
        def run(argv):
            seen.update(method=cfg.start_method, touched=bool(touched), argv=list(argv))
            return {}

        return run

    monkeypatch.setattr(torch.cuda, "is_available", available)
    monkeypatch.setattr(torch.cuda, "device_count", count)
    monkeypatch.setattr(api, "elastic_launch", fake_launch)
    monkeypatch.setenv("MTGYM_PARENT_PID", "1")  # restored afterwards
    monkeypatch.setenv("PYTORCH_NVML_BASED_CUDA_CHECK", "0")
    monkeypatch.delenv("MTGYM_STORE_BIND", raising=False)
    spec = JobSpec("0", Path("/tmp/x/jobs/0"), model="cnn", dp="ddp", device=device)
    cmd = LocalLauncher(gpus=["0"]).command(spec, [0], 0, 29999)
    assert cmd[1] == str(AGENT_SCRIPT)
    assert agent.main(cmd[2:]) == 0
    argv = seen["argv"]
    worker_device = argv[argv.index("--device") + 1]  # type: ignore[union-attr]
    assert worker_device == device
    if worker_device == "cuda":
        assert seen["method"] == "spawn"  # never fork: the parent may have touched CUDA
    else:
        assert seen["method"] == "fork"  # CPU keeps the cheap path (torch imported once)
    assert not (seen["touched"] and seen["method"] == "fork" and worker_device == "cuda")


def test_agent__refuses_to_fork_with_cuda_initialised(monkeypatch):
    import torch

    agent.check_fork_safe("fork")  # CPU torch: CUDA never initialised
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    with pytest.raises(RuntimeError, match="use --start-method spawn"):
        agent.check_fork_safe("fork")
    agent.check_fork_safe("spawn")


def test_models__gpu_models_build_and_train_tiny_on_cpu():
    import torch

    n = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    # ResNet-50's layout (torchvision: 25,557,032 with a 1000-way head) with a 10-way head
    assert n(build_model("resnet50")) == 25_557_032 - (2048 * 1000 + 1000) + (2048 * 10 + 10)
    s = MODELS["transformer"]
    d, ff, layers = s["d_model"], s["ff"], s["layers"]
    per_layer = (4 * d * d + 4 * d) + (2 * d * ff + ff + d) + 4 * d
    seq, feat = s["in"]
    expect = layers * per_layer + (feat * d + d) + seq * d + 2 * d + (d * 10 + 10)
    assert n(build_model("transformer")) == expect
    assert default_batch("resnet50") == 256 and default_batch("cnn") == 64
    for name in ("resnet50-tiny", "transformer-tiny"):
        model = build_model(name)
        data = SyntheticData(name, 4, 0, torch.device("cpu"))
        x, y = data.get(3, 1)
        x2, _ = data.get(3, 1)
        assert torch.equal(x, x2)  # same (step, rank) -> same batch
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        assert torch.isfinite(loss) and model(x).shape == (4, 10)
    # the CPU batches are the ones the old CPU generator drew
    g = torch.Generator().manual_seed((0 * 1_000_003 + 3) * 4099 + 1)
    old = torch.randn((4, *SyntheticData("cnn", 4, 0, torch.device("cpu")).shape), generator=g)
    assert torch.equal(SyntheticData("cnn", 4, 0, torch.device("cpu")).get(3, 1)[0], old)


def test_models__sets_by_app_class():
    assert model_for_app_class("A") == "cnn" and model_for_app_class(1) == "mlp"
    assert model_for_app_class("A", "gpu") == "resnet50"
    assert model_for_app_class("B", "gpu") == "transformer"
    assert model_for_app_class("D", "gpu-tiny") == "resnet50-tiny"
    assert model_for_app_class("C", "cnn") == "cnn"
    ReplayConfig(model="gpu")
    with pytest.raises(ValueError, match="unknown model 'nope'"):
        ReplayConfig(model="nope")


def test_measure__gpu_reports():
    recs = [
        {"event": "gpu", "util": 80.0, "util_samples": 3, "mem_peak_gib": 20.5,
         "mem_reserved_gib": 30.0, "gpu": "1", "util_source": "torch"},
        {"event": "gpu", "util": 40.0, "util_samples": 1, "mem_peak_gib": 21.0,
         "mem_reserved_gib": 29.0, "gpu": "1", "util_source": "torch"},
        {"event": "gpu", "util": None, "util_samples": 0, "mem_peak_gib": 1.0,
         "mem_reserved_gib": 2.0, "gpu": "1"},
    ]  # fmt: skip
    g = gpu_stats(recs)
    assert g is not None
    assert g["util_mean"] == pytest.approx((80 * 3 + 40) / 4)
    assert g["mem_peak_gib"] == 21.0 and g["mem_reserved_gib"] == 30.0
    assert g["reports"] == 3 and g["gpus"] == ["1"] and g["util_samples"] == 4
    assert gpu_stats([{"event": "step"}]) is None
    nothing = gpu_stats([{"event": "gpu", "mem_peak_gib": 1.0}])
    assert nothing is not None and nothing["util_mean"] is None


def test_check__summary_of_fake_runs(tmp_path):
    from mtgym.bridge.check import smi_summary, summary

    def run(name, crashes=0, failures=(), util=None):
        d = tmp_path / name
        d.mkdir()
        (d / "replay.json").write_text(
            json.dumps({"launch": "agent", "jobs": {"0": {"start_method": "spawn"}}})
        )
        rescale = {k: {"measured_s": [2.0, 4.0] if k == "start" else []} for k in
                   ("up", "down", "start", "restart", "same")}  # fmt: skip
        rep = {
            "failures": list(failures),
            "jobs": {"0": {"rescale": rescale}},
            "totals": {"crashes": crashes, "failed_jobs": len(failures),
                       "measured_samples": 1234, "reclaims": 1,
                       "reclaim_deadlines_met": True, "gpu_util_mean": util,
                       "gpu_mem_peak_gib": 3.0 if util else None},
        }  # fmt: skip
        (d / "report.json").write_text(json.dumps(rep))
        return name, d

    text, ok = summary([run("a", util=91.0), run("b")])
    assert ok and text.splitlines()[-1] == "gpu_check: OK"
    row = next(x for x in text.splitlines() if x.strip().startswith("a "))
    assert "agent/spawn" in row and "1,234" in row and "3.0 (2.0-4.0)" in row and "91" in row
    text, ok = summary([run("c", crashes=2, failures=["job 0 made no progress"])])
    assert not ok
    assert text.splitlines()[-1] == (
        "gpu_check: FAILED (c: job 0 made no progress; c: 2 crash(es))"
    )
    smi = tmp_path / "smi.csv"
    smi.write_text("0, 0, 500\n0, 90, 30000\n0, 60, 31000\nbad line\n")
    assert smi_summary(smi) == (
        "GPU 0: util mean 50 % over 3 s (75 % while busy), max 90 %, memory max 31,000 MiB"
    )
