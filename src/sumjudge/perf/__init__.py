"""Performance tools: the engine benchmark (``bench``), the paper-scale runs behind replicas (``scale``, ``fleet``)
and the stand-in server they measure against (``standin``)."""
