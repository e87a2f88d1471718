"""The subcommands of the ``skhybrid`` command line; :mod:`skhybrid._cli` parses and dispatches."""
