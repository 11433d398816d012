"""The plan model: what a Spark physical plan says, in the project's own frozen types.

    model.py      Document, Query, Node, Subquery, Execution, Application (frozen dataclasses)
    operators.py  what kind of operator a node is, across Spark lines and vendors; its figures
    units.py      Spark's byte sizes and row counts as SQLConf reads and explain prints them
    align.py      the operators of a final plan paired with those of its initial plan

Every layer above reads and builds these types; this folder knows nothing of where a plan
came from or what is done with it.

May import: `errors`.
"""
