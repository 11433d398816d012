"""`aqe-inspect mcp` driven as an agent's client drives it: the MCP SDK's ClientSession over
stdio, a subprocess of the installed console script (streamable HTTP: test_mcp_http.py).
Every tool on the bundled samples (real Spark runs) answers what the command line prints in
JSON; long answers page without loss; prompts list and chain the tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest

from .conftest import SAMPLE_PLANS
from .mcp_client import call, cli_json, run, stdio_session

ALLOW = ("--allow", str(SAMPLE_PLANS))
TOOLS = {"list_executions", "diff", "plans", "why", "advise", "check", "compare", "rules"}
#: Inputs of every kind the tools read, each a real run's.
SOURCES = [
    "spark-4.3.0/multi_rewrite/eventlog.json",          # an event log
    "spark-4.3.0/multi_rewrite/eventlog_v2_local-1795447030718",  # a rolling log (folder)
    "spark-3.5.9/coalesced_aggregation/eventlog.snappy",  # a compressed one
    "spark-4.3.0/skew_join/history_sql.json",            # History Server JSON
    "spark-4.3.0/five_way_join/formatted_after.txt",     # explain output
    "spark-4.3.0/smj_to_bhj/driver.log",                 # a driver log
]


def real(relative: str) -> str:
    """The path as the server resolves it (every link followed), for the CLI to read too."""
    return str((SAMPLE_PLANS / relative).resolve())


def test_initialize_lists_tools_and_prompts():
    async def main():
        async with stdio_session(*ALLOW) as session:
            tools = (await session.list_tools()).tools
            prompts = (await session.list_prompts()).prompts
            return tools, prompts, session

    tools, prompts, _ = run(main)
    assert {tool.name for tool in tools} == TOOLS
    for tool in tools:
        assert tool.description and "\n" not in tool.description
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.input_schema["type"] == "object"
    schema = {tool.name: tool.input_schema for tool in tools}
    assert schema["diff"]["required"] == ["source"]
    assert set(schema["check"]["properties"]) >= {"source", "expect", "forbid", "config"}
    assert schema["compare"]["required"] == ["old", "new"]
    assert {prompt.name for prompt in prompts} == {"why_no_broadcast", "what_changed",
                                                   "explain_execution"}
    assert all(prompt.arguments for prompt in prompts)


def test_a_prompt_chains_the_tools():
    async def main():
        async with stdio_session(*ALLOW) as session:
            return await session.get_prompt("why_no_broadcast", {
                "source": "spark-4.3.0/smj_to_bhj_off/eventlog.json", "query": "0"})

    text = run(main).messages[0].content.text
    for tool in ("list_executions", "diff", "why"):
        assert tool in text
    assert "spark-4.3.0/smj_to_bhj_off/eventlog.json" in text


@pytest.mark.parametrize("source", SOURCES)
def test_diff_why_and_list_answer_the_command_lines_json(source):
    async def main():
        async with stdio_session(*ALLOW) as session:
            return (await call(session, "diff", source=source, limit=5000),
                    await call(session, "why", source=source, limit=5000),
                    await call(session, "list_executions", source=source))

    (diff_error, diff_text, diff), (why_error, _, why), (list_error, list_text, listed) = run(main)
    assert not diff_error and not why_error and not list_error, (diff_text, list_text)
    assert diff == cli_json("diff", real(source), "--format", "json")
    assert why == cli_json("why", real(source), "--format", "json")
    rows = listed["executions"]
    assert [row["id"] for row in rows] == [each["id"] for each in diff["queries"]]
    for row, each in zip(rows, diff["queries"]):
        assert row["description"] == each.get("description")
        assert row["duration_ms"] == each.get("duration_ms")
        assert row["counts"] == {kind: n for kind, n in each["counts"].items() if n}
        assert row["rewrites"] == len(each["rewrites"])
    assert str(len(rows)) in list_text.split()[0]


def test_advise_answers_the_command_lines_json():
    source = "spark-4.3.0/broadcast_just_above/eventlog.json"

    async def main():
        async with stdio_session(*ALLOW) as session:
            return await call(session, "advise", source=source, kind=["smj-to-bhj"])

    error, text, advice = run(main)
    assert not error, text
    assert advice == cli_json("advise", real(source), "--kind", "smj-to-bhj", "--format", "json")
    assert "spark.sql.adaptive.autoBroadcastJoinThreshold=12KB" in text


def test_check_and_compare_answer_the_command_lines_json():
    log = "spark-4.3.0/multi_rewrite/eventlog.json"
    old, new = "compare/spark-4.3.0/baseline.zstd", "compare/spark-4.3.0/coalesce_off.zstd"

    async def main():
        async with stdio_session(*ALLOW) as session:
            return (await call(session, "check", source=log, expect=["coalesced"],
                               forbid=["skew-join"]),
                    await call(session, "check", source=log, expect=["skew-join"]),
                    await call(session, "compare", old=old, new=new),
                    await call(session, "compare", old=old, new=new, fail_on=["none"]))

    passed, failed, compared, gate_off = run(main)
    assert not passed[0] and passed[2]["passed"] is True and passed[1].startswith("PASSED")
    assert passed[2] == cli_json("check", real(log), "-e", "coalesced", "--forbid",
                                 "skew-join", "--format", "json")
    # A failed expectation is an answer, not a tool error: the agent reads why.
    assert not failed[0] and failed[2]["passed"] is False and failed[1].startswith("FAILED")
    assert failed[2] == cli_json("check", real(log), "-e", "skew-join", "--format", "json")
    assert not compared[0]
    assert compared[2] == cli_json("compare", real(old), real(new), "--format", "json")
    assert compared[2]["failed"] is True and "lost" in compared[1]
    assert gate_off[2] == cli_json("compare", real(old), real(new), "--fail-on", "none",
                                   "--format", "json")
    assert gate_off[2]["failed"] is False


def test_rules_lists_every_kind():
    async def main():
        async with stdio_session() as session:  # no folder needed to list the rules
            return (await call(session, "rules"), await call(session, "rules", kind="dpp"),
                    await call(session, "rules", kind="no-such-kind"))

    every, one, unknown = run(main)
    from aqe_inspect import api

    assert [rule["kind"] for rule in every[2]["rules"]] == list(api.rules().kinds)
    assert [rule["kind"] for rule in one[2]["rules"]] == ["dpp"]
    assert one[2]["rules"][0]["spark_rule"]
    assert unknown[0] and unknown[1].startswith("aqe-inspect: error: rules: unknown rewrite kind")


def _flat_cli_trees(query: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The trees of one query of `parse --format json`, node by node as the plans tool lists
    them (pre-order; the main initial tree apart, not under the final root)."""
    found = []
    trees = [("final", query["trees"]["final"])]
    if query["trees"]["initial"] is not None:
        trees.append(("initial", query["trees"]["initial"]))
    trees.extend((f"subquery {n}", tree) for n, tree in enumerate(query["subqueries"], 1))
    for tree, root in trees:
        stack = [(root, 0, tree == "final")]
        while stack:
            node, depth, main_root = stack.pop()
            found.append({**{key: value for key, value in node.items()
                             if key not in ("children", "inner", "initial")},
                          "tree": tree, "depth": depth})
            below = [*node.get("children", []), *node.get("inner", [])]
            if node.get("initial") is not None and not main_root:
                below.append(node["initial"])
            stack.extend((child, depth + 1, False) for child in reversed(below))
    return found


@pytest.mark.parametrize("source", ["spark-4.3.0/multi_rewrite/formatted_after.txt",
                                    "spark-4.3.0/dpp_subquery/eventlog.json",
                                    "spark-4.3.0/scalar_subquery/formatted_after.txt"])
def test_plans_are_the_parsed_trees_node_by_node_with_their_rewrites(source):
    async def main():
        async with stdio_session(*ALLOW) as session:
            return await call(session, "plans", source=source, limit=5000)

    error, text, answer = run(main)
    assert not error, text
    parsed = cli_json("parse", real(source), "--format", "json")
    expected = [node for query in parsed["queries"] for node in _flat_cli_trees(query)]
    got = [{key: value for key, value in node.items()
            if key not in ("query", "index", "parent", "relation", "rewrites")}
           for node in answer["nodes"]]
    assert got == expected
    # parents point back into the list, one level up
    for node in answer["nodes"]:
        if node["parent"] is not None:
            assert answer["nodes"][node["parent"]]["depth"] == node["depth"] - 1
    # every rewrite diff names is marked at its final and its initial node
    diff = cli_json("diff", real(source), "--format", "json")
    marked = {(mark["kind"], mark["as"], f"{node['name']} ({node['id']})")
              for node in answer["nodes"] for mark in node["rewrites"]}
    for query in diff["queries"]:
        for rewrite in query["rewrites"]:
            for role in ("final", "initial"):
                if rewrite[f"{role}_node"]:
                    assert (rewrite["kind"], role, rewrite[f"{role}_node"]) in marked


def test_pages_join_into_the_whole_answer():
    source = "spark-4.3.0/five_way_join/formatted_after.txt"

    async def main():
        async with stdio_session(*ALLOW) as session:
            whole = await call(session, "plans", source=source, limit=5000)
            pages, cursor = [], None
            while True:
                error, text, page = await call(session, "plans", source=source, limit=7,
                                               **({"cursor": cursor} if cursor else {}))
                assert not error, text
                pages.append(page)
                cursor = page["page"]["next_cursor"]
                if cursor is None:
                    break
            other = await call(session, "diff", source=source,
                               cursor=pages[0]["page"]["next_cursor"])
            forged = await call(session, "plans", source=source, cursor="not-a-cursor")
            return whole, pages, other, forged, text

    whole, pages, other, forged, last_text = run(main)
    assert "page" not in whole[2]  # one page: the contract untouched
    assert len(pages) > 3 and all(len(page["nodes"]) <= 7 for page in pages)
    assert [node for page in pages for node in page["nodes"]] == whole[2]["nodes"]
    assert pages[-1]["page"]["total"] == len(whole[2]["nodes"])
    assert "the last page" in last_text
    assert other[0] and "continues another call" in other[1]
    assert forged[0] and "not a cursor this server gave" in forged[1]


def test_roots_the_client_declares_open_their_folders(tmp_path):
    inside = tmp_path / "logs"
    inside.mkdir()
    log = inside / "app.json"
    log.write_bytes((SAMPLE_PLANS / "spark-4.3.0/multi_rewrite/eventlog.json").read_bytes())

    async def main():
        async with stdio_session(roots=[str(inside)]) as session:  # no --allow at all
            return (await call(session, "list_executions", source=str(log)),
                    await call(session, "list_executions", source="app.json"),
                    await call(session, "diff", source=real(SOURCES[0])))

    absolute, relative, outside = run(main)
    assert not absolute[0] and absolute[2]["executions"]
    assert relative[2] == absolute[2]  # a relative path stands in the first root
    assert outside[0] and "outside the folders open to this server" in outside[1]


def test_without_roots_or_allow_nothing_is_read():
    async def main():
        async with stdio_session() as session:
            return await call(session, "diff", source=real(SOURCES[0]))

    error, text, _ = run(main)
    assert error and "no folder is open to this server" in text


def test_the_server_needs_a_real_folder_to_allow(tmp_path):
    import subprocess

    from .mcp_client import server_command

    done = subprocess.run(server_command("--allow", str(tmp_path / "missing")),
                          capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == (f"aqe-inspect: error: --allow {tmp_path / 'missing'}: "
                                   "not a folder")
    assert Path(tmp_path).exists()


def test_why_takes_the_settings_a_user_would_give():
    source = "spark-4.3.0/smj_to_bhj_off/eventlog.json"
    setting = "spark.sql.adaptive.autoBroadcastJoinThreshold=10MB"

    async def main():
        async with stdio_session(*ALLOW) as session:
            return await call(session, "why", source=source, kind=["smj-to-bhj"],
                              conf=[setting])

    error, text, answer = run(main)
    assert not error, text
    assert answer == cli_json("why", real(source), "--kind", "smj-to-bhj", "--conf", setting,
                              "--format", "json")
    assert "blocked - run-time broadcasting is off" not in text


def _pages(tool: str, folder: Path, **arguments):
    """Every page of one call, in order, through the cursors."""
    async def main():
        found, cursor = [], None
        async with stdio_session("--allow", str(folder)) as session:
            while True:
                error, text, page = await call(session, tool, **arguments,
                                               **({"cursor": cursor} if cursor else {}))
                assert not error, text
                found.append(page)
                cursor = page["page"]["next_cursor"]
                if cursor is None:
                    return found
    return run(main)


def test_an_execution_list_of_10000_rows_comes_in_pages(tmp_path):
    with open(tmp_path / "many.txt", "w", encoding="utf-8") as text:
        for number in range(1, 10_001):  # 10,000 queries, each its own expression ids
            text.write(f"== Physical Plan ==\n*(1) Project [id#{number}L]\n"
                       f"+- *(1) Range (0, {number}, step=1, splits=2)\n\n")
    pages = _pages("list_executions", tmp_path, source="many.txt")
    assert len(pages) == 20 and all(page["page"]["count"] == 500 for page in pages)
    rows = [row for page in pages for row in page["executions"]]
    assert [row["id"] for row in rows] == [str(number) for number in range(1, 10_001)]
    assert {page["page"]["total"] for page in pages} == {10_000}


def test_a_plan_5000_operators_deep_comes_flat_in_pages(tmp_path):
    depth = 5000
    lines = ["== Physical Plan ==", "*(1) Project [a#1L, b#2L]"]
    lines.extend("   " * level + "+- *(1) Project [a#1L, b#2L]" for level in range(depth - 2))
    lines.append("   " * (depth - 2) + "+- *(1) Range (0, 10, step=1, splits=2)")
    (tmp_path / "deep.txt").write_text("\n".join(lines) + "\n", "utf-8")
    pages = _pages("plans", tmp_path, source="deep.txt")
    nodes = [node for page in pages for node in page["nodes"]]
    assert len(pages) == 10 and len(nodes) == depth
    assert [node["depth"] for node in nodes] == list(range(depth))
    assert [node["parent"] for node in nodes] == [None, *range(depth - 1)]
    assert nodes[-1]["name"] == "Range" and {node["name"] for node in nodes[:-1]} == {"Project"}


def test_why_says_every_reason_and_takes_one_kind_as_a_string():
    """The threshold that kept the join from broadcasting is the second reason of four: the
    text answer (what the why_no_broadcast prompt has the agent quote) holds every reason and
    need of each candidate. `kind`, `expect`, `forbid` and `fail_on` take a string for one."""
    source = "spark-4.3.0/broadcast_just_above/eventlog.json"
    log = "spark-4.3.0/multi_rewrite/eventlog.json"
    old, new = "compare/spark-4.3.0/baseline.zstd", "compare/spark-4.3.0/coalesce_off.zstd"

    async def main():
        async with stdio_session(*ALLOW) as session:
            return (await call(session, "why", source=source, kind="smj-to-bhj"),
                    await call(session, "why", source="spark-4.3.0/kept_by_cost/eventlog.json"),
                    await call(session, "check", source=log, expect="coalesced",
                               forbid="skew-join"),
                    await call(session, "compare", old=old, new=new, fail_on="none"))

    (error, text, answer), (all_error, all_text, everything), checked, compared = run(main)
    assert not error, text
    assert answer == cli_json("why", real(source), "--kind", "smj-to-bhj", "--format", "json")
    (candidate,) = answer["queries"][0]["candidates"]
    assert len(candidate["reasons"]) > 1
    assert "spark.sql.adaptive.autoBroadcastJoinThreshold=8928" in candidate["reasons"][1]["text"]
    for reason in candidate["reasons"]:
        assert f"    - {reason['text']}\n" in text + "\n", text
    assert not all_error, all_text
    for query in everything["queries"]:
        for found in query["candidates"]:
            for said in [r["text"] for r in found["reasons"]] + [
                    f"needs {need}" for need in found["needs"]]:
                assert f"    - {said}\n" in all_text + "\n", (said, all_text)
    assert not checked[0] and checked[2] == cli_json(
        "check", real(log), "-e", "coalesced", "--forbid", "skew-join", "--format", "json")
    assert not compared[0] and compared[2]["failed"] is False


def test_compare_says_executions_missing_from_the_new_run_unless_allow_missing(tmp_path):
    """Issue 48, item 12: the old run's three executions, the new run ended (exit code 1)
    after the first: unfinished, naming the two missing; `allow_missing` the old behaviour.
    Each answer is the command line's JSON."""
    from .test_compare import _ended_early

    old, new = _ended_early(tmp_path, "exit 1")

    async def main():
        async with stdio_session("--allow", str(tmp_path)) as session:
            return (await call(session, "compare", old="old.json", new="new.json"),
                    await call(session, "compare", old="old.json", new="new.json",
                               allow_missing=True))

    missing, allowed = run(main)
    assert not missing[0] and missing[1].startswith("aqe-inspect compare: UNFINISHED: 2 ")
    assert missing[2]["failed"] is True and missing[2]["summary"]["missing"] == 2
    assert all("missing from the new run" in text for text in missing[2]["unpartnered"])
    real_old, real_new = str(Path(old).resolve()), str(Path(new).resolve())
    assert missing[2] == cli_json("compare", real_old, real_new, "--format", "json")
    assert not allowed[0] and allowed[1].startswith("aqe-inspect compare: PASS")
    assert allowed[2]["allow_missing"] is True and allowed[2]["failed"] is False
    assert allowed[2] == cli_json("compare", real_old, real_new, "--allow-missing",
                                  "--format", "json")
