"""Lark grammars of aqe-inspect, shipped inside the wheel as `aqe_inspect.grammars`."""
