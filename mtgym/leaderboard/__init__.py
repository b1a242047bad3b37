"""The leaderboard: every policy of the registry's full-test-split benchmark results, ranked
by suite score, and the checks a submitted result file must pass (``mtgym leaderboard``,
``mtgym leaderboard --check FILE``; ``docs/leaderboard.md``, ``CONTRIBUTING.md``).

It sits above both ``mtgym.results`` (the registry: the files it ranks) and
``mtgym.benchmark`` (the split, the scoring and the report it checks a file against),
since the benchmark itself writes and reads registry files: the registry stays below the
benchmark, and neither imports this package (``tests/test_layout.py`` keeps it so).

- ``board``: the entries, their ranking and the table (``collect``, ``rank``, ``markdown``);
- ``submission``: is a result file a valid submission (``problems``, ``check_file``);
- ``training``: a learned policy's training, read from its agent's folder;
- ``renderer``: the ``leaderboard`` kind of the registry's marker blocks;
- ``cli``: the ``mtgym leaderboard`` command.

Importing the package registers the ``leaderboard`` renderer with the registry
(``mtgym.results.renderers.register_renderer``), so ``mtgym results render`` (whose parser
imports ``cli``) and any code that imports ``mtgym.leaderboard`` before rendering know the
kind. The registration is cheap: the ranking's modules load when a table is rendered.
"""

from __future__ import annotations

from mtgym.leaderboard.renderer import leaderboard
from mtgym.results.renderers import register_renderer

register_renderer("leaderboard", leaderboard)
