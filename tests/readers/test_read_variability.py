from __future__ import annotations

import numpy as np
import pytest

from mtgym.core.errors import DataError
from mtgym.readers import read_variability, slowdown_samples

READY = """\
,GPU_ID,GPU_UUID,Local_GPU_ID,Node_ID,IN_USE,PerfVar_classA,PerfVar_classB
0,0,GPU-a,0,0,False,1.1,1.0
1,1,GPU-b,1,0,False,0.9,1.2
2,2,GPU-c,0,1,False,1.0,1.0
"""

NORM = """\
exp,cabinet,node,device,uuid,perf,norm_perf
resnet,c1,1,0,c1-1-0,0.2,2.0
resnet,c1,1,1,c1-1-1,0.4,4.0
resnet,c1,2,0,c1-2-0,0.1,1.0
resnet,c1,2,0,c1-2-0,0.3,3.0
"""

PERF = """\
uuid,cabinet,node,warmup,train_time,perf
G1,c01,1,TRUE,121.2Iteration,100
G1,c01,1,FALSE,1.0,10
G1,c01,1,FALSE,1.0,12
G2,c01,1,FALSE,xx,20
G3,-1,-1,FALSE,1,30
G3,c02,007,FALSE,1,30
G4,-1,-1,FALSE,1,40
"""


def test_read_variability__ready_made_classes_kept_as_given(write):
    var = read_variability(write("32gpu-variability.csv", READY))
    assert var.source == "32gpu-variability.csv"
    assert var.classes == ("A", "B")
    assert var.gpu_id.tolist() == ["GPU-a", "GPU-b", "GPU-c"]
    assert var.node_id.tolist() == ["0", "0", "1"]
    assert var.slowdown.tolist() == [[1.1, 1.0], [0.9, 1.2], [1.0, 1.0]]
    assert var.n_runs.tolist() == [1, 1, 1]
    assert slowdown_samples(var, "B").tolist() == [1.0, 1.2, 1.0]


def test_read_variability__norm_perf_renormalised_per_gpu_median(write):
    var = read_variability(write("resnet-ls6-agg.csv", NORM))
    assert var.classes == ("resnet",)
    assert var.gpu_id.tolist() == ["c1-1-0", "c1-1-1", "c1-2-0"]
    assert var.node_id.tolist() == ["c1-1", "c1-1", "c1-2"]
    assert var.slowdown[:, 0].tolist() == [1.0, 2.0, 1.0]
    assert var.n_runs.tolist() == [1, 1, 2]
    assert var.n_runs.dtype == np.int32


@pytest.mark.parametrize("name", ["sgemm-longhorn-agg.csv", "sgemm-longhorn-agg.csv.gz"])
def test_read_variability__perf_drops_warmup_and_resolves_nodes(write, name):
    var = read_variability(write(name, PERF))
    assert var.classes == ("sgemm",)
    assert var.gpu_id.tolist() == ["G1", "G2", "G3", "G4"]
    assert var.slowdown[:, 0] == pytest.approx([11 / 25, 20 / 25, 30 / 25, 40 / 25])
    assert var.n_runs.tolist() == [2, 1, 2, 1]
    assert var.node_id.tolist() == ["c01-1", "c01-1", "c02-7", "unknown:G4"]
    assert slowdown_samples(var, "sgemm").shape == (4,)
    assert not var.slowdown.flags.writeable


def test_read_variability__workload_from_exp_or_model_column(write):
    text = PERF.replace("uuid,", "model,uuid,").replace("\nG", "\npagerank,G")
    assert read_variability(write("x-agg.csv", text)).classes == ("pagerank",)


@pytest.mark.parametrize(
    ("name", "text", "field", "value", "row"),
    [
        ("a.csv", PERF.replace("xx,20", "xx,fast"), "perf", "fast", 5),
        ("a.csv", PERF.replace("xx,20", "xx,0"), "perf", "0", 5),
        ("a.csv", PERF.replace("G2,c01,1,FALSE,xx", "G2,c01,1,maybe,xx"), "warmup", "maybe", 5),
        ("a.csv", PERF.replace("G3,-1,-1", "G3,c03,2"), "node", "c02-7", 7),
        ("b.csv", NORM.replace(",0.4,4.0", ",0.4,-4.0"), "norm_perf", "-4.0", 3),
        ("c.csv", READY.replace("1.2\n", "x\n"), "PerfVar_classB", "x", 3),
        ("c.csv", READY.replace("GPU-c", "GPU-a"), "GPU_UUID", "GPU-a", 4),
    ],
)
def test_read_variability__bad_value(write, name, text, field, value, row):
    with pytest.raises(DataError) as info:
        read_variability(write(name, text))
    assert (info.value.field, info.value.value, info.value.row) == (field, value, row)
    assert f"'{field}'" in str(info.value) and repr(value) in str(info.value)


def test_read_variability__missing_columns(write, tmp_path):
    with pytest.raises(DataError) as info:
        read_variability(write("a.csv", NORM.replace("uuid", "gpu")))
    assert info.value.field == "uuid"
    assert "norm_perf" in info.value.allowed
    with pytest.raises(DataError) as info:
        read_variability(write("b.csv", PERF.replace("uuid", "gpu")))
    assert info.value.field == "columns"
    assert "gpu" in str(info.value.value)
    with pytest.raises(DataError) as info:
        read_variability(write("c.csv", READY.replace("Node_ID", "node")))
    assert info.value.field == "Node_ID"
    with pytest.raises(DataError, match="'path'"):
        read_variability(tmp_path / "none.csv")


def test_read_variability__all_rows_warmup(write):
    with pytest.raises(DataError, match="'warmup'"):
        read_variability(write("a.csv", PERF.replace("FALSE", "TRUE")))


def test_slowdown_samples__unknown_class(write):
    var = read_variability(write("32gpu-variability.csv", READY))
    with pytest.raises(DataError) as info:
        slowdown_samples(var, "Z")
    assert info.value.value == "Z" and "'A', 'B'" in info.value.allowed


# ----- the real files ---------------------------------------------------------------------

# README section 2, per-GPU rows: (file, GPUs, nodes, p50, p90, p99, max). The README divides
# by the median over rows, the reader by the median over GPUs, so README = reader * p50.
README_PER_GPU = [
    ("sim/resnet-longhorn-agg.csv", 336, 84, 1.0024, 1.0338, 1.1130, 1.1232),
    ("sim/pagerank-longhorn-agg.csv", 172, 43, 1.0000, 1.0016, 1.0030, 1.0036),
    ("sim/sgemm-longhorn-agg.csv.gz", 392, 80 + 72, 0.9983, 1.0189, 1.0482, 1.2007),
    ("frontera/frontera-resnet-agg.csv", 296, 74, 0.9998, 1.0194, 1.1291, 1.1447),
    ("frontera/frontera-bert-agg.csv", 276, 69, 1.0001, 1.0047, 1.0584, 1.0603),
    ("frontera/frontera-pagerank-agg.csv", 248, 62, 1.0000, 1.0005, 1.0007, 1.0009),
    ("ls6/resnet-ls6-agg.csv", 219, 73, 1.0000, 1.0310, 2.1656, 2.2010),
]


@pytest.mark.parametrize("row", README_PER_GPU, ids=[r[0] for r in README_PER_GPU])
def test_read_variability__real_per_gpu_stats_match_readme(shared_data, row):
    name, n_gpus, n_nodes, *quantiles = row
    var = read_variability(shared_data / "gpu-variability" / name)
    assert len(var) == n_gpus
    assert len(np.unique(var.node_id)) == n_nodes
    assert np.median(var.slowdown) == pytest.approx(1.0)
    got = np.quantile(var.slowdown[:, 0], [0.5, 0.9, 0.99, 1.0]) * quantiles[0]
    assert got == pytest.approx(quantiles, abs=2e-4)


def test_read_variability__real_bert_longhorn_drops_warmup_and_text(shared_data):
    var = read_variability(shared_data / "gpu-variability/sim/bert-longhorn-agg.csv")
    assert var.classes == ("bert",)
    assert len(var) == 136 and len(np.unique(var.node_id)) == 34
    assert int(var.n_runs.sum()) == 1_096 - 184  # 184 warm-up rows
    assert var.slowdown.max() == pytest.approx(1.0369, abs=1e-4)


def test_read_variability__real_32gpu_table(shared_data):
    var = read_variability(shared_data / "gpu-variability/32gpu-variability.csv")
    assert var.classes == ("A", "B", "C", "D")
    assert len(var) == 32 and len(np.unique(var.node_id)) == 8
    a = slowdown_samples(var, "A")
    assert a.max() == pytest.approx(1.1172, abs=1e-4)
    assert np.median(a) == pytest.approx(1.0023, abs=1e-4)
    assert np.array_equal(slowdown_samples(var, "B"), slowdown_samples(var, "C"))
    # classA is frontera-resnet's per-GPU median over its row median: a constant ratio to ours.
    fr = read_variability(shared_data / "gpu-variability/frontera/frontera-resnet-agg.csv")
    ours = fr.slowdown[np.searchsorted(fr.gpu_id, var.gpu_id), 0]
    assert np.array_equal(fr.gpu_id[np.searchsorted(fr.gpu_id, var.gpu_id)], var.gpu_id)
    assert np.ptp(a / ours) < 1e-12
