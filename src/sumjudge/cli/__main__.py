"""`python -m sumjudge.cli` runs the command line (``main``)."""

import sys

from sumjudge.cli.main import main

sys.exit(main())
