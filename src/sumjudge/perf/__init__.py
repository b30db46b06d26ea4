"""Performance tools: the engine benchmark (``bench``), the paper-scale runs behind replicas (``scale``,
``local_replicas``), the stand-in server they measure against (``standin_server``), the dry-run cost planner
(``plan``) and the machine a measurement or a recording names (``machine``)."""
