"""`assert_aqe` on a Spark Connect DataFrame (PySpark 4's client, Databricks Connect): what
AQE did, read without a JVM in the client.

- By default, from the client alone: the action's `df.executionInfo.metrics` (the FINAL plan's
  operators and their metrics, see `sources.connect`) against the same DataFrame's
  `explain("formatted")` (printed after the action it is a fresh plan, isFinalPlan=false: the
  query's initial plan). The two are diffed by structure, as two files are.
- With `event_log=` (the server's event log file or folder) or `ui_url=` (its Spark UI, e.g.
  `http://127.0.0.1:4040`): the SQL execution of the DataFrame's action, found by its
  operation (`executionInfo.operation_id`, PySpark 4.3+, which the server puts in the tags of
  the execution's jobs), or by a tag (`query=`, one the test set with `spark.addTag(...)`
  around the action); its whole plan text is read, with operator arguments (build sides,
  partitionings, keys).

PySpark is never imported here: the DataFrame brings its own client.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

from ..errors import InspectError
from ..plan.model import Document
from ..rewrites.engine import diff_document, diff_initial_final
from ..rewrites.findings import Report

CONNECT_SOURCE = "the Spark Connect DataFrame's metrics and explain"
SERVER_SOURCE = "the Spark Connect server's SQL execution"

#: The actions whose response carries the plan's metrics (ExecutePlanResponse.metrics).
METRIC_ACTIONS = "df.collect(), df.toPandas() or df.toArrow()"
NO_METRICS = (
    "this Spark Connect DataFrame has no plan metrics: its last action left none "
    f"(show(), count(), take(), first() and writes do not), or none has run. Run {METRIC_ACTIONS} "
    "on the DataFrame itself before assert_aqe; or give event_log= (the server's event log) "
    "or ui_url= (its Spark UI) with query=<a tag set with spark.addTag(...) around the action>")
QUERY_NEEDS_SERVER = (
    "query= on a Spark Connect session selects among the server's SQL executions, which the "
    "client cannot list: give event_log= (the server's event log file or folder) or ui_url= "
    "(its Spark UI, e.g. http://127.0.0.1:4040) as well")

#: How long the server's record is read again while it does not yet show the action ended:
#: the server writes its event log and status store as its listener bus delivers events, after
#: the action has answered the client.
SERVER_SETTLE_SECONDS = 30.0


def is_connect(obj: Any) -> bool:
    """Whether `obj` is a Spark Connect DataFrame or session (no JVM behind it)."""
    return (type(obj).__module__ or "").startswith("pyspark.sql.connect")


def connect_session(obj: Any) -> Any:
    """The Connect session of a Connect DataFrame, or the session itself."""
    return obj.sparkSession if hasattr(obj, "executionInfo") else obj


def dataframe_report(df: Any) -> Report:
    """What AQE did when `df`'s last action ran, from the client alone: the metrics tree of
    the final plan against the initial plan `explain("formatted")` prints now."""
    from ..sources.connect import rows_from

    info = getattr(df, "executionInfo", None)
    metrics = getattr(info, "metrics", None) if info is not None else None
    items = _metric_items(metrics)
    if not items:
        raise AssertionError(NO_METRICS)
    return client_report(rows_from(items), explain_text(df))


def client_report(rows: List[Any], explain: str) -> Report:
    """What AQE did, from what a Connect client holds after an action: the metrics tree's
    rows (`MetricRow`s) and the same DataFrame's `explain("formatted")` text printed after
    it. The explain's cached relations that ran (their adaptive plans final) are read from
    the explain itself; its subqueries, which neither holds as they ran, make the counts
    lower bounds."""
    from ..parsing import parse_text
    from ..sources.connect import (UNSHOWN_KINDS, UNSHOWN_NOTE, initial_tree, metrics_tree,
                                   unseen_notes, with_cached_plans, with_initial_plan)

    final, notes = metrics_tree(rows, CONNECT_SOURCE)
    document = parse_text(explain, CONNECT_SOURCE) if explain else None
    initial = initial_tree(document) if document is not None else None
    if document is not None:
        final, cached = with_cached_plans(final, document)
        # Subqueries the client cannot read make the query's counts lower bounds.
        final = dataclasses.replace(final, notes=(*final.notes, *unseen_notes(document)))
        notes = (*notes, *cached)
    if initial is None or not final.adaptive:
        report = diff_document(Document((final,), CONNECT_SOURCE, notes))
    else:
        final, carried = with_initial_plan(final, initial)
        report = Report(queries=(diff_initial_final(initial, final, "1", (*notes, *carried)),),
                        source=CONNECT_SOURCE)
    # What the tree cannot show is said, not guessed: those kinds' findings are left out.
    return dataclasses.replace(report, queries=tuple(
        dataclasses.replace(query, rewrites=tuple(rewrite for rewrite in query.rewrites
                                                  if rewrite.kind not in UNSHOWN_KINDS),
                            notes=(*query.notes, UNSHOWN_NOTE))
        for query in report.queries))


def _metric_items(metrics: Any) -> List[Any]:
    """The rows of PySpark's `CollectedMetrics`, in the order the client keeps them."""
    if metrics is None:
        return []
    rows = getattr(metrics, "_metrics", None)
    if rows is not None:
        return list(rows)
    root, graph = metrics.extract_graph()  # public, but merges rows that share a plan id
    items, stack = [], [(root, root)]
    while stack:
        node_id, parent = stack.pop()
        node = graph[node_id]
        items.append({"name": node.name, "plan_id": node.id, "parent_plan_id": parent,
                      "metrics": [{"name": m.name, "value": m.value, "type": m.metric_type}
                                  for m in node.metrics]})
        stack.extend((child, node_id) for child in reversed(node.children) if child != node_id)
    return items


def explain_text(df: Any) -> str:
    """`df.explain("formatted")`'s text, asked of the server (the plan is not run)."""
    if hasattr(df, "_explain_string"):
        return df._explain_string(mode="formatted")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain("formatted")
    return out.getvalue()


def session_settings(session: Any) -> Tuple[Dict[str, Any], Optional[str]]:
    """The SQL settings a Connect session set, through `spark.conf` (`getAll`: the settings
    set on the server for the session, every other one is at its default), and the server's
    Spark version."""
    from ..whynot.settings import Given

    try:
        confs = session.conf.getAll
        if callable(confs):
            confs = confs()
        found = {str(key): Given(str(value), "the session")
                 for key, value in dict(confs).items() if str(key).startswith("spark.sql.")}
        return found, str(session.version)
    except Exception:  # an older client without getAll: the settings stay at their defaults
        try:
            return {}, str(session.version)
        except Exception:
            return {}, None


# ---- the server's own record: event log or UI -------------------------------------------------

def server_report(df: Any, query: Optional[str], event_log: Optional[str],
                  ui_url: Optional[str]) -> Report:
    """The SQL execution of `df`'s last action (or those tagged `query`) as the server recorded
    it, with the whole plan text: from its event log, or from its UI's REST answers."""
    operation = None
    if query is None:
        info = getattr(df, "executionInfo", None) if df is not None else None
        operation = getattr(info, "operation_id", None) if info is not None else None
        if not operation:
            raise AssertionError(
                "the action of this DataFrame is not known to the server's record: PySpark "
                "4.3+ gives its operation id (executionInfo.operation_id) after "
                f"{METRIC_ACTIONS}; otherwise set a tag around the action "
                "(spark.addTag('t'); df.collect(); spark.removeTag('t')) and pass query='t'")
    if event_log is not None:
        return _settled(lambda: _from_event_log(event_log, query, operation))
    return _settled(lambda: _from_ui(str(ui_url), query, operation))


def _settled(read) -> Report:
    """`read()` once the server's record shows the execution(s) ended, read again while it
    finds none or finds one still running, up to `SERVER_SETTLE_SECONDS`; then the last
    answer stands (an execution still running is unfinished, never judged)."""
    import time

    deadline = time.monotonic() + SERVER_SETTLE_SECONDS
    pause = 0.05
    while True:
        try:
            report = read()
        except AssertionError as error:  # no such execution (yet)
            if time.monotonic() >= deadline:
                raise AssertionError(f"{error} (read for {SERVER_SETTLE_SECONDS:g} s while "
                                     "the server wrote its record)") from None
        else:
            if time.monotonic() >= deadline or all(
                    r.query.execution is None or r.query.execution.finished
                    for r in report.queries):
                return report
        time.sleep(pause)
        pause = min(pause * 2, 1.0)


def _wanted(query: Optional[str], operation: Optional[str]):
    """A test on an execution's job tags: the operation's own tag, or a user tag."""
    from ..sources.eventlog.connect_labels import has_operation, has_user_tag

    if operation is not None:
        return lambda tags: has_operation(tags, operation)
    return lambda tags: has_user_tag(tags, str(query))


def _from_event_log(path: str, query: Optional[str], operation: Optional[str]) -> Report:
    from ..sources.eventlog import read_event_logs

    wanted = _wanted(query, operation)
    chosen, labels, notes, application = [], [], [], None
    for document in read_event_logs(path):
        notes.extend(document.notes)
        for found in document.queries:
            labels.append(found.label)
            if found.execution is not None and wanted(_tags_of(found)):
                chosen.append(found)
                application = application or document.application
    if not chosen:
        raise AssertionError(_not_found(query, operation, f"the event log {path}", labels))
    return diff_document(Document(tuple(chosen), SERVER_SOURCE, tuple(notes), application))


def _tags_of(query: Any) -> Tuple[str, ...]:
    from ..sources.eventlog.connect_labels import tags_in_label

    return tags_in_label(query.label or (query.execution.description if query.execution
                                         else ""))


def _from_ui(ui_url: str, query: Optional[str], operation: Optional[str]) -> Report:
    """The execution from the UI's REST API: the application, its jobs (their tags say which
    SQL execution ran them: `..._execution-root-id-<N>`), then `/sql/<N>` with its plan."""
    import dataclasses

    from ..sources.eventlog.connect_labels import execution_id_in_tags, readable
    from ..sources.eventlog.history import read_history

    base = ui_url.rstrip("/") + "/api/v1/applications"
    apps = _get_json(base)
    if not apps:
        raise AssertionError(f"the Spark UI at {ui_url} lists no application")
    app = urllib.parse.quote(str(apps[0]["id"]))
    wanted = _wanted(query, operation)
    tags_by_execution: Dict[int, List[str]] = {}
    for job in _get_json(f"{base}/{app}/jobs"):
        tags = [str(tag) for tag in job.get("jobTags") or ()]
        number = execution_id_in_tags(tags)
        if number is not None:
            tags_by_execution.setdefault(number, []).extend(tags)
    numbers = sorted(n for n, tags in tags_by_execution.items() if wanted(tuple(tags)))
    if not numbers:
        raise AssertionError(_not_found(query, operation, f"the Spark UI at {ui_url}", []))
    executions = [_get_json(f"{base}/{app}/sql/{number}?details=true&planDescription=true")
                  for number in numbers]
    document = read_history(json.dumps(executions).encode("utf-8"),
                            f"{ui_url} (SQL executions)", str(apps[0]["id"]))
    queries = []
    for found in document.queries:
        if found.execution is not None and found.execution.description.startswith(
                "Spark Connect"):
            label = readable(found.execution.description,
                             tags_by_execution.get(found.execution.execution_id, ()))
            found = dataclasses.replace(
                found, label=label,
                execution=dataclasses.replace(found.execution, description=label))
        queries.append(found)
    return diff_document(dataclasses.replace(document, queries=tuple(queries)))


def _get_json(url: str) -> Any:
    """A Spark UI answer, through `--url`'s one fetcher (a deadline over the whole download,
    a size limit, redirects to http(s) only)."""
    from ..sources.eventlog.history import download

    data = download(url)
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError as error:
        raise InspectError(f"cannot read {url}: {error}") from None


def _not_found(query: Optional[str], operation: Optional[str], where: str,
               labels: List[str]) -> str:
    what = f"tagged {query!r}" if query is not None else f"of operation {operation}"
    listing = "; ".join(label for label in labels if label)[:2000] or "none"
    return f"no SQL execution {what} in {where}; the executions there: {listing}"
