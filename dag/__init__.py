"""Query and job DAGs: read Hive and Spark plans and event-log stages into one
structure (:class:`QueryDag`, a ``networkx.DiGraph``), turn them into feature
matrices for models, and draw them as SVG.

>>> from jobgauge.dag import QueryDag, serialize
>>> dag = QueryDag.from_text(open("query3.q.out").read())   # doctest: +SKIP
>>> features, node_ids = serialize(dag)                       # doctest: +SKIP
"""

from jobgauge.dag._detect import detect_plan_language
from jobgauge.dag._graph import (
    KINDS, OPERATOR_CATEGORIES, STAGE_KINDS, QueryDag, edge_class, operator_category,
)
from jobgauge.dag._spark import broadcast_shares, scan_location, spark_row_bytes
from jobgauge.dag._serialize import (
    FEATURE_NAMES, pack, pad_sequences, serialize, topological_order,
)
from jobgauge.dag._svg import to_svg


def parse_plans(text, *, path=None) -> list[QueryDag]:
    """Every plan in ``text`` (Hive or Spark, detected), in order."""
    return QueryDag.all_from_text(text, path=path)


__all__ = [
    "FEATURE_NAMES", "KINDS", "OPERATOR_CATEGORIES", "STAGE_KINDS", "QueryDag",
    "broadcast_shares", "detect_plan_language", "edge_class", "operator_category", "pack",
    "pad_sequences", "parse_plans", "scan_location", "serialize", "spark_row_bytes",
    "to_svg", "topological_order",
]
