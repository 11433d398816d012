"""The file `spark-submit` runs for a fleet scan on a cluster, and `python -m` for one here:

    spark-submit --master yarn ... .../site-packages/aqe_inspect/fleet/submit.py PATH... --output DIR
    python -m aqe_inspect.fleet.submit PATH... --output DIR

the `fleet` command (`aqe-inspect fleet`), with its options, one-line errors and exit codes.
"""

import os
import sys

if __name__ == "__main__" and sys.path and \
        os.path.abspath(sys.path[0] or os.curdir) == os.path.dirname(os.path.abspath(__file__)):
    # Run as a file: Python put this folder first on sys.path, where html.py would be what
    # `import html` finds, not the standard library's.
    del sys.path[0]

from typing import List, Optional  # noqa: E402 - after the path is mended


def main(argv: Optional[List[str]] = None) -> int:
    """The `fleet` command on `argv` (default: this process's arguments)."""
    from aqe_inspect.cli import main as cli_main

    return cli_main(["fleet", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":  # pragma: no cover - run by python -m or spark-submit
    sys.exit(main())
