"""`aqe-inspect fleet` on a real Spark standalone cluster, on loopback.

A master and a worker are started from PySpark's own jars (`spark-class`, SPARK_HOME the
pyspark package), small (one core, 1 GiB), the worker's directory in the test's temporary
folder: the executors run there, not where the command runs. Then:

- the command with `--master spark://...` over logs named by a relative path (they reach the
  executors as absolute `file:` URIs), its table checked against truth.json;
- the README's recipe for a cluster whose nodes lack aqe-inspect, taken from the README and
  run as written: a virtualenv packed by venv-pack holding the wheel of this checkout, given
  to `spark-submit --archives`; the executors' Python is the archive's;
- executors whose Python has no aqe_inspect (a bare virtualenv): the command stops with one
  error line; that Python is also the worker's own PYSPARK_PYTHON, so only what the job ships
  or names gives the executors aqe_inspect.

Every process started here is stopped in the fixture's `finally` (its process group: the
worker's executors and their Python workers with it), on SIGTERM to pytest too
(tests/stopping.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Tuple

import pytest

from . import stopping
from .conftest import AQE_INSPECT, IN_CI, ROOT
from .test_fleet import NOT_LOGS, SAMPLER, check_table, csv_rows, place_logs, spark_env

pytestmark = pytest.mark.spark

RECIPE_MARKER = "<!-- fleet-cluster-recipe:"


@dataclass(frozen=True)
class Cluster:
    url: str
    spark_home: Path
    work: Path          # the worker's directory: an application's executors run in it
    bare_python: Path   # a Python without aqe_inspect (the worker's PYSPARK_PYTHON)
    groups: Tuple[int, ...] = ()  # the master's and the worker's process groups


def _start(command, log: Path, env) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=log.parent, start_new_session=True)


def _wait_for(process: subprocess.Popen, log: Path, pattern: str, timeout: float = 180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text(errors="replace"))
        if found:
            return found
        if process.poll() is not None:
            break
        time.sleep(0.5)
    pytest.fail(f"{log.name}: no {pattern!r}; its end:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(process: subprocess.Popen) -> None:
    """The process and its group (spark-class execs Java; a worker's executors, their Python
    daemons and workers are in its group)."""
    with stopping.held():
        stopping.stop_group(process.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)  # reaped


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not IN_CI:  # under CI the spark extra is installed: a missing pyspark must fail
        pytest.importorskip("pyspark", reason="the 'spark' extra is not installed")
    import pyspark

    home = Path(pyspark.__file__).parent
    stopping.install()  # SIGTERM to pytest stops the cluster too
    base = tmp_path_factory.mktemp("cluster")
    bare = base / "bare"
    venv.EnvBuilder(with_pip=False).create(bare)
    bare_python = bare / "bin" / "python"
    lacks = subprocess.run([str(bare_python), "-c", "import aqe_inspect"], cwd=base,
                           capture_output=True, timeout=60)
    assert lacks.returncode != 0, "the bare virtualenv imports aqe_inspect"
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("PYSPARK_", "PYTHON", "VIRTUAL_ENV", "SPARK_"))}
    env.update(SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="512m",
               SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
               PYSPARK_PYTHON=str(bare_python))
    spark_class = str(home / "bin" / "spark-class")
    work = base / "work"
    started = []
    try:
        master_log = base / "master.log"
        started.append(_start([spark_class, "org.apache.spark.deploy.master.Master",
                               "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
                              master_log, env))
        url = _wait_for(started[-1], master_log,
                        r"Starting Spark master at (spark://127\.0\.0\.1:\d+)").group(1)
        worker_log = base / "worker.log"
        started.append(_start([spark_class, "org.apache.spark.deploy.worker.Worker", url,
                               "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                               "--cores", "1", "--memory", "1g", "--work-dir", str(work)],
                              worker_log, env))
        _wait_for(started[-1], worker_log, r"Successfully registered with master")
        yield Cluster(url, home, work, bare_python,
                      tuple(process.pid for process in started))
    finally:
        with stopping.held():
            for process in reversed(started):
                _stop(process)


def _applications(cluster: Cluster) -> set:
    return set(os.listdir(cluster.work)) if cluster.work.is_dir() else set()


def _relative(here: Path):
    return lambda path: os.path.relpath(path, here)


def test_fleet_on_a_cluster_reads_logs_named_relative(cluster, tmp_path):
    """Executors run in the worker's directory: a relative path given to the driver reaches
    them absolute. The executors' Python is this one (aqe-inspect installed on the nodes)."""
    here = tmp_path / "here"
    placed = place_logs(here / "logs", SAMPLER, _relative(here))
    before = _applications(cluster)
    result = subprocess.run(
        [*AQE_INSPECT, "fleet", "logs", "--master", cluster.url, "--output", "out",
         "--format", "csv"], cwd=here, capture_output=True, text=True, timeout=900,
        env=spark_env(tmp_path, PYSPARK_PYTHON=sys.executable, COLUMNS="1000"))
    assert result.returncode == 0, result.stderr[-3000:]
    check_table(csv_rows(here / "out"), placed)
    assert result.stdout.splitlines()[0].endswith(
        f", {len(NOT_LOGS)} files skipped (not event logs)")
    (application,) = _applications(cluster) - before  # its executors ran in the worker's dir
    assert os.listdir(cluster.work / application)


def _readme_recipe() -> str:
    text = (ROOT / "docs" / "commands" / "fleet.md").read_text("utf-8")
    start = text.index(RECIPE_MARKER)
    block = re.match(r".*?-->\n```sh\n(.*?)```", text[start:], re.S)
    assert block, "no ```sh block after the recipe's marker"
    return block.group(1)


def test_readme_recipe_ships_aqe_inspect_in_a_packed_virtualenv(cluster, spark, tmp_path):
    """The README's recipe, as written, with `AQE_INSPECT` the wheel of this checkout (what the
    recipe says to give it before aqe-inspect is published): the executors read every log with the archive's Python (the worker's own
    lacks aqe_inspect), and the table holds each log's truth."""
    recipe = _readme_recipe()
    assert "venv-pack" in recipe and "--archives fleet_venv.tar.gz#environment" in recipe
    assert "PYSPARK_PYTHON=./environment/bin/python" in recipe
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels),
                    str(ROOT)], check=True, capture_output=True, timeout=600)
    here = tmp_path / "here"
    placed = place_logs(here / "logs", SAMPLER, _relative(here))
    env = {name: value for name, value in spark_env(tmp_path).items()
           if not name.startswith(("PYSPARK_", "VIRTUAL_ENV"))}
    env.update(SPARK_HOME=str(cluster.spark_home), SPARK_MASTER=cluster.url,
               PATH=os.pathsep.join([str(cluster.spark_home / "bin"),
                                     str(Path(sys.executable).parent), env.get("PATH", "")]),
               AQE_INSPECT=str(next(wheels.glob("aqe_inspect-*.whl"))))
    before = _applications(cluster)
    result = subprocess.run(["bash", "-e", "-c", recipe], cwd=here, env=env,
                            capture_output=True, text=True, timeout=1500)
    assert result.returncode == 0, result.stderr[-4000:]
    # pip took this checkout's wheel, and the executors unpacked it from the archive.
    packed = subprocess.run(
        [str(here / "fleet_venv" / "bin" / "python"), "-c",
         "import aqe_inspect.fleet.tasks as t; print(t.__file__)"], cwd=tmp_path,
        capture_output=True, text=True, timeout=60)
    tasks_source = (ROOT / "aqe_inspect" / "fleet" / "tasks.py").read_bytes()
    assert Path(packed.stdout.strip()).read_bytes() == tasks_source
    (application,) = _applications(cluster) - before
    unpacked = list((cluster.work / application).glob(
        "*/environment/lib/python*/site-packages/aqe_inspect/fleet/tasks.py"))
    assert unpacked and unpacked[0].read_bytes() == tasks_source
    _, session = spark
    rows = [row.asDict() for row in session.read.parquet(str(here / "fleet-out")).collect()]
    check_table(rows, placed)


def test_executors_without_aqe_inspect_stop_with_one_line(cluster, tmp_path):
    here = tmp_path / "here"
    place_logs(here / "logs", SAMPLER[:1], _relative(here))
    result = subprocess.run(
        [*AQE_INSPECT, "fleet", "logs", "--master", cluster.url, "--output", "out"],
        cwd=here, capture_output=True, text=True, timeout=900,
        env=spark_env(tmp_path, PYSPARK_PYTHON=str(cluster.bare_python)))
    assert result.returncode == 2, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("aqe-inspect: error: the executors' Python cannot import aqe_inspect "
                           f"({cluster.bare_python}: No module named 'aqe_inspect')"), last
    assert "--archives" in last and "Traceback" not in result.stderr
    assert not (here / "out").exists()
