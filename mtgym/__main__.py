"""``python -m mtgym``: the same command line as ``mtgym`` (``mtgym.cli.main``); exits with
its status.
"""

import sys

from mtgym.cli import main

sys.exit(main())
