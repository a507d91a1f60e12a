"""``python -m localeval.cli``."""

import sys

from . import main

sys.exit(main())
