"""`--url` with the addresses users type: a Spark UI's root (`http://127.0.0.1:4040`), a page of
it, the REST API's root or its list of applications, an application's URL or its `/sql`, a
History Server's root or its page of an application, with or without a trailing slash.

A stand-in on 127.0.0.1 (a thread of this test) answers as a live Spark UI and as Spark's History
Server answered on this project's machine (tests/fixtures/eventlogs/addresses: the REST answers
verbatim; for every other address the status, type and redirect each server gave). The live
test (`-m spark`) asks a real Spark UI, in a PySpark of its own."""

from __future__ import annotations

import http.server
import io
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Dict, Tuple
from urllib.parse import urlsplit

import pytest

from aqe_inspect.cli import main

from .conftest import IN_CI

ADDRESSES = Path(__file__).parent / "fixtures" / "eventlogs" / "addresses" / "spark-4.3.0"
UI_APPS = json.loads((ADDRESSES / "ui_applications.json").read_bytes())
HISTORY_APPS = json.loads((ADDRESSES / "history_applications.json").read_bytes())
(APP,) = [app["id"] for app in UI_APPS]  # the live UI lists its own application
LATEST = HISTORY_APPS[0]["id"]


def _routes(kind: str) -> Dict[str, Tuple[int, str, str, bytes]]:
    """path -> (status, content type, Location, body) as the real server answered: the REST
    answers kept whole, every other address with the start of its body."""
    recorded = json.loads((ADDRESSES / f"{kind}_addresses.json").read_bytes())
    routes = {path or "/": (answer["status"], answer["content_type"] or "",
                            urlsplit(answer["location"] or "").path,
                            answer["starts_with"].encode("utf-8"))
              for path, answer in recorded.items()}
    json_type = "application/json"
    if kind == "ui":
        routes["/api/v1/applications"] = (200, json_type, "",
                                          (ADDRESSES / "ui_applications.json").read_bytes())
        routes[f"/api/v1/applications/{APP}"] = (200, json_type, "", (
            ADDRESSES / "ui_application.json").read_bytes())
        sql = (ADDRESSES / "ui_sql.json").read_bytes()
    else:
        routes["/api/v1/applications"] = (200, json_type, "", (
            ADDRESSES / "history_applications.json").read_bytes())
        sql = (ADDRESSES / "history_sql.json").read_bytes()
    routes[f"/api/v1/applications/{APP}/sql"] = (200, json_type, "", sql)
    for item in json.loads(sql):
        routes[f"/api/v1/applications/{APP}/sql/{item['id']}"] = (
            200, json_type, "", json.dumps(item).encode("utf-8"))
    return routes


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: Dict[str, Tuple[int, str, str, bytes]] = {}
    asked: list = []

    def do_GET(self):  # noqa: N802 - the stdlib's name
        path = urlsplit(self.path).path
        self.asked.append(self.path)
        lookup = path.rstrip("/") if path.rstrip("/") in self.routes else path
        status, kind, location, body = self.routes.get(lookup, self.routes["/api/v1"])
        self.send_response(status)
        if kind:
            self.send_header("Content-Type", kind)
        if location:
            self.send_header("Location", f"http://127.0.0.1:{self.server.server_address[1]}"
                                         f"{location}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # quiet
        pass


def _serve(kind: str):
    handler = type(f"{kind}Handler", (_Handler,), {"routes": _routes(kind), "asked": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, handler


@pytest.fixture(scope="module")
def spark_ui():
    server, handler = _serve("ui")
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def history_server():
    server, handler = _serve("history")
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


def cli(*args: str) -> Tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def _saved(name: str) -> dict:
    code, out, err = cli("diff", str(ADDRESSES / name), "--format", "json")
    assert code == 0, err
    return json.loads(out)


def _sourceless(report: dict) -> list:
    """The queries, but for where they were read (a URL names its application, a file not)."""
    return [{key: value for key, value in query.items() if key not in ("source", "application")}
            for query in report["queries"]]


UI_FORMS = ["", "/", "/jobs/", "/SQL/", "/api/v1", "/api/v1/", "/api/v1/applications",
            "/api/v1/applications/", f"/api/v1/applications/{APP}",
            f"/api/v1/applications/{APP}/", f"/api/v1/applications/{APP}/sql",
            f"/api/v1/applications/{APP}/sql/"]


@pytest.mark.parametrize("form", UI_FORMS, ids=lambda form: form or "root")
def test_every_address_of_a_live_ui_finds_its_application(spark_ui, form):
    base, _ = spark_ui
    code, out, err = cli("diff", "--url", base + form, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    saved = _saved("ui_sql.json")
    assert report["application"]["app_id"] == APP
    assert _sourceless(report) == _sourceless(saved)


def test_a_ui_page_of_one_execution_reads_that_execution(spark_ui):
    base, handler = spark_ui
    (only,) = json.loads((ADDRESSES / "ui_sql.json").read_bytes())
    code, out, err = cli("diff", "--url", f"{base}/SQL/execution/?id={only['id']}",
                         "--format", "json")
    assert code == 0, err
    assert [q["execution_id"] for q in json.loads(out)["queries"]] == [only["id"]]
    assert any(f"/api/v1/applications/{APP}/sql/{only['id']}?" in asked
               for asked in handler.asked), handler.asked


def test_a_history_server_of_several_applications_says_the_url_to_give(history_server):
    base, _ = history_server
    for form in ("", "/", "/api/v1/applications", "/api/v1/applications/"):
        code, out, err = cli("diff", "--url", base + form)
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert err.startswith(f"aqe-inspect: error: {base}: the server lists 2 applications: "
                              f"give one's URL, e.g. --url {base}/api/v1/applications/{LATEST} "
                              f"(the latest first: {LATEST} ("), err
        assert APP in err
    for form in (f"/api/v1/applications/{APP}", f"/history/{APP}/", f"/history/{APP}/SQL/"):
        code, out, err = cli("diff", "--url", base + form, "--format", "json")
        assert code == 0, err
        assert _sourceless(json.loads(out)) == _sourceless(_saved("history_sql.json"))


def test_a_server_without_the_rest_api_names_the_url_to_give():
    class NoApi(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NoApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        code, out, err = cli("diff", "--url", base + "/")
    finally:
        server.shutdown()
        server.server_close()
    assert code == 2 and err.count("\n") == 1, err
    assert err == (f"aqe-inspect: error: {base}/api/v1/applications?limit=20: the server "
                   "answered 404 Not Found (not a Spark UI or History Server?): give the "
                   f"application's URL ({base}/api/v1/applications/APP_ID)\n")


LIVE = textwrap.dedent('''
    import sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("aqe-url-addresses")
             .config("spark.ui.enabled", "true").config("spark.ui.port", sys.argv[1])
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.sql.adaptive.enabled", "true")
             .config("spark.sql.shuffle.partitions", "20").getOrCreate())
    spark.sparkContext.setJobDescription("grouped count")
    spark.range(0, 10000, 1, 2).selectExpr("id % 7 AS k").groupBy("k").count().collect()
    print(spark.sparkContext.applicationId, spark.sparkContext.uiWebUrl, flush=True)
    sys.stdin.read()  # until the test is done
    spark.stop()
''')


@pytest.mark.spark
def test_a_real_spark_ui_is_found_from_the_addresses_users_type():
    if not IN_CI:
        pytest.importorskip("pyspark", reason="the 'spark' extra is not installed")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    process = subprocess.Popen([sys.executable, "-c", LIVE, str(port)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env=env, start_new_session=True)
    try:
        app, url = process.stdout.readline().split()
        assert url.endswith(f":{port}"), url
        base = f"http://127.0.0.1:{port}"
        for form in ("", "/", "/SQL/", "/api/v1", "/api/v1/applications/",
                     f"/api/v1/applications/{app}", f"/api/v1/applications/{app}/sql/"):
            code, out, err = cli("diff", "--url", base + form, "--format", "json")
            assert code == 0, (form, err)
            report = json.loads(out)
            assert report["application"]["app_id"] == app
            (query,) = [q for q in report["queries"] if q["description"] == "grouped count"]
            assert query["counts"]["coalesced"] == 1, query
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
