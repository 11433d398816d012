"""`assert_aqe(query=...)` reads the session's SQL status store, which Spark's SQL listener
writes on a thread of its own: an execution's end (and its last, final plan with it) can reach
the store after the listener bus is drained. A query that ran before the assertion must be
read ended and final every time; one still running must not be waited for.

A Spark of its own, in a subprocess, with `spark.ui.liveUpdate.period=1h`: the listener then
writes an execution's end only from its asynchronous thread, the widest the race gets (7 of
40 reads found the last query unfinished before `recorded_executions` waited for the store).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from .conftest import IN_CI

SCRIPT = textwrap.dedent('''
    import json, threading, time
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf
    from aqe_inspect.testing import assert_aqe, recorded_executions

    spark = (SparkSession.builder.master("local[2]")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.liveUpdate.period", "1h")
             .config("spark.sql.adaptive.enabled", "true")
             .config("spark.sql.adaptive.coalescePartitions.minPartitionSize", "1b")
             .config("spark.sql.shuffle.partitions", "20")
             .getOrCreate())
    seen = []
    for run in range(25):
        spark.sparkContext.setJobDescription(f"run {run}")
        spark.range(10000).selectExpr("id % 7 AS d").groupBy("d").count().count()
        spark.sparkContext.setJobDescription(None)
        result = assert_aqe(spark, expect=["coalesced"], query=f"^run {run}$")
        seen.append(result.passed)

    # A query running in another thread: read as it stands (unfinished), not waited for.
    @udf("long")
    def slow(value):
        time.sleep(0.5)
        return value

    def background():
        spark.sparkContext.setJobDescription("still running")
        spark.range(8).repartition(2).select(slow("id")).collect()

    worker = threading.Thread(target=background)
    worker.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        started = [q for q in recorded_executions(spark).queries
                   if q.execution.description == "still running"]
        if started:
            break
        time.sleep(0.05)
    began = time.monotonic()
    document = recorded_executions(spark)
    waited = time.monotonic() - began
    running = [q.execution.finished for q in document.queries
               if q.execution.description == "still running"]
    worker.join()
    print(json.dumps({"passed": seen, "running": running, "waited": waited}))
    spark.stop()
''')


@pytest.mark.spark
def test_an_ended_query_is_read_ended_and_a_running_one_is_not_waited_for(tmp_path):
    if not IN_CI:
        pytest.importorskip("pyspark", reason="the 'spark' extra is not installed")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["passed"] == [True] * 25
    assert found["running"] == [False]
    # The status store is read at once: a settle of SETTLE_SECONDS would show here.
    assert found["waited"] < 10, found
