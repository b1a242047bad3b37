"""The results registry: every published number comes from a committed result file.

A **result file** (``schema``) is what one command measured, with what it needs to be
trusted and re-run: the command line, mtgym's version and commit, the date, the machine,
the seeds, each scenario's and tuning record's content hash, the wall time, one row per
episode and the command's aggregates. ``mtgym benchmark``, ``evaluate`` and ``tune`` write
one into their ``--out`` folder (``OUT/result.json``, gzip-compressed as
``result.json.gz`` above ``store.GZIP_ABOVE`` bytes; ``tune`` has no such folder), and
``--record NAME`` copies it to ``results/NAME.json[.gz]`` (``cli``). Tables in the README
and ``docs/`` are rendered from those files between markers (``render``, ``renderers``):
``mtgym results render``.

- ``provenance``: version, commit, date, machine;
- ``hashes``: content hashes of scenarios and tuning records;
- ``schema``: the typed reader (``ResultFile``) and its error;
- ``rows``: each command's episodes as the file's rows;
- ``store``: build, write (atomic), read, and copy into the registry;
- ``cli``: the ``--record`` options the commands share, and ``mtgym results``;
- ``render`` and ``renderers``: the marker blocks and the tables in them; a block with the
  flag ``optional=1`` names a file still to come and holds a placeholder until it exists;
  ``renderers.register_renderer`` lets a package above the registry add a kind.

The registry sits below ``mtgym.benchmark``, which writes result files and reads them back
as a cache, so it imports nothing of the benchmark. The leaderboard and its submission
checks, which need the benchmark's split and scoring, are ``mtgym.leaderboard``, above
both: it registers its ``leaderboard`` renderer here when imported.

Format and usage: ``docs/results-registry.md``.
"""
