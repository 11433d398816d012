"""Assertions about what AQE did to a live PySpark DataFrame, for tests: `assert_aqe`.

The plans are read from the running session, never by running the query again:

- a DataFrame's own plan: after an action on the DataFrame itself (`collect`, `toPandas`,
  `foreach`, `toLocalIterator`...), its `QueryExecution` holds the `AdaptiveSparkPlanExec`
  that ran, final and initial plan both; its `formatted` explain string is read (the same
  text `df.explain("formatted")` prints, on PySpark 3.5 and 4.x alike);
- `query=`: an action that builds a Dataset of its own (`df.count()`, `df.write...`) leaves
  the DataFrame's plan unrun; its plan is the SQL execution Spark recorded in the session's
  SQL status store (what the UI's SQL tab shows: `physicalPlanDescription`, rewritten by
  every AQE update), chosen as `check --query` chooses: an execution id, or a regular
  expression searched in the execution's description (`setJobDescription`, else the call
  site such as `count at test_x.py:12`).

A Spark Connect DataFrame (no JVM in the client) is read as `connect.py` says: the final
plan's metrics tree that its action returned, against the initial plan its formatted explain
prints; or, with `event_log=` / `ui_url=`, the server's own record of the execution. PySpark
is never imported here (a DataFrame brings its own py4j objects or Connect client), so
`import aqe_inspect.testing` works without the `spark` extra.
"""

from __future__ import annotations

import dataclasses
import io
from typing import Any, Iterable, List, Optional, Sequence

from ..expectations.check import CheckResult, check as hold
from ..rewrites.engine import diff_document
from ..errors import InspectError
from ..expectations.config import Expectation, Origin, command_line_expectations
from ..plan.model import Document, Execution, Query
from ..rewrites.findings import Report
from ..expectations.selection import Selector

#: How sources name what was read, in messages.
DATAFRAME_SOURCE = "the DataFrame's executed plan"
EXECUTIONS_SOURCE = "the session's SQL executions"

NOT_RUN = (
    "the plan of this DataFrame has not run yet (AdaptiveSparkPlan isFinalPlan=false): AQE "
    "has rewritten nothing so far. Run an action on the DataFrame itself first (df.collect(), "
    "df.toPandas(), df.foreach(...)); an action that builds a new Dataset (df.count(), "
    "df.write...) runs a plan of its own: select its SQL execution with query=<execution id "
    "or a regular expression on its description, e.g. one set with "
    "spark.sparkContext.setJobDescription(...)>")



def assert_aqe(df: Any, expect: Iterable[str] = (), forbid: Iterable[str] = (),
               query: Optional[str] = None, each: bool = False,
               event_log: Optional[str] = None, ui_url: Optional[str] = None) -> CheckResult:
    """Assert what AQE did when `df` ran: `expect=["coalesced", "smj-to-bhj>=1"]`,
    `forbid=["skew-join"]`, the kinds and counted forms of `aqe-inspect check`. Reads the
    DataFrame's own executed plan, or with `query` (an SQL execution id or a regular
    expression on the description) the executions the session recorded (`df` may then be
    the SparkSession, or None for the active one). On Spark Connect, the action's metrics
    tree against the DataFrame's formatted explain; with `event_log=` (the server's event
    log) or `ui_url=` (its Spark UI) the server's record of the action (or, with `query=`,
    of the executions tagged so with `spark.addTag`), with the whole plan text. Returns the
    `CheckResult` when every expectation holds; raises AssertionError with what failed and
    the plans otherwise."""
    __tracebackhide__ = True
    return hold_expectations(plan_report(df, query, event_log, ui_url),
                             expectations(expect, forbid, query, each, "assert_aqe"),
                             session=_session_of(df) if df is not None else None)


def expectations(expect: Iterable[str], forbid: Iterable[str], query: Optional[str],
                 each: bool, origin: str) -> List[Expectation]:
    """The expectations as `check` reads them from its command line, saying `origin` (the
    call or the marker) is where they were written."""
    __tracebackhide__ = True
    scope = Selector.parse(str(query), "query=") if query is not None else None
    found = command_line_expectations(_strings(expect, "expect"), _strings(forbid, "forbid"),
                                      scope, each)
    if not found:
        raise InspectError(f"{origin}: nothing to check: give expect=[...] or forbid=[...]")
    return [dataclasses.replace(e, origin=Origin(origin)) for e in found]


def _strings(values: Iterable[str], name: str) -> List[str]:
    if isinstance(values, str):  # expect="coalesced": one expectation, not nine letters
        return [values]
    return [str(value) for value in values]


def hold_expectations(report: Report, wanted: Sequence[Expectation],
                      session: Any = None) -> CheckResult:
    """The check of `report` against `wanted`; AssertionError (the failures with why AQE
    did not rewrite, then the plans of the queries they are about, side by side) when one
    does not hold. The why-not answers take `session`'s settings and Spark version."""
    __tracebackhide__ = True
    settings, version = session_settings(session)
    result = hold(report, wanted, settings=settings, spark_version=version)
    if not result.passed:
        message = failure_message(result)
        if report.source == EXECUTIONS_SOURCE and any(o.query_count == 0
                                                       for o in result.failures):
            message += f"\nThe session's SQL executions (id, description): {_listing(report)}"
        raise AssertionError(message)
    return result


def failure_message(result: CheckResult) -> str:
    """What `aqe-inspect check` prints for a failed check, for an AssertionError."""
    from ..formats import get_format

    stream = io.StringIO()
    get_format("text").write_check(result, stream)
    return (f"AQE did not do what the test expects ({result.verdict})\n\n"
            f"{stream.getvalue().rstrip()}")


# ---- reading plans from the session ----------------------------------------------------------

def session_settings(session: Any):
    """The SQL settings the session set (every other one is at its default) and its Spark
    version, for why-not answers: ({key: Given}, version), or ({}, None) without a session."""
    if session is None:
        return {}, None
    from ..whynot.settings import Given
    from .connect import is_connect, session_settings as connect_settings

    if is_connect(session):
        return connect_settings(session)

    try:
        confs = session._jsparkSession.sessionState().conf().getAllConfs()
        found = {str(key): Given(str(confs.apply(key)), "the session")
                 for key in _scala_keys(confs) if str(key).startswith("spark.sql.")}
        return found, str(session.version)
    except Exception:  # a session without the classic JVM (Connect): nothing to add
        return {}, None


def _scala_keys(scala_map: Any) -> List[str]:
    keys, iterator = [], scala_map.keysIterator()
    while iterator.hasNext():
        keys.append(iterator.next())
    return keys


def plan_report(df: Any, query: Optional[str] = None, event_log: Optional[str] = None,
                ui_url: Optional[str] = None) -> Report:
    """What AQE did: in `df`'s executed plan, or, with `query`, in every SQL execution the
    session recorded (the expectations' scope then picks among them). A Spark Connect
    DataFrame: see `connect.py`."""
    __tracebackhide__ = True
    from . import connect

    if event_log is not None or ui_url is not None:
        return connect.server_report(df, query, event_log, ui_url)
    if df is not None and connect.is_connect(df):
        if query is not None:
            raise TypeError(f"assert_aqe: {connect.QUERY_NEEDS_SERVER}")
        return connect.dataframe_report(df)
    if query is not None:
        return diff_document(recorded_executions(_session_of(df)))
    _check_classic(df)
    text = dataframe_plan_text(df)
    report = diff_document(_parse(text, DATAFRAME_SOURCE))
    main = report.queries[0].query if report.queries else None
    if main is not None and main.adaptive and not main.is_final_plan:
        raise AssertionError(NOT_RUN)
    return report


def selected(report: Report, query: Optional[str]) -> Report:
    """The queries of `report` that `query` selects (all when None)."""
    if query is None:
        return report
    selector = Selector.parse(str(query), "query=")
    chosen = tuple(r for index, r in enumerate(report.queries, 1)
                   if selector.selects(index, r.query))
    if not chosen:
        raise AssertionError(f"no SQL execution of the session matches query={query!r}; "
                             f"recorded: {_listing(report)}")
    return Report(chosen, report.source, report.notes, report.application,
                  getattr(report, "ended", None))


def dataframe_plan_text(df: Any) -> str:
    """`df.explain("formatted")`'s text, read from its QueryExecution (not printed, not run):
    after an action on `df` itself, the adaptive plan that ran, final and initial trees."""
    execution = df._jdf.queryExecution()
    jvm = df.sparkSession._jvm
    mode = jvm.org.apache.spark.sql.execution.ExplainMode.fromString("formatted")
    return execution.explainString(mode)


#: How long `recorded_executions` waits for the status store to show executions that have
#: ended in the JVM: the listener writes an execution's end (and with it its last plan) to the
#: store on a thread of its own after the listener bus has delivered the event.
SETTLE_SECONDS = 30.0

#: (application id, execution id) of executions waited for in vain: the store never showed
#: their end (an event dropped by a full listener queue); not waited for again.
_NEVER_SETTLED: set = set()


def recorded_executions(session: Any) -> Document:
    """Every SQL execution the session's status store holds (the UI's SQL tab, kept up to
    `spark.sql.ui.retainedExecutions`), each with its latest plan description. Events reach
    the store through the listener bus; it is drained first so the last action is in, and an
    execution the JVM has ended is waited for until the store shows it ended (Spark's SQL
    listener writes an execution's end, and the last plan with it, asynchronously), up to
    `SETTLE_SECONDS`; one still running is read as it stands (unfinished, never judged)."""
    from ..sources.eventlog.planinfo import read_description

    records = _settled_records(session)
    queries: List[Query] = []
    notes: List[str] = []
    for record in records:
        number = int(record.executionId())
        completion = record.completionTime()
        execution = Execution(execution_id=number, description=str(record.description() or ""),
                              start_time=int(record.submissionTime()),
                              finished=bool(completion.isDefined()))
        label = f"execution {number}"
        parsed, _ = read_description(record.physicalPlanDescription(), EXECUTIONS_SOURCE,
                                     f"the plan description of {label}", "nothing")
        if parsed is None:
            notes.append(f"{label} ({execution.description!r}) has no readable plan "
                         "description; skipped")
            continue
        queries.append(dataclasses.replace(
            parsed, source=EXECUTIONS_SOURCE, label=execution.description or label,
            origin="SQL status store", execution=execution))
    return Document(tuple(queries), EXECUTIONS_SOURCE, tuple(notes))


def _settled_records(session: Any) -> List[Any]:
    """The status store's execution records once no execution that has ended in the JVM
    (it is no longer among `SQLExecution`'s running ones) is still shown running there."""
    import time

    jsession = session._jsparkSession
    application = str(jsession.sparkContext().applicationId())
    deadline = time.monotonic() + SETTLE_SECONDS
    pause = 0.005
    while True:
        jsession.sparkContext().listenerBus().waitUntilEmpty()
        listed = jsession.sharedState().statusStore().executionsList().iterator()
        records = []
        while listed.hasNext():
            records.append(listed.next())
        lagging = [number for number in (int(r.executionId()) for r in records
                                         if not r.completionTime().isDefined())
                   if (application, number) not in _NEVER_SETTLED
                   and not _running_in_jvm(session, number)]
        if not lagging:
            return records
        if time.monotonic() >= deadline:
            _NEVER_SETTLED.update((application, number) for number in lagging)
            return records
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


def _running_in_jvm(session: Any, number: int) -> bool:
    """Whether execution `number` is still running in this JVM: Spark keeps each running
    execution's QueryExecution until its end event is posted. Where the JVM cannot tell (no
    such registry on this Spark line), it is taken as running: nothing is waited for."""
    try:
        registry = session._jvm.org.apache.spark.sql.execution.SQLExecution
        return registry.getQueryExecution(number) is not None
    except Exception:  # noqa: BLE001 - py4j's errors for a class or method not there
        return True


def _listing(report: Report) -> str:
    """`0 'collect at t.py:9', 1 'nightly join'`: the executions a selector chose among."""
    shown = [f"{r.id} {r.query.execution.description!r}" if r.query.execution else r.id
             for r in report.queries]
    return ", ".join(shown) or "none"


def _parse(text: str, source: str) -> Document:
    from ..parsing import parse_text

    return parse_text(text, source)


def _check_classic(df: Any) -> None:
    """A classic PySpark DataFrame, else a TypeError that says what was given and why not."""
    if not hasattr(df, "_jdf"):
        raise TypeError(f"assert_aqe takes a PySpark DataFrame, got {type(df).__module__}."
                        f"{type(df).__qualname__}")


def _session_of(df: Any) -> Any:
    """The SparkSession whose executions `query=` chooses among: `df`'s, `df` itself, or the
    active one."""
    if df is None:
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
        if session is None:
            raise TypeError("assert_aqe(None, query=...): there is no active SparkSession")
        return session
    from .connect import connect_session, is_connect

    if is_connect(df):
        return connect_session(df)
    if hasattr(df, "_jsparkSession"):
        return df
    if hasattr(df, "_jdf"):
        return df.sparkSession
    raise TypeError(f"assert_aqe(query=...) takes a DataFrame, a SparkSession or None, got "
                    f"{type(df).__module__}.{type(df).__qualname__}")
