"""Bad input to `why` under adversarial bytes: a spark-defaults.conf of any content reads or
fails with one line naming the file; `why` on any text answers or fails the same way."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.errors import InspectError
from aqe_inspect.whynot.settings import read_conf_file

#: Pieces of Java properties syntax: escapes (good and malformed), separators, continuations,
#: comments, line terminators Java knows and those it does not.
PROPERTY_PIECES = st.sampled_from([
    "\\u0041", "\\u00e9", "\\ud800", "\\uD83D\\uDE00", "\\u00", "\\uzz12", "\\u", "\\t",
    "\\n", "\\r", "\\f", "\\b", "\\ ", "\\=", "\\:", "\\\\", "\\", "=", ":", " ", "\t",
    "\f", "\x0b", "#", "!", "\n", "\r", "\r\n", "\\\n", "\\\n   ", "\u2028", "\x85",
    "spark.sql.adaptive.enabled", "spark.sql.adaptive.autoBroadcastJoinThreshold", "10MB",
    "true", "-1", "é", "\\u001b[31m", "\x1b[2J", "spark.sql.shuffle.partitions"])
LINES = st.lists(st.one_of(
    st.text(max_size=40),
    st.lists(PROPERTY_PIECES, max_size=12).map("".join),
    st.sampled_from(["spark.sql.adaptive.autoBroadcastJoinThreshold 10MB",
                     "spark.sql.adaptive.skewJoin.enabled=maybe", "# comment", "a\\",
                     "spark.sql.adaptive.skewJoin.skewedPartitionFactor: 2.5", "\x00",
                     "spark.sql.adaptive.advisoryPartitionSizeInBytes -1k",
                     "spark.sql.adaptive.\\u0065nabled=\\u0074rue",
                     "spark.sql.adaptive.autoBroadcastJoinThreshold=\\u0031\\u00g0MB"])),
    max_size=12)


@settings(max_examples=150, deadline=None)
@given(body=LINES, junk=st.binary(max_size=40))
def test_any_conf_file_reads_or_fails_in_one_line(tmp_path_factory, body, junk):
    path = tmp_path_factory.mktemp("conf") / "spark-defaults.conf"
    path.write_bytes("\n".join(body).encode("utf-8", "surrogatepass") + junk)
    try:
        found = read_conf_file(str(path))
    except InspectError as error:
        text = str(error)
        assert "\n" not in text and str(path) in text
    else:
        assert all(isinstance(k, str) and isinstance(v.value, str) for k, v in found.items())


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=LINES, separator=st.sampled_from(["\n", "\r\n", "\r"]))
def test_why_with_any_conf_file_answers_or_fails_in_one_line(tmp_path_factory, capsys, body,
                                                            separator):
    """Through the command line: exit 0 or 2 (1 never: why judges nothing), one line naming
    the file, and nothing the file holds printed raw (control characters escaped)."""
    from aqe_inspect.cli import main

    from .conftest import SAMPLE_PLANS

    path = tmp_path_factory.mktemp("conf") / "spark-defaults.conf"
    path.write_bytes(separator.join(body).encode("utf-8", "surrogatepass"))
    plan = SAMPLE_PLANS / "spark-4.3.0" / "smj_to_bhj_off" / "formatted_after.txt"
    code = main(["why", str(plan), "--conf-file", str(path)])
    out, err = capsys.readouterr()
    assert code in (0, 2), (code, err)
    if code == 2:
        assert err.startswith(f"aqe-inspect: error: {path}") and err.count("\n") == 1, err
        assert "internal error" not in err
    else:
        assert err == "" and out
    assert "\x1b" not in out + err and "\x00" not in out + err


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300))
def test_why_on_any_text_answers_or_fails_in_one_line(tmp_path_factory, capsys, text):
    from aqe_inspect.cli import main

    path = tmp_path_factory.mktemp("plan") / "plan.txt"
    path.write_text("== Physical Plan ==\n" + text, encoding="utf-8", errors="replace")
    code = main(["why", str(path)])
    out, err = capsys.readouterr()
    assert code in (0, 2), (code, err)
    if code == 2:
        assert err.startswith("aqe-inspect: error: ") and err.count("\n") == 1
    assert "Traceback" not in err


def test_why_on_a_5000_level_plan(tmp_path, capsys):
    """Every walk of the explainers is iterative: a plan 5,000 operators deep is answered."""
    from aqe_inspect.cli import main

    depth, lines, pad = 5000, ["== Physical Plan ==", "AdaptiveSparkPlan isFinalPlan=true",
                               "+- == Final Plan =="], "   "
    for level in range(depth):
        lines.append(f"{pad}{'+- ' if level else ''}Project [c#{level}L]")
        pad += "   " if level else ""
    join = pad + "   "
    lines += [f"{join}+- SortMergeJoin [k#1L], [k#2L], Inner",
              f"{join}   :- ShuffleQueryStage 0",
              f"{join}   :  +- Exchange hashpartitioning(k#1L, 20), REPARTITION_BY_NUM, [plan_id=1]",
              f"{join}   :     +- LocalTableScan [k#1L]",
              f"{join}   +- ShuffleQueryStage 1",
              f"{join}      +- Exchange hashpartitioning(k#2L, 20), ENSURE_REQUIREMENTS, [plan_id=2]",
              f"{join}         +- LocalTableScan [k#2L]"]
    plan = tmp_path / "deep.txt"
    plan.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["why", str(plan), "--kind", "coalesced"]) == 0
    out = capsys.readouterr().out
    assert "REPARTITION_BY_NUM" in out and "blocked" in out
