"""Reproducing the page: record the notebooks (``record``, ``make reproduce``), check the page against a replay
(``check``), a fresh rerun's drift (``drift``), the README's numbers (``readme_numbers``) and answers taken again
from an earlier recording of the same weights (``reuse``)."""
