"""`aqe-inspect mcp`: aqe-inspect's answers as tools for AI agents, a Model Context Protocol
server on the official Python SDK (the `mcp` extra, Python 3.10+).

    access.py   what an agent may make the server read: paths inside the open folders
                (--allow's, narrowed to the client's roots), URLs to --allow-url hosts; the
                arguments checked
    answers.py  each tool's answer from the library (`api`): the command line's JSON
                contracts, and a text summary; no MCP here
    paging.py   long answers in pages, by an opaque cursor; whole answers kept for the pages
    stopping.py a tool's work in a thread that the call's cancellation stops
    guard.py    HTTP kept up and fair: connections and sessions bounded (the idlest give
                way), Host/Origin checked on every address, a log that never raises
    server.py   the SDK's server: the tools and prompts, stdio or streamable HTTP at /mcp

May import: `api` and the library below it: `sources`, `parsing`, `plan`, `rewrites`,
`whynot`, `advice`, `expectations`, `formats`, `errors`, `signals`, `version`; never the command line
(the command line imports this: its `mcp` command starts the server).
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..errors import InspectError


def serve(http_port: Optional[int] = None, host: str = "127.0.0.1",
          allow: Sequence[str] = (), allow_url: Sequence[str] = (),
          max_size: str = "256M", allow_host: Sequence[str] = (),
          max_connections: int = 256, max_sessions: int = 100,
          session_idle: str = "5m") -> None:
    """Serve until the client goes (stdio) or the process is ended (HTTP)."""
    from .. import api
    from .access import Access

    api.size(max_size)  # a mistaken size fails before the server starts
    # Over HTTP any local process may connect: the folders are --allow's alone, and a
    # client's roots only narrow them. Over stdio the client started the server.
    access = Access.of(allow, allow_url, max_size, roots_open=http_port is None)
    if http_port is not None and not 0 <= http_port <= 65535:
        raise InspectError(f"--http: expected a port from 0 to 65535, found {http_port}")
    if max_connections < 1:
        raise InspectError(f"--max-connections: expected 1 or more, found {max_connections}")
    if max_sessions < 1:
        raise InspectError(f"--max-sessions: expected 1 or more, found {max_sessions}")
    idle = seconds(session_idle, "--session-idle")
    try:
        from .guard import allowed_host
        from .server import Limits
        from .server import serve as serve_with_sdk
    except ImportError as error:
        raise InspectError("aqe-inspect mcp needs the MCP SDK, the mcp extra: pip install "
                           "'.[mcp]' in aqe-inspect's checkout (Python 3.10 or later) "
                           f"({error})") from None
    for given in allow_host:
        allowed_host(given)  # a mistaken name fails before the server starts
    serve_with_sdk(access, http_port, host,
                   Limits(max_connections, max_sessions, idle, tuple(allow_host)))


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def seconds(given: str, option: str) -> float:
    """A duration: a number of seconds, or one with a unit, `s`, `m` or `h` (`90s`, `5m`)."""
    text = given.strip().lower()
    unit = _UNITS.get(text[-1:], None)
    number = text[:-1] if unit is not None else text
    try:
        value = float(number) * (unit or 1.0)
    except ValueError:
        value = float("nan")
    if not 0 < value < 366 * 86400:  # NaN and infinities fail too
        raise InspectError(f"{option}: expected a duration (seconds, or with s, m or h: "
                           f"90s, 5m), found {given!r}")
    return value
