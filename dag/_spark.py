"""Read Spark physical plans into QueryDags of operators.

Formats: ``explain.txt`` / ``EXPLAIN FORMATTED`` (``== Physical Plan ==``, a
tree of ``Name (id)`` lines, then ``(id) Name [codegen id : k]`` details and
``===== Subqueries =====``), Spark's plan-stability ``simplified.txt``
(two-space indented tree with ``WholeStageCodegen (n)`` and ``#n`` exchange
references) and plain ``EXPLAIN`` / ``EXPLAIN EXTENDED`` /
``queryExecution().toString()`` text (``*(k) Name(args)`` lines).
"""

from __future__ import annotations

import re

from jobgauge.dag._graph import (
    QueryDag, check_acyclic, make_operator, require_text, unit_attrs,
)
from jobgauge.errors import ParseError

# Plan nodes that only wrap others: not nodes of the DAG.
WRAPPERS = {
    "WholeStageCodegen", "InputAdapter", "AdaptiveSparkPlan", "ResultQueryStage",
    "ShuffleQueryStage", "BroadcastQueryStage", "TableCacheQueryStage",
}
_EXCHANGE_DEFS = {"Exchange", "ShuffleExchange", "BroadcastExchange"}
_SUBQUERY_DEFS = {"Subquery", "SubqueryBroadcast"}
_TREE_LINE = re.compile(r"^((?:[ |]|:(?!-))*)(?:([+:]-) )?(.*)$")
_FORMATTED_NODE = re.compile(r"^(.*?) \((\d+)\)(,.*)?$")
_DETAIL = re.compile(r"^\((\d+)\) (.+)$")
_SUBQUERY_HEADER = re.compile(
    r"^Subquery:(\d+) Hosting operator id = (\d+) Hosting Expression = (.*)$")
_SUBQUERY_KEY = re.compile(
    r"\b((?:dynamicpruning|scalar-subquery|subquery|exists|list|in-subquery)#\d+)")
_NAME = re.compile(r"[A-Za-z_]\w*")
_SIZE_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "TiB": 1024 ** 4,
               "PiB": 1024 ** 5, "EiB": 1024 ** 6}
_STATISTICS = re.compile(
    r"Statistics\(sizeInBytes=([0-9.Ee+-]+) ?([KMGTPE]?i?B)(?:, rowCount=([0-9.Ee+-]+))?")
_PARTITIONING = re.compile(r"(?:hash|range|roundrobin)partitioning\((?:.*, )?(\d+)\)|(SinglePartition)")
_SCAN_TABLE = re.compile(r"^(?:File|Batch)?Scan\s+\w+\s+([\w.`$-]+)")
_HEADER = re.compile(r"^== (.+) ==\s*$")
#: A scan's files in EXPLAIN FORMATTED: ``Location: InMemoryFileIndex [file:/d/t.parquet]``,
#: or ``Location [not included in comparison]/{warehouse_dir}/t]`` as Spark's approved
#: plans print it; in an event log's plan metadata, ``InMemoryFileIndex(1 paths)[...]``.
#: A scan of several paths (``InMemoryFileIndex(2 paths)[a, b]``) gets none: one
#: location would not name all its files.
_LOCATION = re.compile(
    r"^Location(?::\s*(?=\w)|\s*\[not included in comparison\]([^\]]*))")
_FILE_INDEX = re.compile(r"^\w+(?:\(1 paths?\))?\s*\[([^,\]]*)\]")
#: EXPLAIN FORMATTED's details: a scan's ``ReadSchema: struct<a:bigint,b:decimal(15,2)>``
#: and an operator's ``Input [2]: [a#1L, b#2]``.
_READ_SCHEMA = re.compile(r"^ReadSchema: struct<(.*)>\s*$")
_SCHEMA_FIELD = re.compile(r"(\w+):(decimal\(\d+,\s*\d+\)|\w+(?:<.*?>)?)(?:,|$)")
_INPUT = re.compile(r"^Input \[\d+\]: \[(.*)\]\s*$")
#: Spark's default size of a value of each type (``DataType.defaultSize``), in bytes.
SPARK_TYPE_BYTES = {"boolean": 1, "tinyint": 1, "smallint": 2, "int": 4, "date": 4,
                    "float": 4, "bigint": 8, "double": 8, "timestamp": 8,
                    "timestamp_ntz": 8, "string": 20, "binary": 100}
_DECIMAL = re.compile(r"^decimal\((\d+),\s*\d+\)$")


def spark_row_bytes(types) -> int | None:
    """Spark's size of a row of columns of ``types`` (``bigint``, ``decimal(15,2)``, as
    ``ReadSchema`` names them) where a plan has no column statistics: 8 plus each
    column's default size (``EstimationUtils.getSizePerRow``); None where a type is not
    one of :data:`SPARK_TYPE_BYTES` or a decimal (8 bytes up to precision 18, else 16)."""
    total = 8
    for name in types:
        name = str(name).strip().lower()
        decimal = _DECIMAL.match(name)
        size = (8 if int(decimal.group(1)) <= 18 else 16) if decimal \
            else SPARK_TYPE_BYTES.get(name)
        if size is None:
            return None
        total += size
    return total


def broadcast_shares(dag: dict, row_bytes: dict) -> dict:
    """{scan node id: share}: Spark's size estimate of a broadcast side over the bytes of
    the files its one scan reads, where EXPLAIN FORMATTED named both the broadcast's
    input columns and the scan's read schema, and ``row_bytes`` ({location: bytes})
    the row size of the scan's whole table (:func:`spark_row_bytes` of all its
    columns).  Without column statistics Spark takes a table's size as its files' bytes
    and scales it by the row size of the columns a plan keeps over the whole row's,
    whatever the filters keep of its rows: TPC-H Q9's part side keeps p_partkey (16 of
    148 bytes a row), 7.1 MiB of SF 10's 65.8 MiB of files, under the 10 MiB threshold,
    and Spark broadcast it.  Every scan of a location broadcast somewhere gets its
    share (the largest where it is broadcast twice): a profile's stages are paired with
    the plan's scans by their files, and two scans of one table cannot be told apart
    (TPC-H Q18 scans lineitem twice, one of them under a broadcast).  ``dag``: a
    node-link dict (``QueryDag.to_dict()``)."""
    nodes = {node["id"]: node for node in dag.get("nodes") or () if isinstance(node, dict)}
    parents: dict = {}
    for edge in dag.get("edges") or ():
        parents.setdefault(edge.get("target"), []).append(edge.get("source"))
    by_location: dict = {}
    for node_id, node in nodes.items():
        columns = node.get("input_columns")
        if node.get("kind") != "broadcast" or not columns:
            continue
        seen, todo, scans = set(), list(parents.get(node_id, ())), []
        while todo:
            current = todo.pop()
            if current in seen or current not in nodes:
                continue
            seen.add(current)
            if nodes[current].get("kind") == "scan":
                scans.append(nodes[current])
            todo += parents.get(current, ())
        if len(scans) != 1:
            continue
        scan = scans[0]
        schema, whole = scan.get("read_schema") or {}, row_bytes.get(scan.get("location"))
        kept = spark_row_bytes(schema.get(c, "?") for c in columns) \
            if all(c in schema for c in columns) else None
        if kept and whole:
            location = scan["location"]
            by_location[location] = max(by_location.get(location, 0.0), kept / whole)
    return {node_id: by_location[node["location"]] for node_id, node in nodes.items()
            if node.get("kind") == "scan" and node.get("location") in by_location}


def scan_location(text) -> str | None:
    """The files a scan reads, from its ``Location`` line of EXPLAIN FORMATTED or from
    the ``Location`` metadata of an event log's plan (``InMemoryFileIndex(1 paths)[p]``);
    None where it names several paths, or none."""
    text = str(text or "").strip()
    line = _LOCATION.match(text)
    if line and line.group(1) is not None:
        return line.group(1).strip() or None
    index = _FILE_INDEX.match(text[line.end():] if line else text)
    return (index.group(1).strip() or None) if index else None


def parse_spark_plan(text, *, path=None) -> QueryDag:
    text = require_text(text, path=path)
    lines = text.splitlines()
    physical = next((i for i, line in enumerate(lines) if line.strip() == "== Physical Plan =="), None)
    if physical is not None:
        first = next((ln for ln in lines[physical + 1:] if ln.strip()), "")
        body = _TREE_LINE.match(first.rstrip()).group(3)
        formatted = _FORMATTED_NODE.match(body.lstrip("* ")) is not None and any(
            _DETAIL.match(line) for line in lines[physical + 1:])
        reader = _Reader(lines, path, "spark-explain" if formatted else "spark-physical")
        if formatted:
            reader.read_formatted(physical + 1)
        else:
            end = physical + 1
            while end < len(lines) and lines[end].strip() and not _HEADER.match(lines[end]):
                end += 1
            reader.read_tree(physical + 1, end)
        return reader.finish(physical + 1)
    first_index = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first_index is None or any(_HEADER.match(line) for line in lines):
        raise ParseError("no Spark physical plan found", path=path,
                         line=None if first_index is None else first_index + 1,
                         expected="'== Physical Plan ==' or a simplified.txt operator tree",
                         snippet="" if first_index is None else lines[first_index].strip())
    first = lines[first_index]
    if first[:1].isspace() or not _NAME.match(first):
        raise ParseError("no Spark plan found", path=path, line=first_index + 1,
                         expected="an operator name at the start of the line", snippet=first.strip())
    reader = _Reader(lines, path, "spark-simplified")
    reader.read_tree(first_index, len(lines))
    return reader.finish(first_index + 1)


def _size_bytes(number: str, unit: str) -> int | None:
    try:
        return int(float(number) * _SIZE_UNITS.get(unit, 1))
    except (ValueError, OverflowError):
        return None


def _count(number: str | None) -> int | None:
    if number is None:
        return None
    try:
        return int(float(number))
    except (ValueError, OverflowError):
        return None


class _Reader:
    """Builds one operator DAG from tree lines (and formatted details)."""

    def __init__(self, lines, path, fmt):
        self.lines = lines
        self.path = path
        self.fmt = fmt
        self.dag = QueryDag()
        self.counter = 0
        self.by_operator_id: dict[int, str] = {}
        self.exchange_refs: dict[str, str] = {}
        self.subquery_refs: dict[str, str] = {}
        self.reuse_refs: list[tuple[str, str, str, int]] = []  # (space, ref, node, line)
        self.plan_ids: dict[str, str] = {}
        self.roots: list[str] = []

    # ---- trees ------------------------------------------------------------------
    def read_tree(self, start: int, end: int) -> list[str]:
        """Read tree lines [start, end); return the root node ids."""
        stack: list[dict] = []
        roots: list[str] = []
        skip_below = None  # column of an "== Initial Plan ==" marker being skipped
        for i in range(start, end):
            raw = self.lines[i].rstrip()
            if not raw.strip():
                if self.fmt == "spark-simplified":
                    continue
                break
            match = _TREE_LINE.match(raw)
            prefix, marker, body = match.groups()
            col = len(prefix) + (3 if marker else 0)
            if skip_below is not None:
                if col >= skip_below:
                    continue
                skip_below = None
            body = body.strip()
            if body == "== Initial Plan ==":
                skip_below = col
                continue
            if body == "== Final Plan ==":
                while stack and stack[-1]["col"] > col:
                    stack.pop()
                parent = stack[-1] if stack else None
                stack.append({"col": col - 0.5, "node": parent["node"] if parent else None,
                              "codegen": None, "stats": None, "real": False})
                continue
            while stack and stack[-1]["col"] >= col:
                stack.pop()
            parent = stack[-1] if stack else None
            entry = self._line_node(body, i + 1, parent)
            entry["col"] = col
            if entry["real"] and (parent is None or parent["node"] is None):
                roots.append(entry["node"])
            stack.append(entry)
        self.roots += roots
        return roots

    def _line_node(self, body: str, line: int, parent: dict | None) -> dict:
        codegen = None
        operator_id = None
        rest = ""
        reference = None
        if body.startswith("* "):
            body = body[2:]
        match = re.match(r"^\*\((\d+)\) (.*)$", body)
        if match:
            codegen, body = int(match.group(1)), match.group(2)
        if self.fmt == "spark-explain":
            match = _FORMATTED_NODE.match(body)
            if not match:
                raise ParseError("plan tree line has no operator id", path=self.path, line=line,
                                 expected="'Name (id)'", snippet=body)
            body, operator_id, rest = match.group(1), int(match.group(2)), match.group(3) or ""
        elif self.fmt == "spark-simplified":
            match = re.search(r" #(\d+)$", body)
            if match:
                reference, body = match.group(1), body[:match.start()]
        name_match = _NAME.match(body)
        if not name_match:
            raise ParseError("cannot read plan operator", path=self.path, line=line,
                             expected="an operator name", snippet=body)
        name = name_match.group(0)
        inherited = parent["codegen"] if parent else None
        if name in WRAPPERS:
            codegen_stage = inherited
            if name == "WholeStageCodegen":
                match = re.search(r"\((\d+)\)", body)
                codegen_stage = int(match.group(1)) if match else None
            elif name == "InputAdapter":
                codegen_stage = None
            return {"node": parent["node"] if parent else None, "codegen": codegen_stage,
                    "stats": _STATISTICS.search(rest or body), "real": False}
        self.counter += 1
        if operator_id is not None:
            node_id = f"{name} ({operator_id})"
            if operator_id in self.by_operator_id:
                raise ParseError(f"operator id {operator_id} appears twice", path=self.path,
                                 line=line, expected="each operator id once", snippet=body)
        else:
            node_id = f"{name} ({self.counter})"
        if self.fmt == "spark-simplified" and codegen is None:
            codegen = inherited
        op_name = name
        if name == "Scan" and body.startswith("Scan "):
            op_name = "Scan " + body.split(" ")[1] if len(body.split(" ")) > 1 else name
        table = _SCAN_TABLE.match(body)
        rows = data_size = None
        stats = parent["stats"] if parent else None
        if stats:
            data_size = _size_bytes(stats.group(1), stats.group(2))
            rows = _count(stats.group(3))
        op = make_operator(op_name, rows=rows, data_size=data_size,
                           alias=table.group(1).strip("`") if table else None)
        label = body if len(body) <= 80 else body[:77] + "..."
        attrs = unit_attrs(op["category"], label, [op], codegen_stage=codegen,
                           operator_id=operator_id)
        partitions = _PARTITIONING.search(body)
        if partitions and op["category"] == "exchange":
            attrs["partitions"] = 1 if partitions.group(2) else int(partitions.group(1))
        self.dag.add_node(node_id, **attrs)
        if operator_id is not None:
            self.by_operator_id[operator_id] = node_id
        plan_id = re.search(r"\[plan_id=(\d+)\]", body)
        if name == "ReusedExchange":
            if reference is not None:
                self.reuse_refs.append(("exchange", reference, node_id, line))
            elif plan_id and self.fmt == "spark-physical":
                self.reuse_refs.append(("plan", plan_id.group(1), node_id, line))
        elif name == "ReusedSubquery" and reference is not None:
            self.reuse_refs.append(("subquery", reference, node_id, line))
        elif reference is not None and name in _EXCHANGE_DEFS:
            self.exchange_refs[reference] = node_id
        elif reference is not None and name in _SUBQUERY_DEFS:
            self.subquery_refs[reference] = node_id
        elif plan_id and name in _EXCHANGE_DEFS:
            self.plan_ids.setdefault(plan_id.group(1), node_id)
        if parent is not None and parent["node"] is not None:
            self.dag.add_edge(node_id, parent["node"], edge_type=_edge_type(op["category"]))
        return {"node": node_id, "codegen": codegen if self.fmt == "spark-simplified" else None,
                "stats": None, "real": True}

    # ---- EXPLAIN FORMATTED ---------------------------------------------------------
    def read_formatted(self, start: int) -> None:
        lines = self.lines
        end = start
        while end < len(lines) and lines[end].strip():
            end += 1
        self.read_tree(start, end)
        detail_id = None
        subquery_roots: dict[str, str] = {}
        pending: list[tuple] = []  # (root or None, subquery key, hosting node)
        i = end
        while i < len(lines):
            line = lines[i].rstrip()
            header = _SUBQUERY_HEADER.match(line)
            if header:
                host = int(header.group(2))
                keys = _SUBQUERY_KEY.findall(header.group(3))
                tree_end = i + 1
                while (tree_end < len(lines) and lines[tree_end].strip()
                       and not _DETAIL.match(lines[tree_end])
                       and not _SUBQUERY_HEADER.match(lines[tree_end])):
                    tree_end += 1
                roots = self.read_tree(i + 1, tree_end) if tree_end > i + 1 else []
                if host not in self.by_operator_id:
                    raise ParseError(f"subquery hosted by unknown operator id {host}",
                                     path=self.path, line=i + 1,
                                     expected="a hosting operator id of the plan", snippet=line)
                root = roots[0] if roots else None
                if root is not None and keys:
                    subquery_roots.setdefault(keys[-1], root)
                pending.append((root, keys[-1] if keys else None, self.by_operator_id[host]))
                i = tree_end
                continue
            detail = _DETAIL.match(line)
            if detail:
                detail_id = int(detail.group(1))
                node = self.by_operator_id.get(detail_id)
                if node is not None:
                    codegen = re.search(r"\[codegen id : (\d+)\]", line)
                    if codegen:
                        self.dag.nodes[node]["codegen_stage"] = int(codegen.group(1))
                    reuse = re.search(r"\[Reuses operator id: (\d+)\]", line)
                    if reuse:
                        self.reuse_refs.append(("operator", reuse.group(1), node, i + 1))
            elif line.startswith("Location") and detail_id in self.by_operator_id:
                path = scan_location(line)
                attrs = self.dag.nodes[self.by_operator_id[detail_id]]
                if path and attrs["kind"] == "scan":
                    attrs["location"] = path
            elif line.startswith("ReadSchema:") and detail_id in self.by_operator_id:
                attrs = self.dag.nodes[self.by_operator_id[detail_id]]
                schema = _READ_SCHEMA.match(line)
                if schema and attrs["kind"] == "scan":
                    attrs["read_schema"] = dict(_SCHEMA_FIELD.findall(schema.group(1)))
            elif line.startswith("Input [") and detail_id in self.by_operator_id:
                attrs = self.dag.nodes[self.by_operator_id[detail_id]]
                columns = _INPUT.match(line)
                if columns and attrs["kind"] == "broadcast":
                    attrs["input_columns"] = [c.strip().split("#")[0]
                                              for c in columns.group(1).split(",") if c.strip()]
            elif line.startswith("Arguments:") and detail_id in self.by_operator_id:
                node = self.by_operator_id[detail_id]
                attrs = self.dag.nodes[node]
                partitions = _PARTITIONING.search(line)
                if partitions and attrs["kind"] == "exchange":
                    attrs["partitions"] = 1 if partitions.group(2) else int(partitions.group(1))
            i += 1
        # a subquery printed without a tree reuses one printed (maybe later) with it
        unresolved = []
        for root, key, host in pending:
            root = root or subquery_roots.get(key)
            if root is None:
                unresolved.append(host)
            elif root != host:
                self.dag.add_edge(root, host, edge_type="subquery")
        if unresolved:
            self.dag.graph["unresolved_subqueries"] = unresolved

    # ---- finishing ------------------------------------------------------------------
    def finish(self, line: int) -> QueryDag:
        for space, ref, node, ref_line in self.reuse_refs:
            if space == "operator":
                origin = self.by_operator_id.get(int(ref))
            elif space == "exchange":
                origin = self.exchange_refs.get(ref)
            elif space == "subquery":
                origin = self.subquery_refs.get(ref)
            else:
                origin = self.plan_ids.get(ref)
            if origin is None:
                if space == "plan":
                    continue  # the reused exchange's original is not printed in this text
                raise ParseError(f"reuse of unknown {space} {ref}", path=self.path, line=ref_line,
                                 expected=f"the reused {space} in the plan", snippet=node)
            if origin == node:
                continue
            self.dag.add_edge(origin, node, edge_type="reuse")
            # the data leaves a reused exchange the way it left the original
            origin_kind = self.dag.nodes[origin]["kind"]
            for _, _, attrs in self.dag.out_edges(node, data=True):
                if attrs.get("edge_type") in ("exchange", "broadcast"):
                    attrs["edge_type"] = _edge_type(origin_kind)
        if self.dag.number_of_nodes() == 0:
            raise ParseError("Spark plan has no operators", path=self.path, line=line,
                             expected="operator lines", snippet=self.lines[line - 1].strip()
                             if 0 < line <= len(self.lines) else "")
        self.dag.graph.update(source="spark", format=self.fmt, engine="spark", line=line)
        return check_acyclic(self.dag, path=self.path, line=line)


def _edge_type(category: str) -> str:
    if category == "broadcast":
        return "broadcast"
    if category == "exchange":
        return "exchange"
    if category == "subquery":
        return "subquery"
    return "pipeline"
