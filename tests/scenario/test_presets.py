"""Every shipped preset validates and builds; the default file equals the embedded default."""

from __future__ import annotations

import numpy as np
import pytest

from mtgym.generate.default import default_generator
from mtgym.scenario.load import load_scenario
from mtgym.scenario.registry import PRESETS_DIR, get_generator, preset_names
from mtgym.sim.dynamics import initial_state
from mtgym.sim.invariants import check_state
from mtgym.testing.presets import REAL_DATA

PRESETS = sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))
REQUIRED = {
    "default",
    "polaris",
    "summit-replay",
    "summit-hps",
    "pal-philly-64gpu",
    "hetero-mix",
    "nas-campaign",
    "swf-lublin",
    # the benchmark's test split (mtgym.benchmark.splits)
    "summit-replay-2d",
    "summit-manyjobs",
    "default-128",
    "default-512",
    # the train split's sibling of summit-manyjobs
    "summit-manyjobs-train",
}


def test_presets__all_required_ones_ship():
    assert set(PRESETS) >= REQUIRED
    assert set(preset_names()) >= REQUIRED


@pytest.mark.parametrize("name", PRESETS)
def test_presets__validate_and_document_themselves(name):
    spec = load_scenario(PRESETS_DIR / f"{name}.yaml")
    assert spec.name == name and spec.description
    text = (PRESETS_DIR / f"{name}.yaml").read_text()
    assert text.lstrip().startswith("#"), "each preset opens with a comment saying what it models"


@pytest.mark.parametrize("name", sorted(set(PRESETS) - REAL_DATA))
def test_presets__synthetic_ones_build_valid_instances(name):
    inst = get_generator(name)(0)
    check_state(initial_state(inst), inst)
    assert inst.num_jobs > 0 and inst.supply.num_windows > 0


@pytest.mark.parametrize("name", sorted(REAL_DATA))
def test_presets__real_data_ones_build(name, shared_data, monkeypatch):
    monkeypatch.setenv("MTGYM_DATA", str(shared_data))
    inst = get_generator(name)(0)
    assert inst.num_jobs > 0 and inst.supply.num_windows > 0


def test_presets__default_file_equals_the_embedded_default_bit_for_bit():
    a = default_generator()(7)
    b = get_generator(str(PRESETS_DIR / "default.yaml"))(7)
    for part in ("cluster", "supply", "jobs"):
        for k, v in vars(getattr(a, part)).items():
            if isinstance(v, np.ndarray):
                w = getattr(getattr(b, part), k)
                assert v.shape == w.shape and v.tobytes() == w.tobytes(), f"{part}.{k}"


def test_presets__polaris_topology_has_rack_and_group_levels():
    inst = get_generator("polaris")(0)
    topo = inst.cluster.topology
    assert topo.level_names == ("node", "rack", "group", "system")
    assert np.bincount(topo.coords[:, 1]).max() == 14 and np.bincount(topo.coords[:, 2]).max() == 28
