"""The History Server's (and a live Spark UI's) SQL answer: `/api/v1/applications/<app>/sql`.

With `details=true&planDescription=true` each execution holds its id, status, description,
`planDescription` (the final, or current, plan text; there is no other) and the graph the UI
draws: `nodes` (`nodeId`, `nodeName`, `wholeStageCodegenId`, `metrics` as display strings such
as "20", "20,000" or "total (min, med, max ...)\\n2.2 KiB (0.0 B, ...)") and `edges` (`fromId`
child -> `toId` parent). The text is parsed; when it is missing or cut, the tree is built
from the graph. The figures are read back into numbers (bytes, ms) and put on the parsed
operators (planinfo.attach_metrics): each metric's total as `Node.metrics`, and where the UI
printed `(min, med, max)` those three as `Node.spreads` (over the tasks, or for a shuffle
read's `partition data size` the partitions, that reported a value; no count, no values).
The UI prints sizes rounded to a tenth of their unit (`2.1 KiB`): `display_number` reads
every figure, so the loss is the same everywhere. History Server answers carry no configs.

`fetch` reads the answer from a running History Server or driver, given any address of it a
user types (`address`): its root or a page of its UI, the REST API's root or list of
applications (the one application listed is read: `application_url`), the application's URL
or its `/sql` URL.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from .. import deepjson
from ...errors import InspectError
from ...plan.model import HISTORY_SERVER_ORIGIN, Application, Document, Execution, Node, Query, \
    Spread
from ..reading import DEFAULT_MAX_SIZE, check_declared, over_max_size
from .planinfo import attach_metrics, read_description, tree_carriers, usable_description

ORIGIN = HISTORY_SERVER_ORIGIN
#: A figure as the UI prints it: `2.2 KiB`, `20,000`, `12 ms`, `1.5 s` (Spark's
#: `Utils.bytesToString` units, binary, and `msDurationToString`'s).
FIGURE = re.compile(r"(-?\d[\d,]*(?:\.\d+)?)\s*(B|KiB|MiB|GiB|TiB|PiB|EiB|ms|s|m|h|ns)?\b")
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50,
         "EiB": 1 << 60, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "ns": 1e-6}
#: The second line of a metric the UI shows spread over tasks (`SQLMetrics.stringValue`):
#: `3.4 KiB (214.0 B, 833.0 B, 2.1 KiB (stage 4.0: task 7))`; Spark 3.0 prints no
#: `(stage ...)`, and a driver metric says `(driver)`.
SPREAD_LINE = re.compile(r"(?P<total>.+?) \((?P<min>.+?), (?P<med>.+?), (?P<max>.+?)"
                         r"(?: \([^()]*\))?\)\s*\Z")
APP_IN_URL = re.compile(r"/applications/([^/?#]+)")


def looks_like_history_json(head: bytes) -> bool:
    """Whether a text's first bytes open the `/sql` answer (a list or one execution)."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n[").lstrip()
    return text.startswith(b"{") and b'"planDescription"' in head or \
        (text.startswith(b"{") and b'"nodes"' in head and b'"status"' in head)


def read_history(data: bytes, source: str, app_id: str = "") -> Document:
    """Every execution of a saved `/sql` answer (a list, or one execution from `/sql/<id>`)."""
    notes: List[str] = []
    try:
        value = deepjson.loads(data)
    except deepjson.TooDeep as error:
        # One execution too deep to read: the others of a list still are.
        value = _items_but_too_deep(data, source, notes, error)
    except ValueError as error:
        raise _malformed(error, source) from None
    items = value if isinstance(value, list) else [value]
    starts = item_lines(data, isinstance(value, list))
    queries: List[Query] = []
    for number, item in enumerate(items, 1):
        if item is _TOO_DEEP:
            continue
        line = starts[number - 1] if number <= len(starts) else 0
        if not isinstance(item, dict) or item.get("id") is None:
            notes.append(f"entry {number}: not an SQL execution (no id); skipped")
            continue
        if deepjson.json_id(item["id"]) is None:
            notes.append(f"{_at(source, line)}entry {number}: "
                         f"{deepjson.id_problem('id', item['id'])}; skipped")
            continue
        query = _query(item, source, notes, line)
        if query is not None:
            queries.append(dataclasses.replace(query, line=line))
    if not queries and (items or not app_id):
        # Entries none of which could be read, or an empty answer of no known application:
        # nothing to judge. An application's own empty list (--url) ran no SQL: a note.
        said = f" ({'; '.join(notes[:2])})" if notes else ""
        raise InspectError(f"no SQL execution could be read from this History Server answer"
                           f"{said}" if items else "a History Server answer with no SQL "
                           "execution in it, of no application named", source=source)
    if not queries:
        notes.append(f"{source}: no SQL execution in this answer (the application ran none)")
    queries.sort(key=lambda q: q.execution.execution_id if q.execution else 0)
    unended = still_running(queries, source)
    return Document(queries=tuple(queries), source=source, notes=(*notes, *unended),
                    application=Application(app_id=app_id), ended=False if unended else None,
                    unended=unended)


def still_running(queries: List[Query], source: str) -> Tuple[str, ...]:
    """What an answer showing executions still running (status RUNNING) lacks, naming them:
    their application had not ended when the History Server answered, so the plans it
    shows of them are those they had then, and the executions the application ran after
    are not in it (`Document.unended`). () when none runs."""
    running = [query for query in queries if query.execution is not None and
               query.execution.status == "RUNNING"]
    if not running:
        return ()
    first = running[0]
    where = f" (line {first.line})" if first.line else ""
    more = len(running) - 1
    others = f" and {more} other{'s' * (more != 1)}" if more else ""
    return (f"{source}: execution {first.execution.execution_id}{where}{others} "
            f"{'was' if not more else 'were'} still running when the History Server answered "
            "(status RUNNING): its application had not ended, so the executions it ran after "
            "could not be read, and the plans shown are those they had then",)


#: What moves a JSON text's nesting or lines: a string (skipped whole), a bracket, a newline.
_JSON_MARKS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}\n]')


def item_lines(data: bytes, is_list: bool) -> List[int]:
    """The line (from 1) where each execution's JSON object begins: each entry of a list, or
    the one object. Strings are skipped whole, so brackets and newlines in them do not count
    (a JSON string holds no raw newline)."""
    lines: List[int] = []
    line, depth = 1, 0
    wanted = 1 if is_list else 0
    for mark in _JSON_MARKS.finditer(data):
        token = mark.group()
        if token == b"\n":
            line += 1
        elif token in (b"{", b"["):
            if token == b"{" and depth == wanted:
                lines.append(line)
            depth += 1
        elif token in (b"}", b"]"):
            depth -= 1
    return lines


#: In place of an execution nested too deep to read (a note says so).
_TOO_DEEP = object()


def _items_but_too_deep(data: bytes, source: str, notes: List[str],
                        error: "deepjson.TooDeep") -> List[Any]:
    """A list answer's entries, read one by one, those nested too deep left out with a note;
    one execution (not a list) too deep is an error."""
    items: List[Any] = []
    try:
        for number, (item, problem) in enumerate(deepjson.array_items(data), 1):
            if problem is not None:
                notes.append(f"{source}:{problem.lineno}:{problem.colno}: entry {number}: "
                             f"JSON {problem.msg}; skipped")
                item = _TOO_DEEP
            items.append(item)
    except deepjson.NotAnArray:
        raise _malformed(error, source) from None
    except ValueError as other:
        raise _malformed(other, source) from None
    return items


def _malformed(error: ValueError, source: str) -> InspectError:
    if isinstance(error, deepjson.TooDeep):
        found = f"JSON {error.msg}"
    else:
        found = f"malformed JSON ({getattr(error, 'msg', error)})"
    return InspectError(f"expected the History Server's SQL JSON, found {found}", source=source,
                        line=getattr(error, "lineno", 1), column=getattr(error, "colno", 1))


def _at(source: str, line: int) -> str:
    """`app.json:36: `, where a note points (nothing where the line is not known)."""
    return f"{source}:{line}: " if line else f"{source}: " if source else ""


def _query(item: Mapping[str, Any], source: str, notes: List[str], line: int = 0
           ) -> Optional[Query]:
    number = item["id"]
    label = f"execution {number}"
    start = _epoch_ms(item.get("submissionTime"))
    duration = item.get("duration") if isinstance(item.get("duration"), int) else None
    status = deepjson.text(item.get("status") or "")
    execution = Execution(
        execution_id=number, description=deepjson.text(item.get("description") or ""), replans=None,
        start_time=start, end_time=start + duration if start is not None and duration is not None
        else None, finished=status not in ("RUNNING", ""), status=status)
    malformed: List[str] = []
    graph = graph_tree(item.get("nodes"), item.get("edges"), malformed)
    if malformed:
        more = f" (and {len(malformed) - 1} more)" if len(malformed) > 1 else ""
        notes.append(f"{_at(source, line)}{label}: {malformed[0]}{more}; skipped")
    text = item.get("planDescription")
    query_notes: List[str] = []
    query, note = read_description(text, source, f"the plan description of {label}",
                                   "its graph")
    if query is None and not usable_description(text):
        note = None if graph is None else (f"{label} has no usable planDescription (ask with "
                                           "planDescription=true); the tree is built from its "
                                           "graph")
    if note:
        query_notes.append(note)
    if query is not None:
        if graph is not None:
            query = dataclasses.replace(query, root=attach_metrics(query.root,
                                                                  tree_carriers(graph)))
    elif graph is not None:
        query = Query(root=graph, mode="simple")
    else:
        notes.append(f"{label} has neither a plan description nor nodes; skipped")
        return None
    # The line is the file's where the execution's object begins (`item_lines`, set by the
    # caller); the plan text's own lines are its operators' `plan line`s.
    return dataclasses.replace(query, source=source, label=execution.description or label,
                               line=0, origin=ORIGIN, execution=execution,
                               notes=(*query_notes, *query.notes))


def metric_figure(text: Any) -> Optional[int]:
    """The number a metric's display string leads with: its total, in bytes or ms."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return int(text)
    if not isinstance(text, str):
        return None
    body = text.split("\n", 1)[1] if text.startswith("total") and "\n" in text else text
    return display_number(body)


def metric_spread(text: Any) -> Optional[Spread]:
    """The (min, med, max) of a metric's display string `total (min, med, max ...)\\n...`, in
    bytes or ms; None for a single figure."""
    if not isinstance(text, str) or not text.startswith("total") or "\n" not in text:
        return None
    match = SPREAD_LINE.match(text.split("\n", 1)[1].strip())
    if not match:
        return None
    figures = [display_number(match.group(name)) for name in ("min", "med", "max")]
    if any(figure is None for figure in figures):
        return None
    low, middle, high = figures
    return Spread(minimum=low, median=middle, maximum=high)  # type: ignore[arg-type]


def display_number(text: str) -> Optional[int]:
    """The first figure in `text` as a number of bytes, milliseconds or units: `2.1 KiB` ->
    2150 (the UI rounds to a tenth of the unit: this is as close as the text tells)."""
    match = FIGURE.search(text)
    if not match:
        return None
    value = float(match.group(1).replace(",", ""))
    return int(value * UNITS.get(match.group(2) or "", 1))


def graph_tree(nodes: Any, edges: Any, malformed: Optional[List[str]] = None
               ) -> Optional[Node]:
    """The operator tree of the UI's graph: `WholeStageCodegen (N)` clusters dropped (their
    operators carry the stage), children in the order the edges list them. A node or an edge
    whose id is not one (a list, an object, a string, a fraction, true, a negative or larger
    number than a Java long) is left out, said in `malformed` (`nodes[3].nodeId is a
    list`)."""
    if malformed is None:
        malformed = []
    if not isinstance(nodes, list) or not nodes:
        return None
    items: Dict[int, Mapping[str, Any]] = {}
    for place, item in enumerate(nodes):
        if not isinstance(item, dict):
            continue
        key = deepjson.json_id(item.get("nodeId"))
        if key is not None:
            items[key] = item
        elif item.get("nodeId") is not None:
            malformed.append(deepjson.id_problem(f"nodes[{place}].nodeId", item["nodeId"]))
    children: Dict[int, List[int]] = {key: [] for key in items}
    has_parent = set()
    for place, edge in enumerate(edges if isinstance(edges, list) else ()):
        if not isinstance(edge, dict):
            continue
        child = deepjson.json_id(edge.get("fromId"))
        parent = deepjson.json_id(edge.get("toId"))
        for name, value, found in (("fromId", edge.get("fromId"), child),
                                   ("toId", edge.get("toId"), parent)):
            if found is None and value is not None:
                malformed.append(deepjson.id_problem(f"edges[{place}].{name}", value))
        if child in items and parent in items:
            children[parent].append(child)
            has_parent.add(child)
    roots = [key for key in items if key not in has_parent and
             not deepjson.text(items[key].get("nodeName", "")).startswith("WholeStageCodegen")]
    if not roots:
        return None
    built: Dict[int, Node] = {}
    order: List[int] = []
    stack = [min(roots)]
    seen = set()
    while stack:
        key = stack.pop()
        if key in seen:
            continue
        seen.add(key)
        order.append(key)
        stack.extend(children[key])
    for key in reversed(order):
        item = items[key]
        name = deepjson.text(item.get("nodeName") or "?")
        stage = deepjson.json_id(item.get("wholeStageCodegenId"))  # true or 1.5: none
        first, _, rest = name.partition(" ")
        metrics, spreads = {}, {}
        listed = item.get("metrics")
        for metric in listed if isinstance(listed, list) else ():  # a hostile `true`
            if isinstance(metric, dict) and metric.get("name"):
                figure = metric_figure(metric.get("value"))
                if figure is not None:
                    metrics[deepjson.text(metric["name"])] = figure
                spread = metric_spread(metric.get("value"))
                if spread is not None:
                    spreads[deepjson.text(metric["name"])] = spread
        if "(" in first and not rest:  # `SortMergeJoin(skew=true)`
            first, rest = first[:first.index("(")], first[first.index("("):]
        built[key] = Node(name=first, args=rest, codegen_stage=stage,
                          whole_stage_codegen=stage is not None, title=name,
                          children=tuple(built[c] for c in children[key] if c in built),
                          is_final_plan=None, metrics=metrics, spreads=spreads)
    return built[min(roots)]


def _epoch_ms(text: Any) -> Optional[int]:
    """`2026-11-23T14:37:14.734GMT` as epoch milliseconds."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        return None
    return int(moment.timestamp() * 1000)


# ---- --url ----------------------------------------------------------------------------------

#: An application's REST resources other than its SQL executions (`/applications/<app>/jobs`):
#: a URL ending in one names the application; anything else after it is an attempt id.
APP_RESOURCES = frozenset(("jobs", "stages", "executors", "allexecutors", "storage",
                           "environment", "logs", "streaming", "diagnostics", "sql"))
#: The UI's tabs (`/jobs/`, `/SQL/execution/?id=3`): the UI's base is the path before one (a
#: proxy, YARN's `/proxy/<app>/`, puts the UI under a path of its own).
UI_TABS = frozenset(("jobs", "stages", "storage", "environment", "executors", "SQL",
                     "sqlserver", "StreamingQuery", "streaming", "connect"))
#: Applications named when a server lists several.
NAMED_APPS = 5
#: Applications asked of a server that was not told which (`?limit=`): one more than one tells
#: several apart; a few more to name.
ASKED_APPS = 20


@dataclasses.dataclass(frozen=True)
class Address:
    """Where a `--url` points: an application's `/sql` URL (`sql`), or a server (`server`:
    scheme, host and the path its UI is under) whose applications are to be listed first, and
    the execution a UI page names (`/SQL/execution/?id=3`)."""

    sql: str = ""
    server: str = ""
    execution: Optional[int] = None


def address(url: str) -> Address:
    """What the addresses users type point at: an application's REST URL
    (`/api/v1/applications/<app>[/<attempt>][/sql[/<id>]]`, or one of its other resources),
    a History Server's UI page of an application (`/history/<app>[/<attempt>]/...`), else a
    server: the REST API's root or its application list (`/api/v1`, `/api/v1/applications`),
    a Spark UI or History Server's root or any page of its UI. Trailing slashes do not matter."""
    parts = urlsplit(url)
    segments = parts.path.split("/")
    origin = urlunsplit((parts.scheme, parts.netloc, "", "", ""))

    def joined(names: List[str]) -> str:
        return "/".join(name for name in names if name)

    for index in range(len(segments) - 1):
        if segments[index:index + 2] == ["api", "v1"]:
            base, after = joined(segments[:index]), [name for name in segments[index + 2:]
                                                     if name]
            if len(after) >= 2 and after[0] == "applications":
                rest = after[2:]
                attempt = [] if not rest or rest[0] in APP_RESOURCES else rest[:1]
                rest = rest[len(attempt):]
                number = rest[1:2] if rest[:1] == ["sql"] and rest[1:2] and \
                    rest[1].isdigit() else []
                path = "/" + joined([base, "api/v1/applications", after[1], *attempt, "sql",
                                     *number])
                return Address(sql=sql_url(urlunsplit((parts.scheme, parts.netloc, path,
                                                       parts.query, ""))))
            return Address(server=origin + ("/" + base if base else ""))
    execution = None
    if "execution" in segments and segments[segments.index("execution") - 1] == "SQL":
        found = dict(parse_qsl(parts.query)).get("id", "")
        execution = int(found) if found.isdigit() else None
    if "history" in segments:
        index = segments.index("history")
        rest = [name for name in segments[index + 1:] if name]
        if rest:
            attempt = rest[1:2] if rest[1:2] and rest[1] not in UI_TABS else []
            path = "/" + joined([*segments[:index], "api/v1/applications", rest[0], *attempt,
                                 "sql", str(execution) if execution is not None else ""])
            return Address(sql=sql_url(origin + path))
    base = segments
    for index, name in enumerate(segments):
        if name in UI_TABS:
            base = segments[:index]
            break
    path = joined(base)
    return Address(server=origin + ("/" + path if path else ""), execution=execution)


def sql_url(url: str) -> str:
    """The `/sql` URL with `details=true&planDescription=true`, from the application's base URL
    (`.../api/v1/applications/<app>`) or a `/sql` (or `/sql/<id>`) URL."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if not re.search(r"/sql(?:/\d+)?$", path):
        path += "/sql"
    query = dict(parse_qsl(parts.query))
    query.setdefault("details", "true")
    query.setdefault("planDescription", "true")
    return urlunsplit((parts.scheme, parts.netloc, path, urlencode(query), ""))


def fetch(url: str, timeout: Optional[float] = None, limit: Optional[int] = None
          ) -> Tuple[bytes, str, str]:
    """(the answer, the URL asked, the application id in it); one-line errors. The URL is
    made the application's /sql one (`address`; a server's only application found in its
    list, `application_url`) and downloaded by `download`."""
    if not url.startswith(("http://", "https://")):
        raise InspectError(f"--url: expected an http:// or https:// URL, found {url!r}")
    try:
        where = address(url)
    except ValueError as error:
        raise InspectError(f"--url: not a URL ({error})", source=url) from None
    target = where.sql or application_url(where, timeout, limit)
    data = download(target, timeout, limit)
    match = APP_IN_URL.search(urlsplit(target).path)
    return data, target, match.group(1) if match else ""


def application_url(where: Address, timeout: Optional[float] = None,
                    limit: Optional[int] = None) -> str:
    """The `/sql` URL of the one application a server lists (a live Spark UI lists its own;
    a History Server, those of its event logs); one line naming the URL to give when it lists
    none or several, or answers no list."""
    listing = f"{where.server}/api/v1/applications?limit={ASKED_APPS}"
    give = f"give the application's URL ({where.server}/api/v1/applications/APP_ID)"
    try:
        data = download(listing, timeout, limit)
    except InspectError as error:
        if error.message.startswith("the server answered"):  # an HTTP status: no REST API
            raise InspectError(f"{error.message} (not a Spark UI or History Server?): {give}",
                               source=listing) from None
        raise
    try:
        apps = deepjson.loads(data)
    except ValueError:
        apps = None
    if not isinstance(apps, list) or not all(isinstance(app, dict) and isinstance(
            app.get("id"), str) and app["id"] for app in apps):
        raise InspectError("expected a Spark UI's or History Server's list of applications "
                           f"(JSON), found something else: {give}", source=listing)
    if not apps:
        raise InspectError(f"the server lists no application: {give}", source=listing)
    if len(apps) > 1:
        named = ", ".join(f"{app['id']} ({deepjson.text(app.get('name') or '', 60)})"
                          for app in apps[:NAMED_APPS])
        more = "" if len(apps) <= NAMED_APPS else ", ..."
        count = f"{len(apps)}{' or more' if len(apps) == ASKED_APPS else ''}"
        raise InspectError(f"the server lists {count} applications: give one's URL, e.g. "
                           f"--url {where.server}/api/v1/applications/{apps[0]['id']} (the "
                           f"latest first: {named}{more})", source=where.server)
    app = apps[0]
    attempts = app.get("attempts")
    attempt = attempts[0].get("attemptId") if isinstance(attempts, list) and attempts and \
        isinstance(attempts[0], dict) else None
    path = f"/api/v1/applications/{quote(app['id'], safe='')}" + (
        f"/{quote(str(attempt), safe='')}" if isinstance(attempt, (str, int)) and
        str(attempt) else "") + "/sql" + (f"/{where.execution}" if where.execution is not None
                                          else "")
    return sql_url(where.server + path)


def download(target: str, timeout: Optional[float] = None, limit: Optional[int] = None
             ) -> bytes:
    """The answer to an http(s) URL, with every defence of `--url`; one-line errors.

    One deadline (`timeout`, default DEADLINE seconds) covers the whole download: connecting,
    the headers, every read. The download runs in a thread of its own and this one waits for
    it until the deadline, so no server, however it trickles, holds the command longer.
    Redirects are followed to http(s) URLs only, at most MAX_REDIRECTS of them; an answer
    larger than `limit` bytes (--max-size; default MAX_ANSWER) is refused, by its
    Content-Length before any of it is read, else as soon as the bytes read pass it."""
    import threading

    if not target.startswith(("http://", "https://")):
        raise InspectError(f"expected an http:// or https:// URL, found {target!r}")
    seconds = DEADLINE if timeout is None else timeout
    most = MAX_ANSWER if limit is None else limit
    outcome: Dict[str, Any] = {}
    done, given_up = threading.Event(), threading.Event()

    def run() -> None:
        try:
            outcome["data"] = _download(target, seconds, most, given_up)
        except InspectError as error:
            outcome["error"] = error
        except BaseException as error:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = _unreadable(error, target)
        finally:
            done.set()

    worker = threading.Thread(target=run, name="aqe-inspect --url", daemon=True)
    worker.start()
    if not done.wait(seconds):
        given_up.set()  # the worker stops at its next read; it is a daemon, so never waited for
        raise InspectError(f"no complete answer within {seconds:g} s (the server is not "
                           "answering, or sends too slowly)", source=target)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["data"]


#: The whole download of `--url` (connect, headers, body), in seconds.
DEADLINE = 60.0
#: Redirects followed (each to an http or https URL).
MAX_REDIRECTS = 5
#: Where a redirect may lead, besides http(s): None for anywhere; the MCP server sets its
#: --allow-url rule (`mcp_server.access.Access.allows_url`).
REDIRECT_ALLOWED: Optional[Callable[[str], bool]] = None
#: The largest answer read without --max-size (its default): the answer is held and decoded
#: at once.
MAX_ANSWER = DEFAULT_MAX_SIZE
#: How much of the body one read asks for.
_READ_SIZE = 1 << 16
#: Seconds a read may wait past the deadline (the deadline is said first).
READ_MARGIN = 1.0


class _Refused(Exception):
    """A redirect not followed (raised inside urllib, turned into an InspectError)."""


def _opener(seconds: float):
    """urllib's opener (proxies from the environment, http and https) with redirects bounded
    and kept to http(s)."""
    import urllib.request

    class Redirects(urllib.request.HTTPRedirectHandler):
        max_redirections = MAX_REDIRECTS

        def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore
            scheme = urlsplit(newurl).scheme.lower()
            if scheme not in ("http", "https"):
                raise _Refused(f"the server redirected to {newurl!r}: only http:// and https:// "
                               "redirects are followed")
            if REDIRECT_ALLOWED is not None and not REDIRECT_ALLOWED(newurl):
                raise _Refused(f"the server redirected to {newurl!r}, a host not open to "
                               "this reader")
            if len(getattr(req, "redirect_dict", {})) >= MAX_REDIRECTS:
                raise _Refused(f"more than {MAX_REDIRECTS} redirects (the last to {newurl!r})")
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    return urllib.request.build_opener(Redirects)


def _download(target: str, seconds: float, limit: int, given_up: Any) -> bytes:
    """The answer's body (in the worker thread); InspectError for anything wrong."""
    import urllib.error

    try:
        # Each read's own timeout runs a moment past the deadline: the waiting thread's deadline
        # decides, and says so, rather than a read that timed out as it came (a silent server).
        with _opener(seconds).open(target, timeout=seconds + READ_MARGIN) as answer:
            length = answer.headers.get("Content-Length")
            check_declared(int(length) if length is not None and length.strip().isdigit()
                           else None, limit, target, "the server's answer (its Content-Length)")
            chunks: List[bytes] = []
            size = 0
            # One system call a read: what a trickling server sends returns at once, and the
            # reading stops soon after the waiting thread has given up.
            read = getattr(answer, "read1", answer.read)
            while not given_up.is_set():
                chunk = read(_READ_SIZE)
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    raise InspectError(over_max_size("the server's answer", limit),
                                       source=target)
                chunks.append(chunk)
            missing = getattr(answer, "length", None)
            if isinstance(missing, int) and missing > 0:  # read1 ends quietly where read raised
                raise InspectError(f"the answer was cut short ({size:,} bytes, {missing:,} "
                                   "more expected)", source=target)
            return b"".join(chunks)
    except urllib.error.HTTPError as error:
        raise InspectError(f"the server answered {error.code} {error.reason}",
                           source=target) from None
    except urllib.error.URLError as error:
        raise InspectError(f"cannot reach the server ({error.reason})", source=target) from None


def _unreadable(error: BaseException, target: str) -> InspectError:
    """Any other failure of the download as one line."""
    import http.client
    import socket

    if isinstance(error, _Refused):
        return InspectError(str(error), source=target)
    if isinstance(error, http.client.IncompleteRead):
        return InspectError(f"the answer was cut short ({len(error.partial):,} bytes, "
                            f"{error.expected or 0:,} more expected)", source=target)
    if isinstance(error, http.client.RemoteDisconnected):
        return InspectError("the server closed the connection without answering",
                            source=target)
    if isinstance(error, http.client.HTTPException):
        detail = " ".join(str(error).split())[:200] or type(error).__name__
        return InspectError(f"the server's answer is not valid HTTP ({detail})", source=target)
    if isinstance(error, socket.timeout):
        return InspectError("the server stopped answering", source=target)
    if isinstance(error, (OSError, ValueError)):  # bad hosts, ports, TLS
        detail = " ".join(str(error).split())[:200] or type(error).__name__
        return InspectError(f"cannot reach the server ({detail})", source=target)
    if isinstance(error, MemoryError):
        return InspectError("not enough memory to hold the answer", source=target)
    detail = " ".join(str(error).split())[:200]
    return InspectError(f"the download failed ({type(error).__name__}: {detail})",
                        source=target)
