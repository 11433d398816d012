"""What users install: the sdist and the wheel built as a release builds them, checked as PyPI
checks them, and the wheel alone in a fresh virtualenv (no extras, an empty cache) running every
command on the sample plans and on every codec's sample event log, from a directory outside the
checkout and from the checkout's root (where a source tree could shadow the installed package)."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from .conftest import IN_CI, ROOT, SAMPLE_PLANS, user_env

SCENARIO = "multi_rewrite"  # truth: coalesced, smj-to-bhj and local reads
PLAN = SAMPLE_PLANS / "spark-4.3.0" / SCENARIO / "formatted_after.txt"


def _source_version() -> str:
    text = (ROOT / "aqe_inspect" / "version.py").read_text("utf-8")
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


def _run(argv, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(arg) for arg in argv], capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict:
    """The sdist, and the wheel built from it, as `python -m build` makes them for a release:
    those .ci/run built from this checkout and tests (AQE_DIST, its dist/ folder: the same
    command, so not built twice), else built here."""
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("no checkout to build from")
    given = os.environ.get("AQE_DIST")
    if given:
        out = Path(given)
    else:
        out = tmp_path_factory.mktemp("dist")
        built = _run([sys.executable, "-m", "build", "--outdir", out, ROOT], timeout=1200)
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    wheels, sdists = list(out.glob("aqe_inspect-*.whl")), list(out.glob("aqe_inspect-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    assert sdists[0].name == f"aqe_inspect-{_source_version()}.tar.gz", (given, sdists)
    # The release's fallback for platforms with no compiled wheel: the pure one, from the sdist.
    pure_out = tmp_path_factory.mktemp("dist-pure")
    env = {**os.environ, "AQE_INSPECT_PURE_PYTHON": "1"}
    env.pop("AQE_INSPECT_REQUIRE_COMPILED", None)
    built = _run([sys.executable, "-m", "build", "--wheel", "--outdir", pure_out, sdists[0]],
                 timeout=600, env=env)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    pure = list(pure_out.glob("aqe_inspect-*.whl"))
    assert len(pure) == 1, sorted(p.name for p in pure_out.iterdir())
    return {"wheel": wheels[0], "sdist": sdists[0], "pure_wheel": pure[0]}


def _listed_modules() -> list:
    """The compiled core's modules as native.py names them (read, not imported)."""
    import ast

    tree = ast.parse((ROOT / "aqe_inspect" / "native.py").read_text("utf-8"))
    values = {node.target.id: ast.literal_eval(node.value) for node in tree.body
              if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
              and node.target.id in ("WHOLE_MODULES", "KERNELS")}
    return list(values["WHOLE_MODULES"]) + [kernel + "_c" for kernel in values["KERNELS"]]


def test_the_compiled_wheel_and_the_pure_wheel_hold_the_same_package(dist):
    """The wheel built from the sdist carries every listed module compiled for this platform
    (CI builds with AQE_INSPECT_REQUIRE_COMPILED=1: a compile that fails fails the build); the
    pure wheel is py3-none-any with no extension; both hold the same Python files."""
    compiled = set(zipfile.ZipFile(dist["wheel"]).namelist())
    pure = set(zipfile.ZipFile(dist["pure_wheel"]).namelist())
    assert dist["pure_wheel"].name.endswith("-py3-none-any.whl"), dist["pure_wheel"].name
    assert not [name for name in pure if name.endswith((".so", ".pyd"))]
    python_files = {name for name in compiled if name.endswith(".py")}
    assert python_files == {name for name in pure if name.endswith(".py")}
    extensions = {name.split(".")[0].replace("/", ".") for name in compiled
                  if name.endswith((".so", ".pyd"))}
    if not extensions and not IN_CI:
        pytest.skip("no C compiler here: the wheel from the sdist is the pure one")
    assert "-py3-none-any" not in dist["wheel"].name, dist["wheel"].name
    assert sorted(extensions) == sorted(_listed_modules())
    sdist = set(tarfile.open(dist["sdist"]).getnames())
    assert not [name for name in sdist if name.endswith((".c", ".so"))], "generated files"
    assert any(name.endswith("/setup.py") for name in sdist)


def test_the_wheel_holds_every_module_and_the_grammar(dist):
    names = set(zipfile.ZipFile(dist["wheel"]).namelist())
    modules = {path.relative_to(ROOT).as_posix() for path in (ROOT / "aqe_inspect").rglob("*.py")
               if "__pycache__" not in path.parts}
    assert modules, "no source modules found"
    assert sorted(modules - names) == []
    assert {"aqe_inspect/grammars/__init__.py", "aqe_inspect/grammars/explain.lark"} <= names
    # PEP 561: the package says it is typed (aqe_inspect.api's signatures reach type checkers).
    assert "aqe_inspect/py.typed" in names
    assert not any(name.startswith(("tests/", "sample_plans/", "bench/", "grammars/"))
                   for name in names)


def test_twine_accepts_both_and_the_version_has_one_source(dist):
    checked = _run([sys.executable, "-m", "twine", "check", "--strict", dist["wheel"],
                    dist["sdist"]], timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    version = _source_version()
    assert dist["wheel"].name.startswith(f"aqe_inspect-{version}-")
    assert dist["sdist"].name == f"aqe_inspect-{version}.tar.gz"
    metadata = next(name for name in zipfile.ZipFile(dist["wheel"]).namelist()
                    if name.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(dist["wheel"]).read(metadata).decode()
    assert f"\nVersion: {version}\n" in text
    for library in ("zstandard", "lz4", "xxhash", "cramjam", "python-neo-lzf"):
        # Spark's event-log codecs are no extra: a plain install reads every log Spark writes.
        assert re.search(rf"^Requires-Dist: {library}\b(?!.*extra ==)", text, re.M), library


def _oldest_python() -> str:
    """Python 3.9, the oldest the package supports, where the machine has it (pyenv's too)."""
    candidates = [shutil.which("python3.9"),
                  *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.9*/bin/python3.9")))]
    for candidate in filter(None, candidates):
        ran = _run([candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 9))"],
                   timeout=60)
        if ran.stdout.strip() == "True":
            return candidate
    if IN_CI:
        pytest.fail("CI=true but no Python 3.9 on this machine: requires-python says >=3.9")
    pytest.skip("no Python 3.9 on this machine")


@pytest.fixture(scope="module", params=["this-python", "python-3.9"])
def fresh(request, dist, tmp_path_factory) -> dict:
    """A new virtualenv holding only the wheel (and what it requires), an empty cache: on the
    Python running the tests, and on the oldest Python the package supports."""
    interpreter = sys.executable if request.param == "this-python" else _oldest_python()
    # The compiled wheel is this Python's; the oldest Python gets the pure one (the release's
    # fallback where no compiled wheel fits).
    wheel = dist["wheel"] if request.param == "this-python" else dist["pure_wheel"]
    where = tmp_path_factory.mktemp("fresh")
    env_dir = where / "env"
    made = _run([interpreter, "-m", "venv", env_dir], timeout=300)
    assert made.returncode == 0, made.stderr
    python = env_dir / "bin" / "python"
    installed = _run([python, "-m", "pip", "install", "-q", wheel], timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]
    cache = where / "cache"
    elsewhere = where / "elsewhere"
    elsewhere.mkdir()
    environ = user_env(cache)
    environ["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{environ['PATH']}"
    return {"python": python, "bin": env_dir / "bin", "env": environ, "elsewhere": elsewhere,
            "cache": cache}


def _event_logs() -> list:
    """One sample event log per Spark line, codec and layout (plain, zstd, lz4, snappy, lzf,
    rolling), by the samples' own index."""
    index = json.loads((SAMPLE_PLANS / "eventlogs.json").read_text("utf-8"))
    chosen = {}
    for entry in index["logs"]:
        if entry["variant"] == "plain" and entry["layout"] == "single" or entry["codec"]:
            chosen.setdefault((entry["spark_version"], entry["codec"], entry["layout"]), entry)
    return list(chosen.values())


def _places(fresh: dict):
    """(cwd, how a sample path is named there): outside the checkout with absolute paths, and
    the checkout's root with relative ones, as README command 1 leaves a user."""
    yield fresh["elsewhere"], lambda path: str(path)
    yield ROOT, lambda path: os.path.relpath(path, ROOT)


def test_the_installed_wheel_runs_every_command_from_anywhere(fresh, tmp_path):
    env, aqe = fresh["env"], fresh["bin"] / "aqe-inspect"
    version = _run([aqe, "--version"], env=env, timeout=60)
    assert version.stdout.splitlines()[0] == f"aqe-inspect {_source_version()}", version.stderr
    metadata = _run([fresh["python"], "-c", "import importlib.metadata as m; "
                     "print(m.version('aqe-inspect'))"], env=env, timeout=60, cwd=tmp_path)
    assert metadata.stdout.strip() == _source_version()
    truth = json.loads((PLAN.parent / "truth.json").read_text("utf-8"))["rewrites"]
    present = sorted(kind for kind, count in truth.items() if count)
    absent = sorted(kind for kind, count in truth.items() if not count)
    assert present and absent
    for cwd, name in _places(fresh):
        plan = name(PLAN)
        snapshot = tmp_path / f"snap-{len(str(cwd))}.txt"
        commands = [
            (["parse", plan, "--format", "json"], 0, '"aqe-inspect/parse/v1"'),
            (["diff", plan], 0, ""),
            (["diff", plan, "--format", "json"], 0, '"aqe-inspect/report/v1"'),
            (["check", plan, *sum((["--expect", kind] for kind in present), [])], 0, "PASS"),
            (["check", plan, "--expect", absent[0]], 1, "FAIL"),
            (["why", plan], 0, ""),
            (["snapshot", plan, "-o", snapshot], 0, ""),
            (["check", plan, "--snapshot", snapshot], 0, ""),
            (["rules"], 0, present[0]),
        ]
        for argv, code, expected in commands:
            result = _run([aqe, *argv], env=env, cwd=cwd, timeout=120)
            context = f"{argv} in {cwd}: {result.stderr[-2000:]}"
            assert result.returncode == code, context
            assert expected in result.stdout, context
            assert "Traceback" not in result.stderr and "internal error" not in result.stderr
        # The MCP server without its extra (a plain install; Python 3.9 cannot have it): one
        # line saying what to install, exit 2, before anything is served.
        result = _run([aqe, "mcp", "--allow", str(tmp_path)], env=env, cwd=cwd, timeout=120)
        assert (result.returncode, result.stdout) == (2, ""), result.stderr[-2000:]
        assert result.stderr.startswith("aqe-inspect: error: aqe-inspect mcp needs the MCP "
                                        "SDK, the mcp extra: pip install '.[mcp]' in "
                                        "aqe-inspect's checkout"), result.stderr
        assert result.stderr.count("\n") == 1
        for entry in _event_logs():
            path = name(SAMPLE_PLANS / entry["path"])
            result = _run([aqe, "diff", path, "--format", "json"], env=env, cwd=cwd, timeout=120)
            label = f"{entry['path']} ({entry['codec'] or 'plain'}, {entry['layout']}) in {cwd}"
            assert result.returncode == 0, f"{label}: {result.stderr[-2000:]}"
            report = json.loads(result.stdout)
            descriptions = [query.get("description") for query in report["queries"]]
            assert entry["description"] in descriptions, label
            rewrites = json.loads((SAMPLE_PLANS / entry["truth"]).read_text("utf-8"))["rewrites"]
            expect = [f"--expect={kind}={count}" for kind, count in rewrites.items()]
            for argv in (["check", path, "--query", str(entry["execution_id"]), *expect],
                         ["why", path, "--query", str(entry["execution_id"])]):
                result = _run([aqe, *argv], env=env, cwd=cwd, timeout=120)
                assert result.returncode == 0, f"{argv[0]} {label}: {result.stdout[-1500:]}" \
                    f"{result.stderr[-1500:]}"


@pytest.mark.spark
@pytest.mark.parametrize("fresh", ["this-python"], indirect=True)
def test_fleet_from_the_installed_wheel_with_the_spark_extra(dist, fresh, tmp_path):
    """`pip install "aqe-inspect[spark]"`, then `fleet` from outside the checkout and from its
    root: Python workers import the installed package, never the source tree."""
    if not IN_CI:
        pytest.importorskip("pyspark", reason="the 'spark' extra is not installed")
    import pyspark

    installed = _run([fresh["python"], "-m", "pip", "install", "-q",
                      f"{dist['wheel']}[spark]", f"pyspark=={pyspark.__version__}"],
                     env=fresh["env"], timeout=1800)
    assert installed.returncode == 0, installed.stderr[-3000:]
    logs = SAMPLE_PLANS / "spark-4.3.0" / SCENARIO
    for cwd, name in _places(fresh):
        out = tmp_path / f"table-{len(str(cwd))}"
        result = _run([fresh["bin"] / "aqe-inspect", "fleet", name(logs / "eventlog.json"),
                       "--output", out, "--format", "csv"], env=fresh["env"], cwd=cwd,
                      timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        rows = "".join(path.read_text("utf-8") for path in out.glob("*.csv"))
        assert "internal error" not in rows and "ModuleNotFoundError" not in rows, rows[:2000]
        assert "aqe-sample:" + SCENARIO in rows, rows[:2000]


def test_editable_install_parses_from_another_directory(tmp_path):
    """`pip install -e .`, as the README and CI install a checkout: the package and its
    grammar are found from any working directory, not only from the checkout."""
    import sysconfig
    import venv

    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "-q", "-e", str(ROOT)],
                   check=True, capture_output=True, timeout=600)
    plan = next(SAMPLE_PLANS.rglob("simple_after.txt"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # The dependencies (lark, typer, ...) from the environment running the tests.
    deps = sysconfig.get_paths()["purelib"]
    result = subprocess.run(
        [str(python), "-c", "import sys, aqe_inspect.cli; "
         "sys.argv[1:] = ['diff', '--format', 'json', sys.argv[1]]; aqe_inspect.cli.main()",
         str(plan)],
        cwd=elsewhere, env={"PYTHONPATH": deps, "PATH": "/usr/bin:/bin"}, capture_output=True,
        timeout=120)
    assert result.returncode == 0, result.stderr
    assert b'"schema": "aqe-inspect/report/v1"' in result.stdout
