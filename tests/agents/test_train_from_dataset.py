"""``mtgym train --from-dataset ID``: behaviour cloning from a Minari dataset of
``mtgym dataset collect``, then PPO; a dataset of another env is refused in one line."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("minari")

from mtgym.cli import main

DS = "mtgym/toy-two-jobs/freetrain-speedup-v0"


def _train(out, *extra):
    return [
        "train",
        "--scenario",
        "toy-two-jobs",
        "--timesteps",
        "128",
        "--n-envs",
        "1",
        "--max-jobs",
        "2",
        "--max-count",
        "4",
        "--eval-freq",
        "0",
        "--out",
        str(out),
        "--no-progress",
        *extra,
    ]


def test_train__from_dataset_clones_its_episodes_then_ppo(tmp_path, monkeypatch, capsys):
    import minari

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    collect = ["dataset", "collect", "--policy", "freetrain-speedup", "--scenario"]
    assert main([*collect, "toy-two-jobs", "--episodes", "3"]) == 0
    steps = minari.load_dataset(DS).total_steps
    capsys.readouterr()
    out = tmp_path / "agent"
    assert main(_train(out, "--from-dataset", DS)) == 0
    log = capsys.readouterr().out
    m = re.search(rf"cloned {DS}: (\d+) states, loss ([\d.]+) -> ([\d.]+) nats", log)
    assert m is not None, log
    assert int(m[1]) == steps  # every step of every episode (all legal: no repair)
    assert float(m[3]) < float(m[2])  # the clone fits the dataset's actions
    assert (out / "checkpoints" / "clone.zip").is_file() and (out / "model.zip").is_file()

    # another env's dataset, a missing one, and cloning an expert beside it: one line each
    bad = _train(tmp_path / "b", "--from-dataset", DS, "--action-mode", "counts")
    assert main(bad) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "action mode 'shares', the agent trains in 'counts'" in err[0]
    assert main(_train(tmp_path / "c", "--from-dataset", "mtgym/none/x-v0")) == 2
    assert "dataset 'mtgym/none/x-v0' not found" in capsys.readouterr().err
    both = _train(tmp_path / "d", "--from-dataset", DS, "--bc-expert", "freetrain")
    assert main(both) == 2
    assert "not both" in capsys.readouterr().err


def test_train__from_dataset_with_no_rl_keeps_the_clone(tmp_path, monkeypatch, capsys):
    """``--timesteps 0``: behaviour cloning alone; ``model.zip`` is the clone, and says so."""
    import json
    import zipfile

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    collect = ["dataset", "collect", "--policy", "freetrain-speedup", "--scenario"]
    assert main([*collect, "toy-two-jobs", "--episodes", "2"]) == 0
    out = tmp_path / "bc"
    argv = _train(out, "--from-dataset", DS)
    argv[argv.index("--timesteps") + 1] = "0"
    assert main(argv) == 0
    assert "kept: imitation" in capsys.readouterr().out
    train = json.loads((out / "train.json").read_text())
    assert train["kept"] == "imitation" and train["timesteps"] == 0
    with (
        zipfile.ZipFile(out / "model.zip") as a,
        zipfile.ZipFile(out / "checkpoints" / "clone.zip") as b,
    ):
        assert a.read("policy.pth") == b.read("policy.pth")
