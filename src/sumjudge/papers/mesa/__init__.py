"""MESA (Kirstein et al.): per-error-type three-step assessment, MADP discussion, self-training."""

from sumjudge.papers.mesa import faithfulness, geval, metrics, protocol  # noqa: F401  (importing registers the judges and
# the meeting-errors kind with its metrics)
