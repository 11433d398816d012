"""The MCP server on the official Python SDK (`mcp`, the extra of that name): the tools, each a
thin call of `answers` in a worker thread, the prompts that chain them, and the transports
(stdio, or streamable HTTP at /mcp on loopback).

Every argument is checked by `access.Access` before anything is read. A tool's failure is a
tool error holding the command line's one line (`aqe-inspect: error: ...`), never a traceback;
the server goes on answering. At most `BUSY` tools read at once (the rest wait their turn), so
50 calls at once hold no more memory than a few."""

import sys
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from ..errors import InspectError, printable
from ..version import __version__
from . import answers, guard, paging, stopping
from .access import Access, root_folders

#: Tools reading at once; the others wait.
BUSY = 4
#: Seconds to wait for the client's roots before going on with --allow's folders alone.
ROOTS_WAIT = 5.0

INSTRUCTIONS = """\
aqe-inspect reads Apache Spark plans (explain output, driver logs, event logs in any codec,
History Server JSON or URLs) and names what Adaptive Query Execution (AQE) changed at run time:
coalesced shuffle partitions, skew joins split, sort-merge joins switched to broadcast or
shuffled hash joins, empty relations propagated, local shuffle reads, dynamic partition
pruning. Start with list_executions on an event log to find the SQL execution, then diff (what
AQE did), why (why it did not rewrite), advise (what to change so that it does), plans (the
trees, annotated), check (hold it to expectations) or compare (two runs). rules lists the rewrite kinds. Long answers come in
pages: call again with the page's next_cursor."""

#: An argument that takes one value or several: `"smj-to-bhj"` as `["smj-to-bhj"]`.
Several = Union[str, List[str]]


def _several(value: Optional[Several]) -> List[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                             open_world_hint=False)


class _Server(MCPServer):
    """MCPServer whose argument errors are one line too (pydantic's are several)."""

    async def call_tool(self, name, arguments, context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            return _failed(_one_line(error))


def _one_line(error: ToolError) -> str:
    cause = error.__cause__
    errors = getattr(cause, "errors", None)
    if callable(errors):  # pydantic's ValidationError: the arguments that did not fit
        try:
            found = [f"{'.'.join(str(part) for part in item.get('loc', ()))}: "
                     f"{item.get('msg', 'invalid')}" for item in errors()]
        except Exception:  # noqa: BLE001 - the message then is the SDK's own
            found = []
        if found:
            return "aqe-inspect: error: invalid arguments: " + "; ".join(found)
    text = " ".join(str(error).split())
    return text if text.startswith("aqe-inspect: ") else f"aqe-inspect: error: {text}"


def _failed(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=printable(message))],
                          is_error=True)


class _Tools:
    """The tools' shared state: the access rules, the answers kept for their next pages, the
    limit on tools reading at once."""

    def __init__(self, access: Access):
        self.access = access
        self.kept = paging.Kept()
        self.busy = anyio.CapacityLimiter(BUSY)

    async def run(self, tool: str, arguments: Dict[str, Any], ctx: Optional[Context],
                  sources: Dict[str, Optional[str]], answer: Callable[..., answers.Answer],
                  files_only: bool = False) -> CallToolResult:
        """Check `sources` (argument name -> path or URL), make the answer in a worker thread
        (`answer(**resolved)`), page it, and say it as a tool's result."""
        roots = await _client_roots(ctx)
        key = paging.call_key(tool, arguments)

        def work() -> Dict[str, Any]:
            from ..sources.opening import confined

            with confined(self.access.open_folders(roots)):
                return read()

        def read() -> Dict[str, Any]:
            resolved = {name: self._source(name, value, roots, files_only)
                        for name, value in sources.items()}
            inputs = tuple(paging.identity(each.path) if each is not None else None
                           for each in resolved.values())
            made = None
            if arguments.get("cursor") is not None:
                made = self.kept.get(key, inputs)
            if made is None:
                made = answer(**resolved)
                self.kept.put(key, inputs, made)
            page = paging.paged(made.data, made.listed, key, arguments.get("cursor"),
                                arguments.get("limit"))
            return {"data": page, "summary": _with_page(made.summary, page)}

        try:
            done = await stopping.run(work, self.busy)
        except InspectError as error:
            return _failed(f"aqe-inspect: error: {error}")
        except RecursionError:
            return _failed(f"aqe-inspect: error: {tool}: the answer nests too deep to send")
        except MemoryError:
            return _failed(f"aqe-inspect: error: {tool}: out of memory; give --max-size a "
                           "smaller size, or choose one query")
        except Exception as error:  # noqa: BLE001 - one line, and the server goes on
            detail = " ".join(str(error).split())[:300]
            return _failed(f"aqe-inspect: error: {tool}: internal error "
                           f"({type(error).__name__}{': ' + detail if detail else ''})")
        # Text from the inputs (descriptions, operator names) cannot restyle a terminal the
        # agent's text reaches; the structured answer is JSON, escaped by its encoding.
        return CallToolResult(content=[TextContent(type="text",
                                                   text=printable(done["summary"],
                                                                  newlines=True))],
                              structured_content=done["data"])

    def _source(self, name: str, value: Optional[str], roots: Optional[List[str]],
                files_only: bool) -> Optional[answers.Source]:
        if value is None:
            return None
        if isinstance(value, str) and value.startswith(("http://", "https://")):
            if files_only:
                raise InspectError(f"{name}: this tool reads files (event logs, plan texts, "
                                   "History Server JSON, fleet tables), not URLs")
            return answers.Source(url=self.access.url(value, what=name), given=value)
        return answers.Source(path=self.access.path(value, roots, what=name),
                              given=printable(value) if isinstance(value, str) else "")


def _with_page(summary: str, data: Dict[str, Any]) -> str:
    page = data.get("page")
    if not isinstance(page, dict):
        return summary
    more = f"; next_cursor {page['next_cursor']}" if page.get("next_cursor") \
        else "; the last page"
    return (f"{summary}\n(page: {page['list']} {page['start'] + 1}-"
            f"{page['start'] + page['count']} of {page['total']}{more})")


async def _client_roots(ctx: Optional[Context]) -> Optional[List[str]]:
    """The folders of the roots the client declares, resolved; None when it declares none,
    none of them is a folder on this machine, or it does not answer within ROOTS_WAIT seconds
    (then --allow's folders apply, unnarrowed)."""
    if ctx is None:
        return None
    try:
        capabilities = ctx.client_capabilities
        if capabilities is None or getattr(capabilities, "roots", None) is None:
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots are deprecated by the 2026 revision
            with anyio.fail_after(ROOTS_WAIT):
                listed = await ctx.session.list_roots()
        return root_folders(str(root.uri) for root in listed.roots) or None
    except Exception:  # noqa: BLE001 - no roots then; --allow's folders still count
        return None


def build(access: Access) -> MCPServer:
    """The server with its tools and prompts."""
    server = _Server("aqe-inspect", title="aqe-inspect: Spark AQE plans",
                     instructions=INSTRUCTIONS, version=__version__, log_level="WARNING",
                     warn_on_duplicate_tools=True)
    tools = _Tools(access)
    size = access.max_size

    def tool(function):
        """A read-only tool, its description its docstring in one paragraph."""
        return server.tool(annotations=_READ_ONLY,
                           description=" ".join((function.__doc__ or "").split()))(function)

    @tool
    async def list_executions(source: str, cursor: Optional[str] = None,
                              limit: Optional[int] = None,
                              ctx: Optional[Context] = None) -> CallToolResult:
        """The SQL executions of an input, one row each: file, id, description, duration,
        finished or not, and the AQE rewrites counted by kind. `source`: an event log (any
        codec), a folder of event logs, History Server JSON, a History Server URL, a driver
        log or a plan text (its queries then). Paged: `cursor` is a page's next_cursor."""
        return await tools.run("list_executions",
                               dict(source=source, cursor=cursor, limit=limit), ctx,
                               {"source": source},
                               lambda source: answers.list_executions(source, size))

    @tool
    async def diff(source: str, query: Optional[str] = None, cursor: Optional[str] = None,
                   limit: Optional[int] = None,
                   ctx: Optional[Context] = None) -> CallToolResult:
        """What AQE changed between the initial and the final plan of each query, with the
        evidence (the JSON of `aqe-inspect diff --format json`). `query`: an execution id of
        an event log (e.g. "3"), a regular expression over the executions' descriptions, or
        N for the Nth query of a plan text. Paged by query."""
        return await tools.run("diff",
                               dict(source=source, query=query, cursor=cursor, limit=limit),
                               ctx, {"source": source},
                               lambda source: answers.diff(source, query, size))

    @tool
    async def plans(source: str, query: Optional[str] = None, cursor: Optional[str] = None,
                    limit: Optional[int] = None,
                    ctx: Optional[Context] = None) -> CallToolResult:
        """The initial and final plan trees of each query (of `query` alone when given), node
        by node in pre-order: each node's operator, id, arguments, details and run-time
        metrics, its parent and depth, and the rewrites AQE made at it. Paged by node."""
        return await tools.run("plans",
                               dict(source=source, query=query, cursor=cursor, limit=limit),
                               ctx, {"source": source},
                               lambda source: answers.plans(source, query, size))

    @tool
    async def why(source: str, query: Optional[str] = None, kind: Optional[Several] = None,
                  conf: Optional[Several] = None, spark_version: Optional[str] = None,
                  cursor: Optional[str] = None, limit: Optional[int] = None,
                  ctx: Optional[Context] = None) -> CallToolResult:
        """Why AQE did NOT rewrite: every join and shuffle it could have rewritten, each
        rule's conditions against the run-time sizes and the settings in force (the JSON of
        `aqe-inspect why --format json`). `kind`: only these rewrite kinds (see rules), one
        or a list. `conf`: settings the job ran with, KEY=VALUE, over what the input
        recorded (to ask what a setting would change); `spark_version`: the Spark that ran a
        plan text, for its defaults. Paged by query."""
        kinds, settings = _several(kind), _several(conf)
        return await tools.run("why", dict(source=source, query=query, kind=kinds,
                                           conf=settings, spark_version=spark_version,
                                           cursor=cursor, limit=limit), ctx,
                               {"source": source},
                               lambda source: answers.why(source, query, kinds, size,
                                                          settings, spark_version))

    @tool
    async def advise(source: str, query: Optional[str] = None, kind: Optional[Several] = None,
                     conf: Optional[Several] = None, spark_version: Optional[str] = None,
                     cursor: Optional[str] = None, limit: Optional[int] = None,
                     ctx: Optional[Context] = None) -> CallToolResult:
        """What to change so that AQE rewrites where it did not (the JSON of `aqe-inspect
        advise --format json`): for each decision that did not fire and could, the setting,
        a value with headroom over the run's measured figure, the current value and where it
        came from, what else the change does; `settings` merges them, one value a key.
        `kind`, `conf`, `spark_version` as for why. Paged by query."""
        kinds, settings = _several(kind), _several(conf)
        return await tools.run("advise", dict(source=source, query=query, kind=kinds,
                                              conf=settings, spark_version=spark_version,
                                              cursor=cursor, limit=limit), ctx,
                               {"source": source},
                               lambda source: answers.advise(source, query, kinds, size,
                                                             settings, spark_version))

    @tool
    async def check(source: str, expect: Optional[Several] = None,
                    forbid: Optional[Several] = None, config: Optional[str] = None,
                    each: bool = False, query: Optional[str] = None,
                    judge_unfinished: bool = False, cursor: Optional[str] = None,
                    limit: Optional[int] = None,
                    ctx: Optional[Context] = None) -> CallToolResult:
        """Hold an input to expectations, as `aqe-inspect check --format json`: `expect`
        kinds that must happen (e.g. "coalesced", "smj-to-bhj>=2"), `forbid` kinds that must
        not, or `config` an aqe-expect.toml. `passed` says whether all held; an execution
        that had not finished fails as unfinished unless `judge_unfinished`."""
        expected, forbidden = _several(expect), _several(forbid)
        return await tools.run(
            "check", dict(source=source, expect=expected, forbid=forbidden, config=config,
                          each=each, query=query, judge_unfinished=judge_unfinished,
                          cursor=cursor, limit=limit), ctx,
            {"source": source, "config": config},
            lambda source, config: answers.check(
                source, expected, forbidden, config.path if config is not None else None,
                each, query, size, judge_unfinished))

    @tool
    async def compare(old: str, new: str, fail_on: Optional[Several] = None,
                      judge_unfinished: bool = False, allow_missing: bool = False,
                      ctx: Optional[Context] = None) -> CallToolResult:
        """Two runs of the same job compared (a Spark upgrade, a config change): which
        executions lost or gained a rewrite, and whether the gate `fail_on` (lost by default;
        gained, any, none, or KIND:lost) fails, as `aqe-inspect compare --format json`. An
        execution of `old` missing from `new` is unfinished unless `allow_missing`."""
        gate = _several(fail_on)
        return await tools.run(
            "compare", dict(old=old, new=new, fail_on=gate, judge_unfinished=judge_unfinished,
                            allow_missing=allow_missing),
            ctx,
            {"old": old, "new": new},
            lambda old, new: answers.compare(old, new, gate, size, judge_unfinished,
                                             allow_missing),
            files_only=True)

    @tool
    async def rules(kind: Optional[str] = None) -> CallToolResult:
        """The rewrite kinds aqe-inspect names: each one's Spark rule, what it looks for, and
        the plan-change log line that shows it; `kind` for one of them."""
        return await tools.run("rules", {"kind": kind}, None, {},
                               lambda: answers.rules(kind))

    @server.prompt()
    def why_no_broadcast(source: str, query: str) -> str:
        """Why did this query not switch to a broadcast join?"""
        return (f"Find out why Spark's AQE did not turn a sort-merge join into a broadcast "
                f"join in query {query} of {source}.\n"
                f"1. Call list_executions with source={source!r} if you do not know the "
                f"execution id yet.\n"
                f"2. Call diff with source={source!r} and query={query!r}: which rewrites "
                f"happened.\n"
                f"3. Call why with source={source!r}, query={query!r} and kind=['smj-to-bhj']: "
                f"each join's conditions, the run-time sizes and the settings in force.\n"
                f"Answer with the join, the size AQE saw against the threshold that applied "
                f"(name the setting and where its value came from), and the change that would "
                f"let it broadcast. Quote the tools' figures; do not guess sizes.")

    @server.prompt()
    def what_changed(old: str, new: str) -> str:
        """What changed in AQE's decisions between these two runs?"""
        return (f"Compare the adaptive rewrites of two runs of the same job: old={old}, "
                f"new={new}.\n"
                f"1. Call compare with old={old!r} and new={new!r}: which executions lost or "
                f"gained a rewrite.\n"
                f"2. For each execution that lost one, call why on the new run with that "
                f"execution's query and the lost kind.\n"
                f"3. Call diff on both runs for the same query when the evidence differs.\n"
                f"Answer with each change, its cause from the why answers (a setting, a size, "
                f"a Spark version's default), and whether it explains a slower run.")

    @server.prompt()
    def explain_execution(source: str, query: str) -> str:
        """What did AQE do to this query, and why?"""
        return (f"Explain what Spark's AQE did at run time to query {query} of {source}.\n"
                f"1. Call diff with source={source!r} and query={query!r}.\n"
                f"2. Call plans with the same arguments to see where each rewrite stands in "
                f"the final and the initial tree.\n"
                f"3. Call why with the same arguments for what it could have rewritten but "
                f"did not.\n"
                f"Answer in a few sentences per rewrite, with its evidence.")

    return server


@dataclass(frozen=True)
class Limits:
    """What the HTTP server holds at once: connections (fewer when the descriptor limit is
    low), sessions, and the seconds a session may stay idle; and the Host names a request
    may give besides the loopback names and the address bound (--allow-host)."""

    connections: int = 256
    sessions: int = 100
    session_idle: float = 300.0
    allow_hosts: Tuple[str, ...] = ()


def serve(access: Access, http_port: Optional[int] = None, host: str = "127.0.0.1",
          limits: Limits = Limits()) -> None:
    """Serve over stdio, or streamable HTTP at http://HOST:PORT/mcp (HOST loopback unless
    the user names another; port 0 takes a free one, said on standard error)."""
    from ..sources.eventlog import events, history

    # The executions of a long event log are built in this process's worker threads, not in
    # a pool of forked processes (a fork beside the server's threads could hang).
    events.POOL_WORKERS = 1
    history.REDIRECT_ALLOWED = access.allows_url  # a redirect only to an --allow-url host
    server = build(access)
    guard.quiet_logging()
    try:
        if http_port is None:
            server.run("stdio")
        else:
            anyio.run(_serve_http, server, host, http_port, limits)
    except BaseException as error:  # noqa: BLE001 - a signal's interruption, unwrapped
        raise _first_interruption(error) from None


def _first_interruption(error: BaseException) -> BaseException:
    """The interruption (Ctrl-C, SIGTERM: a KeyboardInterrupt) an exception group of the
    SDK's task groups holds, for the command line to say in one line; else `error`."""
    stack = [error]
    while stack:
        each = stack.pop()
        if isinstance(each, KeyboardInterrupt):
            return each
        stack.extend(getattr(each, "exceptions", ()) or ())
    return error


async def _serve_http(server: MCPServer, host: str, port: int, limits: Limits) -> None:
    import uvicorn

    guard.loop_errors_logged()
    most = guard.most_connections(limits.connections)

    class Announced(uvicorn.Server):
        """uvicorn's server, saying its URL on standard error once it listens."""

        async def startup(self, sockets=None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                bound = self.servers[0].sockets[0].getsockname()[1] if self.servers else port
                shown = f"[{host}]" if ":" in host else host
                print(f"aqe-inspect mcp: serving http://{shown}:{bound}/mcp", file=sys.stderr,
                      flush=True)
                if most < limits.connections:
                    print(f"aqe-inspect mcp: at most {most} connections at once (the "
                          "descriptor limit is low)", file=sys.stderr, flush=True)
                if not guard.is_loopback(host):
                    names = ", ".join(name for name in guard.security(
                        host, limits.allow_hosts).allowed_hosts if not name.endswith(":*"))
                    print(f"aqe-inspect mcp: {host} is not loopback: whoever reaches it may "
                          "read the open folders (no authentication); requests must name "
                          f"the server as one of: {names} (--allow-host for another)",
                          file=sys.stderr, flush=True)

    app = server.streamable_http_app(
        streamable_http_path="/mcp", host=host, max_sessions=limits.sessions,
        session_idle_timeout=limits.session_idle,
        transport_security=guard.security(host, limits.allow_hosts))
    guard.sessions_taking_the_idlest(server.session_manager)
    await Announced(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                   log_config=None, access_log=False, lifespan="on",
                                   backlog=guard.BACKLOG,
                                   http=guard.capped_protocol(most))).serve()
