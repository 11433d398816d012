"""The compiled core's modules and their pure-Python twins (issue 38): `load(name)` gives
`name + "_c"` (Cython) unless AQE_INSPECT_PURE_PYTHON is set or it is not built, else
`name + "_py"`. (The stand-in of the contract, until the lead's version is on main.)"""

import importlib
import os


def pure_requested() -> bool:
    return os.environ.get("AQE_INSPECT_PURE_PYTHON", "") not in ("", "0")


def load(name: str):
    if not pure_requested():
        try:
            return importlib.import_module(name + "_c")
        except ImportError:
            pass
    return importlib.import_module(name + "_py")
