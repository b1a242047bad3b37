from __future__ import annotations

import numpy as np
import pytest

from mtgym.core.errors import DataError
from mtgym.readers import read_bftrainer_jobs

HEADER = (
    "job_id,model,submit_time,submit_s,jmin,jmax,pmax_samples,rescale_up_s,rescale_down_s,"
    "tput_n4,tput_n1,tput_n2,note\n"
)
JOBS = (
    HEADER
    + "J00000,AlexNet,2021-02-10T20:21:15,72743,1,4,1000,17.5,11.25,40,10,18,x\n"
    + "J00001,vgg16,2021-02-10T20:21:51,72779,2,2,2.5e3,0,0,7.5,2,4,y\n"
)


def test_read_bftrainer_jobs__builds_curves_from_any_tput_columns(write):
    jobs = read_bftrainer_jobs(write("jobs.csv", JOBS))
    assert len(jobs) == 2
    assert jobs.job_id.tolist() == ["J00000", "J00001"]
    assert jobs.model.tolist() == ["AlexNet", "vgg16"]
    assert jobs.submit_s.tolist() == [72743.0, 72779.0]
    assert jobs.jmin.tolist() == [1, 2] and jobs.jmax.tolist() == [4, 2]
    assert jobs.jmin.dtype == jobs.jmax.dtype == np.int32
    assert jobs.pmax_samples.tolist() == [1000.0, 2500.0]
    assert jobs.rescale_up_s.tolist() == [17.5, 0.0]
    assert jobs.rescale_down_s.tolist() == [11.25, 0.0]
    assert jobs.curve_nodes.tolist() == [0, 1, 2, 4]
    assert jobs.curve_nodes.dtype == np.int32
    assert jobs.curve_tput.tolist() == [[0, 10, 18, 40], [0, 2, 4, 7.5]]
    assert not jobs.curve_tput.flags.writeable


def test_read_bftrainer_jobs__single_breakpoint(write):
    jobs = read_bftrainer_jobs(write("one.csv", JOBS.replace("tput_n4", "t4").replace("n2,", "x,")))
    assert jobs.curve_nodes.tolist() == [0, 1]
    assert jobs.curve_tput[:, 1].tolist() == [10, 2]


@pytest.mark.parametrize(
    ("old", "new", "field", "value"),
    [
        (",1,4,1000,", ",0,4,1000,", "jmin", "0"),
        (",1,4,1000,", ",3,2,1000,", "jmax", "2"),
        (",1,4,1000,", ",1,4,0,", "pmax_samples", "0"),
        (",1,4,1000,", ",1,4,lots,", "pmax_samples", "lots"),
        ("17.5,11.25", "17.5,-1", "rescale_down_s", "-1"),
        ("17.5,11.25,40", "17.5,11.25,-40", "tput_n4", "-40"),
        ("17.5,11.25,40,10", "17.5,11.25,40,nan", "tput_n1", "nan"),
        ("J00000,AlexNet,2021-02-10T20:21:15,72743", "J00000,AlexNet,x,soon", "submit_s", "soon"),
        ("J00001,", "J00000,", "job_id", "J00000"),
    ],
)
def test_read_bftrainer_jobs__bad_value_names_field_and_value(write, old, new, field, value):
    text = JOBS.replace(old, new, 1)
    row = 2 if JOBS.index(old) < JOBS.index("J00001") else 3
    with pytest.raises(DataError) as info:
        read_bftrainer_jobs(write("jobs.csv", text))
    assert (info.value.field, info.value.value, info.value.row) == (field, value, row)
    assert f"'{field}'" in str(info.value) and repr(value) in str(info.value)


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("jmax,", "jmaxx,", "jmax"),
        ("tput_n4,tput_n1,tput_n2", "a,b,c", "tput_n<k>"),
        ("tput_n4", "tput_n0", "tput_n0"),
        ("tput_n4", "tput_n01", "tput_n1"),
    ],
)
def test_read_bftrainer_jobs__bad_header(write, old, new, field):
    with pytest.raises(DataError) as info:
        read_bftrainer_jobs(write("jobs.csv", JOBS.replace(old, new, 1)))
    assert info.value.field == field
    assert info.value.row == 1


def test_read_bftrainer_jobs__missing_file(tmp_path):
    with pytest.raises(DataError, match="'path'"):
        read_bftrainer_jobs(tmp_path / "jobs.csv")


def test_read_bftrainer_jobs__real_imagenet_matches_readme(shared_data):
    jobs = read_bftrainer_jobs(shared_data / "bftrainer-imagenet-1001j.csv")
    assert len(jobs) == 1_001
    assert jobs.curve_nodes.tolist() == [0, 1, 2, 4, 8, 16, 32, 64]
    assert jobs.submit_s[0] == 72_743 and jobs.submit_s[-1] == 108_743
    assert jobs.model[0] == "AlexNet"
    assert jobs.curve_tput[0, -1] == pytest.approx(202_135.4)
    dense = jobs.curve_tput[jobs.model == "DenseNet"]
    assert len(dense) == 143 and np.all(dense == dense[0])
    assert dense[0, 1] == pytest.approx(989.9)
    assert np.all(jobs.pmax_samples == 130_000_000)
    assert jobs.rescale_up_s.min() >= 17.0 and jobs.rescale_up_s.max() <= 19.0
    assert np.all((jobs.jmin == 1) & (jobs.jmax == 64))


def test_read_bftrainer_jobs__real_hps_files(shared_data):
    ten = read_bftrainer_jobs(shared_data / "bftrainer-hps-shufflenet-10j.csv")
    thousand = read_bftrainer_jobs(shared_data / "bftrainer-hps-shufflenet-1000j.csv")
    assert len(ten) == 10 and len(thousand) == 1_000
    assert np.all(np.diff(ten.submit_s) == 4_000)
    assert np.all(ten.rescale_up_s == 18) and np.all(thousand.rescale_down_s == 12)
    assert ten.curve_tput[0, -1] == pytest.approx(145_081.5)
    assert np.all(thousand.curve_tput == ten.curve_tput[0])
