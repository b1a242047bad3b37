"""mtgym: scheduling malleable deep-learning training onto scavenged idle HPC nodes.

The data flow: generator(seed) -> ``Instance`` (immutable) -> ``initial_state`` ->
``advance(state, allocation)`` -> metrics. Policies (MILPs, heuristics, agents) all speak
``mtgym.policy.Policy`` and are found by name through ``mtgym.policy.registry``.

Importing the package points numba's kernel cache at a folder keyed by the sources
(``mtgym._kernel_cache``) and registers the Gymnasium environment ``mtgym/Scavenge-v0``
(``ENV_IDS``), so ``gymnasium.make("mtgym/Scavenge-v0", scenario=...)`` works after
``import mtgym``; its default scenario is ``default``. In a process that has not imported
mtgym (RLlib's env runners, Ray workers, subprocess vector envs), the module-qualified id
``"mtgym:mtgym/Scavenge-v0"`` imports it first (``docs/clients.md``).
"""

__version__ = "0.1.0"

from gymnasium.envs.registration import register as _register

from mtgym import _kernel_cache

_kernel_cache.configure()  # (before any kernel is compiled or loaded: see the module)

#: The environment ids registered by ``import mtgym``.
ENV_IDS = ("mtgym/Scavenge-v0",)

_register(
    id="mtgym/Scavenge-v0",
    entry_point="mtgym.env.env:ScavengeEnv",
    # ``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``: every episode
    # stepped in one compiled call (``mtgym.env.vector``)
    vector_entry_point="mtgym.env.vector:ScavengeVectorEnv",
    kwargs={"scenario": "default"},
)
