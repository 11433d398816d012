"""The fleet scan: every SQL execution of many event logs as one table (`table.py`), built by a
PySpark job, and summed up for people."""
