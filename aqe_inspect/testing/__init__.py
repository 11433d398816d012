"""The pytest helper: assert what AQE did to a live PySpark DataFrame, beside the commands.

    assertions.py     `assert_aqe(df, expect=[...], forbid=[...])`: the DataFrame's plan (or the
                      session's recorded SQL execution) diffed and held to expectations
    connect.py        the same on a Spark Connect DataFrame: its action's metrics tree against
                      its formatted explain, or the server's event log / UI by operation or tag
    pytest_plugin.py  the pytest plugin (entry point `pytest11`): the `aqe` fixture, the
                      `@pytest.mark.aqe` marker, plan snapshots beside the tests

May import: `api` and the library below it: `sources`, `parsing`, `plan`, `rewrites`, `whynot`, `advice`,
`expectations`, `formats`, `errors`, `signals`, `version`; never the command line. PySpark is never imported here: a DataFrame brings its
own py4j objects, so `import aqe_inspect.testing` works without the `spark` extra, and pytest
loading the plugin in any project imports nothing heavy (the names below load on first use).
"""

from __future__ import annotations

from typing import Any

__all__ = ["assert_aqe", "plan_report", "recorded_executions", "selected"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import assertions

        return getattr(assertions, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
