"""One module per AQE rewrite kind; `DETECTORS` runs them in report order."""

from .coalesced import Coalesced
from .empty_relation import EmptyRelation
from .local_read import LocalRead
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
)

__all__ = ["DETECTORS"]
