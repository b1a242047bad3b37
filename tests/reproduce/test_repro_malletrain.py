"""Reduced MalleTrain experiment: the gain over FreeTrain grows with declaration error."""

from __future__ import annotations

import itertools

import numpy as np

from mtgym.reproduce import malletrain as mt


def test_family_and_linear_declarations(shared_data):
    z = mt.Sizes(seeds=(0,), regimes=("scarce",), trials=12, horizon_s=3600.0)
    d = str(shared_data)
    truth = mt.instance(d, "nas", "scarce", z, "exact", 0).jobs
    fam = mt.instance(d, "nas", "scarce", z, "family", 0).jobs
    lin = mt.instance(d, "nas", "scarce", z, "linear", 0).jobs
    noisy = mt.instance(d, "nas", "scarce", z, "noise0.5", 0).jobs
    assert np.array_equal(truth.declared_curve_tput, truth.curve_tput)
    assert np.array_equal(fam.curve_tput, truth.curve_tput)  # the truth is unchanged
    assert not np.allclose(fam.declared_curve_tput, truth.curve_tput)  # NAS trials differ
    # linear declarations: the true 1-node rate times n
    assert np.allclose(lin.declared_curve_tput[:, 1], truth.curve_tput[:, 1])
    assert np.allclose(lin.declared_curve_tput, truth.curve_nodes * truth.curve_tput[:, 1:2])
    assert not np.allclose(noisy.declared_curve_tput, truth.curve_tput)


def test_malletrain_quick_gain_grows_with_declaration_error(shared_data, tmp_path):
    res = mt.run(shared_data, tmp_path, quick=True, workers=1, progress=False)
    g = res.raw["gains"]
    levels = ["exact", "noise0.25", "noise0.5", "noise1"]
    for fam in mt.FAMILIES:
        gains = [g[f"{fam}/scarce/{lvl}"]["gain_mean"] for lvl in levels]
        # exact declarations: FreeTrain knows the truth, MalleTrain pays for probing
        assert gains[0] < 0
        # heavy misdeclaration: MalleTrain's gain is clearly larger
        assert gains[-1] > gains[0] + 0.05
    mean = [
        np.mean([g[f"{fam}/scarce/{lvl}"]["gain_mean"] for fam in mt.FAMILIES]) for lvl in levels
    ]
    assert all(b >= a - 0.01 for a, b in itertools.pairwise(mean))  # grows with the error level
    assert (tmp_path / "malletrain_gain.png").exists()
