"""What AQE did: each adaptive plan of a query, its initial and final trees, and the rewrites
found between them, as findings.

    detectors/    one module per rewrite kind; `detectors.DETECTORS` is the one list of kinds
    kinds.py      the kinds in report order (a stable contract), read from that list
    engine.py     a query -> its adaptive plans (PlanPair) -> every detector -> a QueryReport
    findings.py   Rewrite, Observation, QueryReport, Report, ReportStream: the answer of `diff`
    locations.py  where a finding points: the file and line of the plan text it is about
    timeline.py   an event log's AQE updates of one execution, what changed at each

May import: `plan`, `errors`.
"""
