"""Readers of the real data sets.

Each reader is a pure function ``read_*(path)`` returning a frozen dataclass of read-only numpy
arrays, and raising :class:`mtgym.core.errors.DataError` on bad input.

- ``read_bftrainer_jobs``: BFTrainer's job workloads (ImageNet 1001J, the ShuffleNet HPS
  files): node bounds, work, rescale costs and measured throughput curves;
- ``read_idle_windows``, ``read_summit_nodes``: the Summit idle-node trace of
  BFTrainer's Replayer and its nodes' rows and cabinets;
- ``read_node_list``: any machine's node list, each node's group at every topology level;
- ``read_philly_trace``: PAL's Sia-Philly rigid GPU jobs, with PAL's per-model constants
  (``PAL_APP_CLASS``, ``PAL_ITER_TIME_S``);
- ``read_variability``, ``slowdown_samples``: blox-pal's per-GPU variability files;
  ``pal_slowdown_pool`` and ``pal_artifact_draw`` rebuild the artifact's own draw;
- ``read_gavel_throughputs``: Gavel's measured isolated throughputs.

SWF job logs are read by ``mtgym.readers.swf.read_swf`` (not exported here).
"""

from mtgym.readers.bftrainer import BFTrainerJobs, read_bftrainer_jobs
from mtgym.readers.gavel import GavelThroughputs, UnknownThroughputError, read_gavel_throughputs
from mtgym.readers.node_list import NodeList, read_node_list
from mtgym.readers.philly import (
    PAL_APP_CLASS,
    PAL_ITER_TIME_S,
    PhillyTrace,
    pal_app_class,
    read_philly_trace,
)
from mtgym.readers.summit import (
    IdleWindowTable,
    NodeTable,
    parse_summit_name,
    read_idle_windows,
    read_summit_nodes,
)
from mtgym.readers.variability import (
    PAL_ARTIFACT_SEED,
    GpuVariability,
    pal_artifact_draw,
    pal_slowdown_pool,
    read_variability,
    slowdown_samples,
)

__all__ = [
    "PAL_APP_CLASS",
    "PAL_ARTIFACT_SEED",
    "PAL_ITER_TIME_S",
    "BFTrainerJobs",
    "GavelThroughputs",
    "GpuVariability",
    "IdleWindowTable",
    "NodeList",
    "NodeTable",
    "PhillyTrace",
    "UnknownThroughputError",
    "pal_app_class",
    "pal_artifact_draw",
    "pal_slowdown_pool",
    "parse_summit_name",
    "read_bftrainer_jobs",
    "read_gavel_throughputs",
    "read_idle_windows",
    "read_node_list",
    "read_philly_trace",
    "read_summit_nodes",
    "read_variability",
    "slowdown_samples",
]
