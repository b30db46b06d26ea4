"""The ``sumjudge`` command line (``main``): one module per subcommand (``<name>_command.py``, each a ``Subcommand``
that builds its parser and runs it; ``paper_commands.py`` the papers' own), the shared flags (``flags.py``) and the
one-line usage errors (``parser.py``); ``main.py`` lists the subcommands and turns errors into exit codes."""
