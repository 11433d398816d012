"""Spark Connect's metrics tree as the plan model, and Connect executions' labels, without a
server: the rows below are those a PySpark 4.3.0 client received for the sample scenario
`skew_join` from a Connect server on loopback (names, plan ids, parent ids, metric keys), in
the order `executionInfo.metrics` keeps them."""

from __future__ import annotations

import pytest

from aqe_inspect.errors import InspectError
from aqe_inspect.plan.operators import shuffle_read_modes
from aqe_inspect.sources.connect import MetricRow, metrics_tree, read_mode, rows_from
from aqe_inspect.sources.eventlog.connect_labels import (connect_description,
                                                         execution_id_in_tags, has_operation,
                                                         has_user_tag, readable)
from aqe_inspect.rewrites.engine import diff_document


def _rows(listing):
    return [MetricRow(name, plan_id, parent, tuple((k, v, "sum") for k, v in metrics.items()))
            for plan_id, parent, name, metrics in listing]


SKEW_JOIN = [
    (278, 0, "Exchange", {"numPartitions": 20}),
    (285, 1, "Exchange", {"numPartitions": 20}),
    (410, 2, "Exchange", {"numPartitions": 20}),
    (440, 3, "WholeStageCodegen (6)", {}),
    (230, 231, "Range", {"numOutputRows": 20000}),
    (231, 232, "Filter", {"numOutputRows": 20000}),
    (233, 234, "Range", {"numOutputRows": 97}),
    (239, 239, "AdaptiveSparkPlan", {}),
    (3, 239, "ResultQueryStage", {}),
    (232, 277, "Project", {}),
    (277, 278, "WholeStageCodegen (1)", {}),
    (234, 284, "Project", {}),
    (284, 285, "WholeStageCodegen (2)", {}),
    (0, 390, "ShuffleQueryStage", {}),
    (1, 392, "ShuffleQueryStage", {}),
    (390, 398, "AQEShuffleRead", {"numEmptyPartitions": 0, "numSkewedPartitions": 1,
                                  "numSkewedSplits": 2, "numCoalescedPartitions": 2,
                                  "partitionDataSize": 7598, "numPartitions": 4}),
    (398, 399, "InputAdapter", {}),
    (399, 400, "Sort", {}),
    (400, 401, "WholeStageCodegen (3)", {}),
    (392, 402, "AQEShuffleRead", {"numEmptyPartitions": 0, "partitionDataSize": 3620,
                                  "numCoalescedPartitions": 2, "numPartitions": 4}),
    (402, 403, "InputAdapter", {}),
    (403, 404, "Sort", {}),
    (404, 405, "WholeStageCodegen (4)", {}),
    (401, 406, "InputAdapter", {}),
    (405, 406, "InputAdapter", {}),
    (406, 407, "SortMergeJoin(skew=true)", {"numOutputRows": 20000}),
    (407, 408, "Project", {}),
    (408, 409, "HashAggregate", {"numOutputRows": 106}),
    (409, 410, "WholeStageCodegen (5)", {}),
    (2, 436, "ShuffleQueryStage", {}),
    (436, 438, "AQEShuffleRead", {"numEmptyPartitions": 0, "partitionDataSize": 3958,
                                  "numCoalescedPartitions": 1, "numPartitions": 1}),
    (438, 439, "InputAdapter", {}),
    (439, 440, "HashAggregate", {"numOutputRows": 97}),
]


def test_the_metrics_tree_is_the_final_plan_with_its_reads_modes_and_metrics():
    query, notes = metrics_tree(_rows(SKEW_JOIN), "skew_join")
    assert notes == ()
    assert query.adaptive and query.is_final_plan is True
    names = [node.name for node in query.final.walk()]
    assert "WholeStageCodegen" not in " ".join(names) and "InputAdapter" not in names
    assert names[:4] == ["ResultQueryStage", "HashAggregate", "AQEShuffleRead",
                         "ShuffleQueryStage"]
    reads = [n for n in query.final.walk() if n.name == "AQEShuffleRead"]
    assert [shuffle_read_modes(r) for r in reads] == [("coalesced",), ("coalesced", "skewed"),
                                                      ("coalesced",)]
    assert reads[1].metrics["number of skewed partition splits"] == 2
    assert reads[1].metrics["number of coalesced partitions"] == 2
    stages = [n for n in query.final.walk() if n.name == "ShuffleQueryStage"]
    assert [s.args for s in stages] == ["2", "0", "1"]  # the stage ids
    join = next(n for n in query.final.walk() if n.name == "SortMergeJoin")
    assert join.title == "SortMergeJoin(skew=true)" and join.codegen_stage == 5
    report = diff_document(_document(query))
    kinds = sorted(r.kind for q in report.queries for r in q.rewrites)
    assert kinds == ["coalesced", "coalesced", "coalesced", "skew-join"]
    skew = next(r for q in report.queries for r in q.rewrites if r.kind == "skew-join")
    assert skew.numbers["skewed_partitions"] == 1 and skew.numbers["skewed_splits"] == 2


def _document(query):
    from aqe_inspect.plan.model import Document

    return Document((query,), "rows")


@pytest.mark.parametrize("keys, mode", [
    ({"numPartitions"}, "local"),
    ({"numPartitions", "numEmptyPartitions"}, "local"),
    ({"numPartitions", "partitionDataSize"}, ""),
    ({"numPartitions", "partitionDataSize", "numCoalescedPartitions"}, "coalesced"),
    ({"numPartitions", "partitionDataSize", "numSkewedPartitions", "numSkewedSplits"},
     "skewed"),
    ({"numPartitions", "partitionDataSize", "numSkewedPartitions", "numSkewedSplits",
      "numCoalescedPartitions"}, "coalesced and skewed"),
    (set(), ""),
])
def test_a_reads_mode_is_its_metric_keys(keys, mode):
    assert read_mode(keys) == mode


def test_a_stage_id_equal_to_an_operator_id_still_builds_the_tree():
    # A fresh server's first query: stage 1 and the Project with plan id 1 share an id.
    rows = _rows([
        (9, 9, "AdaptiveSparkPlan", {}),
        (1, 9, "ResultQueryStage", {}),
        (5, 1, "HashAggregate", {}),
        (4, 5, "AQEShuffleRead", {"numPartitions": 1, "partitionDataSize": 10,
                                  "numCoalescedPartitions": 1}),
        (0, 4, "ShuffleQueryStage", {}),
        (3, 0, "Exchange", {"numPartitions": 20}),
        (2, 3, "HashAggregate", {}),
        (1, 2, "Project", {}),
        (7, 1, "Range", {}),
    ])
    query, _ = metrics_tree(rows, "ids")
    shape = [(n.name, [c.name for c in n.children]) for n in query.root.walk()]
    assert ("ResultQueryStage", ["HashAggregate"]) in shape
    assert ("Project", ["Range"]) in shape
    assert sum(1 for _ in query.root.walk()) == 9


def test_rows_come_from_pyspark_objects_or_their_dicts_and_bad_trees_are_errors():
    class Metric:
        def __init__(self, name, value, metric_type):
            self.name, self.value, self.metric_type = name, value, metric_type

    class Plan:
        def __init__(self, name, plan_id, parent, metrics):
            self.name, self.plan_id, self.parent_plan_id, self.metrics = \
                name, plan_id, parent, metrics

    objects = rows_from([Plan("Exchange", 2, 2, [Metric("shuffleWriteTime", 3_000_000,
                                                        "nsTiming")])])
    dicts = rows_from([{"name": "Exchange", "plan_id": 2, "parent_plan_id": 2,
                        "metrics": [{"name": "shuffleWriteTime", "value": 3_000_000,
                                     "type": "nsTiming"}]}])
    assert objects == dicts
    query, _ = metrics_tree(objects, "x")
    assert query.root.metrics == {"shuffle write time": 3}  # ns -> ms
    with pytest.raises(InspectError, match="empty"):
        metrics_tree([], "x")
    with pytest.raises(InspectError, match="no root"):
        metrics_tree(_rows([(1, 2, "A", {}), (2, 1, "B", {})]), "x")


# ---- labels of Connect executions -------------------------------------------------------------

#: The start event of a Connect execution as a PySpark 4.3.0 server logged it (cut as Spark
#: cuts descriptions).
DESCRIPTION = ('Spark Connect - session_id: "e870b63d-f0ab-4381-ae89-2b65bfa464b2"\nplan {\n'
               '  root {\n    common {\n      plan_id: 6\n    }\n    project {\n      input {\n'
               '        common {\n          plan_id: 5\n        }\n        join {\n'
               '          left {\n ...call_site: "/work/x/sample_plans/generate.py:226"\n')
TAGS = [
    "SparkConnect_OperationTag_User__Session_e870b63d-f0ab-4381-ae89-2b65bfa464b2_Operation_"
    "958ea8c9-8a53-439c-8684-b1b12402a235",
    "SparkConnect_SessionTag_User__Session_e870b63d-f0ab-4381-ae89-2b65bfa464b2_Tag_t-smj",
    "spark-session-f44798db-4c9d-4f0f-ad5a-54e33acd1e9f-execution-root-id-0",
    "spark-session-f44798db-4c9d-4f0f-ad5a-54e33acd1e9f",
]


def test_a_connect_description_becomes_tags_relation_call_site_session_operation():
    label = connect_description({"jobTags": TAGS}, DESCRIPTION)
    assert label == ("Spark Connect [t-smj] project at generate.py:226 (session "
                     "e870b63d-f0ab-4381-ae89-2b65bfa464b2, operation "
                     "958ea8c9-8a53-439c-8684-b1b12402a235)")
    assert connect_description({}, "count at x.py:3") == "count at x.py:3"
    assert readable(DESCRIPTION, []).startswith("Spark Connect project at generate.py:226 "
                                                "(session e870b63d")
    assert has_user_tag(TAGS, "t-smj") and not has_user_tag(TAGS, "t-sm")
    assert has_operation(TAGS, "958ea8c9-8a53-439c-8684-b1b12402a235")
    assert execution_id_in_tags(TAGS) == 0
