"""The one DAG structure every plan reader fills: :class:`QueryDag`.

A :class:`QueryDag` is a :class:`networkx.DiGraph` whose nodes are units of
work (Hive stages and Tez/Spark vertices, Spark or Calcite operators, Spark
event-log stages) and whose edges point the way data flows, from the producer
to the consumer.  The node and edge attributes are documented on the class.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

import networkx as nx

from jobgauge.errors import ParseError, UsageError

# Node kinds: the work a node does.  Stage and vertex kinds first, then the
# operator categories used for operator-level DAGs (Spark physical plans,
# Calcite CBO plans), then "other".  The feature vector one-hot encodes this.
STAGE_KINDS = (
    "map", "reduce", "map-local", "conditional", "fetch", "move", "stats",
    "tez-map", "tez-reducer", "tez-union", "spark-map", "spark-reducer", "spark-stage",
)
OPERATOR_CATEGORIES = (
    "scan", "filter", "project", "join", "aggregate", "sort", "limit", "window",
    "union", "exchange", "broadcast", "subquery", "output", "other",
)
KINDS = STAGE_KINDS + OPERATOR_CATEGORIES  # "other" last

# Edge types whose data moves by broadcast, by shuffle, or stays in the task.
_BROADCAST_EDGES = {"BROADCAST_EDGE", "CUSTOM_EDGE", "broadcast"}
_SHUFFLE_EDGES = {
    "SIMPLE_EDGE", "CUSTOM_SIMPLE_EDGE", "XPROD_EDGE", "shuffle", "exchange",
    "PARTITION-LEVEL SORT", "GROUP PARTITION-LEVEL SORT", "GROUP", "SORT",
    "MR_SHUFFLE",
}


def edge_class(edge_type: str | None) -> str:
    """Say how an edge moves data: ``broadcast``, ``shuffle``, ``pipeline``,
    ``dependency`` (stage order only, no data), or ``other``.

    >>> edge_class("BROADCAST_EDGE"), edge_class("SIMPLE_EDGE"), edge_class("conditional")
    ('broadcast', 'shuffle', 'dependency')
    """
    if edge_type in _BROADCAST_EDGES:
        return "broadcast"
    if edge_type in _SHUFFLE_EDGES:
        return "shuffle"
    if edge_type in ("pipeline", "CONTAINS", "reuse", "subquery"):
        return "pipeline"
    if edge_type in ("dependency", "conditional"):
        return "dependency"
    return "other"


def operator_category(operator_type: str) -> str:
    """Map an operator name from any engine to one of OPERATOR_CATEGORIES.

    >>> [operator_category(t) for t in ("TableScan", "BroadcastHashJoin", "Group By Operator",
    ...                                  "Reduce Output Operator", "HiveSortLimit")]
    ['scan', 'join', 'aggregate', 'exchange', 'sort']
    """
    t = operator_type.lower()
    compact = t.replace(" ", "").replace("_", "")
    if "subquery" in compact:
        return "subquery"
    if ("broadcastexchange" in compact or "hashtablesink" in compact
            or compact in ("broadcast", "broadcastquerystage")):
        return "broadcast"
    if "exchange" in compact or "reduceoutput" in compact or compact.endswith("shuffle"):
        return "exchange"
    if "join" in compact or "cartesianproduct" in compact:
        return "join"
    if "aggregate" in compact or "groupby" in compact:
        return "aggregate"
    if "window" in compact or compact.startswith("ptf"):
        return "window"
    if "takeordered" in compact or "sort" in compact:
        return "sort"
    if "limit" in compact or "topnkey" in compact:
        return "limit"
    if "filter" in compact:
        return "filter"
    if "scan" in compact or compact in ("range", "hivevalues", "values"):
        return "scan"
    if "union" in compact:
        return "union"
    if "select" in compact or "project" in compact:
        return "project"
    if ("fileoutput" in compact or "listsink" in compact or "fetchoperator" in compact
            or "moveoperator" in compact or "writefiles" in compact or "insertinto" in compact
            or "datawritingcommand" in compact or compact == "fetch"):
        return "output"
    return "other"


def natural_key(text: str) -> tuple:
    """Sort key that orders embedded numbers by value: "Map 2" < "Map 10"."""
    parts = re.split(r"(\d+)", str(text))
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts))


def max_or_none(values: Iterable[Any]) -> Any:
    present = [v for v in values if v is not None]
    return max(present) if present else None


class QueryDag(nx.DiGraph):
    """A query or job as a DAG of units of work; edges point from producer to consumer.

    Build one with a named constructor: :meth:`from_hive_explain`,
    :meth:`all_from_hive_output`, :meth:`from_spark_plan`, :meth:`from_stages`,
    :meth:`from_text` (detects Hive or Spark) or :meth:`from_dict`.

    Node ids are strings: ``"Stage-0"`` (a Hive stage that is one unit, e.g. a
    fetch), ``"Stage-3:Map"`` / ``"Stage-3:Reduce"`` (the two halves of a
    MapReduce stage), ``"Map 1"`` / ``"Reducer 2"`` / ``"Union 3"`` (Tez and
    Hive-on-Spark vertices; written ``"Stage-2:Map 1"`` when two stages of one
    plan reuse a vertex name), ``"HashAggregate (20)"`` (a Spark operator with
    its plan id), ``"HiveJoin (3)"`` (a Calcite operator, numbered in pre-order)
    and ``"Stage 4"`` (a Spark stage of an event log).

    Node attributes (every reader sets all seven of these):

    - ``kind``: one of :data:`KINDS` - a stage/vertex kind (``map``, ``reduce``,
      ``map-local``, ``conditional``, ``fetch``, ``move``, ``stats``,
      ``tez-map``, ``tez-reducer``, ``tez-union``, ``spark-map``,
      ``spark-reducer``, ``spark-stage``) or, for operator-level DAGs, an
      operator category (``scan``, ``filter``, ``project``, ``join``,
      ``aggregate``, ``sort``, ``limit``, ``window``, ``union``, ``exchange``,
      ``broadcast``, ``subquery``, ``output``), else ``other``.
    - ``label``: short human text (the id plus scanned tables, or the
      operator's own text cut to 80 characters).
    - ``operators``: the node's operators as a list in printed tree order;
      each a dict with ``type`` (``"TableScan"``, ``"Map Join Operator"``,
      ``"BroadcastHashJoin"``, ...), ``category`` (OPERATOR_CATEGORIES),
      ``parent`` (index of the operator printed above it in this list, or
      None - for classic EXPLAIN that is the operator feeding it; for
      user-level Tez, Calcite and Spark trees it is the one consuming it) and,
      when the plan says so, ``id`` (``"TS_0"``), ``rows``, ``data_size``,
      ``rows_actual`` (EXPLAIN ANALYZE) and ``alias``.
    - ``rows``, ``data_size``: the largest estimated row count and byte size
      over the node's operators (the peak volume it handles), or None.
    - ``rows_actual``: the largest actual row count (EXPLAIN ANALYZE), or None.
    - ``exchange``: True when the node writes shuffle or broadcast output (a
      Spark exchange operator, a Hive unit with a Reduce Output / HashTable
      Sink operator): the stage boundaries a model cares about.

    and where the source has them: ``stage`` (Hive stage id holding the
    node), ``stage_type`` (Hive's own words: ``"Map Reduce"``, ``"Tez"``,
    ...), ``execution_mode`` (``"vectorized, llap"``), ``local_work``,
    ``codegen_stage`` (Spark whole-stage-codegen id), ``operator_id`` (Spark
    plan id), ``partitions`` (shuffle partitions of a Spark exchange), and for
    event-log stages ``stage_id``, ``name``, ``n_tasks``, ``metrics`` (measured
    totals: kept for explanations, never used as features) and
    ``absent_parents`` (parent stages Spark skipped).

    Edge attributes: ``edge_type`` - Hive's ``SIMPLE_EDGE``,
    ``BROADCAST_EDGE``, ``CUSTOM_SIMPLE_EDGE``, ``CUSTOM_EDGE``,
    ``XPROD_EDGE``, ``CONTAINS`` (vertex feeding a union), Hive-on-Spark's
    ``PARTITION-LEVEL SORT``/``GROUP``/``SORT``; ``shuffle`` (map half to
    reduce half of a MapReduce stage, or between event-log stages);
    ``dependency`` and ``conditional`` (Hive stage order); for operator DAGs
    ``pipeline`` (same task), ``exchange`` and ``broadcast`` (out of a Spark
    exchange), ``reuse`` (a reused exchange or subquery) and ``subquery``.
    Hive-on-Spark edges also carry ``partitions``.  :func:`edge_class` groups them.

    Graph attributes (``dag.graph``): ``source`` (``hive``, ``spark``,
    ``eventlog``), ``format`` (``hive-classic``, ``hive-user``, ``hive-cbo``,
    ``hive-json``, ``hive-json-cbo``, ``spark-explain``, ``spark-simplified``,
    ``spark-physical``, ``spark-stages``), ``engine`` (``mapreduce``, ``tez``,
    ``spark``, ``calcite`` or None), ``line`` (first line of the plan in the
    text), ``query`` (the SQL when a .q.out names it) and, for Hive plans
    with stages, ``stages``: ``{stage_id: {"kind", "stage_type", "root",
    "depends_on", "consists_of", "backup", "nodes"}}`` - the stage-level
    dependencies exactly as the plan states them (see :meth:`stage_graph`).
    """

    # ---- named constructors -------------------------------------------------
    @classmethod
    def from_hive_explain(cls, text: str, *, path=None) -> "QueryDag":
        """The first Hive plan in ``text`` (any EXPLAIN variant; a .q.out file
        may hold several - :meth:`all_from_hive_output` returns them all).

        Input::

            STAGE DEPENDENCIES:
              Stage-1 is a root stage
              Stage-0 depends on stages: Stage-1

            STAGE PLANS:
              Stage: Stage-1
                Tez
                  Edges:
                    Reducer 2 <- Map 1 (SIMPLE_EDGE)
                  Vertices:
                    Map 1
                        Map Operator Tree:
                            TableScan
                              alias: src
                              Statistics: Num rows: 500 Data size: 89000 Basic stats: COMPLETE
                              Reduce Output Operator
                    Reducer 2
                        Reduce Operator Tree:
                          Group By Operator
              Stage: Stage-0
                Fetch Operator

        DAG: nodes ``Map 1`` (tez-map, rows 500, operators TableScan and
        Reduce Output Operator), ``Reducer 2`` (tez-reducer) and ``Stage-0``
        (fetch); edges ``Map 1 -> Reducer 2`` (SIMPLE_EDGE) and
        ``Reducer 2 -> Stage-0`` (dependency).

        Raises :class:`ParseError` (with line, expectation and snippet) when
        the text holds no plan or a malformed one.
        """
        from jobgauge.dag._hive import parse_hive_plans

        return parse_hive_plans(text, path=path, first_only=True)[0]

    @classmethod
    def all_from_hive_output(cls, text: str, *, path=None) -> list["QueryDag"]:
        """Every Hive plan in a .q.out file or EXPLAIN output, in file order.

        Input: a .q.out with ``PREHOOK: query: explain select ...`` lines, a
        classic ``STAGE DEPENDENCIES:`` plan, the query's result rows, then a
        second ``explain`` and a ``CBO PLAN:`` tree.  DAGs: two QueryDags,
        the first with ``graph["format"] == "hive-classic"`` and the second
        ``"hive-cbo"``, each with ``graph["query"]`` set to its SQL.

        Raises :class:`ParseError` when no plan is found or one is malformed.
        """
        from jobgauge.dag._hive import parse_hive_plans

        return parse_hive_plans(text, path=path)

    @classmethod
    def from_spark_plan(cls, text: str, *, path=None) -> "QueryDag":
        """A Spark physical plan: ``explain.txt`` / ``EXPLAIN FORMATTED``
        (numbered tree plus per-node details), ``simplified.txt`` (indented
        tree with ``WholeStageCodegen (n)`` blocks) or ``EXPLAIN`` /
        ``EXPLAIN EXTENDED`` / ``queryExecution().toString()`` text (its
        ``== Physical Plan ==`` section; an adaptive plan's final plan).

        Nodes are operators; wrappers (WholeStageCodegen, InputAdapter,
        AdaptiveSparkPlan, query stages) are not nodes but set
        ``codegen_stage`` and runtime statistics on the operators they wrap.
        Exchanges are nodes with ``exchange=True``: the stage boundaries.

        Input::

            == Physical Plan ==
            * HashAggregate (4)
            +- Exchange (3)
               +- * HashAggregate (2)
                  +- Scan parquet default.t (1)

            (1) Scan parquet default.t
            ...
            (2) HashAggregate [codegen id : 1]

        DAG: ``Scan (1)`` (scan) -> ``HashAggregate (2)`` (aggregate,
        codegen_stage 1) -> ``Exchange (3)`` (exchange, exchange=True) ->
        ``HashAggregate (4)``; the edge out of the exchange has edge_type
        ``exchange``, the others ``pipeline``.

        Raises :class:`ParseError` when the text holds no Spark plan.
        """
        from jobgauge.dag._spark import parse_spark_plan

        return parse_spark_plan(text, path=path)

    @classmethod
    def from_stages(cls, stages) -> "QueryDag":
        """The stage DAG of a run from a Profile's ``stages`` list (or a Profile).

        Each stage is a dict with ``stage_id`` and, where known,
        ``parent_ids``, ``name``, ``n_tasks``, ``kind`` and metrics (either in
        a ``metrics`` dict or as top-level keys named as in
        ``jobgauge.profiler.readers.profile.TOTAL_METRICS``).

        Input: ``[{"stage_id": 0, "name": "map at x.py:3", "n_tasks": 4},
        {"stage_id": 1, "parent_ids": [0], "n_tasks": 2,
        "metrics": {"shuffle_read_bytes": 2048}}]``.
        DAG: nodes ``Stage 0`` and ``Stage 1`` (kind spark-stage, n_tasks 4
        and 2, Stage 1 data_size 2048), edge ``Stage 0 -> Stage 1``
        (edge_type shuffle).  A parent id with no stage of its own (a stage
        Spark skipped) is listed in the child's ``absent_parents``.
        """
        from jobgauge.dag._stages import dag_from_stages

        return dag_from_stages(stages)

    @classmethod
    def from_profile(cls, profile) -> "QueryDag":
        """Same as :meth:`from_stages` on ``profile.stages``."""
        return cls.from_stages(profile)

    @classmethod
    def from_text(cls, text: str, *, path=None) -> "QueryDag":
        """The first plan in ``text``, Hive or Spark (detected)."""
        return cls.all_from_text(text, path=path)[0]

    @classmethod
    def all_from_text(cls, text: str, *, path=None) -> list["QueryDag"]:
        """Every plan in ``text``: Hive output may hold several, Spark text one."""
        from jobgauge.dag._detect import detect_plan_language

        if detect_plan_language(text, path=path) == "spark":
            return [cls.from_spark_plan(text, path=path)]
        return cls.all_from_hive_output(text, path=path)

    @classmethod
    def from_dict(cls, data: dict) -> "QueryDag":
        """Rebuild a DAG from :meth:`to_dict` output (node-link JSON)."""
        expected = "node-link JSON with 'nodes' and 'edges' lists"
        if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) \
                or not isinstance(data.get("edges", data.get("links")), list):
            raise ParseError("not a QueryDag dict", expected=expected,
                             snippet=repr(data)[:80])
        dag = cls()
        dag.graph.update(data.get("graph") or {})
        for node in data["nodes"]:
            if not isinstance(node, dict) or "id" not in node:
                raise ParseError("node without an id", expected=expected, snippet=repr(node)[:80])
            attrs = {k: v for k, v in node.items() if k != "id"}
            dag.add_node(node["id"], **attrs)
        for edge in data.get("edges", data.get("links")):
            if not isinstance(edge, dict) or "source" not in edge or "target" not in edge:
                raise ParseError("edge without source and target", expected=expected,
                                 snippet=repr(edge)[:80])
            for end in (edge["source"], edge["target"]):
                if end not in dag:
                    raise ParseError(f"edge names unknown node {end!r}", expected=expected)
            attrs = {k: v for k, v in edge.items() if k not in ("source", "target")}
            dag.add_edge(edge["source"], edge["target"], **attrs)
        return dag

    # ---- views ----------------------------------------------------------------
    def to_dict(self) -> dict:
        """Node-link JSON (``directed``, ``multigraph``, ``graph``, ``nodes``,
        ``edges``) in the deterministic topological order of :func:`topological_order`."""
        from jobgauge.dag._serialize import topological_order

        order = topological_order(self)
        position = {node: i for i, node in enumerate(order)}
        edges = sorted(self.edges(data=True), key=lambda e: (position[e[0]], position[e[1]]))
        return {
            "directed": True,
            "multigraph": False,
            "graph": dict(self.graph),
            "nodes": [{"id": node, **self.nodes[node]} for node in order],
            "edges": [{"source": u, "target": v, **attrs} for u, v, attrs in edges],
        }

    def to_svg(self) -> str:
        """An SVG drawing (see :func:`jobgauge.dag.to_svg`)."""
        from jobgauge.dag._svg import to_svg

        return to_svg(self)

    def stage_graph(self) -> nx.DiGraph:
        """Hive stage-level dependencies as their own DiGraph: an edge
        ``Stage-1 -> Stage-0`` with edge_type ``dependency`` for "Stage-0
        depends on stages: Stage-1", ``conditional`` for "consists of"."""
        graph = nx.DiGraph()
        for stage_id, info in (self.graph.get("stages") or {}).items():
            graph.add_node(stage_id, kind=info.get("kind"))
        for stage_id, info in (self.graph.get("stages") or {}).items():
            for parent in info.get("depends_on", []):
                graph.add_edge(parent, stage_id, edge_type="dependency")
            for child in info.get("consists_of", []):
                graph.add_edge(stage_id, child, edge_type="conditional")
        return graph

    def summary(self) -> dict:
        """Counts for a one-line view: nodes, edges, kinds, format, engine."""
        kinds: dict[str, int] = {}
        for _, kind in self.nodes(data="kind"):
            kinds[kind] = kinds.get(kind, 0) + 1
        return {
            "format": self.graph.get("format"), "engine": self.graph.get("engine"),
            "n_nodes": self.number_of_nodes(), "n_edges": self.number_of_edges(),
            "n_stages": len(self.graph.get("stages") or {}) or None,
            "kinds": dict(sorted(kinds.items())),
        }


# ---- helpers shared by the readers --------------------------------------------
def make_operator(op_type: str, *, parent=None, **extra) -> dict:
    """One entry of a node's ``operators`` list; None values are left out."""
    op = {"type": op_type, "category": operator_category(op_type), "parent": parent}
    op.update({k: v for k, v in extra.items() if v is not None})
    return op


def unit_attrs(kind: str, label: str, operators: list[dict], **extra) -> dict:
    """Node attributes for a unit of work with the aggregated statistics."""
    exchange = any(op["category"] in ("exchange", "broadcast") for op in operators)
    attrs = {
        "kind": kind if kind in KINDS else "other",
        "label": label,
        "operators": operators,
        "rows": max_or_none(op.get("rows") for op in operators),
        "data_size": max_or_none(op.get("data_size") for op in operators),
        "rows_actual": max_or_none(op.get("rows_actual") for op in operators),
        "exchange": exchange,
    }
    attrs.update({k: v for k, v in extra.items() if v is not None})
    return attrs


def scan_label(node_id: str, operators: list[dict]) -> str:
    aliases = []
    for op in operators:
        alias = op.get("alias")
        if op["category"] == "scan" and alias and alias not in aliases:
            aliases.append(alias)
    if not aliases:
        return node_id
    text = f"{node_id}: {', '.join(aliases)}"
    return text if len(text) <= 80 else text[:77] + "..."


def check_acyclic(dag: QueryDag, *, path=None, line=None) -> QueryDag:
    """Raise ParseError when the edges read from a plan form a cycle."""
    if not nx.is_directed_acyclic_graph(dag):
        cycle = nx.find_cycle(dag)
        raise ParseError("plan edges form a cycle", path=path, line=line,
                         expected="a directed acyclic graph",
                         snippet=" -> ".join(str(u) for u, _ in cycle))
    return dag


def require_text(text, *, path=None) -> str:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"plan text is not UTF-8: {exc}", path=path) from None
    if not isinstance(text, str):
        raise UsageError(f"plan text must be a str, got {type(text).__name__}")
    return text
