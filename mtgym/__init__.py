"""mtgym: scheduling malleable deep-learning training onto scavenged idle HPC nodes.

The data flow: generator(seed) -> ``Instance`` (immutable) -> ``initial_state`` ->
``advance(state, allocation)`` -> metrics. Policies (MILPs, heuristics, agents) all speak
``mtgym.policy.Policy`` and are found by name through ``mtgym.policy.registry``.
"""

__version__ = "0.1.0"
