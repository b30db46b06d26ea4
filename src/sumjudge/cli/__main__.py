"""`python -m sumjudge.cli` runs the command line (``main``)."""

import sys

from .main import main

sys.exit(main())
