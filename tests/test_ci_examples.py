"""The CI examples work as written: the GitHub and GitLab jobs, the README section that quotes
them, the example PySpark job and its expectation file.

The jobs are read as data (every command they run is one this repository can stand behind),
and the example job is run for real, once per session, in its own process and JVM: the rewrites
``aqe-inspect diff`` finds in its event log must be those ``aqe-expect.toml`` expects of the
queries its ``match`` patterns select."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from aqe_inspect.expectations.config import load_config
from aqe_inspect.rewrites.findings import REWRITE_KINDS

from .conftest import AQE_INSPECT, IN_CI, ROOT

if IN_CI:  # under CI the test extra is installed: a missing library must fail
    import yaml
else:
    yaml = pytest.importorskip("yaml", reason="the 'test' extra (pyyaml) is not installed")
if sys.version_info >= (3, 11):
    import tomllib
else:
    tomllib = pytest.importorskip("tomli", reason="the 'test' extra (tomli) is not installed")

EXAMPLES = ROOT / "examples" / "ci"
JOB = EXAMPLES / "aqe_job.py"
EXPECTATIONS = EXAMPLES / "aqe-expect.toml"
README_SECTION = ROOT / "docs" / "ci.md"  # the site's CI recipes page
GITHUB_JOB = ROOT / ".github" / "workflows" / "aqe-check.yml"
GITLAB_JOB = ROOT / ".gitlab-ci.yml"
EVENT_LOG_DIR = "spark-events"

def _load_yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text("utf-8"))


def _github_commands() -> list[str]:
    steps = _load_yaml(GITHUB_JOB)["jobs"]["aqe-check"]["steps"]
    return [step["run"] for step in steps if "run" in step]


def _gitlab_job() -> dict:
    return _load_yaml(GITLAB_JOB)["aqe-check"]


def _expectation_rules() -> list[dict]:
    return tomllib.loads(EXPECTATIONS.read_text("utf-8"))["query"]


# -- (a) the files parse, and the README quotes them -------------------------------------------

def test_the_jobs_parse_and_have_their_shape():
    github = _load_yaml(GITHUB_JOB)
    triggers = github.get("on", github.get(True))  # YAML 1.1 reads a bare `on` as true
    assert set(triggers) >= {"push", "pull_request"}
    steps = github["jobs"]["aqe-check"]["steps"]
    uses = {step["uses"].split("@")[0]: step for step in steps if "uses" in step}
    assert uses["actions/setup-java"]["with"] == {"distribution": "temurin", "java-version": "17"}
    assert uses["actions/setup-python"]["with"] == {"python-version": "3.11"}
    if "github/codeql-action/upload-sarif" in uses:  # SARIF upload needs this permission
        assert github["permissions"].get("security-events") == "write"

    gitlab = _gitlab_job()
    assert gitlab["image"].startswith("python:3.11-bookworm")
    assert gitlab["artifacts"]["when"] == "always"
    junit = gitlab["artifacts"]["reports"]["junit"]
    assert f"--output {junit}" in gitlab["script"][-1]


def test_the_readme_section_quotes_the_files_verbatim():
    blocks = re.findall(r"```(\w+)\n(.*?)```", README_SECTION.read_text("utf-8"), re.S)
    yaml_blocks = [body for lang, body in blocks if lang == "yaml"]
    assert yaml_blocks == [GITHUB_JOB.read_text("utf-8"), GITLAB_JOB.read_text("utf-8"),
                           (EXAMPLES / "aqe-action.yml").read_text("utf-8")]
    toml_blocks = [body for lang, body in blocks if lang == "toml"]
    assert toml_blocks == [EXPECTATIONS.read_text("utf-8")]


def test_the_readme_section_names_every_key_and_form():
    text = README_SECTION.read_text("utf-8")
    for word in ("`match`", "`expect`", "`forbid`", "`kind>=N`", "`kind=N`", "`kind<=N`",
                 *(f"`{kind}`" for kind in REWRITE_KINDS)):
        assert word in text, word


def test_the_expectation_file_reads_as_check_reads_it():
    expectations = load_config(str(EXPECTATIONS))
    rules = _expectation_rules()
    assert len(expectations) == sum(len(r.get("expect", [])) + len(r.get("forbid", []))
                                    for r in rules)
    assert all(e.scope is not None and e.origin.line > 0 for e in expectations)


# -- (b) every command the jobs run is one this repository stands behind ----------------------

def _optional_extras() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
               ["project"]["optional-dependencies"])


def _check_install(argv: list[str]) -> None:
    """`pip install` of this checkout with extras it declares, and PySpark."""
    if argv[:3] == ["python", "-m", "pip"]:
        argv = argv[2:]
    assert argv[:2] == ["pip", "install"], argv
    targets = [arg for arg in argv[2:] if not arg.startswith("-")]
    local = [arg for arg in targets if arg.startswith(".")]
    assert len(local) == 1, f"installs this checkout once: {argv}"
    extras = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", local[0])
    assert extras, local[0]
    assert set(filter(None, (extras[1] or "").split(","))) <= _optional_extras(), local[0]
    others = [arg for arg in targets if arg not in local]
    assert [re.match(r"[\w-]+", arg)[0] for arg in others] == ["pyspark"], argv


def _check_example_job(argv: list[str]) -> None:
    assert argv == ["python", JOB.relative_to(ROOT).as_posix(), EVENT_LOG_DIR], argv


def _check_aqe_inspect(argv: list[str], output_format: str) -> None:
    options = dict(zip(argv[3::2], argv[4::2]))
    assert argv[:3] == ["aqe-inspect", "check", EVENT_LOG_DIR], argv
    assert len(argv[3:]) % 2 == 0 and set(options) <= {"--config", "--format", "--output"}, argv
    assert (ROOT / options["--config"]) == EXPECTATIONS
    assert options["--format"] == output_format


def _check_commands(commands: list[str], output_format: str) -> None:
    argvs = [shlex.split(command) for command in commands]
    assert all(len(command.splitlines()) == 1 for command in commands), "one command a step"
    kinds = []
    for argv in argvs:
        if "install" in argv:
            _check_install(argv)
            kinds.append("install")
        elif argv[0] == "python":
            _check_example_job(argv)
            kinds.append("job")
        else:
            _check_aqe_inspect(argv, output_format)
            kinds.append("check")
    assert kinds == ["install", "job", "check"]


def test_every_github_command_is_install_job_or_check():
    _check_commands(_github_commands(), "github")


def test_every_gitlab_command_is_install_job_or_check():
    job = _gitlab_job()
    _check_commands(job["script"], "junit")
    # The image brings Python 3.11; the system step adds Java 17 and nothing else.
    assert job["before_script"] == [
        "apt-get update",
        "apt-get install -y --no-install-recommends openjdk-17-jre-headless",
    ]


def test_the_install_check_catches_an_extra_that_does_not_exist():
    with pytest.raises(AssertionError):
        _check_install(shlex.split('pip install ".[codecs,nonesuch]" "pyspark>=3.5,<4"'))
    with pytest.raises(AssertionError):
        _check_commands(['pip install ".[codecs]" pyspark', "python examples/ci/aqe_job.py x",
                         "aqe-inspect check x --config examples/ci/aqe-expect.toml"], "github")


# -- (c) the example job, run for real -----------------------------------------------------------

@pytest.fixture(scope="module")
def example_report(tmp_path_factory):
    """Run examples/ci/aqe_job.py once into a temporary directory; diff its event log."""
    if not IN_CI:  # under CI the spark extra is installed: a missing pyspark must fail
        pytest.importorskip("pyspark", reason="the 'spark' extra is not installed")
    work = tmp_path_factory.mktemp("ci-example")
    run = subprocess.run([sys.executable, str(JOB), EVENT_LOG_DIR], cwd=work,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    log_dir = work / EVENT_LOG_DIR
    diff = subprocess.run([*AQE_INSPECT, "diff", str(log_dir),
                           "--format", "json"], capture_output=True, text=True, timeout=120)
    assert diff.returncode == 0, diff.stderr
    return log_dir, json.loads(diff.stdout)


@pytest.mark.spark
def test_the_example_job_writes_one_event_log_with_described_executions(example_report):
    log_dir, report = example_report
    app_id = report["application"]["app_id"]
    assert [path.name for path in log_dir.iterdir() if app_id in path.name], \
        f"no event log of {app_id} in {log_dir}"
    assert report["notes"] == []
    descriptions = [query["description"] for query in report["queries"]]
    assert descriptions == ["ci-example: store totals", "ci-example: promoted orders",
                            "ci-example: clicks per page"]
    for query in report["queries"]:
        assert query["finished"] and query["notes"] == [], query


@pytest.mark.spark
def test_the_example_job_shows_what_the_expectation_file_expects(example_report):
    """The diff's counts, read apart from `check`, meet every expectation of the file."""
    _, report = example_report
    for expectation in load_config(str(EXPECTATIONS)):
        selected = [query for query in report["queries"]
                    if expectation.scope.pattern.search(query["description"] or "")]
        assert selected, f"no execution matches {expectation.scope.text!r}"
        for query in selected:
            actual = query["counts"][expectation.kind]
            assert expectation.holds(actual), (query["description"], expectation.text, actual)


def _job_check_command(job_commands: list[str]) -> list[str]:
    line = next(c for c in job_commands if c.startswith("aqe-inspect check"))
    return [*AQE_INSPECT, *shlex.split(line)[1:]]


@pytest.fixture(scope="module")
def job_checkout(example_report, tmp_path_factory):
    """A working directory laid out as the jobs' checkout: the event log in spark-events/,
    the expectation file at examples/ci/aqe-expect.toml."""
    log_dir, _ = example_report
    work = log_dir.parent
    (work / "examples").mkdir(exist_ok=True)
    if not (work / "examples" / "ci").exists():
        (work / "examples" / "ci").symlink_to(EXAMPLES)
    return work


@pytest.mark.spark
def test_the_github_check_step_passes_as_written(job_checkout):
    run = subprocess.run(_job_check_command(_github_commands()), cwd=job_checkout,
                         capture_output=True, text=True, timeout=120)
    assert (run.returncode, run.stderr) == (0, ""), run.stdout
    assert "::error" not in run.stdout
    assert run.stdout.count("PASS ") == len(load_config(str(EXPECTATIONS)))


@pytest.mark.spark
def test_the_gitlab_check_step_writes_a_passing_junit_report(job_checkout):
    job = _gitlab_job()
    run = subprocess.run(_job_check_command(job["script"]), cwd=job_checkout,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    report = job["artifacts"]["reports"]["junit"]
    tree = ElementTree.parse(job_checkout / report)
    suite = tree.getroot().find("testsuite")
    assert suite.get("failures") == "0"
    assert int(suite.get("tests")) == len(load_config(str(EXPECTATIONS)))


@pytest.mark.spark
def test_the_check_step_fails_when_aqe_stops_rewriting(job_checkout, tmp_path):
    """The same step on an expectation the run does not meet: exit 1, and the annotation
    points at the execution's event in the log."""
    stricter = tmp_path / "aqe-expect.toml"
    stricter.write_text(EXPECTATIONS.read_text("utf-8").replace('"skew-join>=1"',
                                                                '"skew-join>=5"'), "utf-8")
    command = _job_check_command(_github_commands())
    command[command.index("--config") + 1] = str(stricter)
    # The job's checkout is the workspace Actions would give it (annotations name files from it).
    run = subprocess.run(command, cwd=job_checkout, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "GITHUB_WORKSPACE": str(job_checkout)})
    assert run.returncode == 1, run.stdout + run.stderr
    errors = [line for line in run.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 1, run.stdout
    assert re.match(r"::error file=spark-events/[^,]+,line=\d+,title=", errors[0]), errors[0]
    assert "skew-join>=5" in errors[0]
