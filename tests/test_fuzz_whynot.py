"""Bad input to `why` under adversarial bytes: a spark-defaults.conf of any content reads or
fails with one line naming the file; `why` on any text answers or fails the same way."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aqe_inspect.errors import InspectError
from aqe_inspect.whynot.settings import read_conf_file

LINES = st.lists(st.one_of(
    st.text(max_size=40),
    st.sampled_from(["spark.sql.adaptive.autoBroadcastJoinThreshold 10MB",
                     "spark.sql.adaptive.skewJoin.enabled=maybe", "# comment", "a\\",
                     "spark.sql.adaptive.skewJoin.skewedPartitionFactor: 2.5", "\x00",
                     "spark.sql.adaptive.advisoryPartitionSizeInBytes -1k"])), max_size=12)


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
