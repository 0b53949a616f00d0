"""Refuse to set up with a Python older than the project supports, naming what to install."""

import sys

if sys.version_info < (3, 11):  # noqa: UP036 - this runs under whatever python3 the user has
    sys.exit(
        f"error: Python 3.11 or newer is needed, found {sys.version.split()[0]}; "
        "run `make PYTHON=python3.11 ...` or install python3.11"
    )
