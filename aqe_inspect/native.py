"""Which build of a compiled kernel is used: its compiled module (`<name>_c`) unless
`AQE_INSPECT_PURE_PYTHON=1` is set or it was not built, else its pure-Python twin
(`<name>_py`). (The stand-in of the lead's module, same name and API.)"""

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
