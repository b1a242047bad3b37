"""Reproduce the papers' headline experiments in mtgym: ``mtgym reproduce``.

- ``freetrain``: FreeTrain/BFTrainer's allocator on the Summit idle-node replay (efficiency
  relative to dedicated nodes, T_fwd sweep, vs equal share);
- ``malletrain``: MalleTrain's online profiling vs FreeTrain fed user declarations, NAS and
  HPO campaigns, across declaration-error levels;
- ``pal``: PAL, PM-First and Blox's packed/random placements on the eight Sia-Philly traces,
  and the locality sweep.

``mtgym.reproduce.cli.add_reproduce_command`` registers the subcommand;
``mtgym.reproduce.cli.run_experiments`` runs them from Python.
"""
