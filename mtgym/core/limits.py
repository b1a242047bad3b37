"""Documented input limits shared by scenario files, the env and the CLI (no imports, cheap).

They bound what a file or a keyword may ask for so that bad input fails fast instead of
hanging or exhausting the machine (each documented here; the JSON Schema carries them).
"""

#: Largest ``num_nodes`` / ``num_hosts`` (Summit has 4,608 nodes; Aurora 10,624).
MAX_NODES = 100_000
#: Largest number of jobs of one source (``num_jobs``, ``num_trials``, ``max_jobs``).
MAX_JOBS = 100_000
#: Largest number of job slots of the env (``max_jobs`` / ``episode.max_jobs``): Summit's
#: 4,734 nodes can each hold a job. The default slot count stops lower
#: (``mtgym.env.slots.MAX_AUTO_SLOTS``).
MAX_SLOTS = 8192
#: Largest number of GPUs per node.
MAX_GPUS_PER_NODE = 64
#: Longest synthetic horizon and decision interval, in seconds (366 days).
MAX_HORIZON_S = 366 * 86400.0
#: Shortest window/drain duration parameter, in seconds (a shorter one would make the number
#: of sampled windows explode).
MIN_DURATION_S = 1.0
#: Most drains per hour (the presets use 1-2).
MAX_DRAINS_PER_HOUR = 60.0
#: Shortest decision interval, in seconds (scenario files, the env, ``--decision-interval``).
MIN_DECISION_INTERVAL_S = 1e-3
