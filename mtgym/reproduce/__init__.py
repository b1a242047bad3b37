"""Reproduce the papers' headline experiments in mtgym: ``mtgym reproduce``.

- ``freetrain``: FreeTrain/BFTrainer's allocator on the Summit idle-node replay (efficiency
  relative to dedicated nodes, T_fwd sweep, vs equal share);
- ``malletrain``: paper-style MalleTrain (online profiling, told nothing) vs FreeTrain on NAS
  and HPO campaigns (successive halving, normalised throughput) and the ImageNet replay,
  scarce Summit supply, 20 paired seeds; headline readings: FreeTrain told nothing (a) and
  told curves measured offline on dedicated nodes (b); ``exact`` as the cost-of-profiling
  control; ``family``, ``linear`` and noise sigma 0.25 / 0.5 / 1 as secondary cells
  (pre-registered in ``docs/malletrain-preregistration.md``);
- ``pal``: PAL, PM-First and Blox's packed/random placements on the eight Sia-Philly traces,
  and the locality sweep.

``mtgym.reproduce.cli.add_reproduce_command`` registers the subcommand;
``mtgym.reproduce.cli.run_experiments`` runs them from Python.
"""
