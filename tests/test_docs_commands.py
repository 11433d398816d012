"""Every command in a ```sh block of the site (README.md and docs/) is run, or held by a test
that runs it, so no page shows a command that does not work:

- `aqe-inspect ...` lines run in a folder of their own where `sample_plans`, `tests` and
  `examples` are the checkout's, in the order the block gives them, and exit as their
  `# exit N` comment says (0 when none). A line that names a file of the reader's own
  (`app.zstd`, `plan.txt`, `--url` of their History Server) is a placeholder: it must fail
  only for want of that file (exit 2, the error naming it, so its options are right), and the
  same block must hold its sample twin, the same command with at least its options on a
  bundled sample, that runs.
- A synopsis line (`PLAN|LOG|-`, `[--width N]`, `OLD NEW`) is not run: each option it names
  must be one the command's `--help` lists.
- Any other line (installing, a Spark job, `spark-submit` on a cluster) runs in the test that
  `ELSEWHERE` names, which must exist; making an input (`printf ... > file`) runs here.

What the commands print is held by tests/test_docs_console.py (```console blocks) and the
format pages' examples by tests/test_format_snapshots.py."""

from __future__ import annotations

import re
import shlex
import subprocess
from functools import lru_cache
from typing import List, Tuple

import pytest

from .conftest import AQE_INSPECT, ROOT, user_env

PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
NAMED = ("sample_plans", "tests", "examples")
EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")
#: What a line other than `aqe-inspect` may run here: making an input.
PREPARING = ("printf", "head", "cp", "mkdir")
#: Lines run by another test, by the start of the line: the test that runs them.
ELSEWHERE = {
    "spark-submit $(aqe-inspect advise":  # the substitution as a shell pastes it
        "tests/test_advise.py::test_spark_submit_prints_only_conf_lines_that_paste",
    "python3 -m venv .venv && . .venv/bin/activate && pip install . && aqe-inspect diff":
        "tests/test_as_written.py::test_readme_command_one_installs_and_runs_on_a_bundled_sample",
    "python3 -m venv .venv && . .venv/bin/activate && pip install '.[mcp]'":
        "tests/test_mcp_docs.py::test_the_install_command_installs_a_server_that_answers",
    "bash .ci/run":  # the CI itself; the README says what it needs
        "tests/test_as_written.py::test_the_readme_says_what_the_whole_suite_needs",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/pytest":
        "tests/test_as_written.py::test_the_quick_loop_names_tests_that_exist_and_a_registered_marker",
    "python examples/ci/aqe_job.py spark-events":
        "tests/test_ci_examples.py::test_the_example_job_writes_one_event_log_with_described_executions",
    "aqe-inspect fleet":  # on Spark: its page's example, and the command on a real cluster
        "tests/test_fleet_cluster.py::test_fleet_on_a_cluster_reads_logs_named_relative",
    "JOB=":
        "tests/test_fleet_cluster.py::test_readme_recipe_ships_aqe_inspect_in_a_packed_virtualenv",
    "spark-submit --master yarn":  # the same job file, on the reader's YARN
        "tests/test_fleet_cluster.py::test_readme_recipe_ships_aqe_inspect_in_a_packed_virtualenv",
    "python3 -m venv fleet_venv":
        "tests/test_fleet_cluster.py::test_readme_recipe_ships_aqe_inspect_in_a_packed_virtualenv",
    "fleet_venv/":
        "tests/test_fleet_cluster.py::test_readme_recipe_ships_aqe_inspect_in_a_packed_virtualenv",
    "export PYSPARK_":
        "tests/test_fleet_cluster.py::test_readme_recipe_ships_aqe_inspect_in_a_packed_virtualenv",
    "spark-submit --master \"$SPARK_MASTER\"":
        "tests/test_fleet_cluster.py::test_readme_recipe_ships_aqe_inspect_in_a_packed_virtualenv",
    "\"$(fleet_venv/":
        "tests/test_fleet_cluster.py::test_readme_recipe_ships_aqe_inspect_in_a_packed_virtualenv",
    "logs/ --output fleet-out":
        "tests/test_fleet_cluster.py::test_readme_recipe_ships_aqe_inspect_in_a_packed_virtualenv",
    "spark-submit --conf spark.sql.planChangeLog.level":  # what makes a plan-change log
        "tests/test_planchange.py::test_the_samples_hold_planchange_logs_of_every_kind_on_both_lines",
}
#: A synopsis's placeholder: an upper-case word (`PLAN`, `OLD`, `KEY=VALUE`) or `[...]`.
SYNOPSIS = re.compile(r"(?:^|[\s|\[])(?:[A-Z][A-Z_]{2,}\b|\[)")

Line = Tuple[str, str]  # (the command, where it is)


def _synopsis(command: str) -> bool:
    """Whether the line is a synopsis: a placeholder outside quotes, before any comment."""
    return bool(SYNOPSIS.search(re.sub(r"'[^']*'|\"[^\"]*\"", "''", command.split(" #")[0])))


def _blocks() -> List[Tuple[str, List[Line]]]:
    """(page:line, [(command, page:line)]) of each ```sh block, continued lines joined."""
    found = []
    for page in PAGES:
        text = page.read_text("utf-8")
        for block in re.finditer(r"^```sh\n(.*?)^```", text, re.S | re.M):
            first = text.count("\n", 0, block.start()) + 2
            lines: List[Line] = []
            pending = ""
            for offset, line in enumerate(block.group(1).splitlines()):
                where = f"{page.relative_to(ROOT)}:{first + offset}"
                if pending:
                    line = pending + " " + line.strip()
                if line.rstrip().endswith("\\"):
                    pending = line.rstrip()[:-1].rstrip()
                    continue
                pending = ""
                if line[:1].isspace() and lines and _synopsis(lines[-1][0]):
                    lines[-1] = (lines[-1][0] + " " + line.strip(), lines[-1][1])
                elif line.strip() and not line.lstrip().startswith("#"):
                    lines.append((line.strip(), where))
            found.append((f"{page.relative_to(ROOT)}:{first - 1}", lines))
    return found


BLOCKS = _blocks()


def _elsewhere(command: str):
    return next((test for start, test in ELSEWHERE.items() if command.startswith(start)), None)


def _options(words: List[str]) -> set:
    return {word.split("=")[0] for word in words if word.startswith("-") and word != "-"}


@lru_cache(maxsize=None)
def _help_options(subcommand: str) -> frozenset:
    done = subprocess.run([*AQE_INSPECT, subcommand, "--help"], capture_output=True,
                          text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    return frozenset(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", done.stdout))


def test_pages_show_commands():
    commands = [command for _, lines in BLOCKS for command, _ in lines]
    assert len(commands) > 60
    assert sum(command.startswith("aqe-inspect ") for command in commands) > 40


def test_every_other_command_is_run_by_a_named_test():
    for _, lines in BLOCKS:
        for command, where in lines:
            if command.startswith("aqe-inspect ") and not command.startswith("aqe-inspect fleet"):
                continue
            if command.split()[0] in PREPARING:
                continue
            test = _elsewhere(command)
            assert test, f"{where}: no test runs `{command}`: name it in ELSEWHERE"
            path, name = test.split("::")
            assert re.search(rf"^def {name}\(", (ROOT / path).read_text("utf-8"), re.M), \
                f"{where}: {test} does not exist"


def test_synopses_name_only_options_the_command_has():
    seen = 0
    for _, lines in BLOCKS:
        for command, where in lines:
            if not command.startswith("aqe-inspect ") or not _synopsis(command):
                continue
            words = command.split(" #")[0].split()
            known = _help_options(words[1])
            named = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", " ".join(words[2:])))
            assert named <= known, f"{where}: {sorted(named - known)} not in " \
                f"`aqe-inspect {words[1]} --help`"
            seen += 1
    assert seen >= 10


def _runnable(block):
    return [line for line in block[1] if (line[0].startswith("aqe-inspect ")
            and not line[0].startswith("aqe-inspect fleet") and not _synopsis(line[0]))
            or line[0].split()[0] in PREPARING]


@pytest.mark.parametrize("block", [block for block in BLOCKS if _runnable(block)],
                         ids=lambda block: block[0])
def test_each_command_runs_or_has_a_sample_twin(block, tmp_path):
    for name in NAMED:
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    env = user_env(tmp_path / "cache", COLUMNS="100")
    placeholders, ran = [], []
    for command, where in _runnable(block):
        words = shlex.split(command, comments=True)
        if words[0] in PREPARING:
            done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, (where, done.stderr)
            continue
        done = subprocess.run([*AQE_INSPECT, *words[1:]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        expected = EXIT.search(command)
        code = int(expected.group(1)) if expected else 0
        missing = [word for word in words[2:] if not word.startswith("-")
                   and not (tmp_path / word).exists()
                   and done.stderr.startswith(f"aqe-inspect: error: {word}")]
        if done.returncode == 2 and code != 2 and missing:
            assert done.stderr.startswith("aqe-inspect: error: ") and \
                done.stderr.count("\n") == 1, (where, done.stderr)
            assert "no such option" not in done.stderr.lower(), (where, done.stderr)
            placeholders.append((words, where))
            continue
        assert done.returncode == code, (where, command, done.stderr[-2000:])
        assert done.stdout or any(path.name not in NAMED for path in tmp_path.iterdir()) or \
            code == 2, (where, "printed nothing")
        ran.append(words)
    for words, where in placeholders:
        wanted = _options(words) - {"--url"}
        twins = [other for other in ran if other[1] == words[1] and wanted <= _options(other)]
        assert twins, f"{where}: `{' '.join(words)}` names a file of the reader's; its block " \
            f"needs the same command on a bundled sample, with the options {sorted(wanted)}"


def test_a_placeholder_is_told_from_a_synopsis():
    assert _synopsis("aqe-inspect diff  PLAN|LOG|-  [--tree|--side-by-side]")
    assert _synopsis("aqe-inspect compare  OLD NEW  [--fail-on RULE]...")
    assert _synopsis("aqe-inspect rules [KIND]")
    assert not _synopsis("aqe-inspect why plan.txt --conf spark.sql.x=10MB --spark-version 3.5.1")
    assert not _synopsis("aqe-inspect diff s --query 'aqe-sample:.*' --format json")
    assert not _synopsis("aqe-inspect check plan.txt --expect 'local-read>=2'")
