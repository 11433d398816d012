"""The driver-log skim (sources/skim.py) on hostile shapes built from the real driver logs of
sample_plans/: linear in its input on each, and the same Document as reading every line.

* a message started by a marker and never ended (a `Final plan:` message followed by many
  lines that start no message: numbers, progress bars, JSON that is no log record, CRLF,
  UTF-8): was searched again from its start with every chunk read (16 MB: 86 s);
* a line longer than --max-size: was joined and searched again with every chunk read
  (256 MB: 31.8 s against 0.54 s on standard input).

Each round of the skim now reads at least twice what it keeps, and the search for a
message's end resumes where the last round stopped.

Growth is a ratio: the work at 4N against the work at N (the best of a few runs, CPU time of
this process), within 1.5x of linear (< 6); no absolute timing. The buffers are made small
so the shapes are many buffers long at sizes a test can afford.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aqe_inspect.errors import InspectError
from aqe_inspect.sources import skim as skim_module
from aqe_inspect.sources.reading import InputReader
from aqe_inspect.sources.skim import Skimmer

from .growth import LINEAR, paired
from .test_skim import DRIVER_LOGS, every_line, skimmed

LOG = next(p for p in DRIVER_LOGS if p.parent.name == "skew_join" and p.name == "driver.log")
#: A message a marker starts (AQE's `Final plan:`), as the sample logs print it.
FINAL_PLAN = b"26/11/28 10:00:00 INFO AdaptiveSparkPlanExec: Final plan:\n"
#: Lines that start no log message, each making the skim look at them another way.
BODIES = {
    "digits": b"1234 starts like a timestamp, holds (12) and +- glyphs\n",
    "progress": b"[Stage 3:>                                   (0 + 2) / 2]\n",
    "json": b'  {"not": "a log record", "x": 1}\n',
    "crlf": b"\tat org.apache.spark.scheduler.Task.run(Task.scala:141)\r\n",
    "utf8": "\tat org.apache.spark.scheduler.Task.run(Task.scala:141) \u00e9\n".encode(),
}


def unended(body: bytes, size: int) -> bytes:
    """The real log, a `Final plan:` message of `size` bytes of `body` lines, the log again."""
    log = LOG.read_bytes()
    return log + FINAL_PLAN + body * (size // len(body)) + log


def skim(path: Path, max_size: int = 256 << 20) -> None:
    try:
        for _ in Skimmer(InputReader(str(path), max_size)).lines():
            pass
    except InspectError:
        pass


@pytest.fixture
def small_buffers(monkeypatch):
    monkeypatch.setattr(skim_module, "BUFFER", 1 << 16)
    monkeypatch.setattr(skim_module, "CHUNK", 1 << 12)


@pytest.mark.parametrize("body", sorted(BODIES))
def test_a_message_never_ended_reads_the_same(tmp_path, small_buffers, body):
    path = tmp_path / "unended.log"
    path.write_bytes(unended(BODIES[body], 400_000))
    assert skimmed(path) == every_line(path)


@pytest.mark.parametrize("body", sorted(BODIES))
def test_a_message_never_ended_costs_linear_time(tmp_path, small_buffers, body):
    paths = {}
    # Sizes whose work is well above the fixed costs (at 0.5 MB a run took 50 ms, and one
    # noisy run on a busy CI machine read as 6.1x), each the best of five runs.
    for size in (1_000_000, 4_000_000):
        paths[size] = tmp_path / f"unended-{size}.log"
        paths[size].write_bytes(unended(BODIES[body], size))
    small, large = paired(lambda: skim(paths[1_000_000]), lambda: skim(paths[4_000_000]),
                          runs=5)
    assert large / max(small, 1e-3) < LINEAR, (small, large)


def test_a_line_over_max_size_is_refused_the_same(tmp_path, small_buffers):
    path = tmp_path / "long.log"
    log = LOG.read_bytes()
    path.write_bytes(log + b"x" * 3_000_000 + b"\n" + log)
    for max_size in (100_000, 1_000_000, 2_000_000):
        result = skimmed(path, max_size)
        assert result == every_line(path, max_size)
        assert result[0] == "error" and "longer than --max-size" in result[1]


#: The long-line measurement, in a process of its own (`sys.argv[1]`: the log).
LONG_LINE_GROWTH = """
import gc, json, sys, time
from aqe_inspect.errors import InspectError
from aqe_inspect.sources import skim
from aqe_inspect.sources.reading import InputReader

skim.CHUNK = 1 << 14

def read(max_size):
    try:
        for _ in skim.Skimmer(InputReader(sys.argv[1], max_size)).lines():
            pass
    except InspectError:
        pass

def cpu(max_size):
    gc.collect()
    gc.disable()
    started = time.process_time()
    read(max_size)
    spent = time.process_time() - started
    gc.enable()
    return spent

small = large = float("inf")
for _ in range(3):  # the two sizes in turn
    large = min(large, cpu(160 << 20))
    small = min(small, cpu(40 << 20))
print(json.dumps([small, large]))
"""


def test_a_line_over_max_size_costs_linear_time(tmp_path):
    """Measured in a new process, as a user's run is, and with both bounds past 32 MB,
    glibc's largest threshold for giving a large block a mapping of its own: the buffers of
    a run below it come from heap memory earlier runs gave back (no page to fault in), those
    of a run above it from fresh mappings, and which are which depends on everything the
    process did before. In this suite's process, linear work read 6-10x (8 MB against 32 MB,
    then 40 MB against 160 MB at the end of a whole suite); alone, 4x."""
    path = tmp_path / "long.log"
    log = LOG.read_bytes()
    path.write_bytes(log + b"x" * (161 << 20) + b"\n" + log)
    measured = subprocess.run([sys.executable, "-c", LONG_LINE_GROWTH, str(path)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert measured.returncode == 0, measured.stderr
    small, large = json.loads(measured.stdout)
    assert large / max(small, 1e-3) < LINEAR, (small, large)


@pytest.mark.parametrize("extra", [1, 100, 4096, 70_000])
def test_a_line_a_little_over_max_size_is_refused(tmp_path, small_buffers, extra):
    """A line that ends in the chunk it goes over the bound in is refused as one that goes on
    past it (was: read, up to a chunk over the bound), by both readers, at its number."""
    path = tmp_path / "long.log"
    log = LOG.read_bytes()
    max_size = 200_000
    path.write_bytes(log + b"x" * (max_size + extra) + b"\n" + log)
    number = log.count(b"\n") + 1
    for result in (skimmed(path, max_size), every_line(path, max_size)):
        assert result == ("error", f"{path}:{number}:1: line {number} is longer than "
                                   f"--max-size (200,000 bytes); raise --max-size to read it")
    path.write_bytes(log + b"x" * max_size + b"\n" + log)  # at the bound: read
    assert skimmed(path, max_size) == every_line(path, max_size) != ("error",)
    assert not isinstance(skimmed(path, max_size), tuple)


def test_a_line_over_a_small_max_size_inside_one_chunk_is_refused(tmp_path):
    """With a bound smaller than a chunk, a line over it inside one chunk is refused too."""
    path = tmp_path / "long.log"
    log = LOG.read_bytes()
    head = b"26/11/28 10:00:00 INFO X: started\n"
    path.write_bytes(head + b"26/11/28 10:00:00 INFO X: " + b"y" * 1500 + b"\n" + log)
    for result in (skimmed(path, 1000), every_line(path, 1000)):
        assert result[0] == "error" and ":2:1: line 2 is longer than --max-size" in result[1]
