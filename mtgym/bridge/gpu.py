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
    """The ids of a ``CUDA_VISIBLE_DEVICES`` value (CUDA stops at the first invalid one).

    An empty item, a negative one (``-1``) or a repeated id ends the list, as it does for
    CUDA: ``"0,1,-1,2"`` gives ``["0", "1"]`` and ``""`` gives ``[]`` (no GPU). Ids are kept
    as text (indices or ``GPU-<uuid>``), never checked against the hardware.

    Args:
        text: the variable's value.
    """
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
    """GPU ids visible to processes started from here (no CUDA context is created).

    Checked in order: ``CUDA_VISIBLE_DEVICES`` when set (even empty: no GPU), else
    ``nvidia-smi -L`` (20 s timeout; ids ``"0"``..), else torch's NVML device count, else none.

    Args:
        env: the environment to read (None: ``os.environ``).

    Returns:
        The ids, in the order CUDA numbers them; ``[]`` on a machine without GPUs.
    """
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
    """GPUs a generation of ``n_nodes`` simulated nodes takes (one per worker).

    Args:
        n_nodes: the generation's world size in simulated nodes.
        per_node: workers per simulated node (``--workers-per-node``).
    """
    return n_nodes * per_node


def check_fits(job: str, n_nodes: int, per_node: int, visible: int, *, share: bool) -> None:
    """Raise ``NotEnoughGpusError`` (one line) when a job does not fit the visible GPUs.

    Args:
        job: the trace job id, named in the message.
        n_nodes: the world size in simulated nodes.
        per_node: workers per simulated node.
        visible: how many GPUs are visible.
        share: allow more workers than GPUs (they share over gloo).

    Raises:
        NotEnoughGpusError: no GPU is visible at all (even with ``share``), or the job needs
            more GPUs than are visible and ``share`` is False. The message names the options
            that fix it.
    """
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

    Args:
        n_nodes: the world size in simulated nodes.
        per_node: workers per simulated node (``g``).
        visible: the visible GPU ids (``visible_gpus``).
        share: wrap around instead of raising.
        job: the trace job id, for the error message.

    Returns:
        ``n_nodes * per_node`` ids, the GPU of local rank ``k`` at index ``k``; the launcher
        joins them into ``MTGYM_RANK_DEVICES``.
    """
    check_fits(job, n_nodes, per_node, len(visible), share=share)
    need = gpus_needed(n_nodes, per_node)
    return [visible[k % len(visible)] for k in range(need)]


def shares_gpus(devices: Sequence[str]) -> bool:
    """True when two workers of a generation got the same GPU (NCCL refuses this).

    Args:
        devices: ``rank_devices``'s answer.
    """
    return len(set(devices)) < len(devices)


def own_device(local_rank: int, env: dict[str, str] | None = None) -> tuple[str | None, int]:
    """``(CUDA_VISIBLE_DEVICES to set, cuda index)`` of a worker before CUDA starts.

    Under ``LocalLauncher`` (``MTGYM_RANK_DEVICES`` set) a worker sees its own GPU only, as
    ``cuda:0``. Elsewhere (Slurm: one torchrun per node) local rank ``k`` takes ``cuda:k``.

    Args:
        local_rank: the worker's ``LOCAL_RANK``.
        env: the environment to read (None: ``os.environ``).

    Returns:
        ``(id, 0)`` under ``LocalLauncher``, the id to write into ``CUDA_VISIBLE_DEVICES``;
        ``(None, local_rank)`` when ``MTGYM_RANK_DEVICES`` is unset or empty.

    Raises:
        SystemExit: ``MTGYM_RANK_DEVICES`` has no entry for ``local_rank``.
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
    """(utilisation %, memory used MiB) of one GPU from ``nvidia-smi`` (None, None if not).

    ``(None, None)`` when ``nvidia-smi`` is missing, fails, times out or prints something
    that is not two numbers.

    Args:
        device_id: the physical GPU id (as in ``CUDA_VISIBLE_DEVICES``, not the worker's
            ``cuda:0``).
        timeout: seconds to wait for ``nvidia-smi``.
    """
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
    only memory is reported. The thread starts in ``__init__``; the first sample comes after
    ``every_s``.

    Args:
        device: the torch device to read (``cuda:0`` in a worker under ``LocalLauncher``).
        physical_id: the GPU's id for ``nvidia-smi --id`` (None: no ``nvidia-smi``
            fallback).
        every_s: seconds between samples.

    Attributes:
        source: where utilisation comes from: ``"none"`` (no sample yet), ``"torch"``,
            ``"nvidia-smi"`` or ``"unavailable"`` (both failed; no more attempts).
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
        """One utilisation sample (%), or None; settles ``source`` on the first try.

        torch is tried first; once it has worked, a later failure gives None without
        falling back. Once ``nvidia-smi`` fails too, ``source`` is ``"unavailable"``.
        """
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
        """The sampling thread: one sample every ``every_s`` until ``close``."""
        while not self._stop.wait(self.every_s):
            v = self._one()
            if v is not None:
                with self._lock:
                    self._vals.append(v)

    def take(self) -> dict[str, Any]:
        """Utilisation since the last call and memory now (allocator peak since start).

        Returns:
            ``util`` (mean %, None without samples), ``util_samples``, ``util_source``
            (``source``), and the caching allocator's ``mem_gib`` (allocated now),
            ``mem_peak_gib`` (peak since the process started) and ``mem_reserved_gib``
            (reserved now), in GiB. Memory is torch's view of this process, not the GPU's
            total use.
        """
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
        """Stop the thread (it exits at its next wake-up; not joined)."""
        self._stop.set()
