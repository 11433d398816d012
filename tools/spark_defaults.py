"""Read Spark's SQLConf defaults from a Spark line's own jars, to build and check
`aqe_inspect/whynot/defaults.py`.

    python tools/spark_defaults.py 3.0=/tmp/pyspark-3.0.3/deps/jars 4.3=.venv/.../pyspark/jars
    python tools/spark_defaults.py --emit 3.0=... 3.1=...    # the table's rows, to paste

For each `LINE=JARS` it starts a JVM on those jars (py4j's `launch_gateway`; no PySpark of that
line, nor a SparkSession, is needed, so the 3.0-3.2 jars read on Java 17 too), reads every entry
of `SQLConf.sqlConfEntries` by reflection, and prints where the table disagrees with Spark for
the keys it holds (nothing when they agree; exit 1 otherwise). With `--emit` it prints, for the
AQE keys, the rows of `_SETTINGS` for the lines given.

The jars: a PySpark wheel or sdist of that line (`pip download pyspark==3.0.3 --no-deps`, the
jars under `pyspark/jars/` of a wheel, `deps/jars/` of an sdist). `sqlconf_entries` is also what
`tests/test_whynot_defaults.py` reads from the installed PySpark's JVM.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, NamedTuple, Optional

ROOT = Path(__file__).resolve().parent.parent
#: What Java 17 must open for Spark 3.0-3.2's `Platform` (3.3+ ask for it themselves).
JAVA_OPTIONS = ["--add-opens=java.base/java.nio=ALL-UNNAMED",
                "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
                "--add-opens=java.base/java.lang=ALL-UNNAMED"]


class Entry(NamedTuple):
    """One SQLConf entry as Spark defines it."""

    value: Optional[str]     # defaultValueString; None for an optional or a fallback entry
    fallback: Optional[str]  # a FallbackConfigEntry's other key
    constant: str            # the SQLConf field that holds it (ADAPTIVE_EXECUTION_ENABLED)


def sqlconf_entries(jvm) -> Dict[str, Entry]:
    """Every entry of `SQLConf`, by key, read through a py4j JVM view (a SparkSession's
    `_jvm`, or a bare gateway's). Reflection, since `sqlConfEntries` is private."""
    module_class = jvm.java.lang.Class.forName("org.apache.spark.sql.internal.SQLConf$")
    module = module_class.getField("MODULE$").get(None)
    entry_class = jvm.java.lang.Class.forName("org.apache.spark.internal.config.ConfigEntry")
    entries = None
    constants: Dict[str, str] = {}
    for field in module_class.getDeclaredFields():
        name = field.getName()
        if name.endswith("sqlConfEntries"):
            field.setAccessible(True)
            entries = field.get(module)
        elif entry_class.isAssignableFrom(field.getType()):
            field.setAccessible(True)
            entry = field.get(module)
            if entry is not None:
                constants.setdefault(entry.key(), name)
    if entries is None:
        raise RuntimeError("SQLConf has no sqlConfEntries field on this Spark")
    found: Dict[str, Entry] = {}
    entries = jvm.java.util.TreeMap(entries)  # a public copy: Collections' wrappers are closed
    for key in list(entries.keySet().toArray()):
        entry = entries.get(key)
        kind = entry.getClass().getSimpleName()
        fallback = entry.fallback().key() if kind == "FallbackConfigEntry" else None
        value = None if kind in ("OptionalConfigEntry", "FallbackConfigEntry") \
            else entry.defaultValueString()
        found[key] = Entry(value, fallback, constants.get(key, ""))
    return found


def read_jars(jars: Path) -> Dict[str, Entry]:
    """`sqlconf_entries` of the Spark whose jars are in `jars`, in a JVM of its own."""
    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

    classpath = str(jars / "*")
    py4j_jar = next(iter(sorted(jars.glob("py4j-*.jar"))), None)
    port = launch_gateway(classpath=classpath, javaopts=JAVA_OPTIONS, die_on_exit=True,
                          jarpath=str(py4j_jar) if py4j_jar else "")
    gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port, auto_convert=True))
    try:
        return sqlconf_entries(gateway.jvm)
    finally:
        gateway.shutdown()


def compare(line: str, entries: Dict[str, Entry]) -> list:
    """Where the table's line disagrees with the entries Spark defines."""
    sys.path.insert(0, str(ROOT))
    from aqe_inspect.whynot.defaults import KEYS, default

    problems = []
    for key in KEYS:
        ours = default(key, line)
        spark = entries.get(key)
        if spark is None:
            if ours.exists:
                problems.append(f"{line} {key}: Spark {line} has no such key; the table has one")
            continue
        if not ours.exists:
            problems.append(f"{line} {key}: Spark {line} defines it; the table says absent")
            continue
        if ours.value != spark.value:
            problems.append(f"{line} {key}: default {spark.value!r} in Spark, {ours.value!r} here")
        if spark.fallback and ours.fallback != spark.fallback:
            problems.append(f"{line} {key}: falls back to {spark.fallback}, here {ours.fallback}")
        if spark.constant and spark.constant not in ours.cite:
            problems.append(f"{line} {key}: SQLConf.{spark.constant}, cited {ours.cite!r}")
    return problems


def emit(read: Dict[str, Dict[str, Entry]]) -> None:
    """The `_SETTINGS` rows: per key, its constant and the default from each line it changed."""
    extra = ("spark.sql.autoBroadcastJoinThreshold", "spark.sql.join.preferSortMergeJoin",
             "spark.sql.shuffle.partitions")
    keys = sorted({k for entries in read.values() for k in entries
                   if k.startswith("spark.sql.adaptive.")} | set(extra))
    absent, start = object(), object()
    for key in keys:
        history, last = [], start
        for line, entries in read.items():
            entry = entries.get(key)
            now = entry.value if entry else absent
            if now is not last and (now is absent or last is absent or now != last):
                history.append((line, "ABSENT" if now is absent else repr(now)))
            last = now
        constant = next((e[key].constant for e in read.values() if key in e), "")
        fallback = next((e[key].fallback for e in read.values() if key in e and e[key].fallback),
                        None)
        changes = ", ".join(f'"{line}": {value}' for line, value in history)
        tail = f", fallback={fallback!r}" if fallback else ""
        print(f'    "{key}": _Setting("{constant}", {{{changes}}}{tail}),')


def main(argv) -> int:
    emitting = "--emit" in argv
    read: Dict[str, Dict[str, Entry]] = {}
    for item in (a for a in argv if a != "--emit"):
        line, _, jars = item.partition("=")
        read[line] = read_jars(Path(jars))
        print(f"# Spark {line}: {len(read[line])} SQLConf entries", file=sys.stderr)
    if emitting:
        emit(read)
        return 0
    problems = [p for line, entries in read.items() for p in compare(line, entries)]
    print("\n".join(problems) or "the table agrees with every line read")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
