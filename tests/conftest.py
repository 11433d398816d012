"""Shared test fixtures: where the real plans live, and one SparkSession for the session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_PLANS = ROOT / "sample_plans"
CORPUS = ROOT.parent / "shared" / "corpus" / "spark-golden"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# The command as users run it: the console script installed beside this Python. Never
# `python -m aqe_inspect` from the checkout, which would import the source tree instead.
_SCRIPT = Path(sys.executable).with_name("aqe-inspect")
AQE_INSPECT = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "aqe_inspect"]


def as_a_foreground_job() -> None:
    """A `preexec_fn`: Ctrl-C, SIGTERM and SIGHUP at their defaults in the child, as a
    terminal's shell starts a foreground job. The test runner may have been started with some
    ignored (`nohup`; a script's background job `&` ignores SIGINT), and aqe-inspect keeps a
    signal it was started with ignored, as it should."""
    import signal

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)


def verdict(printed: str) -> str:
    """The verdict `check` and `compare` print last, as one line: the last paragraph of their
    text output (after its last blank line), its wrapped lines joined."""
    paragraph = printed.strip().split("\n\n")[-1]
    return " ".join(line.strip() for line in paragraph.strip().splitlines())


def user_env(cache: Path, **extra: str) -> dict:
    """The environment of a new shell on this machine: no virtualenv active (the tests' own
    left off PATH), an empty cache at `cache` (made when missing), and `extra`."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_REQUIRE"))}
    cache.mkdir(parents=True, exist_ok=True)
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(part for part in env.get("PATH", "").split(os.pathsep)
                                  if part != venv_bin)
    env.update(XDG_CACHE_HOME=str(cache), **extra)
    return env


def require_corpus() -> Path:
    """The golden corpus; skipped on a user's clone without ../shared, required under CI."""
    if CORPUS.is_dir():
        return CORPUS
    if IN_CI:
        pytest.fail(f"CI=true but the golden corpus is missing at {CORPUS}")
    pytest.skip(f"the Spark golden corpus is not beside this clone ({CORPUS}); "
                "it ships in the project's shared/ folder")


@pytest.fixture(scope="session")
def corpus() -> Path:
    return require_corpus()


def compiled_kernel(name: str):
    """The compiled kernel `name` ("aqe_inspect.sources._markers_c"); skipped, with its reason,
    where it is not built (a pure-Python install), required under CI (.ci/run builds it)."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as error:
        if IN_CI:
            pytest.fail(f"CI=true but {name} is not built: {error}")
        pytest.skip(f"{name} is not built (pure-Python install): {error}")


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test session, built by the sample generator."""
    if not IN_CI:  # under CI the spark extra is installed: a missing pyspark must fail
        pytest.importorskip("pyspark", reason="the 'spark' extra is not installed")
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("sample_generator",
                                                  SAMPLE_PLANS / "generate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    # The Python workers run this Python, whose packages are the suite's (CI runs the venv's
    # pytest without activating it: `python3` on PATH would be another Python).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = module.build_session()
    yield module, session
    session.stop()
