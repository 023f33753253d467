"""DAGs as fixed-width feature matrices for sequence and graph models.

Node order is deterministic: :func:`topological_order` runs
``networkx.lexicographical_topological_sort`` with the key
``(depth, kind, natural id)``, where ``depth`` is the longest path from any
source and ``natural id`` compares the numbers inside ids by value
("Map 2" < "Map 10").  Keys are unique (ids are), so the order never depends
on the order nodes were added.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from jobgauge.dag._graph import KINDS, OPERATOR_CATEGORIES, edge_class, natural_key
from jobgauge.errors import UsageError

_NUMERIC_FEATURES = (
    "log1p_rows",            # log(1 + estimated rows), 0 when unknown
    "log1p_bytes",           # log(1 + estimated bytes), 0 when unknown
    "log1p_rows_actual",     # log(1 + actual rows from EXPLAIN ANALYZE), 0 when unknown
    "has_stats",             # 1 when rows or bytes are known
    "log1p_n_operators",     # log(1 + operators in the node)
    "log1p_n_tasks",         # log(1 + tasks), event-log stages; 0 when unknown
    "log1p_partitions",      # log(1 + shuffle partitions), exchanges; 0 when unknown
    "n_inputs",              # in-degree
    "n_outputs",             # out-degree
    "n_broadcast_inputs",    # incoming broadcast edges
    "n_shuffle_inputs",      # incoming shuffle edges
    "n_dependency_inputs",   # incoming stage-order edges (no data)
    "depth",                 # longest path from a source
    "height",                # longest path to a sink
    "exchange",              # 1 when the node writes shuffle/broadcast output
)

#: Names of the columns of :func:`serialize`'s matrix, in order:
#: ``kind=<k>`` one-hot over :data:`KINDS` (unknown kinds count as
#: ``kind=other``), ``ops_<c>`` = log(1 + number of the node's operators in
#: category c) over :data:`OPERATOR_CATEGORIES`, then the numeric features.
FEATURE_NAMES = tuple(
    [f"kind={k}" for k in KINDS] + [f"ops_{c}" for c in OPERATOR_CATEGORIES]
    + list(_NUMERIC_FEATURES))


def _depths(dag: nx.DiGraph) -> tuple[dict, dict]:
    order = list(nx.topological_sort(dag))
    depth = {node: 0 for node in order}
    for node in order:
        for _, child in dag.out_edges(node):
            depth[child] = max(depth[child], depth[node] + 1)
    height = {node: 0 for node in order}
    for node in reversed(order):
        for parent, _ in dag.in_edges(node):
            height[parent] = max(height[parent], height[node] + 1)
    return depth, height


def _require_dag(dag) -> None:
    if not isinstance(dag, nx.DiGraph):
        raise UsageError(f"expected a QueryDag, got {type(dag).__name__}")
    if not nx.is_directed_acyclic_graph(dag):
        raise UsageError("the graph has a cycle; only DAGs can be serialized")


def topological_order(dag) -> list:
    """Node ids sources first, ties broken by (depth, kind, natural id)."""
    _require_dag(dag)
    depth, _ = _depths(dag)
    return list(nx.lexicographical_topological_sort(
        dag, key=lambda node: (depth[node], str(dag.nodes[node].get("kind", "other")),
                               natural_key(node))))


def _log1p(value) -> float:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    if not math.isfinite(value) or value < 0:
        return 0.0
    return math.log1p(value)


def serialize(dag) -> tuple[np.ndarray, list]:
    """``(features, node_ids)``: one float32 row per node in
    :func:`topological_order`; ``node_ids[i]`` names row ``i`` (for explanations).
    Columns are :data:`FEATURE_NAMES`.

    >>> from jobgauge.dag import QueryDag
    >>> X, ids = serialize(QueryDag.from_stages([{"stage_id": 0}, {"stage_id": 1, "parent_ids": [0]}]))
    >>> X.shape == (2, len(FEATURE_NAMES)), ids
    (True, ['Stage 0', 'Stage 1'])
    """
    order = topological_order(dag)
    depth, height = _depths(dag)
    kind_index = {k: i for i, k in enumerate(KINDS)}
    category_index = {c: i for i, c in enumerate(OPERATOR_CATEGORIES)}
    n_kinds, n_categories = len(KINDS), len(OPERATOR_CATEGORIES)
    features = np.zeros((len(order), len(FEATURE_NAMES)), dtype=np.float32)
    for row, node in enumerate(order):
        attrs = dag.nodes[node]
        features[row, kind_index.get(attrs.get("kind"), kind_index["other"])] = 1.0
        counts = np.zeros(n_categories)
        operators = attrs.get("operators") or []
        for op in operators:
            category = op.get("category") if isinstance(op, dict) else None
            counts[category_index.get(category, category_index["other"])] += 1
        features[row, n_kinds:n_kinds + n_categories] = np.log1p(counts)
        in_classes = [edge_class(a.get("edge_type")) for _, _, a in dag.in_edges(node, data=True)]
        numeric = [
            _log1p(attrs.get("rows")),
            _log1p(attrs.get("data_size")),
            _log1p(attrs.get("rows_actual")),
            1.0 if attrs.get("rows") is not None or attrs.get("data_size") is not None else 0.0,
            _log1p(len(operators)),
            _log1p(attrs.get("n_tasks")),
            _log1p(attrs.get("partitions")),
            float(dag.in_degree(node)),
            float(dag.out_degree(node)),
            float(in_classes.count("broadcast")),
            float(in_classes.count("shuffle")),
            float(in_classes.count("dependency")),
            float(depth[node]),
            float(height[node]),
            1.0 if attrs.get("exchange") else 0.0,
        ]
        features[row, n_kinds + n_categories:] = numeric
    return features, order


def pad_sequences(arrays, max_len: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Stack per-DAG matrices into ``(batch [B, T, F], lengths [B])``, zero-padded
    at the end.  With ``max_len`` longer sequences keep their first ``max_len``
    rows (the sources first, in topological order) and ``lengths`` says so."""
    arrays = list(arrays)
    if not arrays:
        raise UsageError("pad_sequences needs at least one array")
    widths = set()
    for i, array in enumerate(arrays):
        if not isinstance(array, np.ndarray) or array.ndim != 2:
            raise UsageError(f"array {i} must be a 2-D numpy array (nodes x features)")
        widths.add(array.shape[1])
    if len(widths) != 1:
        raise UsageError(f"arrays have different feature counts: {sorted(widths)}")
    if max_len is not None and (isinstance(max_len, bool) or not isinstance(max_len, int)
                                or max_len < 1):
        raise UsageError(f"max_len must be an int >= 1 or None. Got {max_len!r} instead.")
    longest = max(array.shape[0] for array in arrays)
    steps = longest if max_len is None else max_len
    batch = np.zeros((len(arrays), steps, widths.pop()), dtype=np.float32)
    lengths = np.zeros(len(arrays), dtype=np.int64)
    for i, array in enumerate(arrays):
        n = min(array.shape[0], steps)
        batch[i, :n] = array[:n]
        lengths[i] = n
    return batch, lengths


def pack(batch, lengths):
    """A ``torch.nn.utils.rnn.PackedSequence`` of a padded batch (batch first)."""
    import torch
    from torch.nn.utils.rnn import pack_padded_sequence

    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.ndim != 1 or len(lengths) != len(batch):
        raise UsageError("lengths must hold one length per sequence in the batch")
    if (lengths < 1).any():
        raise UsageError("every sequence must have at least one node to be packed")
    batch = np.asarray(batch, dtype=np.float32)
    if batch.ndim != 3 or lengths.max() > batch.shape[1]:
        raise UsageError("batch must be [batch, steps, features] with steps >= every length")
    tensor = torch.as_tensor(batch)
    return pack_padded_sequence(tensor, torch.as_tensor(lengths), batch_first=True,
                                enforce_sorted=False)
