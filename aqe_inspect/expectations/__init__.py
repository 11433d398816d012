"""What a pipeline expects of AQE, and holding reports to it.

    config.py       --expect/--forbid, `aqe-expect.toml` (or `[tool.aqe-inspect]`), with the
                    line and column of every mistake
    selection.py    which queries a user means: an execution id, or a regular expression
    userpattern.py  users' regular expressions, Python's syntax run in linear time (RE2)
    check.py        expectations held against a report, query by query as it is read
    snapshot.py     plan snapshots: a final plan normalised, compared with the one kept

May import: `advice`, `whynot`, `rewrites`, `plan`, `sources` (its JSON reader), `errors`.
"""
