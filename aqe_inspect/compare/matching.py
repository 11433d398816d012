"""Which execution of the new run is which of the old one.

Two runs of the same job give their executions other ids (a retry, one query more or less,
another order), so executions are paired by what they are, in three rounds, each over what
the rounds before left:

1. the same description and the same shape: `description`;
2. the same description (the plan changed shape: a strategy the planner chose differently):
   `description`;
3. the same shape (the description changed or is Spark's default call site, or a plan text
   has none): `shape`.

Within a round, executions that tie are paired in the order they ran (execution id, or the
plan's place in the text). An empty description never pairs anything: it says nothing.
Descriptions are compared whole, after trimming white space at their ends.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Callable, Deque, Dict, Hashable, List, Sequence, Tuple

from .summary import ExecutionSummary

DESCRIPTION = "description"
SHAPE = "shape"


def _description(summary: ExecutionSummary) -> str:
    return summary.description.strip()


def _round(old: Sequence[int], new: Sequence[int], olds: Sequence[ExecutionSummary],
           news: Sequence[ExecutionSummary], key: Callable[[ExecutionSummary], Hashable],
           basis: str, pairs: List[Tuple[int, int, str]]) -> Tuple[List[int], List[int]]:
    """Pair the indexes `old` and `new` whose `key` is equal (None never pairs), in order;
    the indexes left on each side."""
    waiting: Dict[Hashable, Deque[int]] = OrderedDict()
    for index in old:
        value = key(olds[index])
        if value is not None:
            waiting.setdefault(value, deque()).append(index)
    paired_old = set()
    left_new: List[int] = []
    for index in new:
        value = key(news[index])
        queue = waiting.get(value) if value is not None else None
        if queue:
            partner = queue.popleft()
            paired_old.add(partner)
            pairs.append((partner, index, basis))
        else:
            left_new.append(index)
    return [index for index in old if index not in paired_old], left_new


def match(olds: Sequence[ExecutionSummary], news: Sequence[ExecutionSummary]
          ) -> Tuple[List[Tuple[int, int, str]], List[int], List[int]]:
    """The pairs (old index, new index, basis) in the new run's order, and the indexes of each
    side left unpaired."""
    pairs: List[Tuple[int, int, str]] = []
    old = list(range(len(olds)))
    new = list(range(len(news)))
    old, new = _round(old, new, olds, news,
                      lambda s: (_description(s), s.shape) if _description(s) else None,
                      DESCRIPTION, pairs)
    old, new = _round(old, new, olds, news, lambda s: _description(s) or None, DESCRIPTION,
                      pairs)
    old, new = _round(old, new, olds, news, lambda s: s.shape, SHAPE, pairs)
    pairs.sort(key=lambda pair: pair[1])
    return pairs, old, new


class Partners:
    """What the old side's executions that a new execution could be paired with made, at most,
    per kind: asked while the new side is read (the why-not of a rewrite is asked only where
    a partner made it), in constant time per execution.

    A new execution whose description the old run holds more of than the new run has shown
    so far is taken to pair by description; any other may pair by description or by shape."""

    def __init__(self, old: Sequence[ExecutionSummary]):
        self._by_description: Dict[str, Dict[str, int]] = {}
        self._by_shape: Dict[str, Dict[str, int]] = {}
        self._described: Dict[str, int] = {}
        self._seen: Dict[str, int] = {}
        for summary in old:
            description = _description(summary)
            if description:
                _raise(self._by_description.setdefault(description, {}), summary.counts)
                self._described[description] = self._described.get(description, 0) + 1
            _raise(self._by_shape.setdefault(summary.shape, {}), summary.counts)

    def most(self, summary: ExecutionSummary) -> Dict[str, int]:
        """Per kind, the most any possible partner of `summary` made (call once per new
        execution, in order)."""
        description = _description(summary)
        found: Dict[str, int] = {}
        if description:
            seen = self._seen.get(description, 0)
            self._seen[description] = seen + 1
            _raise(found, self._by_description.get(description, {}))
            if seen < self._described.get(description, 0):
                return found
        _raise(found, self._by_shape.get(summary.shape, {}))
        return found


def _raise(most: Dict[str, int], counts) -> None:
    for kind, count in counts.items():
        if count > most.get(kind, 0):
            most[kind] = count
