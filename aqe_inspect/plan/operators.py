"""What kind of operator a node is, whatever Spark line or vendor printed it.

Spark renamed operators over the years (CustomShuffleReader -> AQEShuffleRead) and vendors
wrap the same operators in their own names (GpuShuffledHashJoin, PhotonBroadcastHashJoin,
CometSortMergeJoin, ShuffledHashJoinExecTransformer). Detectors ask `family(node)` for the
Spark operator a node stands for, so they never match one vendor's spelling.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from .model import MAX_DIGITS, Node

VENDOR_PREFIXES = ("Gpu", "Photon", "Comet", "Velox", "Columnar")
VENDOR_SUFFIXES = ("ExecTransformer", "Transformer", "Exec")

#: Old and vendor names of one Spark operator, by the name Spark uses today.
ALIASES = {
    "CustomShuffleReader": "AQEShuffleRead",
    "LocalShuffleReader": "AQEShuffleRead",
    "ShuffleReader": "AQEShuffleRead",
    "AQEShuffleReader": "AQEShuffleRead",
    "ShuffleExchange": "Exchange",
    "ShuffleExchangeSink": "Exchange",
    "ShuffleExchangeSource": "Exchange",
    "HashJoin": "ShuffledHashJoin",
    "ShuffledHashJoinExecTransformer": "ShuffledHashJoin",
    "EmptyRelationExec": "EmptyRelation",
}

JOINS = ("SortMergeJoin", "BroadcastHashJoin", "ShuffledHashJoin", "BroadcastNestedLoopJoin",
         "CartesianProduct")
QUERY_STAGES = ("ShuffleQueryStage", "BroadcastQueryStage", "TableCacheQueryStage",
                "ResultQueryStage", "ReusedQueryStage")

PARTITIONING = re.compile(
    r"(?P<kind>hashpartitioning|rangepartitioning|RoundRobinPartitioning|"
    r"SinglePartition|KeyGroupedPartitioning|UnknownPartitioning)"
)
PLAN_IDS = re.compile(r"\[(?:id=#|plan_id=)\d+\]")
SKEW_MARK = re.compile(r"\bskew=true\b|\bisSkew(?:Join)?=true\b", re.IGNORECASE)
SPLIT_MARKS = re.compile(r"[][(){},'\"`]")
BUILD_SIDE = re.compile(r"\bBuild(Left|Right)\b")
SHUFFLE_READ_MODES = {mode: re.compile(rf"\b{mode}\b") for mode in ("coalesced", "skewed", "local")}


#: `family` by operator name, for names of a sane length: every detector asks of every node,
#: and names repeat (the cache outlives the plan it read, so it is bounded).
_FAMILIES: Dict[str, str] = {}


def family(node: Node) -> str:
    """The Spark operator `node` stands for: `AQEShuffleRead` for a GpuCustomShuffleReader."""
    found = _FAMILIES.get(node.name)  # the common case without a call
    return found if found is not None else name_family(node.name)


def name_family(name: str) -> str:
    """`family` of an operator known by its name only (a sparkPlanInfo node's)."""
    found = _FAMILIES.get(name)
    if found is None:
        found = _family(name)
        if len(name) <= 100 and len(_FAMILIES) < 4096:
            _FAMILIES[name] = found
    return found


def _family(name: str) -> str:
    name = ALIASES.get(name, name)
    if name in ALIASES.values() or name in JOINS or name in QUERY_STAGES:
        return name
    stripped = name
    for prefix in VENDOR_PREFIXES:
        if stripped.startswith(prefix) and len(stripped) > len(prefix):
            stripped = stripped[len(prefix):]
            break
    for suffix in VENDOR_SUFFIXES:
        if stripped.endswith(suffix) and len(stripped) > len(suffix):
            stripped = stripped[: -len(suffix)]
            break
    return ALIASES.get(stripped, stripped)


def is_join(node: Node) -> bool:
    return family(node) in JOINS


def is_query_stage(node: Node) -> bool:
    return family(node) in QUERY_STAGES


def is_shuffle_read(node: Node) -> bool:
    return family(node) == "AQEShuffleRead"


def shuffle_read_modes(node: Node) -> Tuple[str, ...]:
    """What a shuffle read says it does: `coalesced`, `skewed`, `local` (or several)."""
    text = " ".join(x for x in (node.args, node.description or "",
                                node.details.get("Arguments", "")) if x)
    if node.name == "LocalShuffleReader":
        text += " local"
    # The word as a substring first: the search for it as a word only where it stands.
    return tuple(mode for mode, word in SHUFFLE_READ_MODES.items()
                 if mode in text and word.search(text))


#: The families `is_empty_relation` can hold true of.
EMPTY_RELATION_FAMILIES = ("EmptyRelation", "LocalTableScan")


def mentions(node: Node, word: str) -> bool:
    """Whether `word` (with no space in it) stands in `node.text`, without building the text:
    the text joins the parts with spaces, so such a word stands within one part."""
    if word in node.args or (node.description and word in node.description):
        return True
    for value in node.details.values():
        if word in value:
            return True
    return False


def is_empty_relation(node: Node) -> bool:
    """AQE's empty relation: `EmptyRelation` (4.x), or `LocalTableScan <empty>` (3.x)."""
    fam = family(node)
    if fam == "EmptyRelation":
        return True
    return fam == "LocalTableScan" and (
        node.args.startswith("<empty>") or node.details.get("Arguments", "").startswith("<empty>")
    )


def is_skew_join(node: Node) -> bool:
    return is_join(node) and bool(SKEW_MARK.search(f"{node.title} {node.args}"))


def build_side(node: Node) -> Optional[str]:
    for text in (node.args, node.details.get("Build side", ""), node.details.get("Arguments", "")):
        match = BUILD_SIDE.search(text)
        if match:
            return "Build" + match.group(1)
    return None


def split_top_level(text: str, first: Optional[int] = None) -> List[str]:
    """Split at commas outside brackets and quotes: `[a#1, b#2], [c#3], Inner`. With `first`,
    only the first parts that many (the same as `split_top_level(text)[:first]`), reading
    no further than they end."""
    parts, depth, quote, start = [], 0, "", 0
    found = 0
    for match in SPLIT_MARKS.finditer(text):  # only the characters that matter
        char = match.group()
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"`":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0:  # a comma
            index = match.start()
            part = text[start:index].strip()
            parts.append(part)
            start = index + 1
            if first is not None and part:
                found += 1
                if found >= first:
                    return [p for p in parts if p]
    parts.append(text[start:].strip())
    parts = [p for p in parts if p]
    return parts if first is None else parts[:first]


def join_keys(node: Node) -> Optional[Tuple[str, str]]:
    """The (left keys, right keys) of an equi-join, as text: from detail fields in formatted
    mode, from the leading `[...], [...]` arguments in simple mode."""
    left, right = node.details.get("Left keys"), node.details.get("Right keys")
    if left is not None and right is not None:
        return left.strip(), right.strip()
    args = SKEW_MARK.sub("", node.args).replace("()", "").strip()
    parts = split_top_level(args)
    if len(parts) >= 2 and parts[0].startswith("[") and parts[1].startswith("["):
        return parts[0], parts[1]
    return None


def join_type(node: Node) -> Optional[str]:
    if "Join type" in node.details:
        return node.details["Join type"].strip()
    for part in split_top_level(SKEW_MARK.sub("", node.args).replace("()", "")):
        word = part.split(" ")[0]
        if word in ("Inner", "LeftOuter", "RightOuter", "FullOuter", "LeftSemi", "LeftAnti",
                    "Cross", "ExistenceJoin", "LeftSingle"):
            return word
    return None


def partitioning(node: Node) -> Optional[str]:
    """`hashpartitioning(k#1, 200)` of an exchange, as printed."""
    for text in (node.args, node.details.get("Arguments", "")):
        match = PARTITIONING.search(text)
        if match:
            parts = split_top_level(text[match.start():], 1)
            return parts[0] if parts else match.group(0)
    return None


def partition_count(node: Node) -> Optional[int]:
    return spec_partition_count(partitioning(node))


def spec_partition_count(spec: Optional[str]) -> Optional[int]:
    """`partition_count` of a partitioning spec already read (`partitioning(node)`)."""
    if not spec:
        return None
    if spec.startswith("SinglePartition"):
        return 1
    # The number closing the spec, before its `)`: read from the end rather than searched
    # with `(\d+)\)?$`, which backtracks through a long run of digits from each one.
    body = spec[:-1] if spec.endswith(")") else spec
    start = len(body)
    while start > 0 and body[start - 1].isdecimal():
        start -= 1
    digits = body[start:]
    return int(digits) if digits and len(digits) <= MAX_DIGITS else None


def normalized_text(node: Node) -> str:
    """What the node computes, for comparing an initial and a final plan: its arguments and
    detail fields without what re-planning changes (plan ids, the skew marker). Expression
    ids stay: Spark keeps them through AQE's re-planning, and they tell columns apart."""
    text = " ".join((family(node), node.args, *node.details.values()))
    # Each substitution only where its pattern can match: most nodes print neither a plan id
    # (all hold `id=`) nor a skew marker (all hold `=` then a `t` of either case).
    if "id=" in text:
        text = PLAN_IDS.sub("", text)
    if "=t" in text or "=T" in text:
        text = SKEW_MARK.sub("", text)
    return " ".join(text.replace("()", "").split())


def node_summary(node: Node) -> str:
    """An operator's arguments as one text, without what its heading already says: the
    tree line's arguments (or the `Arguments` detail when the line has none) and the text
    after its id, each once."""
    title = node.title or node.name
    extra = title[len(node.name):].strip() if title.startswith(node.name) else ""
    pieces: List[str] = []
    for piece in (node.args if node.args not in title else "",
                  node.details.get("Arguments", "") if not node.args else "",
                  node.description or ""):
        piece = piece.strip()
        if extra and piece.startswith(extra):
            piece = piece[len(extra):].strip()
        if piece and not any(piece in seen for seen in pieces):
            pieces.append(piece)
    return " ".join(pieces)


def parents(root: Node) -> Dict[int, Node]:
    """Each node's parent (by id()), walked without recursion."""
    found: Dict[int, Node] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for child in node.children:
            found[id(child)] = node
            stack.append(child)
    return found
