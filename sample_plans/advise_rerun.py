"""Re-run each negative scenario with the settings ``aqe-inspect advise`` gives for it.

For every negative control of ``generate.py`` (and ``no_exchange``), this asks
``aqe-inspect advise`` about the scenario's own committed event log (``eventlog.json``, the
execution labelled ``aqe-sample:<scenario>``), takes the changes it advises, runs the
scenario's query again on this Spark line with its committed settings and those changes on
top, reads what AQE did from the JVM plan objects (``generate.read_truth``, never plan text)
and writes ``<out>/spark-<version>/<scenario>/advised.json``
(``aqe-inspect/advised-rerun/v1``): the advice, the settings applied, the rewrite counts
before and after, and whether the rewrite the control was missing now fired.

It also asks ``advise`` about the scenario's driver log and formatted plan text and records
whether those advise the same changes.

Usage (each Spark line from an environment holding that PySpark; ``aqe-inspect`` is the
command of any environment where the project is installed: the Spark side never imports it)::

    /tmp/spark35/bin/python sample_plans/advise_rerun.py --out sample_plans \\
        --aqe-inspect /path/to/venv/bin/aqe-inspect
    /tmp/spark43/bin/python sample_plans/advise_rerun.py --out sample_plans \\
        --aqe-inspect /path/to/venv/bin/aqe-inspect [--only skew_join_off aqe_off]

Exits 1 when a scenario does not show what it must (see ``expectation``): an advised change
that did not make its rewrite fire, a change advised where nothing can fire, or no change for
a scenario whose rewrite a setting would allow.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402  (this folder's generator: scenarios, session, JVM truth)

SCHEMA = "aqe-inspect/advised-rerun/v1"
FILE_NAME = "advised.json"
LABEL_PREFIX = "aqe-sample:"
#: The advice is taken from this file of the scenario's folder; the others are asked too,
#: and whether they advise the same changes is recorded.
SOURCE = "eventlog.json"
OTHER_SOURCES = ("driver.log", "formatted_after.txt")

#: Scenarios where a setting would make the missing rewrite fire: each must get a change,
#: and the re-run with it must fire. The issue's list: a threshold off, skew off, coalescing
#: off, a broadcast demoted by empty partitions, AQE off, a rule excluded, a threshold just
#: under the measured size (or a skew factor just above the measured ratio).
MUST_FIRE = (
    "smj_to_bhj_off",
    "skew_join_off",
    "coalesced_aggregation_off",
    "aqe_declines",
    "aqe_off",
    "empty_anti_join_aqe_off",
    "empty_relation_off",
    "empty_anti_join_excluded",
    "one_row_off",
    "limit_removed_off",
    "broadcast_just_above",
    "broadcast_static_just_above",
    "skew_below_factor",
)
#: Scenarios where no setting can make the rewrite fire: no exchange at all, a join type
#: that cannot split its skewed side, the user's own repartition to a number, an input that
#: is not empty. Each must get no change.
NOTHING_CAN_FIRE = (
    "no_exchange",
    "skew_unsplittable_side",
    "user_repartition",
    "empty_anti_join_not_empty",
)

#: Of those, the ones whose advice must say what in the query decides (issue 49: a join type
#: that cannot split that side, the user's own repartition); an input with rows needs no word.
SAYS_WHY = ("skew_unsplittable_side", "user_repartition")
#: Of those, the ones where advise must change nothing at all, not even for another kind:
#: no exchange (advise says nothing can fire), and one shuffle, the user's own repartition.
NO_QUERY_CHANGE = ("no_exchange", "user_repartition")


def rerun_scenarios() -> list:
    """Every negative control, and no_exchange, in generate.py's order."""
    return [s for s in generate.SCENARIOS
            if s.control is not None or s.name in NOTHING_CAN_FIRE]


def expectation(name: str) -> str:
    """``fire`` (a change must be advised and fire), ``none`` (no change may be advised), or
    ``any`` (a change advised must fire; none is recorded as such)."""
    if name in MUST_FIRE:
        return "fire"
    if name in NOTHING_CAN_FIRE:
        return "none"
    return "any"


def wanted_kinds(scenario) -> list:
    """The rewrite kinds the scenario is missing: its control's kind, or with AQE off, every
    kind its twin (the same query, adaptive) is there to show."""
    control = scenario.control
    if control is None:
        return []
    if control.kind in generate.REWRITE_KEYS:
        return [control.kind]
    twin = generate.scenario_named(control.twin)
    return [key for key, wanted in twin.expect.items()
            if wanted and key in generate.REWRITE_KEYS]


# --------------------------------------------------------------------------
# Asking aqe-inspect
# --------------------------------------------------------------------------


def run_advise(command: Sequence[str], path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*command, "advise", str(path), *args], capture_output=True,
                          text=True, timeout=300)


def labelled_query(queries: list, scenario: str) -> Optional[dict]:
    """The scenario's own query of an advice: the execution labelled with its name, else the
    only query (a plan text, a driver log of one query)."""
    label = LABEL_PREFIX + scenario
    labelled = [q for q in queries if (q.get("label") or "") == label]
    if labelled:
        return labelled[0]
    return queries[0] if len(queries) == 1 else None


def changes_of(query: Optional[dict]) -> list:
    """The (key, value) of each change an advice's query holds, as [key, value] lists, each
    once (a change asked by several operators, e.g. coalescing for each read, is one)."""
    found: list = []
    for change in (query or {}).get("changes", []):
        pair = [change["key"], change["value"]]
        if pair not in found:
            found.append(pair)
    return found


def decisions(advice: dict, scenario: str) -> dict:
    """What an advice (``aqe-inspect/advice/v1``) decides for the scenario's query, free of
    the prose around it: each change's kind, key, value, direction and the current value with
    its origin; the other ways (``instead``); what the query itself fixes; whether nothing can
    fire; the settings ``--format spark-submit`` prints. A change of advice logic changes this."""
    query = labelled_query(advice.get("queries", []), scenario) or {}
    return {
        "changes": [{"kind": c["kind"], "key": c["key"], "value": c["value"],
                     "direction": c["direction"], "current": c["current"]["value"],
                     "origin": c["current"]["origin"]}
                    for c in query.get("changes", [])],
        "instead": [[c["kind"], c["key"], c["value"]] for c in query.get("instead", [])],
        "fixed": [f["kind"] for f in query.get("fixed", [])],
        "nothing": query.get("nothing") is not None,
        "incomplete": bool(query.get("incomplete")),
        "settings": [[s["key"], s["value"]] for s in advice.get("settings", [])],
    }


def asked_kinds(scenario) -> list:
    """The ``--kind`` a user asks about for this scenario: the control's kind, or ``adaptive``
    where AQE itself was off (no rewrite of any kind is a candidate then)."""
    control = scenario.control
    if control is None:
        return []
    return ["adaptive"] if control.reason == "aqe-disabled" else [control.kind]


def kind_args(kinds: Sequence[str]) -> list:
    return [arg for kind in kinds for arg in ("--kind", kind)]


def settings_args(confs: dict, version: str) -> list:
    """The scenario's settings and Spark line as a user who knows them gives them to advise
    about a plan text or driver log, which hold none."""
    return ["--spark-version", version,
            *[arg for key, value in confs.items() for arg in ("--conf", f"{key}={value}")]]


def advice_for(command: Sequence[str], folder: Path, scenario: str, source: str,
               kinds: Sequence[str] = (), extra: Sequence[str] = ()) -> dict:
    """What ``advise --format json`` says about one file of the scenario's folder: its
    scenario query's changes and decisions, or the error it gave."""
    path = folder / source
    if not path.exists():
        return {"source": source, "present": False}
    done = run_advise(command, path, *kind_args(kinds), *extra, "--format", "json")
    if done.returncode != 0:
        return {"source": source, "present": True, "exit": done.returncode,
                "error": done.stderr.strip()}
    advice = json.loads(done.stdout)
    query = labelled_query(advice.get("queries", []), scenario)
    return {"source": source, "present": True, "exit": 0, "schema": advice.get("schema"),
            "query": query, "changes": changes_of(query),
            "decisions": decisions(advice, scenario)}


def spark_submit_lines(command: Sequence[str], folder: Path, kinds: Sequence[str] = ()) -> list:
    """``advise --format spark-submit``: one ``--conf KEY=VALUE`` line per change."""
    done = run_advise(command, folder / SOURCE, *kind_args(kinds), "--format", "spark-submit")
    if done.returncode != 0:
        raise RuntimeError(f"{folder / SOURCE}: advise exited {done.returncode}: {done.stderr}")
    return done.stdout.splitlines()


# --------------------------------------------------------------------------
# Re-running on the JVM
# --------------------------------------------------------------------------


def rerun(spark, scenario, confs: dict, data_dir: Path) -> dict:
    """Run the scenario's query with ``confs`` and read what AQE did from the JVM."""
    # The control's facts describe the rewrite NOT happening (a join both of whose sides are
    # stages, an empty side...): the re-run's truth is read as a plain scenario's.
    plain = dataclasses.replace(scenario, control=None, tune=None)
    with generate._ScenarioConfs(spark, confs):
        df = scenario.build(spark, data_dir)
        df.collect()
        truth = generate.read_truth(df, plain, spark, confs)
    spark.catalog.clearCache()
    return truth


def _fired(truth: dict, kind: str) -> bool:
    """Whether the JVM's plan shows ``kind``: a rewrite's count, or for ``adaptive`` an
    adaptive plan."""
    return truth["adaptive"] if kind == "adaptive" else truth["rewrites"][kind] > 0


def _rerun_once(spark, scenario, confs: dict, data_dir: Path, reruns: dict) -> dict:
    """``rerun``, once for each set of settings of a scenario."""
    key = json.dumps(confs, sort_keys=True)
    if key not in reruns:
        reruns[key] = rerun(spark, scenario, confs, data_dir)
    return reruns[key]


def _pass(spark, command, scenario, folder: Path, base: dict, kinds: Sequence[str],
          wanted: Sequence[str], data_dir: Path, reruns: dict) -> dict:
    """One question to advise (``kinds``, all when empty), its changes applied over ``base``
    and the query re-run; ``fired`` holds each wanted kind and each change's own kind."""
    advice = advice_for(command, folder, scenario.name, SOURCE, kinds)
    if advice.get("exit") != 0:
        raise RuntimeError(f"{folder / SOURCE}: {advice}")
    changes = advice["changes"]
    others = []
    given = settings_args(base, spark.version)
    for source in OTHER_SOURCES:
        other = advice_for(command, folder, scenario.name, source, kinds, given)
        if not other.get("present"):
            continue
        entry = {"source": source, "exit": other["exit"], "changes": other.get("changes"),
                 "decisions": other.get("decisions"),
                 "agrees": other.get("changes") == changes, "fired": None}
        if other.get("changes") and not entry["agrees"]:
            # another value (or key) than the event log's: it must make its own rewrite fire too
            truth = _rerun_once(spark, scenario, {**base, **dict(other["changes"])},
                                data_dir, reruns)
            entry["fired"] = {c["kind"]: _fired(truth, c["kind"])
                              for c in other["decisions"]["changes"]}
        others.append(entry)
    record = {
        "kinds": list(kinds),
        "decisions": advice["decisions"],
        "changes": changes,
        "spark_submit": spark_submit_lines(command, folder, kinds),
        "other_sources": others,
        "rerun": None,
        "fired": None,
        "advice": advice["query"],
    }
    if changes:
        applied = {**base, **{key: value for key, value in changes}}
        truth = _rerun_once(spark, scenario, applied, data_dir, reruns)
        record["rerun"] = {
            "confs": applied,
            "adaptive": truth["adaptive"],
            "rewrites": truth["rewrites"],
            "info": truth["info"],
            "joins": [join["operator"] for join in truth["joins"]],
        }
        own = [c["kind"] for c in advice["decisions"]["changes"]]
        record["fired"] = {kind: _fired(truth, kind)
                           for kind in dict.fromkeys([*wanted, *own])}
    return record


def record_scenario(spark, command: Sequence[str], scenario, version_dir: Path,
                    data_dir: Path) -> tuple:
    """Advise, re-run, and write advised.json for one scenario; return it and its problems.

    Two questions: ``asked``, about the kind the scenario is missing (``--kind``, as a user
    asks why a skew join was not split), whose changes must make that kind fire; and
    ``whole``, everything advise would change, where each change's own rewrite must fire."""
    folder = version_dir / scenario.name
    committed = json.loads((folder / "truth.json").read_text("utf-8"))
    base = generate.job_confs(scenario, committed)
    wanted = wanted_kinds(scenario)
    reruns: dict = {}
    asked = asked_kinds(scenario)
    record = {
        "schema": SCHEMA,
        "spark_version": spark.version,
        "scenario": scenario.name,
        "control": (None if scenario.control is None else
                    {"kind": scenario.control.kind, "reason": scenario.control.reason,
                     "config": scenario.control.config}),
        "expectation": expectation(scenario.name),
        "wanted": wanted,
        "source": SOURCE,
        "label": LABEL_PREFIX + scenario.name,
        "confs_before": base,
        "adaptive_before": committed["adaptive"],
        "rewrites_before": committed["rewrites"],
        "asked": (_pass(spark, command, scenario, folder, base, asked, wanted, data_dir, reruns)
                  if asked else None),
        "whole": _pass(spark, command, scenario, folder, base, (), [], data_dir, reruns),
    }
    return record, problems_of(record)


def problems_of(record: dict) -> list:
    """Where a record contradicts what its scenario must show."""
    name, expected = record["scenario"], record["expectation"]
    problems = []
    for question in ("asked", "whole"):
        answer = record[question]
        if answer is None:
            continue
        where = f"{name} ({question}{' ' + ','.join(answer['kinds']) if answer['kinds'] else ''})"
        if answer["fired"] is not None and not all(answer["fired"].values()):
            problems.append(f"{where}: re-run with {answer['changes']} did not fire: "
                            f"{answer['fired']} (rewrites {answer['rerun']['rewrites']})")
        for other in answer["other_sources"]:
            if other["fired"] is not None and not all(other["fired"].values()):
                problems.append(f"{where}: {other['source']}'s advice {other['changes']} "
                                f"did not fire: {other['fired']}")
        # The scenario's application runs its one query (a pruning scenario's table writes
        # ask for nothing): the settings are that query's changes, and spark-submit prints them.
        settings = answer["decisions"]["settings"]
        if sorted(settings) != sorted(answer["changes"]):
            problems.append(f"{where}: the advice's settings {settings} are not its query's "
                            f"changes {answer['changes']}")
        submitted = [f"--conf {key}={value}" for key, value in settings]
        if answer["spark_submit"] != submitted:
            problems.append(f"{where}: --format spark-submit printed {answer['spark_submit']}, "
                            f"the JSON advice {submitted}")
    asked = record["asked"]
    if asked is not None and expected == "none":
        if asked["changes"]:
            problems.append(f"{name}: nothing can fire, yet advise changes {asked['changes']}")
        if name in SAYS_WHY and not asked["decisions"]["fixed"]:
            problems.append(f"{name}: no change, and the advice does not say what in the "
                            "query decides it")
    if asked is not None and expected == "fire" and not asked["changes"]:
        problems.append(f"{name}: a setting would make {record['wanted']} fire, advise "
                        "changes nothing")
    if record["scenario"] in NO_QUERY_CHANGE and record["whole"]["changes"]:
        problems.append(f"{name}: nothing can fire, yet advise changes "
                        f"{record['whole']['changes']}")
    if record["scenario"] == "no_exchange" and not record["whole"]["decisions"]["nothing"]:
        problems.append(f"{name}: no exchange, and the advice does not say nothing can fire")
    return problems


def run(spark, out_dir: Path, command: Sequence[str], only: Sequence[str] = ()) -> list:
    """Advise and re-run the selected scenarios; write each advised.json; return problems."""
    version_dir = Path(out_dir) / f"spark-{spark.version}"
    chosen = rerun_scenarios()
    if only:
        unknown = sorted(set(only) - {s.name for s in chosen})
        if unknown:
            raise SystemExit(f"not negative scenarios: {', '.join(unknown)}")
        chosen = [s for s in chosen if s.name in only]
    problems = []
    with tempfile.TemporaryDirectory(prefix="aqe-advise-rerun-") as data_dir:
        for scenario in chosen:
            if generate.spark_version_tuple(spark) < scenario.min_spark:
                continue
            started = time.monotonic()
            record, found = record_scenario(spark, command, scenario, version_dir,
                                            Path(data_dir))
            (version_dir / scenario.name / FILE_NAME).write_text(
                json.dumps(record, indent=2) + "\n", "utf-8")
            problems.extend(found)
            for question in ("asked", "whole"):
                answer = record[question]
                if answer is not None:
                    print(f"{scenario.name} {question}{answer['kinds'] or ''}: "
                          f"changes={answer['changes']} fired={answer['fired']}", file=sys.stderr)
            print(f"{scenario.name}: {time.monotonic() - started:.1f}s", file=sys.stderr)
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path,
                        help="root directory holding spark-<X.Y.Z>/<scenario>/")
    parser.add_argument("--aqe-inspect", required=True,
                        help="the aqe-inspect command whose advice is applied")
    parser.add_argument("--only", nargs="+", default=(), metavar="NAME",
                        help="only these negative scenarios")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="aqe-sample-warehouse-") as warehouse:
        spark = generate.build_session(warehouse)
        try:
            problems = run(spark, args.out, [args.aqe_inspect], args.only)
        finally:
            spark.stop()
    for problem in problems:
        print(f"MISMATCH {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
