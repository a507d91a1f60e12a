"""``python -m localeval.cli``."""

import sys

from .process import console

sys.exit(console())
