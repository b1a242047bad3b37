"""``examples/offline_torchrl.py`` (docs/offline.md): a Minari dataset read into a TorchRL
replay buffer, a factored double DQN trained on it, and an episode in the recovered env."""

import re

import numpy as np
import pytest

minari = pytest.importorskip("minari")
pytest.importorskip("torchrl")

from examples import offline_torchrl as ex  # noqa: E402
from mtgym.cli import main as mtgym  # noqa: E402


@pytest.fixture
def dataset(tmp_path, monkeypatch):
    root = tmp_path / "minari"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    argv = ["dataset", "collect", "--policy", "equal-share", "--episodes", "1"]
    assert mtgym([*argv, "--decision-interval", "120", "--root", str(root)]) == 0
    return "mtgym/default/equal-share-v0"


def test_offline_torchrl__trains_on_the_dataset_and_plays_its_env(dataset, capsys):
    ds = minari.load_dataset(dataset)
    S, K = len(ds.action_space.nvec), int(ds.action_space.nvec[0])
    data = ex.transitions(ds, K)
    ep = next(iter(ds.iterate_episodes()))
    assert data.batch_size[0] == len(ep.actions)
    assert data["action"].shape[-1] == S * K
    np.testing.assert_array_equal(data["action"].sum(-1).numpy(), S)  # a one-hot per slot
    # the recorded actions are legal under the recorded masks (else the masked Q explodes)
    assert bool((data["action"].bool() <= data["observation", "action_mask"]).all())
    ex.main([dataset, "--steps", "3"])
    line = capsys.readouterr().out.strip().splitlines()[-1]
    m = re.fullmatch(r"return (-?[0-9.]+), normalised (-?[0-9.]+)", line)
    assert m and np.isfinite(float(m[1])) and np.isfinite(float(m[2]))
