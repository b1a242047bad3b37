"""The live Scavenger: idle nodes of a real Slurm cluster feed the scheduler and the bridge.

- ``slurm``: the Slurm client (timeouts, retries with back-off, pure parsers),
- ``source``: ``SlurmSupply``, the live supply source (``poll``) and recorder (``generate``),
- ``live``: the live ``Instance``/state a policy decides on,
- ``launch``: the bridge launchers behind the loop (``srun`` steps, local torch, report),
- ``loop``: ``Scavenger``, the polling loop,
- ``cli``: ``mtgym scavenge``; ``testing``: a throw-away local Slurm for tests.

See ``mtgym/scavenger/README.md``.
"""
