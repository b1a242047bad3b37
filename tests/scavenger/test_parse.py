"""Pure parsers of Slurm output, on text captured from Debian's slurm 22.05.8."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

import pytest

from mtgym.scavenger.slurm import (
    SlurmParseError,
    SlurmUnavailableError,
    expand_hostlist,
    parse_gres,
    parse_reservations,
    parse_sinfo_json,
    parse_sinfo_text,
    parse_squeue,
    parse_state,
)

DATA = Path(__file__).parent / "data"

# sinfo -h -N -o "%N|%t|%P|%G|%E" with n2 allocated and n3 drained (captured)
SINFO = """\
n1|idle|scav|gpu:a100:2|none
n1|idle|main*|gpu:a100:2|none
n2|alloc|scav|gpu:a100:2|none
n3|drain|scav|gpu:a100:2|owner reclaim
n3|drain|main*|gpu:a100:2|owner reclaim
n4|idle*|main*|(null)|Not responding
n5|mix-|main*|gpu:v100:4(S:0-1),mps:100|none
"""


def test_sinfo_text_states_partitions_gres():
    nodes = parse_sinfo_text(SINFO)
    assert list(nodes) == ["n1", "n2", "n3", "n4", "n5"]
    n1 = nodes["n1"]
    assert n1.base == "idle" and n1.idle and n1.partitions == ("scav", "main")
    assert (n1.gpus, n1.gpu_type) == (2, "a100")
    assert nodes["n2"].base == "alloc" and not nodes["n2"].idle
    n3 = nodes["n3"]
    assert n3.base == "idle" and "drain" in n3.flags and not n3.idle
    assert n3.reason == "owner reclaim"
    n4 = nodes["n4"]
    assert "not_responding" in n4.flags and not n4.idle and n4.gpus == 0
    n5 = nodes["n5"]
    assert n5.base == "mix" and "planned" in n5.flags and (n5.gpus, n5.gpu_type) == (4, "v100")


def test_sinfo_plain_two_columns():
    nodes = parse_sinfo_text("n1 idle\nn2 down*\nn3 drng\n")
    assert nodes["n1"].idle
    assert nodes["n2"].base == "down" and "not_responding" in nodes["n2"].flags
    assert nodes["n3"].base == "alloc" and "drain" in nodes["n3"].flags


@pytest.mark.parametrize(
    ("text", "base", "flags"),
    [
        ("idle", "idle", set()),
        ("idle~", "idle", {"power_save"}),
        ("resv", "idle", {"reserved"}),
        ("maint", "idle", {"maint"}),
        ("plnd", "idle", {"planned"}),
        ("comp", "alloc", {"completing"}),
        ("down*", "down", {"not_responding"}),
        ("idle+drain", "idle", {"drain"}),
        ("ALLOCATED", "alloc", set()),
        ("inval", "invalid", set()),
    ],
)
def test_states(text, base, flags):
    assert parse_state(text) == (base, frozenset(flags))


@pytest.mark.parametrize(
    "bad",
    [
        "n1|weird|main|(null)|none\n",  # unknown state
        "n1\n",  # one field
        "n 1|idle\n|x",  # bad name
        "n1|idle|main|gpu:a100:x4|none\n",  # bad GPU count
    ],
)
def test_sinfo_malformed_names_the_line(bad):
    with pytest.raises(SlurmParseError) as err:
        parse_sinfo_text(bad, ["sinfo", "-h"])
    assert "line 1" in str(err.value) and "sinfo -h" in str(err.value)


def test_sinfo_json_captured():
    nodes = parse_sinfo_json((DATA / "sinfo-22.05.json").read_text())
    assert sorted(nodes) == ["n1", "n2", "n3", "n4"]
    assert nodes["n1"].idle and nodes["n1"].partitions == ("main", "scav")
    assert nodes["n2"].base == "alloc"
    assert nodes["n3"].flags == {"drain"} and not nodes["n3"].idle
    assert nodes["n4"].gpus == 2 and nodes["n4"].gpu_type == "a100"


def test_sinfo_json_list_states_and_errors():
    text = '{"nodes": [{"name": "g1", "state": ["IDLE", "NOT_RESPONDING"], "gres": ""}]}'
    g1 = parse_sinfo_json(text)["g1"]
    assert g1.base == "idle" and g1.flags == {"not_responding"} and not g1.idle
    with pytest.raises(SlurmParseError, match="not sinfo JSON"):
        parse_sinfo_json("sinfo: error: Unable to contact slurm controller")
    with pytest.raises(SlurmParseError, match=r"nodes\[0\]"):
        parse_sinfo_json('{"nodes": [{"state": "idle"}]}')
    with pytest.raises(SlurmUnavailableError, match="reported errors"):
        parse_sinfo_json('{"nodes": [], "errors": [{"error": "down"}]}')


def test_gres():
    assert parse_gres("(null)") == (0, None)
    assert parse_gres("gpu:4") == (4, None)
    assert parse_gres("gpu:a100:4(S:0-1)") == (4, "a100")
    assert parse_gres("gpu:a100:2,gpu:v100:1,mps:200") == (3, "a100")
    assert parse_gres("mps:100") == (0, None)
    assert parse_gres("gpu:h100") == (1, "h100")


def test_hostlist():
    assert expand_hostlist("n[1-3,5]") == ("n1", "n2", "n3", "n5")
    assert expand_hostlist("gpu[08-10]-ib,login1") == ("gpu08-ib", "gpu09-ib", "gpu10-ib", "login1")
    assert expand_hostlist("r[1-2]n[1-2]") == ("r1n1", "r1n2", "r2n1", "r2n2")
    assert expand_hostlist("(null)") == ()
    for bad in ("n[1-3", "n1]", "n[3-1]", "n[a-b]"):
        with pytest.raises(ValueError, match="host list"):
            expand_hostlist(bad)


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_squeue_running_and_pending():
    text = (
        "7|wrap|root|RUNNING|n[1-2]|2026-12-03T01:04:55|(null)|main\n"
        "8|big|alice|PENDING||2026-12-03T01:20:00|n[3-4]|main\n"
        "9|later|bob|PENDING||N/A|(null)|main\n"
    )
    jobs = parse_squeue(text)
    assert [j.job_id for j in jobs] == ["7", "8", "9"]
    assert jobs[0].nodes == ("n1", "n2") and jobs[0].state == "RUNNING"
    assert jobs[1].sched_nodes == ("n3", "n4") and jobs[1].start_s == _ts("2026-12-03T01:20:00")
    assert math.isnan(jobs[2].start_s) and jobs[2].sched_nodes == ()
    with pytest.raises(SlurmParseError, match="expected 8"):
        parse_squeue("7|wrap|root|RUNNING\n")
    with pytest.raises(SlurmParseError, match="line 1"):
        parse_squeue("7|wrap|root|RUNNING|n[1-|N/A|(null)|main\n")
    with pytest.raises(SlurmParseError):
        parse_squeue("7|wrap|root|RUNNING|n1|yesterday|(null)|main\n")


RESV = """\
ReservationName=r1 StartTime=2026-12-03T01:14:54 EndTime=2026-12-03T01:44:54 Duration=00:30:00
   Nodes=n4 NodeCnt=1 CoreCnt=1 Features=(null) PartitionName=(null) Flags=SPEC_NODES
   TRES=cpu=1
   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a
   MaxStartDelay=(null)

ReservationName=maint StartTime=2026-12-03T00:00:00 EndTime=2026-12-04T00:00:00 Duration=1-00:00:00
   Nodes=n[1-2] NodeCnt=2 CoreCnt=2 Features=(null) PartitionName=(null) Flags=MAINT,SPEC_NODES
   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a
"""


def test_reservations():
    rs = parse_reservations(RESV)
    assert [r.name for r in rs] == ["r1", "maint"]
    assert rs[0].nodes == ("n4",) and rs[0].state == "INACTIVE"
    assert rs[0].start_s == _ts("2026-12-03T01:14:54") and rs[0].end_s == _ts("2026-12-03T01:44:54")
    assert rs[1].nodes == ("n1", "n2") and "MAINT" in rs[1].flags
    assert parse_reservations("No reservations in the system\n") == ()
    with pytest.raises(SlurmParseError, match="ReservationName"):
        parse_reservations("slurm_load_reservations error: Unable to contact slurm controller")
    with pytest.raises(SlurmParseError, match="StartTime"):
        parse_reservations("ReservationName=x EndTime=N/A Nodes=n1")
