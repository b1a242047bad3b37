"""``refuse_test_seeds``: one line naming the test split for any of its seeds, nothing else."""

from __future__ import annotations

import pytest

from mtgym.benchmark.splits import TEST, TRAIN_SEED_MIN, USED_SEEDS, refuse_test_seeds


def test_refuse_test_seeds__one_line_naming_the_split_and_its_range():
    with pytest.raises(ValueError) as err:
        refuse_test_seeds([1000, 9000], what="mtgym train --eval-seeds")
    msg = str(err.value)
    assert msg == (
        "seed 9000 is in the test split 'test' (seeds 9000-9009): mtgym train --eval-seeds "
        "may not use it; pick seeds outside 9000-9009 (training seeds are >= 2^30)"
    )
    assert "\n" not in msg


def test_refuse_test_seeds__lists_every_test_seed_once_in_order():
    with pytest.raises(ValueError, match=r"^seeds 9000, 9009 are in the test split 'test' "):
        refuse_test_seeds([9009, 5, 9000, 9009], what="x")


def test_refuse_test_seeds__every_test_seed_refused_and_its_neighbours_allowed():
    for s in TEST.seeds():
        with pytest.raises(ValueError, match="test split"):
            refuse_test_seeds([s], what="x")
    lo, hi = TEST.seed_start - 1, TEST.seed_start + TEST.full_seeds
    used = [s for a, b in USED_SEEDS for s in range(a, b + 1)]
    refuse_test_seeds([lo, hi, TRAIN_SEED_MIN, 0, *used], what="x")  # no error
    refuse_test_seeds([], what="x")
