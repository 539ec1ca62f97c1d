"""The ``nexus`` command line, one module per command group."""
