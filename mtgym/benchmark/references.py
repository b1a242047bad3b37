"""Each scenario's reference: the best tuned baseline, fixed before any test seed is played.

``mtgym tune`` records, per scenario, the tuned baseline with the highest mean headline on
the tuning seeds (``mtgym.scenario.tuning.TuningRecord.reference``). The benchmark divides
every policy by that one, and runs it even where the user did not name it, so a ratio never
depends on which baselines a user happened to run. A scenario without a record falls back
to the best baseline among those run, chosen after its numbers are in (the report says so).
"""

from __future__ import annotations

from mtgym.benchmark.splits import Split


def recorded_references(split: Split) -> dict[str, str]:
    """Scenario -> its recorded reference, for the split's scenarios that have one.

    Reads each scenario's tuning record (``tuning/<name>.json`` beside the preset files,
    ``mtgym.scenario.tuning.record_path``); a scenario without a record, or whose record
    names no reference, is left out.

    Args:
        split: the split whose scenarios are looked up.

    Raises:
        ValueError: a record file exists but is not a valid record.
    """
    from mtgym.scenario.tuning import load_record

    out = {}
    for sc in split.scenarios:
        rec = load_record(sc.name)
        if rec is not None and rec.reference is not None:
            out[sc.name] = rec.reference
    return out


def with_references(policies: list[str], split: Split) -> list[str]:
    """``policies`` followed by the recorded references they lack (in scenario order).

    A reference shared by several scenarios is added once.

    Args:
        policies: the policies the user named.
        split: the split to be run.
    """
    out = list(policies)
    for ref in recorded_references(split).values():
        if ref not in out:
            out.append(ref)
    return out
