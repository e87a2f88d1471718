"""``python -m skhybrid``: the command line (see ``skhybrid --help``)."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
