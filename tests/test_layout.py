"""The package's layout: folders that follow the data, imported one way down, with no circle.

The import graph is read from the installed package's source (every `import` and
`from ... import`, those inside functions too: an import made late is still a dependency),
module by module. Two promises are held:

- no circle: no module depends, through any chain of imports, on itself;
- each folder imports only what its `__init__` docstring's "May import:" line names (the
  rule table below is that line, written once more; a test holds the two to each other).

`python -m pytest tests/test_layout.py -q` shows a broken rule as the modules and the import.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from typing import Dict, List, Set


import pytest

ROOT = Path(__file__).resolve().parent.parent

PACKAGE = "aqe_inspect"

#: Below the library's front door (`api`): everything the library is made of.
LIBRARY = {"sources", "parsing", "plan", "rewrites", "whynot", "advice", "expectations",
           "formats", "errors", "signals", "version"}

#: What each part of the package may import (names of top-level modules and folders).
ALLOWED: Dict[str, Set[str]] = {
    "errors": set(),
    "signals": set(),
    # The compiled core's switch (which of a module's two routes runs): imported first.
    "native": set(),
    "version": set(),
    "plan": {"errors"},
    "parsing": {"plan", "errors", "native"},
    "sources": {"parsing", "plan", "errors", "signals", "native"},
    "rewrites": {"plan", "errors"},
    "whynot": {"rewrites", "plan", "errors"},
    # What to change so that a rewrite fires: built on the why-not answers' facts.
    "advice": {"whynot", "rewrites", "plan", "errors"},
    "expectations": {"advice", "whynot", "rewrites", "plan", "sources", "errors"},
    "compare": {"sources", "parsing", "plan", "rewrites", "whynot", "expectations", "errors"},
    "formats": {"expectations", "advice", "whynot", "rewrites", "plan", "errors", "version"},
    # The front door: the library below it, the comparison of two runs, and the fleet scan,
    # imported inside `api.fleet` only (fleet may import api; no module of it does, so no circle).
    "api": LIBRARY | {"fleet", "compare", "native"},
    # The command line turns options into one call of the API and hands the result to
    # `api.write`: nothing below the API (errors, signals, formats reached through it).
    "cli": {"api", "version", "mcp_server"},
    "fleet": LIBRARY | {"api"},
    "testing": LIBRARY | {"api"},
    # The MCP server for AI agents: a front door of its own over the API, as the CLI is (the
    # `mcp` command starts it).
    "mcp_server": LIBRARY | {"api"},
    "__main__": {"cli"},
    "": {"api", "errors", "plan", "version", "native"},  # the package's own __init__
}

#: Single modules allowed more than their folder: the file spark-submit runs is the CLI's.
EXCEPTIONS: Dict[str, Set[str]] = {"fleet.submit": {"cli"}}


def _package_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


def _module_name(root: Path, path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> Dict[str, Set[str]]:
    """Each module of the package -> the modules of the package it imports."""
    root = _package_dir()
    files = {_module_name(root, path): path for path in root.rglob("*.py")
             if "grammars" not in path.relative_to(root).parts}
    graph: Dict[str, Set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    child = f"{target}.{alias.name}"
                    graph[name].add(child if child in files else target)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    target = alias.name
                    while target and target not in files:
                        target = target.rpartition(".")[0]
                    graph[name].add(target)
        graph[name] = {target for target in graph[name] if target in files and target != name}
    return graph


def circles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected parts of more than one module (Tarjan's, with an explicit
    stack)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(graph[start])))]
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        part.append(member)
                        if member == node:
                            break
                    if len(part) > 1:
                        found.append(sorted(part))
    return found


def _part(module: str) -> str:
    """`aqe_inspect.sources.eventlog.files` -> `sources`; the package itself -> ``."""
    rest = module[len(PACKAGE) + 1:] if module != PACKAGE else ""
    return rest.split(".")[0]


def test_the_import_graph_has_no_circle():
    graph = import_graph()
    assert len(graph) > 60  # the whole package was read
    found = circles(graph)
    assert not found, "import circles: " + "; ".join(
        " <-> ".join(name[len(PACKAGE) + 1:] for name in part) for part in found)


def test_the_circle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]


def test_each_part_imports_only_what_its_rule_allows():
    graph = import_graph()
    broken = []
    for module, targets in sorted(graph.items()):
        part = _part(module)
        assert part in ALLOWED, f"{module}: a new top-level part; give it a rule here"
        allowed = ALLOWED[part] | EXCEPTIONS.get(module[len(PACKAGE) + 1:], set())
        for target in sorted(targets):
            target_part = _part(target)
            if target_part != part and target_part not in allowed:
                broken.append(f"{module} imports {target}")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("folder", sorted(name for name in ALLOWED
                                          if name and (_package_dir() / name).is_dir()))
def test_each_folder_says_what_it_holds_and_may_import(folder):
    doc = ast.get_docstring(ast.parse((_package_dir() / folder / "__init__.py")
                                      .read_text("utf-8")))
    assert doc and len(doc.splitlines()) >= 3, f"{folder}/__init__.py says what it holds"
    match = re.search(r"^May import:(.*?)(?:\n\n|\Z)", doc, re.M | re.S)
    assert match, f"{folder}/__init__.py has no 'May import:' line"
    named = set(re.findall(r"`([a-z_]+)`", match.group(1)))
    layers = set(ALLOWED) - {""}
    assert named & layers == ALLOWED[folder] & layers, folder


def test_the_layout_page_names_every_module():
    """docs/layout.md names each module of the package by its file name: a module added
    without a word on the page fails here."""
    page = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    package = ROOT / "aqe_inspect"
    unnamed = []
    for path in sorted([*package.rglob("*.py"), *package.rglob("*.pyx")]):
        if path.name == "__init__.py" or "__pycache__" in path.parts:
            continue
        name = path.name
        kernel = name.startswith("_") and (name.endswith("_c.pyx") or name.endswith("_py.py"))
        if kernel:
            found = name in page or name.rsplit("_", 1)[0] in page
        else:
            found = name in page
        if not found:
            unnamed.append(str(path.relative_to(package)))
    assert not unnamed, f"docs/layout.md does not name: {unnamed}"
