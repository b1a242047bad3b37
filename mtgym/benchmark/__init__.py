"""The generalisation benchmark: named train and test splits, and ``mtgym benchmark``.

- ``splits``: the test split (scenarios and seeds no training or selection may touch) and
  the train split (scenario families and seeds >= 2^30 agents may train on);
- ``runner``: runs every policy on every test scenario on the same seeds (the pieces of
  ``mtgym.evaluate``; local or Ray), taking what a resumed run's ``journal`` and the
  registry's ``cache`` hold;
- ``scoring``: per scenario the headline (``normalized_throughput``) and its paired ratio to
  the scenario's reference, per policy the suite score (geometric mean of those ratios) with
  a bootstrap interval, and the ``aggregates`` (rliable) over the score matrices;
- ``report``: markdown, JSON and TensorBoard output; ``cli``: the ``benchmark`` command.

Nothing here imports the train split's family generator (``family``) at import time.
"""
