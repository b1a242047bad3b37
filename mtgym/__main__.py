"""``python -m mtgym``."""

import sys

from mtgym.cli import main

sys.exit(main())
