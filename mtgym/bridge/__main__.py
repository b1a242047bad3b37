"""``python -m mtgym.bridge``: the bridge commands on their own."""

import sys

from mtgym.bridge.cli import main

sys.exit(main())
