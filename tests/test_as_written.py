"""What the README and the workflow files tell a user to run, run as written: README command 1
in a copy of the checkout, the CI jobs' install, job and check steps, the reusable action's
steps, and the release workflow's build and wheel-test steps.

GitHub's steps are run by a small runner of their `run:` scripts (bash, `-eo pipefail`, as
Actions runs them): `${{ inputs.X }}` and `${{ matrix.X }}` are replaced as the runner would, any
other expression fails the test, lines added to $GITHUB_PATH reach the next step's PATH."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

from .conftest import AQE_INSPECT, IN_CI, ROOT, SAMPLE_PLANS, user_env

if IN_CI:  # under CI the test extra is installed: a missing library must fail
    import yaml
else:
    yaml = pytest.importorskip("yaml", reason="the 'test' extra (pyyaml) is not installed")

SCENARIO = SAMPLE_PLANS / "spark-4.3.0" / "multi_rewrite"
EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def _checkout(into: Path) -> Path:
    """The files git tracks, as a fresh clone (or actions/checkout) holds them."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing to clone")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


def _clean_env(tmp_path: Path, **extra: str) -> dict:
    return user_env(tmp_path / "xdg-cache", **extra)


def _bash(script: str, cwd: Path, env: dict, timeout: int = 1800) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _substitute(text: str, values: dict) -> str:
    def one(match: re.Match) -> str:
        name = match.group(1)
        assert name in values, f"an expression the test runner does not know: {match.group(0)}"
        return values[name]
    return EXPRESSION.sub(one, text)


def _run_steps(steps: list, cwd: Path, env: dict, values: dict) -> list:
    """Run each `run:` step in turn; the results, stopping at the first that fails."""
    results = []
    path_file = Path(env["GITHUB_PATH"])
    for step in steps:
        if "run" not in step:
            continue
        assert step.get("shell", "bash") == "bash", step
        step_env = dict(env)
        added = [line for line in path_file.read_text().splitlines() if line]
        step_env["PATH"] = os.pathsep.join([*reversed(added), env["PATH"]])
        for key, value in (step.get("env") or {}).items():
            step_env[key] = _substitute(str(value), values)
        script = _substitute(step["run"], values)
        result = _bash(script, cwd, step_env)
        results.append((step.get("name", script), result))
        if result.returncode:
            break
    return results


def _github_env(tmp_path: Path, workspace: Path, **extra: str) -> dict:
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    github_path = tmp_path / "github-path"
    github_path.touch()
    return _clean_env(tmp_path, RUNNER_TEMP=str(runner_temp), GITHUB_PATH=str(github_path),
                      GITHUB_WORKSPACE=str(workspace), GITHUB_ACTIONS="true", **extra)


# -- README command 1 ----------------------------------------------------------------------------

def _readme_first_command() -> str:
    block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text("utf-8"), re.S)
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_readme_command_one_installs_and_runs_on_a_bundled_sample(tmp_path):
    command = _readme_first_command()
    assert "pip install ." in command and "aqe-inspect diff sample_plans/" in command, command
    clone = _checkout(tmp_path / "aqe-inspect")
    ran = _bash(command, clone, _clean_env(tmp_path), timeout=900)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]
    plan = command.split("aqe-inspect diff ", 1)[1].split()[0]
    ours = subprocess.run([*AQE_INSPECT, "diff", plan], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env=_clean_env(tmp_path))
    assert ours.returncode == 0 and ours.stdout.startswith("Query 1 (1st in the file):"), \
        ours.stderr
    assert ran.stdout[ran.stdout.index("Query 1 ("):] == ours.stdout  # after pip's own output
    assert Path(clone / ".venv" / "bin" / "aqe-inspect").is_file()


# -- the test commands: the whole suite and the quick loop --------------------------------------

def _quick_loop(page: Path) -> str:
    """The one-line command of the ```sh block after the page's `<!-- quick-loop -->` marker."""
    text = page.read_text("utf-8")
    assert "<!-- quick-loop -->" in text, f"{page.name} shows no quick loop"
    after = text.split("<!-- quick-loop -->", 1)[1]
    block = re.search(r"```sh\n(.*?)```", after, re.S)
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_the_readme_says_what_the_whole_suite_needs():
    readme = (ROOT / "README.md").read_text("utf-8")
    says = readme[readme.index("Run the whole test suite"):readme.index("<!-- quick-loop -->")]
    for words in ("35 minutes on 2 cores", "PyPI", "`.venv`", "`../shared/corpus/`",
                  "optional", "`CI=true`", "openjdk-17-jre-headless", "`JAVA_HOME`", "chromium"):
        assert words in " ".join(says.split()), words
    # The tests it names as skipping without the corpus are those that read it.
    named = re.findall(r"`(?:tests/)?(test_\w+\.py)`", says)
    assert named
    for name in named:
        source = (ROOT / "tests" / name).read_text("utf-8")
        assert re.search(r"corpus", source, re.I), f"{name} does not read the corpus"
    script = (ROOT / ".ci" / "run").read_text("utf-8")
    assert ("apt-get install -y -q --no-install-recommends chromium" in script
            and "apt-get install -y -q --no-install-recommends openjdk-17-jre-headless" in script)
    assert "command -v java" in script and "JAVA_HOME" in script


@pytest.mark.parametrize("page", ["README.md", "docs/contributing.md"])
def test_the_quick_loop_names_tests_that_exist_and_a_registered_marker(page):
    command = _quick_loop(ROOT / page)
    assert command == _quick_loop(ROOT / "README.md"), "README and contributing disagree"
    words = command.split()
    paths = [word for word in words if word.startswith("tests/")]
    assert len(paths) >= 5, command
    for path in paths:
        assert (ROOT / path).is_file(), path
    markers = re.findall(r'-m "([^"]+)"', command)
    registered = {line.split(":", 1)[0] for line in tomllib.loads(
        (ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]["ini_options"]["markers"]}
    for expression in markers:
        for name in re.findall(r"\b(?!not\b|and\b|or\b)\w+", expression):
            assert name in registered, f"marker {name} is not registered in pyproject.toml"
    assert "pip install -e '.[test]'" in command and ".venv/bin/pytest" in command


# -- the CI jobs: install, job and check steps as written ---------------------------------------

def _ci_job_commands(kind: str) -> list:
    if kind == "github":
        job = yaml.safe_load((ROOT / ".github/workflows/aqe-check.yml").read_text("utf-8"))
        return [step["run"] for step in job["jobs"]["aqe-check"]["steps"] if "run" in step]
    return yaml.safe_load((ROOT / ".gitlab-ci.yml").read_text("utf-8"))["aqe-check"]["script"]


@pytest.mark.spark
def test_the_ci_jobs_install_run_and_check_as_written(tmp_path):
    """A fresh venv first on PATH (as setup-python or the python image give), each job's
    commands in the checkout, in order: install aqe-inspect and PySpark, run the Spark job,
    check its event log. The two jobs share their first commands (the same install, the
    same Spark job), which then run once, in one checkout, each job's own check after them;
    a command one job writes differently runs for that job."""
    if not IN_CI:
        pytest.importorskip("pyspark", reason="the 'spark' extra is not installed")
    jobs = {kind: _ci_job_commands(kind) for kind in ("github", "gitlab")}
    shared = 0
    while all(shared < len(commands) - 1 for commands in jobs.values()) and \
            len({commands[shared] for commands in jobs.values()}) == 1:
        shared += 1
    assert shared >= 2, f"the jobs no longer share their install and Spark job: {jobs}"
    clone = _checkout(tmp_path / "checkout")
    venv_dir = tmp_path / "python"
    made = subprocess.run([sys.executable, "-m", "venv", venv_dir], capture_output=True,
                          text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    env = _clean_env(tmp_path)
    env["PATH"] = f"{venv_dir / 'bin'}{os.pathsep}{env['PATH']}"

    def run(commands: list) -> subprocess.CompletedProcess:
        for command in commands:
            ran = _bash(command, clone, env)
            assert ran.returncode == 0, \
                f"{command}\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
        return ran

    run(jobs["github"][:shared])
    installed = subprocess.run([venv_dir / "bin" / "python", "-c",
                                "import aqe_inspect; print(aqe_inspect.__file__)"],
                               cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "site-packages" in installed.stdout, installed
    checked = run(jobs["github"][shared:])
    assert "::error" not in checked.stdout, checked.stdout
    run(jobs["gitlab"][shared:])
    report = (clone / "aqe-junit.xml").read_text("utf-8")
    assert 'failures="0"' in report and "<testcase" in report


# -- the reusable action -------------------------------------------------------------------------

def _action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))


def _inputs(action: dict, given: dict) -> dict:
    declared = action["inputs"]
    assert set(given) <= set(declared), set(given) - set(declared)
    values = {}
    for name, spec in declared.items():
        if spec.get("required"):
            assert name in given, f"required input {name} not given"
        values[f"inputs.{name}"] = given.get(name, spec.get("default", ""))
    return values


def test_the_action_declares_path_config_and_format():
    action = _action()
    assert action["runs"]["using"] == "composite"
    assert {"path", "config", "format"} <= set(action["inputs"])
    assert action["inputs"]["path"]["required"] is True
    for step in action["runs"]["steps"]:  # inputs reach scripts as variables, never spliced
        assert not EXPRESSION.search(step.get("run", "")), step["run"]


def test_the_readme_shows_the_action_as_the_example_workflow_uses_it():
    readme = (ROOT / "docs" / "ci.md").read_text("utf-8")  # the site's CI recipes page
    example = (ROOT / "examples/ci/aqe-action.yml").read_text("utf-8")
    assert f"```yaml\n{example}```" in readme
    uses = [step for step in yaml.safe_load(example)["jobs"]["aqe-check"]["steps"]
            if str(step.get("uses", "")).endswith("/aqe-inspect@v1")]
    assert len(uses) == 1
    _inputs(_action(), uses[0]["with"])  # only inputs the action declares, the required ones


@pytest.fixture(scope="module")
def action_checkout(tmp_path_factory) -> Path:
    return _checkout(tmp_path_factory.mktemp("action") / "aqe-inspect")


def _action_workspace(tmp_path: Path, expect: list, forbid: list) -> Path:
    workspace = tmp_path / "workspace"
    (workspace / "spark-events").mkdir(parents=True)
    shutil.copy2(SCENARIO / "eventlog.json", workspace / "spark-events" / "app-1")
    quoted = ", ".join(json.dumps(kind) for kind in expect)
    (workspace / "aqe-expect.toml").write_text(
        f"expect = [{quoted}]\nforbid = [{', '.join(json.dumps(k) for k in forbid)}]\n", "utf-8")
    return workspace


@pytest.mark.parametrize("holds", [True, False], ids=["met", "unmet"])
def test_the_action_steps_install_and_check(action_checkout, tmp_path, holds):
    truth = json.loads((SCENARIO / "truth.json").read_text("utf-8"))["rewrites"]
    present = sorted(kind for kind, count in truth.items() if count)
    absent = sorted(kind for kind, count in truth.items() if not count)
    workspace = _action_workspace(tmp_path, present if holds else [*present, absent[0]],
                                  absent[1:])
    action = _action()
    values = _inputs(action, {"path": "spark-events", "config": "aqe-expect.toml"})
    env = _github_env(tmp_path, workspace, GITHUB_ACTION_PATH=str(action_checkout))
    results = _run_steps(action["runs"]["steps"], workspace, env, values)
    assert len(results) == 2, [(name, r.stderr[-2000:]) for name, r in results]
    (_, install), (_, check) = results
    assert install.returncode == 0, install.stderr[-3000:]
    # Only the command goes on the later steps' PATH, not the venv's python, pip, pytest.
    [added] = (tmp_path / "github-path").read_text().split()
    assert sorted(p.name for p in Path(added).iterdir()) == ["aqe-inspect"]
    errors = [line for line in check.stdout.splitlines() if line.startswith("::error ")]
    if holds:
        assert check.returncode == 0, check.stdout + check.stderr
        assert errors == []
    else:
        assert check.returncode == 1, check.stdout + check.stderr
        assert len(errors) == 1 and absent[0] in errors[0], check.stdout
        assert errors[0].startswith("::error file=spark-events/app-1,line="), errors[0]


def test_a_path_that_looks_like_an_option_is_a_path(action_checkout, tmp_path):
    """`path: --help` (or any input starting with a dash) is a path that does not exist
    (exit 2), never an option that makes the gate pass without checking anything."""
    workspace = _action_workspace(tmp_path, ["coalesced"], [])
    action = _action()
    env = _github_env(tmp_path, workspace, GITHUB_ACTION_PATH=str(action_checkout))
    for path in ("--help", "--version"):
        values = _inputs(action, {"path": path, "config": "aqe-expect.toml"})
        results = _run_steps(action["runs"]["steps"], workspace, env, values)
        (_, install), (_, check) = results
        assert install.returncode == 0, install.stderr[-3000:]
        assert check.returncode == 2, (path, check.stdout[-500:], check.stderr[-500:])


def _pinned() -> list:
    """The Action's requirements: (name, version, marker, hashes) of each pin."""
    from packaging.requirements import Requirement

    text = (ROOT / ".github/action/requirements.txt").read_text("utf-8")
    pins = []
    for entry in re.sub(r"\\\n\s*", " ", text).splitlines():
        entry = entry.split("#")[0].strip()
        if not entry:
            continue
        hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", entry)
        requirement = Requirement(re.sub(r"\s*--hash=\S+", "", entry))
        [spec] = list(requirement.specifier)
        assert spec.operator == "==", entry
        pins.append((requirement.name.lower(), spec.version, requirement.marker, hashes))
    return pins


@pytest.mark.parametrize("python", ["3.9", "3.10", "3.11", "3.12", "3.13"])
@pytest.mark.parametrize("platform", ["linux", "darwin", "win32"])
def test_the_action_installs_only_pinned_hashed_files(python, platform):
    """Every package the Action installs on each Python and platform is pinned to one
    version, with its files' hashes (`pip install --require-hashes`), and the pins are what
    pyproject.toml asks for: its dependencies and those of the build backend, within their
    ranges. A dependency added to pyproject.toml without a pin fails here."""
    from packaging.requirements import Requirement

    environment = {"python_version": python, "python_full_version": f"{python}.0",
                   "sys_platform": platform, "platform_system": {
                       "linux": "Linux", "darwin": "Darwin", "win32": "Windows"}[platform],
                   "os_name": "nt" if platform == "win32" else "posix",
                   "platform_python_implementation": "CPython",
                   "implementation_name": "cpython"}
    chosen = {}
    for name, version, marker, hashes in _pinned():
        if marker is None or marker.evaluate(environment):
            assert name not in chosen, f"{name} pinned twice for Python {python}"
            assert hashes, name
            chosen[name] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    wanted = [Requirement(text) for text in project["project"]["dependencies"]]
    wanted += [Requirement(text) for text in project["build-system"]["requires"]]
    for requirement in wanted:
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        name = requirement.name.lower()
        assert name in chosen, f"{requirement} is not pinned for Python {python}"
        assert requirement.specifier.contains(chosen[name], prereleases=True), \
            (str(requirement), chosen[name])
    action = _action()["runs"]["steps"][0]["run"]
    assert "--require-hashes" in action and "--no-build-isolation" in action
    assert ".github/action/requirements.txt" in action


def test_the_release_actions_are_pinned_by_commit():
    """The release job holds `id-token: write`: every action it runs is pinned to a commit,
    not to a tag or branch that can move."""
    release = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text("utf-8"))
    for job in release["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]


# -- the release workflow ------------------------------------------------------------------------

def test_the_release_builds_checks_and_tries_the_wheel_as_written(tmp_path):
    release = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text("utf-8"))
    triggers = release.get("on", release.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers == {"push": {"tags": ["v*"]}}
    jobs = release["jobs"]
    publish = jobs["publish"]
    assert publish["permissions"] == {"id-token": "write"}  # trusted publishing, no token
    assert any(str(step.get("uses", "")).startswith("pypa/gh-action-pypi-publish")
               for step in publish["steps"])
    assert set(publish["needs"] if isinstance(publish["needs"], list) else [publish["needs"]]) \
        >= {"test"}

    clone = _checkout(tmp_path / "checkout")
    version = re.search(r'^__version__ = "([^"]+)"',
                        (clone / "aqe_inspect/version.py").read_text("utf-8"), re.M).group(1)
    assert f"\n## [{version}] - " in (clone / "CHANGELOG.md").read_text("utf-8"), \
        "the version to release has no section in CHANGELOG.md"
    venv_dir = tmp_path / "python"
    subprocess.run([sys.executable, "-m", "venv", venv_dir], check=True, timeout=300)
    env = _github_env(tmp_path, clone, GITHUB_REF_NAME=f"v{version}")
    env["PATH"] = f"{venv_dir / 'bin'}{os.pathsep}{env['PATH']}"
    built = _run_steps(jobs["build"]["steps"], clone, env, {})
    assert [result.returncode for _, result in built] == [0, 0], \
        [(name, result.stdout[-1500:], result.stderr[-1500:]) for name, result in built]
    assert sorted(path.name for path in (clone / "dist").iterdir()) == [
        f"aqe_inspect-{version}-py3-none-any.whl", f"aqe_inspect-{version}.tar.gz"]
    wrong_tag = _run_steps(jobs["build"]["steps"][-2:], clone,
                           {**env, "GITHUB_REF_NAME": "v0.0.0-not-this"}, {})
    assert wrong_tag[-1][1].returncode != 0, "a tag that is not the version must stop the release"

    matrix = jobs["test"]["strategy"]["matrix"]["python"]
    assert matrix[0] == "3.9", matrix  # the oldest Python requires-python admits
    tried = _run_steps(jobs["test"]["steps"], clone, env, {"matrix.python": matrix[-1]})
    assert [result.returncode for _, result in tried] == [0, 0], \
        [(name, result.stdout[-1500:], result.stderr[-1500:]) for name, result in tried]
    assert f"aqe-inspect {version}" in tried[-1][1].stdout
    assert "PASS skew-join" in tried[-1][1].stdout
