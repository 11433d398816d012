"""The compiled core and its pure-Python twin (aqe_inspect.native), as installed.

- `--version` says which route runs; AQE_INSPECT_PURE_PYTHON=1 takes the pure one.
- Under CI=true the wheel under test was built from the sdist (.ci/run, as a user's pip builds
  it) with AQE_INSPECT_REQUIRE_COMPILED=1: every module native names must run compiled, or
  the test fails (a build that quietly fell back to the twins would pass every other test).
- The pure route imports no extension of the package, the compiled route every one listed.
- Both routes print the same bytes on every bundled sample input (plan texts of every mode,
  driver logs, event logs in every codec, History Server JSON) and every golden-corpus
  explain text: `diff` as JSON and as text, `parse` as JSON. Each route runs in a process of
  its own (the route is chosen as the package is imported), over all inputs at once.

The kernels' own equality tests (arbitrary input, Hypothesis) sit beside their callers' tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import aqe_inspect.native as native

from .conftest import AQE_INSPECT, CORPUS, IN_CI, SAMPLE_PLANS

#: Run in each route's process: every input through the API, one digest per (input, command).
_EACH_INPUT = r"""
import hashlib, io, json, sys
import aqe_inspect.native as native
from aqe_inspect import api

digests = {}
for line in open(sys.argv[1], encoding="utf-8"):
    path, command = line.rstrip("\n").rsplit("\t", 1)
    out = io.StringIO()
    saved = sys.stdout
    sys.stdout = out
    try:
        if command == "parse-json":
            api.write(api.read_document(path), "json")
        else:
            api.write(api.diff_input(path, for_format=command), command)
        printed = out.getvalue()
        failed = False
    except api.InspectError as error:
        printed, failed = "error: " + str(error), True
    finally:
        sys.stdout = saved
    digests[path + "\t" + command] = [hashlib.sha256(printed.encode("utf-8")).hexdigest(),
                                       len(printed), failed]
built, missing = native.compiled_modules()
json.dump({"route": native.describe(), "built": built, "digests": digests},
          open(sys.argv[2], "w", encoding="utf-8"))
"""


def _env(pure: bool) -> dict:
    env = {key: value for key, value in os.environ.items() if key != native.PURE_PYTHON_ENV}
    if pure:
        env[native.PURE_PYTHON_ENV] = "1"
    env["COLUMNS"] = "100"
    return env


def _built_here() -> bool:
    built, _ = native.compiled_modules()
    return bool(built)


def _need_compiled() -> None:
    if _built_here():
        return
    if IN_CI:
        pytest.fail("CI=true but the installed aqe-inspect runs no compiled module: "
                    f"{native.describe()}")
    pytest.skip(f"this install has no compiled core ({native.describe()}); the pure route "
                "is all there is to test")


def test_version_says_which_route_runs():
    for pure in (False, True):
        printed = subprocess.run([*AQE_INSPECT, "--version"], capture_output=True, text=True,
                                 env=_env(pure), timeout=60)
        assert printed.returncode == 0, printed.stderr
        lines = printed.stdout.splitlines()
        assert lines[0].startswith("aqe-inspect ") and lines[1].startswith("core: "), lines
        if pure:
            assert lines[1] == "core: pure Python (AQE_INSPECT_PURE_PYTHON is set)"
        elif _built_here():
            assert lines[1].startswith("core: compiled by Cython ("), lines


def test_the_route_words():
    assert native.pure_requested() is (os.environ.get(native.PURE_PYTHON_ENV, "").strip()
                                       not in ("", "0"))
    names = set(native.WHOLE_MODULES) | {kernel + "_c" for kernel in native.KERNELS}
    assert len(names) == len(native.WHOLE_MODULES) + len(native.KERNELS), "a module twice"
    assert all(name.startswith("aqe_inspect.") for name in names)


@pytest.mark.skipif(not IN_CI, reason="a developer may run the pure route; CI must be compiled")
def test_under_ci_the_core_is_compiled_whole():
    built, missing = native.compiled_modules()
    assert built and not missing, native.describe()
    assert native.describe() == f"core: compiled by Cython ({len(built)} modules)"


_IMPORTED = r"""
import json, sys
from importlib.machinery import EXTENSION_SUFFIXES
import aqe_inspect.native as native
from aqe_inspect import api
for path in sys.argv[1:]:
    api.write(api.diff_input(path, for_format="json"), "json", "/dev/null")
for kernel in native.KERNELS:
    native.load(kernel)
for name in native.WHOLE_MODULES:
    __import__(name)
files = {name: getattr(module, "__file__", None) or "" for name, module in sys.modules.items()
         if name.startswith("aqe_inspect")}
print(json.dumps({"files": files, "suffixes": EXTENSION_SUFFIXES}))
"""


def _imported(pure: bool, tmp_path: Path) -> dict:
    inputs = [SAMPLE_PLANS / "spark-4.3.0" / "skew_join" / name
              for name in ("driver.log", "eventlog.zstd", "formatted_after.txt")]
    ran = subprocess.run([sys.executable, "-c", _IMPORTED, *map(str, inputs)], cwd=tmp_path,
                         capture_output=True, text=True, env=_env(pure), timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout)


def test_the_pure_route_imports_no_extension_of_the_package(tmp_path):
    found = _imported(True, tmp_path)
    extensions = sorted(name for name, path in found["files"].items()
                        if path.endswith(tuple(found["suffixes"])))
    assert extensions == []
    assert all(name in found["files"] for name in native.WHOLE_MODULES)
    assert all(kernel + "_py" in found["files"] for kernel in native.KERNELS)


def test_the_compiled_route_imports_every_listed_extension(tmp_path):
    _need_compiled()
    found = _imported(False, tmp_path)
    listed = list(native.WHOLE_MODULES) + [kernel + "_c" for kernel in native.KERNELS]
    not_compiled = [name for name in listed
                    if not found["files"].get(name, "").endswith(tuple(found["suffixes"]))]
    assert not_compiled == []


def _inputs() -> list:
    """Every bundled sample input, and the golden corpus's explain texts where it is here."""
    commands = []
    for path in sorted(SAMPLE_PLANS.rglob("*")):
        if not path.is_file() or path.name in ("truth.json", "runs.json", "queries.json") or \
                path.suffix in (".py", ".md", ".toml", ".conf", ".snap", ".xml"):
            continue
        commands += [(path, "json"), (path, "text")]
        if path.suffix == ".txt":
            commands.append((path, "parse-json"))
    if CORPUS.is_dir():
        for path in sorted(CORPUS.rglob("explain.txt")):
            commands += [(path, "json"), (path, "parse-json")]
    elif IN_CI:
        pytest.fail(f"CI=true but the golden corpus is missing at {CORPUS}")
    return commands


def test_both_routes_print_the_same_bytes_on_every_sample(tmp_path):
    _need_compiled()
    commands = _inputs()
    assert len(commands) > 2000, len(commands)
    listing = tmp_path / "inputs.tsv"
    listing.write_text("".join(f"{path}\t{command}\n" for path, command in commands), "utf-8")
    results = {}
    running = {}
    for pure in (False, True):  # both at once: one core each
        out = tmp_path / f"{'pure' if pure else 'compiled'}.json"
        running[pure] = (out, subprocess.Popen(
            [sys.executable, "-c", _EACH_INPUT, str(listing), str(out)], cwd=tmp_path,
            env=_env(pure), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for pure, (out, process) in running.items():
        _, errors = process.communicate(timeout=1500)
        assert process.returncode == 0, errors[-3000:]
        results[pure] = json.loads(out.read_text("utf-8"))
    assert results[True]["route"].startswith("core: pure Python")
    assert results[True]["built"] == []
    assert results[False]["route"].startswith("core: compiled by Cython")
    compiled, pure = results[False]["digests"], results[True]["digests"]
    assert set(compiled) == set(pure) and len(compiled) == len(commands)
    differ = sorted(key for key in compiled if compiled[key] != pure[key])
    assert differ == [], f"{len(differ)} of {len(compiled)} outputs differ, e.g. {differ[:5]}"
    printed = sum(size for _, size, _ in compiled.values())
    assert printed > 10_000_000, printed  # the outputs are real reports, not errors
    failed = sorted(key for key, (_, _, error) in compiled.items() if error)
    assert len(failed) < len(compiled) // 20, failed[:10]
