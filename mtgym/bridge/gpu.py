"""GPUs for the bridge: which are visible, which a simulated node gets, how busy they are.

- ``visible_gpus()``: the GPU ids this host offers, read *without initialising CUDA* in
  the calling process (``CUDA_VISIBLE_DEVICES`` when set, else ``nvidia-smi -L``, else
  torch's NVML count). The controller and the agents never create a CUDA context.
- ``rank_devices(n_nodes, per_node, visible, share=...)``: one GPU per worker. On one host
  the job's simulated node ``i`` (its ``i``-th node) gets devices ``[i*g, (i+1)*g)`` of the
  visible list (``g`` = workers per node); past the end it wraps around only with
  ``share=True`` (then two workers can share a GPU, which NCCL refuses: the launcher
  switches such jobs to gloo). Otherwise ``NotEnoughGpusError``, a one-line ``ValueError``.
- ``GpuSampler``: a worker's GPU utilisation and memory, sampled in a background thread
  (``torch.cuda.utilization`` through NVML, else ``nvidia-smi``; memory from the caching
  allocator), so that sampling never stalls a training step.

Standard library only at import (torch is imported lazily): workers load this file by
path, without the ``mtgym`` package.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Sequence
from typing import Any

#: The worker's own GPU(s), one entry per local rank, set by ``LocalLauncher``.
RANK_DEVICES_ENV = "MTGYM_RANK_DEVICES"


class NotEnoughGpusError(ValueError):
    """A job needs more GPUs than the host shows (and sharing was not asked for)."""


def parse_visible(text: str) -> list[str]:
    """The ids of a ``CUDA_VISIBLE_DEVICES`` value (CUDA stops at the first invalid one)."""
    out: list[str] = []
    for item in text.split(","):
        item = item.strip()
        if not item or item.startswith("-"):
            break
        if item in out:  # a repeated id ends the list for CUDA too
            break
        out.append(item)
    return out


def nvidia_smi() -> str | None:
    """The ``nvidia-smi`` executable, or None."""
    return shutil.which("nvidia-smi")


def visible_gpus(env: dict[str, str] | None = None) -> list[str]:
    """GPU ids visible to processes started from here (no CUDA context is created)."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    if "CUDA_VISIBLE_DEVICES" in env:
        return parse_visible(env["CUDA_VISIBLE_DEVICES"])
    smi = nvidia_smi()
    if smi:
        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        n = sum(1 for line in out.splitlines() if line.startswith("GPU "))
        if n:
            return [str(i) for i in range(n)]
    try:
        import torch

        n = int(torch.cuda._device_count_nvml()) if torch.cuda.is_built() else 0
    except Exception:
        n = 0
    return [str(i) for i in range(max(0, n))]


def gpus_needed(n_nodes: int, per_node: int) -> int:
    """GPUs a generation of ``n_nodes`` simulated nodes takes (one per worker)."""
    return n_nodes * per_node


def check_fits(job: str, n_nodes: int, per_node: int, visible: int, *, share: bool) -> None:
    """Raise ``NotEnoughGpusError`` (one line) when a job does not fit the visible GPUs."""
    need = gpus_needed(n_nodes, per_node)
    if visible == 0:
        raise NotEnoughGpusError(
            f"job {job}: device cuda, but no GPU is visible (nvidia-smi / "
            "CUDA_VISIBLE_DEVICES); use --device cpu"
        )
    if need > visible and not share:
        raise NotEnoughGpusError(
            f"job {job}: world size {n_nodes} node(s) x {per_node} worker(s) needs {need} "
            f"GPUs, {visible} visible; lower --max-world-size or --workers-per-node, or "
            "pass --share-gpus (workers share GPUs over gloo)"
        )


def rank_devices(
    n_nodes: int, per_node: int, visible: Sequence[str], *, share: bool = False, job: str = "?"
) -> list[str]:
    """The GPU of every local rank: node ``i``'s ``g`` workers take ``visible[i*g:(i+1)*g]``.

    With ``share`` the list wraps around the visible GPUs; without, a job that needs more
    GPUs than are visible raises ``NotEnoughGpusError``.
    """
    check_fits(job, n_nodes, per_node, len(visible), share=share)
    need = gpus_needed(n_nodes, per_node)
    return [visible[k % len(visible)] for k in range(need)]


def shares_gpus(devices: Sequence[str]) -> bool:
    """True when two workers of a generation got the same GPU (NCCL refuses this)."""
    return len(set(devices)) < len(devices)


def own_device(local_rank: int, env: dict[str, str] | None = None) -> tuple[str | None, int]:
    """``(CUDA_VISIBLE_DEVICES to set, cuda index)`` of a worker before CUDA starts.

    Under ``LocalLauncher`` (``MTGYM_RANK_DEVICES`` set) a worker sees its own GPU only, as
    ``cuda:0``. Elsewhere (Slurm: one torchrun per node) local rank ``k`` takes ``cuda:k``.
    """
    env = os.environ if env is None else env  # type: ignore[assignment]
    text = env.get(RANK_DEVICES_ENV, "")
    if not text:
        return None, local_rank
    devs = text.split(",")
    if local_rank >= len(devs):
        raise SystemExit(
            f"local rank {local_rank} has no GPU in {RANK_DEVICES_ENV}={text} ({len(devs)} entries)"
        )
    return devs[local_rank], 0


def smi_query(device_id: str, timeout: float = 5.0) -> tuple[float | None, float | None]:
    """(utilisation %, memory used MiB) of one GPU from ``nvidia-smi`` (None, None if not)."""
    smi = nvidia_smi()
    if not smi:
        return None, None
    try:
        out = subprocess.run(
            [
                smi,
                f"--id={device_id}",
                "--query-gpu=utilization.gpu,memory.used",
                "--format=csv,noheader,nounits",
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        ).stdout.strip()
        util, mem = (float(x) for x in out.splitlines()[0].split(","))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None, None
    return util, mem


class GpuSampler:
    """Samples one GPU's utilisation every ``every_s`` seconds in a daemon thread.

    ``take()`` returns the mean utilisation since the last call, the samples it covers and
    the allocator's memory figures (GiB). Utilisation comes from ``torch.cuda.utilization``
    (NVML via pynvml) or, failing that, ``nvidia-smi``; where neither works it is None and
    only memory is reported.
    """

    def __init__(self, device: Any, physical_id: str | None, every_s: float = 1.0) -> None:
        self.device = device
        self.physical_id = physical_id
        self.every_s = every_s
        self._vals: list[float] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.source = "none"
        self._thread = threading.Thread(target=self._run, name="mtgym-gpu-sampler", daemon=True)
        self._thread.start()

    def _one(self) -> float | None:
        import torch

        if self.source in ("none", "torch"):
            try:
                v = float(torch.cuda.utilization(self.device))
                self.source = "torch"
                return v
            except Exception:
                if self.source == "torch":
                    return None
                self.source = "nvidia-smi"
        if self.source == "nvidia-smi" and self.physical_id is not None:
            util, _ = smi_query(self.physical_id)
            if util is None:
                self.source = "unavailable"
            return util
        return None

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            v = self._one()
            if v is not None:
                with self._lock:
                    self._vals.append(v)

    def take(self) -> dict[str, Any]:
        """Utilisation since the last call and memory now (allocator peak since start)."""
        import torch

        with self._lock:
            vals, self._vals = self._vals, []
        gib = 1024.0**3
        return {
            "util": sum(vals) / len(vals) if vals else None,
            "util_samples": len(vals),
            "util_source": self.source,
            "mem_gib": torch.cuda.memory_allocated(self.device) / gib,
            "mem_peak_gib": torch.cuda.max_memory_allocated(self.device) / gib,
            "mem_reserved_gib": torch.cuda.memory_reserved(self.device) / gib,
        }

    def close(self) -> None:
        """Stop the thread."""
        self._stop.set()
