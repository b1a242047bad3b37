"""Reduced FreeTrain experiment: directions on a Summit subset (the --quick sizes)."""

from __future__ import annotations

import pytest

from mtgym.policy.play import play
from mtgym.reproduce import freetrain
from mtgym.reproduce.common import make, run_traced


def test_run_traced_matches_run_episode(shared_data):
    inst = freetrain._instance(str(shared_data), "imagenet", 300, 2 * 3600.0)
    for name, kw in (("freetrain", {"t_fwd": 10.0}), ("equal-share", {})):
        a = run_traced(inst, make(name, **kw))
        b = play(inst, make(name, **kw))
        assert a.metrics["samples"] == b.metrics.samples
        assert a.decisions == b.decisions
        assert a.series_samples[-1] == pytest.approx(a.metrics["samples"], rel=1e-9)
        # ideal samples bound the useful ones; with BFTrainer costs only losses separate them
        assert a.metrics["samples"] <= a.ideal_samples * (1 + 1e-12)


def test_freetrain_quick_directions(shared_data, tmp_path):
    res = freetrain.run(shared_data, tmp_path, quick=True, workers=1, progress=False)
    eps = {(e["workload"], e["policy"], e["t_fwd"]): e for e in res.raw["episodes"]}
    ft = eps[("imagenet", "freetrain", 10.0)]
    eq = eps[("imagenet", "equal-share", 10.0)]
    # FreeTrain's allocator processes at least as many samples as equal share
    assert ft["samples_compare"] >= eq["samples_compare"]
    assert (
        eps[("hps", "freetrain", 10.0)]["samples_compare"]
        >= eps[("hps", "equal-share", 10.0)]["samples_compare"]
    )
    # efficiency: a fraction, higher for FreeTrain (far fewer rescales) than equal share
    for e in res.raw["episodes"]:
        assert 0.0 < e["efficiency"] <= 1.0
        assert e["efficiency_1node"] < e["efficiency"]
    assert ft["efficiency"] > eq["efficiency"]
    assert ft["metrics"]["rescales"] < eq["metrics"]["rescales"]
    # a longer look-ahead accepts more rescales, so it loses more to them
    assert (
        eps[("imagenet", "freetrain", 1.0)]["efficiency"]
        > eps[("imagenet", "freetrain", 300.0)]["efficiency"]
    )
    metrics = {r.metric for r in res.rows}
    assert any(m.startswith("efficiency vs dedicated nodes") for m in metrics)
    # no "best E" row; every row shows E, samples and utilisation; the samples-best T_fwd
    assert not any(m.startswith("best efficiency") for m in metrics)
    for r in res.rows:
        assert "E " in r.note and "samples in the first" in r.note and "utilisation" in r.note
    best = max(
        (eps[("imagenet", "freetrain", t)] for t in freetrain.T_FWD_SWEEP),
        key=lambda e: e["samples_compare"],
    )
    (row,) = [r for r in res.rows if r.metric.startswith("T_fwd (of")]
    assert row.mtgym == best["t_fwd"]
    assert f"is {best['t_fwd']:g} s**" in res.sections[0]
    assert (tmp_path / "freetrain_tfwd.png").exists()
