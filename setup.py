"""The compiled core: Cython extensions built beside their pure-Python twins.

The project's metadata is pyproject.toml's; this file adds the packages (the grammar folder
mapped into the package) and the extensions, named once in aqe_inspect/native.py
(`WHOLE_MODULES`: a module compiled from its own .py file; `KERNELS`: a `_NAME_c.pyx` with its
twin `_NAME_py.py`), read here without importing the package. Cython runs at build_ext time
only (an sdist holds the sources, never generated C).

- `AQE_INSPECT_PURE_PYTHON=1` at build time: no extension, a pure wheel (py3-none-any), the
  fallback for platforms without a compiled wheel.
- `AQE_INSPECT_REQUIRE_COMPILED=1` (CI, the release's wheel builds): a failed compile fails
  the build. Without it a compile that fails (no C compiler) warns and leaves the pure route,
  so `pip install` from the sdist always works.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip() not in ("", "0")


def _listed(name: str) -> tuple:
    """A tuple of strings assigned at the top of aqe_inspect/native.py."""
    tree = ast.parse((HERE / "aqe_inspect" / "native.py").read_text("utf-8"))
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == name:
            return tuple(ast.literal_eval(node.value))
    raise SystemExit(f"setup.py: aqe_inspect/native.py assigns no {name}")


def _version() -> str:
    """aqe_inspect/version.py's __version__, the version's one source."""
    text = (HERE / "aqe_inspect" / "version.py").read_text("utf-8")
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


REQUIRED = _flag("AQE_INSPECT_REQUIRE_COMPILED")
#: Whole modules keep Python's semantics: annotations are not C types, and functions bind as
#: Python's do (they can be looked up, wrapped and patched as the pure ones).
WHOLE_DIRECTIVES = {"language_level": "3", "annotation_typing": False, "binding": True,
                    "embedsignature": False}
#: Kernels are C loops over buffers, their bounds checked by the code itself.
KERNEL_DIRECTIVES = {"language_level": "3", "boundscheck": False, "wraparound": False,
                     "initializedcheck": False, "cdivision": True, "binding": True}


def extensions() -> list:
    """The extensions, their sources as written (.py, .pyx); none on a pure build."""
    if _flag("AQE_INSPECT_PURE_PYTHON"):
        return []
    made = []
    for name in _listed("WHOLE_MODULES"):
        made.append(Extension(name, [name.replace(".", "/") + ".py"]))
        made[-1].cython_directives = WHOLE_DIRECTIVES
    for name in _listed("KERNELS"):
        made.append(Extension(name + "_c", [name.replace(".", "/") + "_c.pyx"]))
        made[-1].cython_directives = KERNEL_DIRECTIVES
    for extension in made:
        extension.optional = not REQUIRED
    return made


class BuildCore(build_ext):
    """build_ext that runs Cython first, one compiler per core, and, unless the compiled core
    is required, leaves the pure route when Cython or the C compiler is missing or fails
    (setuptools skips an optional extension that fails to compile, not a compiler that
    cannot be found)."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:  # the extensions are independent
            self.parallel = os.cpu_count() or 1

    def build_extension(self, ext):
        # GCC and Clang (not MSVC): no debug information (Python's own CFLAGS ask for -g; it
        # is a third of the compile and most of the binaries' size), and -O2 for the modules
        # compiled whole, which are calls into Python's C API where -O3 gains nothing
        # measurable and costs another third of the compile; the kernels, loops over bytes,
        # keep -O3. Given last, these win over the CFLAGS before them.
        if self.compiler.compiler_type == "unix":
            kernel = ext.sources[0].endswith("_c.c")
            ext.extra_compile_args = [*ext.extra_compile_args, "-g0",
                                      "-O3" if kernel else "-O2"]
        super().build_extension(ext)

    def run(self):
        if getattr(self, "editable_mode", False):
            # An editable install runs the checkout's .py files: an extension built beside
            # one would be imported instead, and an edit to it would change nothing.
            print("aqe-inspect: an editable install builds no compiled core; the .py files "
                  "run (the pure-Python route)", file=sys.stderr)
            return
        try:
            from Cython.Build import cythonize

            for extension in self.extensions:  # the C sources, generated where build_ext works
                [generated] = cythonize([extension], quiet=True, force=self.force,
                                        build_dir=os.path.join(self.build_temp, "cython"),
                                        compiler_directives=extension.cython_directives)
                extension.sources = generated.sources
            super().run()
        except Exception as error:
            if REQUIRED:
                raise
            print(f"warning: aqe-inspect: the compiled core was not built ({error}); the "
                  "pure-Python route stands in", file=sys.stderr)


setup(version=_version(),
      packages=find_packages(include=["aqe_inspect", "aqe_inspect.*"]) + ["aqe_inspect.grammars"],
      package_dir={"aqe_inspect.grammars": "grammars"},
      ext_modules=extensions(), cmdclass={"build_ext": BuildCore})
