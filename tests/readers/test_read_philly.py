from __future__ import annotations

import numpy as np
import pytest

from mtgym.core.errors import DataError
from mtgym.readers import (
    PAL_APP_CLASS,
    PAL_ITER_TIME_S,
    pal_app_class,
    read_philly_trace,
)

TRACE = """\
job_id,num_gpus,submit_time,duration,model
0,1,98,1481.0,vgg19
1,12,115,4037.0,DCGAN
2,4,0,60,GPT2
"""


def test_read_philly_trace__parses_fixture(write):
    t = read_philly_trace(write("workload-1.csv", TRACE))
    assert len(t) == 3
    assert t.job_id.tolist() == [0, 1, 2]
    assert t.num_gpus.tolist() == [1, 12, 4]
    assert t.job_id.dtype == t.num_gpus.dtype == np.int32
    assert t.submit_s.tolist() == [98.0, 115.0, 0.0]
    assert t.duration.tolist() == [1481.0, 4037.0, 60.0]
    assert t.model.tolist() == ["vgg19", "DCGAN", "GPT2"]
    assert not t.duration.flags.writeable


@pytest.mark.parametrize(
    ("old", "new", "field", "value", "row"),
    [
        ("1,12,115", "1,0,115", "num_gpus", "0", 3),
        ("1,12,115", "1,12,-5", "submit_time", "-5", 3),
        ("4037.0", "0", "duration", "0", 3),
        ("4037.0", "1e", "duration", "1e", 3),
        ("2,4,0", "1,4,0", "job_id", "1", 4),
        ("2,4,0", "two,4,0", "job_id", "two", 4),
    ],
)
def test_read_philly_trace__bad_value(write, old, new, field, value, row):
    with pytest.raises(DataError) as info:
        read_philly_trace(write("w.csv", TRACE.replace(old, new)))
    assert (info.value.field, info.value.value, info.value.row) == (field, value, row)
    assert f"'{field}'" in str(info.value) and repr(value) in str(info.value)


def test_read_philly_trace__missing_column_and_file(write, tmp_path):
    with pytest.raises(DataError) as info:
        read_philly_trace(write("w.csv", TRACE.replace(",model", ",net")))
    assert info.value.field == "model"
    assert "num_gpus" in info.value.allowed
    with pytest.raises(DataError, match="'path'"):
        read_philly_trace(tmp_path / "workload-9.csv")


def test_pal_app_class__maps_known_models_and_defaults_to_a():
    assert [pal_app_class(m) for m in ("resnet50", "GPT2", "vgg19", "PointNet")] == list("ABCD")
    assert pal_app_class("AlexNet") == "A"
    assert PAL_ITER_TIME_S["GPT2"] == 3.5714
    assert set(PAL_APP_CLASS) == set(PAL_ITER_TIME_S)
    with pytest.raises(TypeError):
        PAL_APP_CLASS["x"] = "B"  # type: ignore[index]


@pytest.mark.parametrize("n", range(1, 9))
def test_read_philly_trace__real_workloads(shared_data, n):
    t = read_philly_trace(shared_data / "pal-philly" / f"workload-{n}.csv")
    assert len(t) == 160
    assert t.job_id.tolist() == list(range(160))
    assert set(t.num_gpus.tolist()) <= {1, 4, 6, 8, 12, 16, 24, 32, 48}
    assert set(t.model.tolist()) <= set(PAL_ITER_TIME_S)
    assert 56 <= int((t.num_gpus == 1).sum()) <= 75
    assert t.submit_s.max() < 5 * 3600
