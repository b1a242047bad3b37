"""``mtgym dataset standard``: four datasets of known quality on the same seeds, normalised
between the random and the expert set, the mixed one made of the others' episodes, and a
result file whose table renders."""

import numpy as np
import pytest

minari = pytest.importorskip("minari")

from mtgym.cli import main  # noqa: E402
from mtgym.dataset.episode import UNIFORM_RANDOM, EnvSettings  # noqa: E402
from mtgym.dataset.standard import (  # noqa: E402
    MEDIUM,
    QUALITIES,
    StandardOptions,
    build_standard,
    policies,
)
from mtgym.dataset.store import DatasetError  # noqa: E402
from mtgym.results.renderers import renderer  # noqa: E402
from mtgym.results.store import read_result  # noqa: E402

SEED = 2**30 + 40
SETTINGS = EnvSettings(decision_interval_s=120.0)


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return tmp_path / "minari"


def test_policies__expert_is_the_recorded_reference_medium_the_shipped_agent():
    assert policies("default") == {
        "expert": "freetrain-speedup",  # scenarios/tuning/default.json's reference
        "medium": MEDIUM,
        "random": UNIFORM_RANDOM,
    }
    assert MEDIUM == "agent" and policies("default-family")["expert"] == "freetrain"


def test_build_standard__four_sets_on_the_same_seeds_mixed_taken_in_turn(root):
    seeds = [SEED, SEED + 1, SEED + 2, SEED + 3]
    entries = build_standard("default", seeds, SETTINGS, StandardOptions(medium="equal-share"))
    assert [e.quality for e in entries] == list(QUALITIES)
    sets = {e.quality: minari.load_dataset(e.dataset_id) for e in entries}
    assert entries[0].dataset_id == "mtgym/default/expert-v0"
    assert (
        sets["mixed"].storage.metadata["algorithm_name"]
        == "freetrain-speedup+equal-share+uniform-random"
    )
    eps = {q: list(ds.iterate_episodes()) for q, ds in sets.items()}
    for q in QUALITIES:
        assert [int(e.id) for e in eps[q]] == [0, 1, 2, 3]
        assert sets[q].storage.metadata["ref_min_score"] == entries[2].mean_return
        assert sets[q].storage.metadata["ref_max_score"] == entries[0].mean_return
    # mixed: episode i is expert's, medium's, random's, expert's again (same seeds)
    for i, q in enumerate(("expert", "medium", "random", "expert")):
        np.testing.assert_array_equal(eps["mixed"][i].actions, eps[q][i].actions)
        np.testing.assert_array_equal(eps["mixed"][i].rewards, eps[q][i].rewards)
    by = {e.quality: e for e in entries}
    assert by["expert"].normalized_score == pytest.approx(1.0, abs=1e-12)
    assert by["random"].normalized_score == pytest.approx(0.0, abs=1e-12)
    assert 0.0 < by["medium"].normalized_score < 1.0  # equal share lies between them here
    lo, hi = by["mixed"].normalized_ci
    assert lo <= by["mixed"].normalized_score <= hi
    mixed_norm = np.mean([by[q].normalized_score for q in ("expert", "medium", "random")])
    assert by["mixed"].normalized_score != pytest.approx(mixed_norm)  # 2 expert of 4, not 1/3
    for e in entries:
        assert e.episodes == 4 and e.steps == sum(len(x) for x in eps[e.quality])
        assert e.size_bytes > 0 and e.collect_s > 0 and 0.0 <= e.repaired_share <= 1.0
    assert by["mixed"].collect_s < sum(by[q].collect_s for q in ("expert", "medium", "random"))


def test_standard_command__records_a_table_and_refuses_what_it_must(root, tmp_path, capsys):
    argv = [
        "dataset",
        "standard",
        "--scenario",
        "default",
        "--episodes",
        "2",
        "--medium",
        "packed",
        "--root",
        str(root),
    ]
    assert main([*argv, "--seed-start", "9000"]) == 2
    assert "in the test split" in capsys.readouterr().err
    assert main([*argv, "--episodes", "2", "3"]) == 2
    assert "one positive count or one per scenario (1)" in capsys.readouterr().err
    record = ["--record", "std", "--results-dir", str(tmp_path / "results")]
    assert main([*argv, *record]) == 0
    out = capsys.readouterr().out
    assert "mtgym/default/mixed-v0: 2 episodes" in out
    assert main(argv) == 2  # the sets exist
    assert "mtgym/default/expert-v0 exists; --force replaces it" in capsys.readouterr().err
    result = read_result(tmp_path / "results" / "std.json")
    assert result.kind == "dataset_standard" and len(result.rows) == 4
    assert result.aggregates["policies"]["default"]["medium"] == "packed"
    lines = renderer("offline-standard")(result, {})
    assert len(lines) == 2 + 4
    assert lines[2].startswith("| `mtgym/default/expert-v0` | `freetrain-speedup` | 2 |")
    assert "| 1.000 [1." in lines[2] or "| 1.000 [0." in lines[2]
    assert main(["dataset", "list", "--root", str(root)]) == 0
    assert "mtgym/default/random-v0: 2 episodes" in capsys.readouterr().out


def test_build_standard__refuses_an_existing_id_before_playing(root):
    build_standard("default", [SEED], SETTINGS, StandardOptions(medium="packed"))
    with pytest.raises(DatasetError, match="expert-v0 exists"):
        build_standard("default", [SEED], SETTINGS, StandardOptions(medium="no-such-policy"))


def test_build_standard__the_clairvoyant_set_on_request(root):
    seeds = [SEED, SEED + 1]
    entries = build_standard(
        "default", seeds, SETTINGS, StandardOptions(medium="packed", clairvoyant=True)
    )
    assert [e.quality for e in entries] == [*QUALITIES, "clairvoyant"]
    c = entries[-1]
    assert c.dataset_id == "mtgym/default/clairvoyant-v0" and c.policy == "clairvoyant"
    ds = minari.load_dataset(c.dataset_id)
    assert ds.storage.metadata["ref_max_score"] == entries[0].mean_return  # the expert's 1
    assert c.episodes == 2 and c.repaired_share == 0.0
