"""The ``sumjudge`` command line (``main``)."""
