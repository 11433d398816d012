"""The compiled core and its pure-Python twin: which of the two this process runs.

Where a profile showed a hot loop, the wheel carries it compiled by Cython, in one of two ways:

- **a module compiled whole** (`WHOLE_MODULES`): the package's own `.py` file, compiled
  unchanged (an augmenting `.pxd` beside it may give C types to some locals). Its twin is that
  very file: the extension and the `.py` sit side by side, and Python imports the extension.
- **a kernel** (`KERNELS`): a loop written anew for C, `_NAME_c.pyx`, beside a twin written in
  Python, `_NAME_py.py`, with the same functions giving the same results (tests hold the two
  equal on arbitrary input). Callers take it through `load("aqe_inspect.PKG._NAME")`.

The pure route is taken where no compiled build exists (another platform, an sdist built
without a compiler, the pure wheel) or when `AQE_INSPECT_PURE_PYTHON` is set (to anything but
`0` or an empty value) as the process starts: then `install` puts a finder before Python's own
that loads the package's modules from their `.py` files, and `load` returns the twins. Either
route prints the same bytes; `aqe-inspect --version` says which one is in use (`describe`).

`setup.py` reads the two lists from this file (without importing the package), so what is
compiled is named once.

May import: nothing of the package (it is imported first, by the package's `__init__`).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Dict, List, Tuple

#: The environment variable that asks for the pure-Python route.
PURE_PYTHON_ENV = "AQE_INSPECT_PURE_PYTHON"

#: Modules compiled whole from their own `.py` file (their twin is that file).
WHOLE_MODULES: Tuple[str, ...] = (
    # driver logs and plan texts: the line walk, the regions, the skim, the plan-change log
    "aqe_inspect.sources.lines", "aqe_inspect.sources.extract",
    "aqe_inspect.sources.assemble", "aqe_inspect.sources.skim",
    "aqe_inspect.sources.planchange", "aqe_inspect.sources.filebytes",
    # plan text to trees: the lexer, the detail blocks, the tree builder, damage, the model
    "aqe_inspect.parsing.lexer", "aqe_inspect.parsing.operator_line",
    "aqe_inspect.parsing.parser", "aqe_inspect.parsing.repeats", "aqe_inspect.parsing.damage",
    "aqe_inspect.parsing.formatted_plan", "aqe_inspect.plan.model",
    # event logs: the line scanner, the metrics walk (formatted_plan.pxd, planinfo.pxd type
    # their loops)
    "aqe_inspect.sources.eventlog.events", "aqe_inspect.sources.eventlog.planinfo",
    "aqe_inspect.sources.eventlog.runtime",
    # what AQE did: alignment, operators; the JSON writers
    "aqe_inspect.plan.align", "aqe_inspect.plan.operators", "aqe_inspect.formats.json_writer",
    "aqe_inspect.formats.parse_json",
)

#: Kernels: NAME has NAME_c (compiled, from NAME_c.pyx) and NAME_py (its twin).
KERNELS: Tuple[str, ...] = (
    "aqe_inspect.sources._markers",  # the driver-log skim's markers, plan-change headings
    "aqe_inspect.parsing._fields",  # a detail block's fields (operator_line)
    "aqe_inspect.parsing._node",  # a parsed node made without its constructor (parser)
    "aqe_inspect.parsing._blockrows",  # the lines of plain detail blocks (formatted_plan)
    "aqe_inspect.sources.eventlog._eventlines",  # the kept events' lines (eventlog.events)
    "aqe_inspect.parsing._treescan",  # tree lines, detail headers, subquery marks (lexer)
)


def pure_requested() -> bool:
    """Whether AQE_INSPECT_PURE_PYTHON asks for the pure-Python route."""
    return os.environ.get(PURE_PYTHON_ENV, "").strip() not in ("", "0")


#: Set once, by `install`, as the package is first imported: the route of this process.
_PURE = pure_requested()


def load(name: str):
    """The kernel `name` ("aqe_inspect.sources._markers"): its compiled module `name_c`, or
    its twin `name_py` on the pure route or where the compiled one is not built."""
    if not _PURE:
        try:
            return importlib.import_module(name + "_c")
        except ImportError:
            pass
    return importlib.import_module(name + "_py")


class _SourceOnlyFinder:
    """On the pure route: finds the package's modules as `.py` (or `.pyc`) files only, so an
    extension compiled from the same file beside it is never imported."""

    def __init__(self) -> None:
        self._finders: Dict[str, object] = {}

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("aqe_inspect.") or not path:
            return None
        from importlib.machinery import (BYTECODE_SUFFIXES, SOURCE_SUFFIXES, FileFinder,
                                         SourceFileLoader, SourcelessFileLoader)

        for entry in path:
            finder = self._finders.get(entry)
            if finder is None:
                finder = self._finders[entry] = FileFinder(
                    entry, (SourceFileLoader, SOURCE_SUFFIXES),
                    (SourcelessFileLoader, BYTECODE_SUFFIXES))
            spec = finder.find_spec(fullname, target)  # type: ignore[attr-defined]
            if spec is not None and spec.origin is not None:
                return spec
        return None

    def invalidate_caches(self) -> None:
        for finder in self._finders.values():
            finder.invalidate_caches()  # type: ignore[attr-defined]


def install() -> None:
    """Called by the package's `__init__` before any other of its modules is imported: on the
    pure route, the finder that keeps compiled modules out."""
    if _PURE and not any(isinstance(finder, _SourceOnlyFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SourceOnlyFinder())


def _compiled(module: str) -> bool:
    """Whether `module` would be imported from an extension (without importing it)."""
    from importlib.machinery import EXTENSION_SUFFIXES
    from importlib.util import find_spec

    try:
        spec = find_spec(module)
    except (ImportError, ValueError):
        return False
    return bool(spec and spec.origin and spec.origin.endswith(tuple(EXTENSION_SUFFIXES)))


def compiled_modules() -> Tuple[List[str], List[str]]:
    """The compiled core's modules that this process runs compiled, and those it does not
    (the pure route's, or those missing from this build)."""
    names = list(WHOLE_MODULES) + [kernel + "_c" for kernel in KERNELS]
    if _PURE:
        return [], names
    built = [name for name in names if _compiled(name)]
    return built, [name for name in names if name not in built]


def describe() -> str:
    """One line for `aqe-inspect --version`: which route this process runs."""
    if _PURE:
        return f"core: pure Python ({PURE_PYTHON_ENV} is set)"
    built, missing = compiled_modules()
    if not built:
        return "core: pure Python (this install has no compiled module)"
    if missing:
        return (f"core: compiled by Cython, {len(built)} of {len(built) + len(missing)} "
                f"modules (pure Python for {', '.join(sorted(missing))})")
    return f"core: compiled by Cython ({len(built)} modules)"
