"""MESA (Kirstein et al.): per-error-type three-step assessment, MADP discussion, self-training."""

from sumjudge.papers.mesa import faithfulness, geval, protocol  # noqa: F401  (importing registers the judges)
