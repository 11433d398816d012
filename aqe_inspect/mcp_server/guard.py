"""The HTTP server kept up and fair whoever connects: any local process can reach a port.

- Connections: at most `most_connections` open at once, well under the descriptor limit
  (RLIMIT_NOFILE), so that idle connections never exhaust it. Past the bound, a new
  connection takes the place of the oldest idle one (one that never sent a whole request
  first, then one kept alive between requests); when every connection is serving a request,
  the new one is answered 503 and closed.
- Sessions: at most `most_sessions` (each holds a task and its streams); a session with no
  request in flight for `session_idle` seconds ends. Past the bound, a new session takes the
  place of the session idle the longest: a client that opens sessions and leaves them cannot
  lock new clients out, and memory stays bounded. A session serving a request, or holding
  its event stream open (what a connected SDK client does), is never taken.
- DNS rebinding: the Host and Origin of every request are checked (the SDK's
  TransportSecuritySettings) whatever address the server binds; the names a request may give
  are the loopback names, the address bound, and those of `--allow-host`.
- The log: one line a record on standard error, never a traceback, and never an error
  raised into the server (a full descriptor table once made the SDK's log handler raise while
  importing, which ended the server).
"""

from __future__ import annotations

import ipaddress
import logging
import math
import sys
import time
from typing import Any, Iterable, List, Optional, Type

from ..errors import InspectError, printable

#: The names of this machine alone, as a Host header gives them.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
#: Addresses that bind every interface.
WILDCARDS = ("0.0.0.0", "::", "")
#: Descriptors kept for the rest of the server (the files read, the listening socket, the
#: event loop's, the threads'), out of RLIMIT_NOFILE's soft limit, before connections.
KEPT_DESCRIPTORS = 64
#: The listening socket's queue, and the most connections accepted in one go (asyncio
#: accepts up to the backlog before a new connection is seen and given its place: uvicorn's
#: 2,048 would take 2,048 descriptors at once).
BACKLOG = 128

_REFUSED = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: 41\r\nconnection: close\r\n\r\n"
            b"too many connections in use; retry later\n")


def is_loopback(host: str) -> bool:
    """Whether `host` (an address or name to bind) is this machine alone: `localhost`, any of
    127.0.0.0/8, ::1 (and ::ffff:127.x.y.z)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_host(given: str) -> List[str]:
    """The Host header values an --allow-host value admits: `name` or `name:port`
    (`name:*` for any port); a bare name admits it with any port, and with none."""
    text = given.strip().lower()
    if not text or any(ch.isspace() or ch in "/@?#," for ch in text):
        raise InspectError(f"--allow-host {printable(given)}: expected a host name or "
                           "address, with or without :PORT")
    if text.startswith("["):  # [v6] or [v6]:port
        end = text.find("]")
        if end < 0:
            raise InspectError(f"--allow-host {printable(given)}: expected a host name or "
                               "address, with or without :PORT")
        name, rest = text[:end + 1], text[end + 1:]
        port = rest[1:] if rest.startswith(":") else None
        if rest and port is None:
            raise InspectError(f"--allow-host {printable(given)}: expected [ADDRESS]:PORT")
    elif text.count(":") > 1:  # a bare IPv6 address
        name, port = f"[{text}]", None
    else:
        name, _, port = text.partition(":")
        port = port if ":" in text else None
    if port is not None and port != "*" and not (port.isdigit() and 0 < int(port) < 65536):
        raise InspectError(f"--allow-host {printable(given)}: the port is not a number "
                           "from 1 to 65535 (or *)")
    return [f"{name}:{port}"] if port is not None else [name, f"{name}:*"]


def security(host: str, allow_hosts: Iterable[str] = ()) -> Any:
    """The SDK's TransportSecuritySettings for a server bound to `host`: DNS-rebinding
    protection on, the Host header one of the loopback names, the address bound (unless it
    binds every interface) or an --allow-host value; an Origin, when a browser sends one,
    http(s) to one of those."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts: List[str] = []
    for name in LOOPBACK_NAMES:
        hosts += [name, f"{name}:*"]
    if host.strip().strip("[]") not in WILDCARDS:
        hosts += allowed_host(_bracketed(host.strip().strip("[]")))
    for given in allow_hosts:
        hosts += allowed_host(given)
    hosts = list(dict.fromkeys(hosts))
    origins = [f"{scheme}://{value}" for value in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                     allowed_hosts=hosts, allowed_origins=origins)


def most_connections(wanted: int) -> int:
    """`wanted`, or fewer when the descriptor limit is low: at most half of what the soft
    RLIMIT_NOFILE leaves after KEPT_DESCRIPTORS and a BACKLOG accepted at once."""
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return wanted
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return wanted
    return max(1, min(wanted, (soft - KEPT_DESCRIPTORS - BACKLOG) // 2))


def capped_protocol(most: int, base: Optional[Type] = None) -> Type:
    """uvicorn's HTTP protocol (the one it picks by itself), holding at most `most`
    connections: a connection past the bound closes the oldest idle one, or is refused."""
    if base is None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol as base

    class Capped(base):  # type: ignore[misc, valid-type]
        def connection_made(self, transport) -> None:  # noqa: ANN001 - asyncio's
            self._aqe_seen = time.monotonic()
            self._aqe_served = 0
            self._aqe_gone = False
            super().connection_made(transport)
            live = [each for each in self.connections if not getattr(each, "_aqe_gone", False)]
            if len(live) <= most:
                return
            idle = [each for each in live if each is not self and _idle(each)]
            if idle:
                oldest = min(idle, key=lambda each: (getattr(each, "_aqe_served", 0) > 0,
                                                     getattr(each, "_aqe_seen", 0.0)))
                oldest._aqe_gone = True
                _close(oldest.transport)
                return
            self._aqe_gone = True
            try:
                transport.write(_REFUSED)
            except Exception:  # noqa: BLE001 - gone already
                pass
            _close(transport)

        def data_received(self, data: bytes) -> None:
            self._aqe_seen = time.monotonic()
            super().data_received(data)

        def on_response_complete(self) -> None:
            self._aqe_served = getattr(self, "_aqe_served", 0) + 1
            self._aqe_seen = time.monotonic()
            super().on_response_complete()

    Capped.__name__ = Capped.__qualname__ = f"Capped{base.__name__}"
    return Capped


def _idle(connection: Any) -> bool:
    """Whether a connection serves no request now (none begun, or the last one answered)."""
    cycle = getattr(connection, "cycle", None)
    return cycle is None or bool(getattr(cycle, "response_complete", False))


def _close(transport: Any) -> None:
    try:
        transport.close()
    except Exception:  # noqa: BLE001 - closing already
        pass


def sessions_taking_the_idlest(manager: Any) -> bool:
    """Make the SDK's session manager give a new session the place of the session idle the
    longest when its bound is reached (instead of refusing the new one, 503, for as long as
    the idle ones last). False, the manager as it was, when this SDK's manager is not the one
    this was written for (the bound still holds: the excess is refused)."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    if not (type(manager) is StreamableHTTPSessionManager
            and callable(getattr(manager, "_admit_session", None))
            and isinstance(getattr(manager, "_server_instances", None), dict)):
        return False

    class TakingTheIdlest(StreamableHTTPSessionManager):
        def _admit_session(self, requestor):  # noqa: ANN001, ANN202 - the SDK's
            if self.max_sessions is not None and \
                    len(self._server_instances) >= self.max_sessions:
                _end_the_idlest(self)
            return super()._admit_session(requestor)

    manager.__class__ = TakingTheIdlest
    return True


def _end_the_idlest(manager: Any) -> None:
    """End the session idle the longest (no request in flight, no event stream open)."""
    idlest = None
    for session_id, transport in list(manager._server_instances.items()):
        scope = getattr(transport, "idle_scope", None)
        if scope is None or getattr(transport, "_requests_in_flight", 1):
            continue
        deadline = -math.inf if scope.cancel_called else scope.deadline
        if not math.isfinite(deadline) and deadline > 0:  # its first request not answered
            continue
        if idlest is None or deadline < idlest[0]:
            idlest = (deadline, session_id, transport, scope)
    if idlest is None:
        return
    _, session_id, transport, scope = idlest
    # Forgotten now (its id answers 404 from here on); its server task ends with the scope
    # and terminates the transport (the SDK's own end of an idle session).
    manager._server_instances.pop(session_id, None)
    getattr(manager, "_session_owners", {}).pop(session_id, None)
    scope.cancel()


class OneLine(logging.Handler):
    """The server's log on standard error: `aqe-inspect mcp: LEVEL: message` on one line,
    an exception as its type and message (never a traceback: no source file is opened), and
    a record that cannot be written is dropped, never raised into the server."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = " ".join(record.getMessage().split())
            if record.exc_info and record.exc_info[1] is not None:
                error = record.exc_info[1]
                detail = " ".join(str(error).split())[:300]
                message += f" ({type(error).__name__}{': ' + detail if detail else ''})"
            stream = sys.stderr
            if stream is not None:
                stream.write(f"aqe-inspect mcp: {record.levelname.lower()}: "
                             f"{printable(message)}\n")
                stream.flush()
        except Exception:  # noqa: BLE001 - a log line is never worth the server
            pass

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's
        pass


def quiet_logging(level: int = logging.WARNING) -> None:
    """Every log record through `OneLine` (the SDK installs a rich handler that renders
    tracebacks, importing as it goes)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(OneLine())
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "asyncio"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.propagate = True


def loop_errors_logged() -> None:
    """The running event loop's exception handler: the record logged, one line, and nothing
    raised from it (asyncio's default handler formats a traceback)."""
    import asyncio

    def handler(loop, context) -> None:  # noqa: ANN001 - asyncio's
        try:
            error = context.get("exception")
            logging.getLogger("asyncio").warning(
                "%s%s", context.get("message", "event loop error"),
                f" ({type(error).__name__}: {' '.join(str(error).split())[:300]})"
                if error is not None else "")
        except Exception:  # noqa: BLE001
            pass

    asyncio.get_running_loop().set_exception_handler(handler)
