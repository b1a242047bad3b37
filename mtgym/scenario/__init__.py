"""Scenarios: validated files (``schema``, ``load``), built into generators (``build``), found
by name (``registry``).
"""

from mtgym.scenario.load import ScenarioError, load_scenario
from mtgym.scenario.registry import get_generator, preset_names
from mtgym.scenario.schema import ScenarioSpec

__all__ = ["ScenarioError", "ScenarioSpec", "get_generator", "load_scenario", "preset_names"]
