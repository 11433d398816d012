"""`python -m aqe_inspect`: the same command as `aqe-inspect`."""

from .cli import run

run()
