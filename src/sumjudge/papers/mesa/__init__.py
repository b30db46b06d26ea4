"""MESA (Kirstein et al.): per-error-type three-step assessment, MADP discussion, self-training."""

from . import faithfulness, geval, protocol  # noqa: F401  (importing registers the judges)
