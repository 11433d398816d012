"""The fleet scan: every SQL execution of many event logs as one table, built by a PySpark job,
and summed up for people.

    table.py    the table's columns (the contract every writer and reader shares); one row
    rows.py     one event log (path or bytes) -> its rows; pure Python, never raises
    job.py      the PySpark job: inputs -> log units -> rows in executors -> Parquet/CSV
    tasks.py    what the executors' Python workers run (shipped by value, stdlib at the top)
    summary.py  the summary over the rows, and its text and Markdown
    html.py     the summary as one HTML page with charts
    summary_formats.py  the summary in the format asked for
    submit.py   the file `spark-submit` (or `python -m`) runs: the `fleet` command

`aqe-inspect fleet PATH... --output DIR` runs the job; `python -m aqe_inspect.fleet.submit` and
`spark-submit <the installed aqe_inspect>/fleet/submit.py` run the same command on a cluster.

May import: `api` and the library below it: `sources`, `parsing`, `plan`, `rewrites`, `whynot`, `advice`,
`expectations`, `formats`, `errors`, `signals`, `version`; never the command line, but for
`submit.py`, the file spark-submit runs, which is the command's.
"""
