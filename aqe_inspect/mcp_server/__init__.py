"""`aqe-inspect mcp`: aqe-inspect's answers as tools for AI agents, a Model Context Protocol
server on the official Python SDK (the `mcp` extra, Python 3.10+).

    access.py   what an agent may make the server read: paths inside the open folders (the
                client's roots, --allow), URLs to --allow-url hosts; the arguments checked
    answers.py  each tool's answer from the library (`api`): the command line's JSON
                contracts, and a text summary; no MCP here
    paging.py   long answers in pages, by an opaque cursor; whole answers kept for the pages
    server.py   the SDK's server: the tools and prompts, stdio or streamable HTTP at /mcp

May import: `api` and the library below it: `sources`, `parsing`, `plan`, `rewrites`,
`whynot`, `expectations`, `formats`, `errors`, `signals`, `version`; never the command line
(the command line imports this: its `mcp` command starts the server).
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..errors import InspectError


def serve(http_port: Optional[int] = None, host: str = "127.0.0.1",
          allow: Sequence[str] = (), allow_url: Sequence[str] = (),
          max_size: str = "256M") -> None:
    """Serve until the client goes (stdio) or the process is ended (HTTP)."""
    from .. import api
    from .access import Access

    api.size(max_size)  # a mistaken size fails before the server starts
    access = Access.of(allow, allow_url, max_size)
    if http_port is not None and not 0 <= http_port <= 65535:
        raise InspectError(f"--http: expected a port from 0 to 65535, found {http_port}")
    try:
        from .server import serve as serve_with_sdk
    except ImportError as error:
        raise InspectError("aqe-inspect mcp needs the MCP SDK, the mcp extra: pip install "
                           "'.[mcp]' in aqe-inspect's checkout (Python 3.10 or later) "
                           f"({error})") from None
    serve_with_sdk(access, http_port, host)
