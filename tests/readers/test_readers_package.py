from __future__ import annotations

import dataclasses

import mtgym.readers as readers


def test_readers_package__exports_every_public_name():
    assert sorted(readers.__all__) == sorted(set(readers.__all__))
    for name in readers.__all__:
        assert hasattr(readers, name), name


def test_readers_package__result_dataclasses_are_frozen():
    for cls in (
        readers.IdleWindowTable,
        readers.NodeTable,
        readers.BFTrainerJobs,
        readers.GpuVariability,
        readers.GavelThroughputs,
        readers.PhillyTrace,
    ):
        assert dataclasses.is_dataclass(cls)
        assert cls.__dataclass_params__.frozen, cls.__name__  # type: ignore[attr-defined]
