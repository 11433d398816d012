"""`--url` against hostile servers on 127.0.0.1 (a thread of this test, bounded in time and
requests): one that trickles a byte at a time, redirects to ftp:// or in circles, sends 101
headers, claims a huge Content-Length, cuts its answer short or speaks no HTTP. Each is one
line naming the URL and exit 2, within a bound: the deadline covers the whole download.

The real answer (a sample's saved History Server JSON), served plainly, chunked, or after a
redirect, still reads."""

from __future__ import annotations

import io
import socket
import socketserver
import threading
import time
from contextlib import redirect_stderr, redirect_stdout
from typing import Callable, Dict

import pytest

from aqe_inspect.cli import main
from aqe_inspect.sources.eventlog import history

from .conftest import SAMPLE_PLANS

ANSWER = (SAMPLE_PLANS / "spark-3.5.9" / "scalar_subquery" / "history_sql.json").read_bytes()
#: What a hostile server may spend on one connection, whatever the client does.
SERVER_BOUND = 30.0


def _send(connection: socket.socket, data: bytes) -> bool:
    try:
        connection.sendall(data)
        return True
    except OSError:  # the client gave up
        return False


def _trickle(connection: socket.socket, data: bytes, pause: float) -> None:
    ends = time.monotonic() + SERVER_BOUND
    for byte in data:
        if time.monotonic() > ends or not _send(connection, bytes([byte])):
            return
        time.sleep(pause)


def _answer(body: bytes, *headers: str) -> bytes:
    head = ["HTTP/1.1 200 OK", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def _redirect(location: str) -> bytes:
    return (f"HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n"
            ).encode("latin-1")


#: Each kind of server: what it does with a request for /<kind>/..., given its port.
BEHAVIOUR: Dict[str, Callable[[socket.socket, int, str], None]] = {
    "trickle-body": lambda c, port, path: (
        _send(c, b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n") and
        _trickle(c, b"[" * 100, 0.5)),
    "trickle-headers": lambda c, port, path: _trickle(
        c, b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n[]", 0.5),
    # Silent past any deadline a loaded machine could miss (the deadline is 2 s).
    "silent": lambda c, port, path: time.sleep(SERVER_BOUND),
    "ftp": lambda c, port, path: _send(c, _redirect("ftp://127.0.0.1/pub/sql")),
    "file": lambda c, port, path: _send(c, _redirect("file:///etc/passwd")),
    "circle": lambda c, port, path: _send(c, _redirect(
        f"http://127.0.0.1:{port}/circle/{len(path)}{path}")),
    "headers": lambda c, port, path: _send(c, _answer(
        b"[]", *(f"X-Header-{n}: {n}" for n in range(101)))),
    "huge": lambda c, port, path: (
        _send(c, b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000000\r\n\r\n[") and
        time.sleep(SERVER_BOUND / 3)),
    "cut": lambda c, port, path: _send(c, _answer(ANSWER)[:-100]),
    "not-http": lambda c, port, path: _send(c, b"SSH-2.0-OpenSSH_9.2\r\n\r\n"),
    "error": lambda c, port, path: _send(
        c, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"),
    "ok": lambda c, port, path: _send(c, _answer(ANSWER, "Content-Type: application/json")),
    "chunked": lambda c, port, path: _send(
        c, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
        b"".join(b"%x\r\n%s\r\n" % (len(part), part)
                 for part in (ANSWER[:1000], ANSWER[1000:])) + b"0\r\n\r\n"),
    "moved": lambda c, port, path: _send(
        c, _redirect(f"http://127.0.0.1:{port}/ok/api/v1/applications/local-1/sql")),
}


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.settimeout(SERVER_BOUND)
        request = b""
        try:
            while b"\r\n\r\n" not in request and len(request) < 65536:
                more = self.request.recv(4096)
                if not more:
                    return
                request += more
        except OSError:
            return
        path = request.split(b" ", 2)[1].decode("latin-1")
        kind = path.split("/")[1]
        BEHAVIOUR[kind](self.request, self.server.server_address[1], path)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture(scope="module")
def server():
    listening = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=listening.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listening.server_address[1]}"
    listening.shutdown()
    listening.server_close()


def fetch_cli(url: str, *options: str):
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["diff", "--url", url, *options])
    return code, out.getvalue(), err.getvalue(), time.monotonic() - started


@pytest.mark.parametrize("kind, words", [
    ("trickle-body", "no complete answer within 2 s"),
    ("trickle-headers", "no complete answer within 2 s"),
    ("silent", "no complete answer within 2 s"),
])
def test_one_deadline_covers_the_whole_download(server, monkeypatch, kind, words):
    """Each read of a trickle is quick; the download as a whole is not. The old per-read
    timeout let a byte every 20 s hold the command for ever; the deadline is 2 s here."""
    monkeypatch.setattr(history, "DEADLINE", 2.0)
    url = f"{server}/{kind}/api/v1/applications/local-1"
    code, out, err, took = fetch_cli(url)
    assert code == 2 and out == "", err
    assert err.startswith(f"aqe-inspect: error: {url}/sql?") and err.count("\n") == 1, err
    assert words in err
    assert took < 2.0 + 15.0  # the deadline, and a margin for a loaded machine (a hang is 20 s+)


@pytest.mark.parametrize("kind, words", [
    ("ftp", "the server redirected to 'ftp://127.0.0.1/pub/sql': only http:// and https://"),
    ("file", "Redirection to url 'file:///etc/passwd' is not allowed"),
    ("circle", f"more than {history.MAX_REDIRECTS} redirects"),
    ("headers", "the server's answer is not valid HTTP (got more than 100 headers)"),
    ("huge", "the server's answer (its Content-Length) (1,000,000,000,000,000 bytes) is longer "
             "than --max-size (268,435,456 bytes)"),
    ("cut", "the answer was cut short"),
    ("not-http", "the server's answer is not valid HTTP"),
    ("error", "the server answered 404 Not Found"),
])
def test_a_hostile_server_is_one_line_and_exit_2(server, kind, words):
    url = f"{server}/{kind}/api/v1/applications/local-1"
    code, out, err, took = fetch_cli(url)
    assert code == 2 and out == "", err
    assert err.startswith(f"aqe-inspect: error: {url}/sql?") and err.count("\n") == 1, err
    assert "internal error" not in err
    assert words in err, err
    assert took < 20.0  # none of these waits: each is refused as soon as it is seen


def test_an_answer_past_the_size_bound_is_refused_while_read(server):
    """Chunked, the size is not said up front: the reading stops at --max-size."""
    code, _, err, _ = fetch_cli(f"{server}/chunked/api/v1/applications/local-1",
                                "--max-size", "5000")
    assert code == 2 and "the server's answer is longer than --max-size (5,000 bytes)" in err, err


def test_max_size_refuses_a_said_length_before_reading(server):
    code, _, err, took = fetch_cli(f"{server}/ok/api/v1/applications/local-1", "--max-size",
                                   "100")
    assert code == 2 and "(its Content-Length)" in err and "--max-size (100 bytes)" in err, err
    assert took < 20.0


@pytest.mark.parametrize("kind", ["ok", "chunked", "moved"])
def test_a_real_answer_still_reads(server, kind):
    code, out, err, _ = fetch_cli(f"{server}/{kind}/api/v1/applications/local-1")
    assert code == 0, err
    assert out.count("Execution ") == 3  # the three executions of the saved answer


def test_a_url_that_does_not_parse_is_one_line():
    code, out, err, _ = fetch_cli("http://[::1/api/v1/applications/x")
    assert code == 2 and err.count("\n") == 1 and "internal error" not in err, err


@pytest.mark.parametrize("kind, words", [
    ("trickle-body", "no complete answer within 2 s"),
    ("ftp", "only http:// and https://"),
    ("huge", "longer than --max-size"),
])
def test_assert_aqe_ui_url_goes_through_the_same_fetcher(server, monkeypatch, kind, words):
    """`assert_aqe(ui_url=...)` reads the Spark UI's answers with `--url`'s fetcher: a
    trickling server is given up at the deadline, a redirect off http(s) is refused, an
    answer past the size bound is refused before it is read (it used to wait, follow, read
    whole)."""
    from aqe_inspect.errors import InspectError
    from aqe_inspect.testing import connect

    monkeypatch.setattr(history, "DEADLINE", 2.0)
    started = time.monotonic()
    with pytest.raises(InspectError) as raised:
        connect._get_json(f"{server}/{kind}/api/v1/applications")
    assert words in str(raised.value), raised.value
    assert time.monotonic() - started < 2.0 + 15.0
