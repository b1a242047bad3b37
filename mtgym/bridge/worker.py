"""The training script the bridge launches under torchrun: a small real DDP model.

Run as ``python -m torch.distributed.run ... -m mtgym.bridge.worker --job-dir DIR ...``.
Every rank trains a model (``mtgym.bridge.models.MODELS``: an MLP or a small CNN for CPUs, a
ResNet-50 or a small transformer in bf16 autocast for GPUs, chosen per app class by
``model_for_app_class``) on synthetic, learnable data (``SyntheticData``: labels come from a
fixed random "teacher"), with
``DistributedDataParallel`` over gloo (CPU, or GPUs shared by several workers) or NCCL
(one GPU per worker). On CUDA, rank 0 also reports its GPU's utilisation and memory
(``gpu`` events, ``mtgym.bridge.gpu.GpuSampler``).

What it guarantees (tested in ``tests/bridge``):

- **Progress reports** (MalleTrain's Job Monitor): rank 0 appends one JSON line per
  iteration to ``DIR/progress.jsonl``: ``{"event": "step", "t", "step", "world_size",
  "samples", "batch", "gen", "committed", "redo"}``. ``samples`` is the cumulative global
  sample count, ``batch`` this step's global batch, ``committed`` the step of the newest
  durable checkpoint. Other events: ``start`` (with the step resumed from), ``ckpt`` (a
  checkpoint became durable: the step is *committed*), ``ckpt_invalid`` (a torn or corrupt
  file was skipped), ``stop``.
- **Checkpoints** every ``--ckpt-every`` steps and on a stop request, written atomically
  with a sha256 (``mtgym.bridge.checkpoint``). On start every rank resumes from the newest
  *valid* checkpoint (rank 0 picks it, the step is broadcast). A committed step is never
  lost: a restart resumes at the last committed step or later. Steps run after the last
  checkpoint by a job that is then killed are redone after the restart and reported with
  ``"redo": true`` so that samples are not counted twice.
- **Stop requests**: the controller creates ``--stop-file``; every ``--sync-every`` steps the
  ranks agree on it with an ``all_reduce(MAX)`` so all stop at the same step, checkpoint and
  exit with ``barrier; destroy_process_group; flush; os._exit(0)`` (a plain exit aborts in
  about 25 % of gloo teardowns, see ``mtgym/bridge/README.md``).
- Each rank writes its PID to ``DIR/pids/g<gen>-r<rank>.pid`` so the launcher can kill
  workers directly (a SIGKILLed torchrun agent orphans its workers).
- **No orphans, no hangs**: started by the bridge (``MTGYM_PARENT_PID`` set), a worker
  gets SIGKILL when its agent dies (``PR_SET_PDEATHSIG``). Every collective, the first
  store connection included, fails after ``--pg-timeout`` (120 s) when a peer is gone, so
  a worker never waits for ever.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

T_PROCESS = time.time()  # before torch is imported: the worker's own start-up cost


class Reporter:
    """Rank 0's progress file: one JSON line per event, flushed at once (others: no-op).

    Args:
        path: the file to append to (``progress.jsonl``), or None for a rank that does not
            report.
    """

    def __init__(self, path: Path | None) -> None:
        self.f = open(path, "a", buffering=1) if path is not None else None  # noqa: SIM115

    def emit(self, **rec: Any) -> None:
        """Append one record (``t`` = wall-clock time added when missing).

        Args:
            **rec: the record's fields, compact JSON on one line.
        """
        if self.f is None:
            return
        rec.setdefault("t", time.time())
        self.f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        self.f.flush()

    def close(self) -> None:
        """Flush, ``fsync`` and close (a no-op on ranks other than 0)."""
        if self.f is not None:
            self.f.flush()
            os.fsync(self.f.fileno())
            self.f.close()


def last_reported_step(path: Path) -> int:
    """The highest ``step`` in a progress file (0 if none): steps up to it are redone.

    Covers every earlier generation of the job; unreadable lines (a torn tail) are
    skipped.

    Args:
        path: the job's ``progress.jsonl``.
    """
    best = 0
    if not path.exists():
        return 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("event") == "step":
                best = max(best, int(rec.get("step", 0)))
    return best


def _checkpoint_module() -> Any:
    """``mtgym.bridge.checkpoint``, loaded by path when run as a script.

    Launched as a script (the default), the worker does not import the ``mtgym`` package,
    whose ``__init__`` pulls in gymnasium (about 0.35 s per restart).
    """
    return _sibling("checkpoint")


def _models() -> Any:
    """``mtgym.bridge.models`` (the models and their synthetic data), by path as a script."""
    return _sibling("models")


def _sibling(stem: str) -> Any:
    """``mtgym.bridge.<stem>``, loaded by path when this file runs as a script
    (``siblings.load``).

    Imported normally when this file was itself imported as part of the package.

    Args:
        stem: the file name without ``.py``.
    """
    if __package__:
        import importlib

        return importlib.import_module(f"mtgym.bridge.{stem}")
    return _path_loader()(stem)


@functools.cache
def _path_loader() -> Any:
    """``mtgym.bridge.siblings.load``, reached by path."""
    import runpy

    return runpy.run_path(str(Path(__file__).with_name("siblings.py")))["load"]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The worker's command line.

    ``--model`` takes a ``MODELS`` name only (model sets are resolved by the controller).
    ``--max-steps`` 0 means no limit; ``--ckpt-every`` 0 checkpoints only at the stop.

    Args:
        argv: the arguments without the program name (None: ``sys.argv[1:]``).
    """
    p = argparse.ArgumentParser(prog="mtgym.bridge.worker", description=__doc__.splitlines()[0])
    p.add_argument("--job-dir", required=True, type=Path, help="per-job folder (shared FS)")
    p.add_argument("--model", default="mlp", choices=sorted(_models().MODELS))
    p.add_argument(
        "--batch", type=int, default=None, help="samples per worker per step (default: model's)"
    )
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gen", type=int, default=0, help="launch generation (for the reports)")
    p.add_argument("--ckpt-every", type=int, default=50, help="steps between checkpoints")
    p.add_argument("--keep", type=int, default=3, help="checkpoints kept")
    p.add_argument("--sync-every", type=int, default=2, help="steps between stop-flag votes")
    p.add_argument("--stop-file", type=Path, default=None)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this global step")
    p.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument(
        "--backend",
        default="auto",
        choices=("auto", "nccl", "gloo"),
        help="process group backend: auto = nccl on CUDA, gloo on CPU; gloo when workers "
        "share a GPU (--share-gpus)",
    )
    p.add_argument(
        "--gpu-every", type=float, default=2.0, help="seconds between rank 0's gpu reports"
    )
    p.add_argument("--no-fsync", action="store_true", help="skip fsync (faster, less durable)")
    p.add_argument(
        "--ignore-stop", action="store_true", help="fault injection: never honour stop requests"
    )
    p.add_argument(
        "--dp",
        default="ddp",
        choices=("ddp", "allreduce"),
        help="data parallelism: torch DDP (default), or one flat all_reduce of the gradients "
        "per step (no DDP: restarts skip DDP's 2-3 s lazy import of torch._dynamo)",
    )
    p.add_argument("--pg-timeout", type=float, default=120.0, help="collective timeout, s")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Script entry point: train, then leave with ``os._exit(0)`` (no gloo teardown).

    Args:
        argv: the arguments (None: ``sys.argv[1:]``).
    """
    train(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def train(argv: Sequence[str] | None = None) -> int:
    """Train until a stop request (or ``--max-steps``); returns the last step.

    Ends with ``barrier; destroy_process_group``; the caller exits the process without
    interpreter teardown (``main`` or a forked agent child, which multiprocessing ends with
    ``os._exit``).

    Reads ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` from torchrun's environment, writes
    its PID file, joins the process group, resumes from the newest valid checkpoint and
    reports ``start`` (with the wall times of the process start, the torch import and the
    process group, for the restart-cost breakdown). ``MTGYM_FAULT=crash-at-start`` makes
    it fail on purpose (tests).

    Args:
        argv: the worker's arguments (``parse_args``).

    Returns:
        The global step it stopped at.
    """
    args = parse_args(argv)
    procs = _sibling("procs")
    procs.set_pdeathsig_from_env()  # die with the agent that started us, even on SIGKILL
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    t_import = time.time()
    torch.set_num_threads(max(1, args.threads))
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if args.batch is None:
        args.batch = _models().default_batch(args.model)
    place = _place(args, int(os.environ.get("LOCAL_RANK", "0")))
    if os.environ.get("MTGYM_FAULT") == "crash-at-start":  # fault injection (tests)
        raise SystemExit("MTGYM_FAULT=crash-at-start: failing on purpose")
    job_dir: Path = args.job_dir
    (job_dir / "pids").mkdir(parents=True, exist_ok=True)
    (job_dir / "pids" / f"g{args.gen}-r{rank}.pid").write_text(f"{os.getpid()}\n")
    procs.bind_stores_from_env()  # a store this worker hosts listens on 127.0.0.1 only
    dist.init_process_group(place.backend, timeout=timedelta(seconds=args.pg_timeout))
    t_pg = time.time()
    rep = Reporter(job_dir / "progress.jsonl" if rank == 0 else None)
    run = _Run(args, rank, world, place, rep)
    run.resume()
    rep.emit(
        event="start",
        gen=args.gen,
        world_size=world,
        step=run.step,
        samples=run.samples,
        committed=run.committed,
        model=args.model,
        batch=args.batch,
        device=str(place.device),
        gpu=place.physical,
        backend=place.backend,
        amp=place.amp,
        t_process=T_PROCESS,
        t_import=t_import,
        t_pg=t_pg,
    )
    run.finish(run.loop())
    return run.step


@dataclass(frozen=True)
class _Placement:
    """Where a rank trains: its torch device and what follows from it.

    Attributes:
        device: the ``torch.device`` (``cuda:0`` under ``LocalLauncher``).
        physical: the GPU's id as ``CUDA_VISIBLE_DEVICES`` names it (None on CPU).
        use_cuda: the rank trains on a GPU.
        backend: the process group backend, ``"nccl"`` or ``"gloo"``.
        amp: forward pass in bf16 autocast (CUDA and a model marked ``amp``).
        channels_last: NHWC memory format (ResNets on CUDA).
    """

    device: Any  # torch.device
    physical: str | None  # the GPU's id as CUDA_VISIBLE_DEVICES names it (None on CPU)
    use_cuda: bool
    backend: str  # process group backend: "nccl" or "gloo"
    amp: bool  # forward pass in bf16 autocast
    channels_last: bool  # ResNets on CUDA: NHWC memory format


def _place(args: argparse.Namespace, local_rank: int) -> _Placement:
    """Pick this rank's device (and make it current) from ``--device`` and ``--backend``.

    Must run before anything initialises CUDA: it may set ``CUDA_VISIBLE_DEVICES``. With
    ``--device auto`` CUDA is used when torch sees a GPU. Turns on cuDNN's benchmark mode
    on CUDA.

    Args:
        args: the parsed command line.
        local_rank: torchrun's ``LOCAL_RANK``.

    Raises:
        SystemExit: CUDA is asked for but the rank has no GPU.
    """
    import torch

    gpu = _sibling("gpu")
    # Under LocalLauncher this worker sees only its own GPU (set before CUDA starts, so
    # before any torch.cuda call); under Slurm (one torchrun per node) local rank k takes
    # cuda:k.
    physical, index = gpu.own_device(local_rank) if args.device != "cpu" else (None, 0)
    if physical is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = physical
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if use_cuda:
        if index >= torch.cuda.device_count():
            raise SystemExit(
                f"local rank {local_rank} has no GPU ({torch.cuda.device_count()} visible): "
                "use --workers-per-node <= GPUs per node, or --device cpu"
            )
        torch.cuda.set_device(index)
        device = torch.device("cuda", index)
        physical = physical if physical is not None else str(index)
        torch.backends.cudnn.benchmark = True  # fixed shapes: pick the fastest kernels once
    else:
        device = torch.device("cpu")
    return _Placement(
        device=device,
        physical=physical,
        use_cuda=use_cuda,
        backend=args.backend if args.backend != "auto" else ("nccl" if use_cuda else "gloo"),
        amp=use_cuda and bool(_models().MODELS[args.model].get("amp")),
        channels_last=use_cuda and _models().MODELS[args.model]["kind"] == "resnet",
    )


class _Run:
    """One rank's training run: the model, its optimiser and the counters it reports.

    ``resume`` builds the model; then ``loop`` trains and ``finish`` leaves the group.

    Args:
        args: the parsed command line.
        rank: the global rank (0 writes reports and checkpoints).
        world: the world size (workers).
        place: the rank's device.
        rep: the progress reporter (a no-op on ranks other than 0).

    Attributes:
        step: the global step reached (steps before this generation included).
        samples: the global samples processed, cumulative over the job.
        committed: the step of the newest durable checkpoint.
    """

    def __init__(
        self, args: argparse.Namespace, rank: int, world: int, place: _Placement, rep: Reporter
    ) -> None:
        self.args, self.rank, self.world, self.place, self.rep = args, rank, world, place, rep
        self.ck = _checkpoint_module()
        self.ckpt_dir = args.job_dir / "ckpt"
        self.step = 0
        self.samples = 0
        self.committed = 0
        self.sampler: Any = None  # rank 0 on CUDA: the GPU's sampler (set by ``loop``)

    def resume(self) -> None:
        """Load the newest valid checkpoint (if any) and build the model and optimiser.

        Rank 0 removes stale temporary files, picks the newest checkpoint that verifies
        (reporting ``ckpt_invalid`` for each it skips) and broadcasts its step; every rank
        then loads that file. Collective: every rank must call it.
        """
        import torch
        import torch.distributed as dist

        args, place, ck = self.args, self.place, self.ck
        # Rank 0 picks the newest valid checkpoint, every rank loads that very file.
        pick = torch.zeros(1, dtype=torch.int64, device=place.device)
        if self.rank == 0:
            ck.remove_stale_tmp(self.ckpt_dir)
            info, bad = ck.latest_valid(self.ckpt_dir)
            for path, why in bad:
                self.rep.emit(event="ckpt_invalid", path=str(path), reason=why, gen=args.gen)
            pick.fill_(info.step if info is not None else -1)
        dist.broadcast(pick, 0)
        start_step = int(pick.item())
        self.model = _models().build_model(args.model)
        opt_state = None
        if start_step >= 0:
            state = ck.load_checkpoint(ck.checkpoint_path(self.ckpt_dir, start_step))
            self.model.load_state_dict(state["model"])
            opt_state = state["opt"]
            self.samples = int(state["samples"])
        else:
            start_step = 0
        self.model.to(place.device)
        if place.channels_last:
            self.model.to(memory_format=torch.channels_last)
        self.params = list(self.model.parameters())
        if args.dp == "ddp":
            from torch.nn.parallel import DistributedDataParallel

            ids = [place.device.index] if place.use_cuda else None
            self.net = DistributedDataParallel(self.model, device_ids=ids)
        else:
            self.net = self.model
            for p_ in self.params:
                dist.broadcast(p_.data, 0)
        self.opt = torch.optim.SGD(self.params, lr=args.lr, momentum=0.9)
        if opt_state is not None:
            self.opt.load_state_dict(opt_state)
        self.step = self.committed = start_step

    def checkpoint(self, step: int) -> None:
        """Rank 0 writes a durable checkpoint of ``step`` and reports it committed.

        Holds the model and optimiser states, ``samples``, the world size and generation;
        keeps the newest ``--keep``. A no-op on other ranks.

        Args:
            step: the global step the state is at.
        """
        if self.rank != 0:
            return
        state = {
            "step": step,
            "samples": self.samples,
            "model": self.model.state_dict(),
            "opt": self.opt.state_dict(),
            "world_size": self.world,
            "gen": self.args.gen,
        }
        keep, fsync = self.args.keep, not self.args.no_fsync
        path = self.ck.save_checkpoint(self.ckpt_dir, step, state, keep=keep, fsync=fsync)
        self.committed = step
        self.rep.emit(
            event="ckpt", step=step, samples=self.samples, gen=self.args.gen, path=path.name
        )

    def loop(self) -> str:
        """Train step after step until ``--max-steps`` or an agreed stop; returns why.

        Rank 0 reports every step; a step at or below the highest step ever reported is
        marked ``redo`` (it was run before a crash). On CUDA rank 0 also reports the GPU
        every ``--gpu-every`` seconds.

        Returns:
            ``"max_steps"`` or ``"stop_file"``.
        """
        import torch

        args, place, rep = self.args, self.place, self.rep
        data = _models().SyntheticData(args.model, args.batch, args.seed, place.device)
        loss_fn = torch.nn.CrossEntropyLoss()
        redo_until = last_reported_step(args.job_dir / "progress.jsonl") if self.rank == 0 else 0
        flag = torch.zeros(1, dtype=torch.int64, device=place.device)
        gpu = _sibling("gpu")
        on_gpu = place.use_cuda and self.rank == 0
        self.sampler = gpu.GpuSampler(place.device, place.physical) if on_gpu else None
        t_gpu = time.time()
        while True:
            loss = self._train_step(data, loss_fn)
            self.step += 1
            step = self.step
            batch = args.batch * self.world
            self.samples += batch
            if self.rank == 0:
                rep.emit(
                    event="step",
                    step=step,
                    world_size=self.world,
                    samples=self.samples,
                    batch=batch,
                    gen=args.gen,
                    committed=self.committed,
                    redo=step <= redo_until,
                    loss=round(float(loss.detach()), 5),
                )
            if self.sampler is not None and time.time() - t_gpu >= args.gpu_every:
                t_gpu = time.time()
                self._report_gpu()
            if args.ckpt_every > 0 and step % args.ckpt_every == 0:
                self.checkpoint(step)
            if args.max_steps and step >= args.max_steps:
                return "max_steps"
            if step % max(1, args.sync_every) == 0 and self._stop_agreed(flag):
                return "stop_file"

    def finish(self, reason: str) -> None:
        """Checkpoint the last step, report ``stop`` and leave the process group.

        ``stop`` is reported after a barrier, so it means every rank finished its last step
        and the checkpoint is durable. If the teardown hangs for 20 s, the stacks are dumped
        to the log.

        Args:
            reason: ``loop``'s answer, recorded in the ``stop`` report.
        """
        import torch.distributed as dist

        if self.sampler is not None:
            self._report_gpu()
            self.sampler.close()
        if self.committed != self.step:
            self.checkpoint(self.step)
        # A teardown that hangs (rare, seen once in gloo's destroy) shows its stack in the log;
        # the launcher kills a generation that has reported "stop" but not exited.
        import faulthandler

        faulthandler.dump_traceback_later(20.0, exit=False)
        dist.barrier()
        self.rep.emit(
            event="stop", step=self.step, samples=self.samples, gen=self.args.gen, reason=reason
        )
        self.rep.close()
        dist.destroy_process_group()
        faulthandler.cancel_dump_traceback_later()

    def _train_step(self, data: Any, loss_fn: Any) -> Any:
        """One optimiser step on this rank's batch of ``self.step``; returns the loss.

        Args:
            data: the batch source.
            loss_fn: cross-entropy.

        Returns:
            The loss, a scalar tensor on the rank's device.
        """
        import torch

        place = self.place
        x, y = data.get(self.step, self.rank)
        if place.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        self.opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=place.device.type, dtype=torch.bfloat16, enabled=place.amp):
            loss = loss_fn(self.net(x), y)
        loss.backward()
        if self.args.dp == "allreduce" and self.world > 1:
            self._average_gradients()
        self.opt.step()
        return loss

    def _average_gradients(self) -> None:
        """``--dp allreduce``: average the gradients over ranks in one flat all_reduce."""
        import torch
        import torch.distributed as dist

        flat = torch.cat([p_.grad.reshape(-1) for p_ in self.params])
        dist.all_reduce(flat)
        flat.div_(self.world)
        off = 0
        for p_ in self.params:
            n = p_.numel()
            p_.grad.copy_(flat[off : off + n].view_as(p_.grad))
            off += n

    def _stop_agreed(self, flag: Any) -> bool:
        """Whether any rank sees the stop file (every rank learns the same answer).

        Collective (an ``all_reduce`` MAX). ``--ignore-stop`` makes this rank vote no.

        Args:
            flag: a one-element int64 tensor on the rank's device, reused between votes.
        """
        import torch.distributed as dist

        stop_file = self.args.stop_file
        want = 0
        if stop_file is not None and not self.args.ignore_stop and stop_file.exists():
            want = 1
        flag.fill_(want)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(int(flag.item()))

    def _report_gpu(self) -> None:
        """Rank 0 on CUDA: report the GPU's utilisation and memory since the last report."""
        self.rep.emit(
            event="gpu",
            step=self.step,
            gen=self.args.gen,
            gpu=self.place.physical,
            **self.sampler.take(),
        )


if __name__ == "__main__":
    main()
