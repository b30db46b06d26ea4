"""`python -m sumjudge.reproduce` records the notebooks (``record``: `make reproduce`)."""

import sys

from sumjudge.reproduce.record import main

sys.exit(main())
