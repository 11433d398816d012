"""One module per AQE rewrite kind; `DETECTORS` runs them in report order and is the one list
of kinds (`rewrites.kinds`). `base.py` holds what every detector sees (`PlanPair`, the plan
walks, the sort-merge joins paired) and returns (`Rewrite`).

May import: `plan`, `errors`.
"""

from .coalesced import Coalesced
from .dpp import DynamicPartitionPruning, DynamicPruningDropped
from .empty_relation import EmptyRelation
from .local_read import LocalRead
from .logical_rules import LimitRemoved, OneRowPlan
from .rebalance_skew import RebalanceSkew
from .skew_join import SkewJoin
from .smj_to_bhj import SortMergeToBroadcast
from .smj_to_shj import SortMergeToShuffledHash

DETECTORS = (
    Coalesced(),
    SkewJoin(),
    SortMergeToBroadcast(),
    SortMergeToShuffledHash(),
    EmptyRelation(),
    LocalRead(),
    DynamicPartitionPruning(),
    DynamicPruningDropped(),
    RebalanceSkew(),
    OneRowPlan(),
    LimitRemoved(),
)

__all__ = ["DETECTORS"]
