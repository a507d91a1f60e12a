"""``python -m localeval.cli``."""

import sys

from . import console

sys.exit(console())
