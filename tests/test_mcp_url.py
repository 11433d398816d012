"""The tools read a History Server by URL only when `--allow-url` names its host: a stand-in
on 127.0.0.1 (a thread of this test) serves a real run's saved /sql JSON; a redirect to a host
not named is refused, and so is a URL to any other host."""

from __future__ import annotations

import http.server
import threading

import pytest

from .conftest import SAMPLE_PLANS
from .mcp_client import call, cli_json, run, stdio_session

ANSWER = (SAMPLE_PLANS / "spark-4.3.0" / "skew_join" / "history_sql.json").read_bytes()


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the stdlib's name
        if self.path.startswith("/away/"):
            self.send_response(302)
            self.send_header("Location", "http://localhost:9/api/v1/applications/app-1/sql")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture()
def history_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_history_server_named_with_allow_url_is_read(history_server):
    url = f"http://{history_server}/api/v1/applications/app-1"

    async def main():
        async with stdio_session("--allow-url", history_server) as session:
            return (await call(session, "list_executions", source=url),
                    await call(session, "diff", source=url),
                    await call(session, "diff", source=f"http://{history_server}/away/x"),
                    await call(session, "diff", source="http://127.0.0.2:1/api/v1/x"),
                    await call(session, "diff", source=f"ftp://{history_server}/x"))

    listed, diffed, redirected, other_host, ftp = run(main)
    assert not listed[0] and listed[2]["executions"], listed[1]
    assert not diffed[0]
    assert diffed[2] == cli_json("diff", "--url", url, "--format", "json")
    assert redirected[0] and "a host not open to this reader" in redirected[1], redirected[1]
    assert other_host[0] and "its host is not one --allow-url named" in other_host[1]
    # not http(s): a path then, and no folder is open
    assert ftp[0] and "no folder is open to this server" in ftp[1]
