"""``python -m rknnx``: the ``rknnx`` command (see :mod:`rknnx.cli`)."""

import sys

from rknnx.cli import main

if __name__ == "__main__":
    sys.exit(main())
