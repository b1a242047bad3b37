"""Scenario files: a validated description of machine, supply, workload and episode."""

from mtgym.scenario.load import ScenarioError, load_scenario, preset_names, resolve_generator
from mtgym.scenario.schema import ScenarioSpec

__all__ = ["ScenarioError", "ScenarioSpec", "load_scenario", "preset_names", "resolve_generator"]
