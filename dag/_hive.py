"""Read Hive EXPLAIN output (every variant Hive writes) into QueryDags.

Variants: classic ``STAGE DEPENDENCIES:`` / ``STAGE PLANS:`` text (MapReduce,
Tez, Hive-on-Spark, local work, conditional stages; also EXTENDED and ANALYZE),
user-level Tez (``Vertex dependency in root stage`` and ``<-Map 1 [SIMPLE_EDGE]``
trees), Calcite ``CBO PLAN:`` trees, and EXPLAIN FORMATTED one-line JSON.
``.q.out`` golden files hold several plans between PREHOOK/POSTHOOK lines;
:func:`parse_hive_plans` finds each one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from jobgauge.dag._graph import (
    QueryDag, check_acyclic, make_operator, require_text, scan_label, unit_attrs,
)
from jobgauge.errors import ParseError

MASKED = "#### A masked pattern was here ####"
_USER_DEP_HEADER = re.compile(r"^Vertex dependency in (root stage|Stage-\d+)\s*$")
_STAGE_LINE = re.compile(r"^\s*(Stage-\d+)\s*$")
_CBO_PREAMBLE = re.compile(r"^Plan (not )?optimized by CBO")
_VERTEX_NAME = r"[A-Z][A-Za-z]*(?: [A-Z][A-Za-z]*)* \d+"
_EDGE_ITEM = re.compile(r"(" + _VERTEX_NAME + r") \(([^()]*)\)")
_EDGE_LINE = re.compile(r"^(" + _VERTEX_NAME + r") <- (.+)$")
_STATS = re.compile(r"Num rows: (\d+)(?:/(\d+))?\s+Data size: (\d+)")
_USER_STATS = re.compile(r"rows=(\d+)(?:/(\d+))?\s+width=(\d+)")
_OPERATOR_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9 _\-]*")
_STAGE_ID = re.compile(r"Stage-\d+")
_CBO_LINE = re.compile(r"^([A-Za-z_][\w]*)\(")
_CBO_ROWCOUNT = re.compile(r"rowcount = ([0-9][0-9.]*(?:[eE][+-]?\d+)?)")
_EXPLAIN_PREFIX = re.compile(
    r"^\s*explain(\s+(analyze|extended|formatted|cbo|vectorization|detail|dependency|"
    r"authorization|locks|ast|logical|ddl|reoptimization|user|cost|joincost|only|summary|"
    r"operator|expression))*\s+", re.IGNORECASE)


# ---- splitting a .q.out into plans ------------------------------------------------
@dataclass
class _Segment:
    kind: str          # classic, user, cbo, json
    start: int         # 0-based index of the first line
    end: int = -1      # exclusive
    query: str | None = None
    has_tree: bool = False


def _split_segments(lines: list[str]) -> list[_Segment]:
    segments: list[_Segment] = []
    current: _Segment | None = None
    query: str | None = None
    query_lines: list[str] | None = None

    def close(at: int) -> None:
        nonlocal current
        if current is not None:
            current.end = at
            segments.append(current)
            current = None

    for i, line in enumerate(lines):
        if query_lines is not None:  # inside "PREHOOK: query:" text
            if line.startswith(("PREHOOK:", "POSTHOOK:")):
                query = _clean_query("\n".join(query_lines))
                query_lines = None
            else:
                query_lines.append(line)
                continue
        if line.startswith(("PREHOOK:", "POSTHOOK:")):
            close(i)
            if line.startswith("PREHOOK: query:"):
                query_lines = [line[len("PREHOOK: query:"):]]
            continue
        stripped = line.strip()
        if not stripped or stripped == MASKED:
            if current is not None and current.kind == "cbo" and current.has_tree and not stripped:
                close(i)
            continue
        at_col0 = not line[:1].isspace()
        start = None
        if line.rstrip() == "STAGE DEPENDENCIES:":
            start = "classic"
        elif line.rstrip() == "CBO PLAN:":
            start = "cbo"
        elif line.startswith("{") and ('"STAGE PLANS"' in line or '"STAGE DEPENDENCIES"' in line
                                       or '"CBOPlan"' in line):
            start = "json"
        elif _USER_DEP_HEADER.match(line):
            # a second dependency section belongs to the same plan until its tree began
            if current is None or current.kind != "user" or current.has_tree:
                start = "user"
        elif at_col0 and _STAGE_LINE.match(line) and (current is None or current.kind != "user"):
            start = "user"
        if start is not None:
            close(i)
            current = _Segment(start, i, query=query)
            if start == "user" and _STAGE_LINE.match(line):
                current.has_tree = True
            if start == "json":
                close(i + 1)
            continue
        if current is None:
            continue
        if current.kind == "classic":
            if at_col0 and line.rstrip() != "STAGE PLANS:":
                close(i)
        elif current.kind == "user":
            if at_col0:
                if _STAGE_LINE.match(line):
                    current.has_tree = True
                elif current.has_tree or not (" <- " in line or _USER_DEP_HEADER.match(line)):
                    close(i)
        elif current.kind == "cbo":
            if at_col0 and current.has_tree and not _CBO_LINE.match(stripped):
                close(i)
            else:
                current.has_tree = True
    close(len(lines))
    return segments


def _clean_query(text: str) -> str | None:
    text = text.strip()
    if not text:
        return None
    text = _EXPLAIN_PREFIX.sub("", text, count=1).strip()
    return text[:4000] or None


def parse_hive_plans(text, *, path=None, first_only: bool = False) -> list[QueryDag]:
    """Every Hive plan in ``text`` in order (the first only, if asked)."""
    text = require_text(text, path=path)
    lines = text.splitlines()
    segments = _split_segments(lines)
    if not segments:
        raise ParseError("no Hive plan found", path=path, line=1 if lines else None,
                         expected="'STAGE DEPENDENCIES:', 'Vertex dependency in root stage', "
                                  "'Stage-N', 'CBO PLAN:' or EXPLAIN FORMATTED JSON",
                         snippet=next((ln.strip() for ln in lines if ln.strip()), ""))
    dags = []
    for segment in segments:
        reader = {"classic": _parse_classic, "user": _parse_user, "cbo": _parse_cbo,
                  "json": _parse_json}[segment.kind]
        dag = reader(lines, segment, path)
        dag.graph["source"] = "hive"
        dag.graph["line"] = segment.start + 1
        if segment.query:
            dag.graph["query"] = segment.query
        dags.append(dag)
        if first_only:
            break
    return dags


# ---- outline of indented text --------------------------------------------------
@dataclass
class _Item:
    text: str
    indent: int
    line: int  # 1-based line in the whole text
    children: list["_Item"] = field(default_factory=list)


def _outline(lines: list[str], start: int, end: int) -> list[_Item]:
    roots: list[_Item] = []
    stack: list[_Item] = []
    for i in range(start, end):
        raw = lines[i].expandtabs(8).rstrip()
        text = raw.strip()
        if not text or text == MASKED:
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        item = _Item(text, indent, i + 1)
        while stack and stack[-1].indent >= indent:
            stack.pop()
        (stack[-1].children if stack else roots).append(item)
        stack.append(item)
    return roots


def _is_operator_text(text: str) -> bool:
    return ":" not in text and _OPERATOR_TEXT.fullmatch(text) is not None


def _stats_from_text(value: str) -> dict:
    match = _STATS.search(value)
    if not match:
        return {}
    rows, actual, size = match.groups()
    return {"rows": int(rows), "rows_actual": int(actual) if actual else None,
            "data_size": int(size)}


def _ops_from_items(items: list[_Item], ops: list[dict], parent=None) -> None:
    """Operators of a classic ``... Operator Tree:`` block, in printed order."""
    for item in items:
        if not _is_operator_text(item.text):
            continue
        props: dict = {}
        for child in item.children:
            key, sep, value = child.text.partition(":")
            if not sep:
                continue
            key = key.strip()
            if key == "Statistics":
                props.update(_stats_from_text(value))
            elif key == "alias":
                props["alias"] = value.strip()
        ops.append(make_operator(item.text, parent=parent, **props))
        _ops_from_items(item.children, ops, parent=len(ops) - 1)


def _alias_ops(items: list[_Item], ops: list[dict]) -> None:
    """``Alias -> Map Operator Tree:`` blocks: alias lines, each over a tree."""
    for alias_item in items:
        _ops_from_items(alias_item.children, ops)


def _tree_ops(block: _Item, ops: list[dict]) -> None:
    if block.text.startswith("Alias ->"):
        _alias_ops(block.children, ops)
    else:
        _ops_from_items(block.children, ops)


# ---- the stage plan every variant is turned into ---------------------------------
@dataclass
class _Unit:
    name: str
    kind: str
    operators: list[dict]
    extra: dict = field(default_factory=dict)


@dataclass
class _StagePlan:
    stage_id: str
    stage_type: str
    layout: str                 # single, mapreduce, container
    units: list[_Unit]
    edges: list[tuple] = field(default_factory=list)   # (src, dst, edge_type, partitions)
    line: int | None = None


def _stage_kind(stage_type: str) -> str:
    t = stage_type.strip().rstrip(":").strip().rstrip("{}").strip()
    if t == "Map Reduce Local Work":
        return "map-local"
    if t == "Conditional Operator":
        return "conditional"
    if t.startswith("Fetch"):
        return "fetch"
    if t.startswith("Move"):
        return "move"
    if "Stats" in t:
        return "stats"
    return "other"


def _vertex_kind(name: str, container: str) -> str:
    prefix = name.split(" ")[0]
    engine = "spark" if container == "Spark" else "tez"
    if prefix == "Map":
        return f"{engine}-map"
    if prefix == "Reducer":
        return f"{engine}-reducer"
    if prefix == "Union":
        return "tez-union" if engine == "tez" else "union"
    return "other"


def _parse_edge_rhs(rhs: str, *, line, path) -> list[tuple]:
    items = _EDGE_ITEM.findall(rhs)
    leftover = _EDGE_ITEM.sub("", rhs).replace(",", "").strip()
    if not items or leftover:
        raise ParseError("cannot read vertex edge list", path=path, line=line,
                         expected="'Vertex N (EDGE_TYPE), ...'", snippet=rhs)
    edges = []
    for name, inside in items:
        edge_type, _, partitions = inside.partition(",")
        partitions = partitions.strip()
        edges.append((name, edge_type.strip(), int(partitions) if partitions.isdigit() else None))
    return edges


def _vertex_edges(child: str, rhs_items: list[tuple]) -> list[tuple]:
    """Edges in data-flow direction. ``X <- Union 3 (CONTAINS)`` means X feeds
    the union, so that one edge is reversed."""
    edges = []
    for parent, edge_type, partitions in rhs_items:
        if edge_type == "CONTAINS":
            edges.append((child, parent, edge_type, partitions))
        else:
            edges.append((parent, child, edge_type, partitions))
    return edges


# ---- classic text -------------------------------------------------------------------
def _parse_dependency_items(items: list[_Item], path) -> dict:
    deps: dict[str, dict] = {}
    for item in items:
        match = re.match(r"^(Stage-\d+)\b(.*)$", item.text)
        if not match:
            raise ParseError("cannot read stage dependency", path=path, line=item.line,
                             expected="'Stage-N is a root stage' or 'Stage-N depends on stages: ...'",
                             snippet=item.text)
        stage_id, rest = match.groups()
        rest = re.sub(r"\[[A-Z_]+\]\s*$", "", rest)  # optional task type
        before, _, consists = rest.partition("consists of")
        depends = ""
        if "depends on stages:" in before:
            depends = before.split("depends on stages:", 1)[1]
            depends = depends.split("has a backup stage:", 1)[0]
        backup = re.search(r"has a backup stage:\s*(Stage-\d+)", before)
        deps[stage_id] = {
            "root": "is a root stage" in before,
            "depends_on": _STAGE_ID.findall(depends),
            "consists_of": _STAGE_ID.findall(consists),
            "backup": backup.group(1) if backup else None,
        }
    return deps


def _find(items: list[_Item], *, exact: str) -> list[_Item]:
    return [item for item in items if item.text == exact]


def _vertex_extra(items: list[_Item]) -> dict:
    extra = {}
    for item in items:
        key, sep, value = item.text.partition(":")
        if not sep:
            continue
        if key == "Execution mode":
            extra["execution_mode"] = value.strip()
        elif key == "Local Work":
            extra["local_work"] = True
    return extra


def _classic_stage(item: _Item, path) -> _StagePlan:
    match = re.match(r"^Stage: (Stage-\d+)$", item.text)
    if not match:
        raise ParseError("cannot read stage plan header", path=path, line=item.line,
                         expected="'Stage: Stage-N'", snippet=item.text)
    stage_id = match.group(1)
    if not item.children:
        return _StagePlan(stage_id, "", "single",
                          [_Unit(stage_id, "other", [])], line=item.line)
    body = item.children[0]
    stage_type = body.text.rstrip(":").strip()
    if stage_type == "Map Reduce":
        map_ops: list[dict] = []
        reduce_ops: list[dict] = []
        for block in body.children:
            if block.text.endswith("Map Operator Tree:"):
                _tree_ops(block, map_ops)
            elif block.text == "Reduce Operator Tree:":
                _tree_ops(block, reduce_ops)
        extra = _vertex_extra(body.children)
        units = [_Unit("Map", "map", map_ops, extra)]
        edges = []
        if any(b.text == "Reduce Operator Tree:" for b in body.children):
            units.append(_Unit("Reduce", "reduce", reduce_ops))
            edges.append(("Map", "Reduce", "shuffle", None))
        return _StagePlan(stage_id, stage_type, "mapreduce", units, edges, line=item.line)
    if stage_type in ("Tez", "Spark"):
        edges = []
        units = []
        for block in body.children:
            if block.text == "Edges:":
                for edge_item in block.children:
                    match = _EDGE_LINE.match(edge_item.text)
                    if not match:
                        raise ParseError("cannot read vertex edge", path=path, line=edge_item.line,
                                         expected="'Vertex N <- Vertex M (EDGE_TYPE), ...'",
                                         snippet=edge_item.text)
                    child, rhs = match.groups()
                    edges += _vertex_edges(child, _parse_edge_rhs(rhs, line=edge_item.line, path=path))
            elif block.text == "Vertices:":
                for vertex in block.children:
                    if not re.fullmatch(_VERTEX_NAME, vertex.text):
                        raise ParseError("cannot read vertex name", path=path, line=vertex.line,
                                         expected="'Map N', 'Reducer N' or 'Union N'",
                                         snippet=vertex.text)
                    ops: list[dict] = []
                    for tree in vertex.children:
                        if tree.text.endswith("Operator Tree:"):
                            _tree_ops(tree, ops)
                    units.append(_Unit(vertex.text, _vertex_kind(vertex.text, stage_type), ops,
                                       _vertex_extra(vertex.children)))
        return _StagePlan(stage_id, stage_type, "container", units, edges, line=item.line)
    kind = _stage_kind(stage_type)
    ops: list[dict] = []
    if kind == "map-local":
        for block in body.children:
            if block.text == "Alias -> Map Local Operator Tree:":
                _alias_ops(block.children, ops)
    else:
        ops.append(make_operator(stage_type))
        for block in body.children:
            if block.text.endswith("Tree:"):
                _ops_from_items(block.children, ops, parent=0)
    return _StagePlan(stage_id, stage_type, "single", [_Unit(stage_id, kind, ops)], line=item.line)


def _parse_classic(lines, segment: _Segment, path) -> QueryDag:
    roots = _outline(lines, segment.start, segment.end)
    deps_items = _find(roots, exact="STAGE DEPENDENCIES:")
    plan_items = _find(roots, exact="STAGE PLANS:")
    if not plan_items:
        last = max((i for i in range(segment.start, segment.end) if lines[i].strip()),
                   default=segment.start)
        raise ParseError("plan has no STAGE PLANS section", path=path, line=last + 1,
                         expected="'STAGE PLANS:' after the stage dependencies",
                         snippet=lines[last].strip())
    deps = _parse_dependency_items(deps_items[0].children, path)
    plans = [_classic_stage(item, path) for item in plan_items[0].children]
    _check_complete(deps, {plan.stage_id for plan in plans}, lines, segment, path)
    return _build_stage_dag(deps, plans, fmt="hive-classic", path=path, line=segment.start + 1)


def _check_complete(deps: dict, planned, lines, segment: _Segment, path, *, what="stage",
                    where="STAGE PLANS") -> None:
    """Refuse a plan cut short: Hive plans every stage (or vertex) it lists as a dependency,
    so one that is listed but never planned means the text ends early."""
    listed = list(deps)
    for info in deps.values():
        listed += [other for other in info["depends_on"] + info["consists_of"]
                   if other not in listed]
    missing = [name for name in listed if name not in planned]
    if missing:
        last = max((i for i in range(segment.start, segment.end) if lines[i].strip()),
                   default=segment.start)
        raise ParseError(f"the plan is incomplete (cut short?): {what} "
                         f"{', '.join(missing)} listed but never planned",
                         path=path, line=last + 1,
                         expected=f"a plan for every {what} in {where}",
                         snippet=lines[last].strip())


# ---- user-level Tez --------------------------------------------------------------
_USER_VERTEX_HEADER = re.compile(r"^(" + _VERTEX_NAME + r")(?:\s+(.*))?$")
_USER_EDGE_VERTEX = re.compile(r"^<-(" + _VERTEX_NAME + r") \[([^\]]+)\](?:\s+(.*))?$")
_USER_OPERATOR = re.compile(r"^(?:<-)?([A-Za-z][\w ]*?) \[([A-Za-z][A-Za-z_]*_\d+)\](?:\s*\(([^)]*)\))?")
_USER_ID_TYPES = {"RS": "Reduce Output Operator"}
_USER_SCAN_TABLE = re.compile(r"^([\w$]+@[\w$]+),([^,]+),")


def _parse_user(lines, segment: _Segment, path) -> QueryDag:
    dep_edges: list[tuple] = []   # (src, dst, edge_type, partitions)
    stages: dict[str, dict] = {}  # stage -> {"kind", "type", "ops", "vertices", "line"}
    depends: dict[str, list[str]] = {}
    vertex_stage: dict[str, str] = {}
    vertex_ops: dict[str, list[dict]] = {}
    vertex_extra: dict[str, dict] = {}
    tree_edges: list[tuple] = []
    stack: list[dict] = []  # {"min": indent, "type": stage|vertex, "name", "ops": [(indent, idx)]}
    in_deps = False
    for i in range(segment.start, segment.end):
        raw = lines[i].expandtabs(8).rstrip()
        text = raw.strip()
        if not text or text == MASKED or _CBO_PREAMBLE.match(text):
            in_deps = False if not text else in_deps
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        if _USER_DEP_HEADER.match(raw):
            in_deps = True
            continue
        if in_deps and indent == 0 and not _STAGE_LINE.match(raw):
            match = _EDGE_LINE.match(text)
            if not match:
                raise ParseError("cannot read vertex dependency", path=path, line=i + 1,
                                 expected="'Vertex N <- Vertex M (EDGE_TYPE), ...'", snippet=text)
            child, rhs = match.groups()
            for edge in _vertex_edges(child, _parse_edge_rhs(rhs, line=i + 1, path=path)):
                dep_edges.append(edge)
            continue
        in_deps = False
        while stack and indent < stack[-1]["min"]:
            stack.pop()
        stage_ctx = next((c for c in reversed(stack) if c["type"] == "stage"), None)
        vertex_ctx = next((c for c in reversed(stack) if c["type"] == "vertex"), None)
        match = _STAGE_LINE.match(raw)
        if match:
            stage_id = match.group(1)
            if stage_id in stages:
                raise ParseError(f"{stage_id} appears twice", path=path, line=i + 1,
                                 expected="each Stage-N once", snippet=text)
            stages[stage_id] = {"kind": None, "type": "", "ops": [], "vertices": [], "line": i + 1}
            depends.setdefault(stage_id, [])
            if stage_ctx is not None:
                depends[stage_ctx["name"]].append(stage_id)
            stack.append({"min": indent + 1, "type": "stage", "name": stage_id, "ops": []})
            continue
        if stage_ctx is None:
            raise ParseError("plan line outside any stage", path=path, line=i + 1,
                             expected="'Stage-N' before the plan tree", snippet=text)
        stage = stages[stage_ctx["name"]]
        match = _USER_EDGE_VERTEX.match(text)
        if match:
            name, edge_type, mode = match.groups()
            if vertex_ctx is None:
                raise ParseError("vertex input outside any vertex", path=path, line=i + 1,
                                 expected="a vertex header before '<-'", snippet=text)
            _user_vertex(name, stage_ctx["name"], stage, vertex_stage, vertex_ops, vertex_extra, mode)
            tree_edges.append((name, vertex_ctx["name"], edge_type, None))
            stack.append({"min": indent + 1, "type": "vertex", "name": name, "ops": []})
            continue
        if stage["kind"] is None and vertex_ctx is None:
            match = _USER_VERTEX_HEADER.match(text)
            if match:
                name, mode = match.groups()
                stage["kind"] = "container"
                _user_vertex(name, stage_ctx["name"], stage, vertex_stage, vertex_ops,
                             vertex_extra, mode)
                stack.append({"min": indent, "type": "vertex", "name": name, "ops": []})
                continue
            stage["type"] = text.rstrip("{}").strip()
            stage["kind"] = _stage_kind(stage["type"])
            stage["ops"].append(make_operator(stage["type"]))
            stage_ctx["ops"].append((indent, 0))
            continue
        if text.startswith("Please refer to the previous"):
            continue
        match = _USER_OPERATOR.match(text)
        if not match:
            # a property line (Output:[...], predicate:..., limit:100, ...); a scan's
            # first one names "db@table,alias,..."
            table = _USER_SCAN_TABLE.match(text)
            owner = vertex_ctx if vertex_ctx is not None else stage_ctx
            ops = vertex_ops[owner["name"]] if vertex_ctx is not None else stage["ops"]
            if table and ops and ops[-1]["category"] == "scan" and "alias" not in ops[-1]:
                ops[-1]["alias"] = table.group(2).strip()
            continue
        op_type, op_id, stats = match.groups()
        prefix = op_id.rsplit("_", 1)[0]
        op_type = _USER_ID_TYPES.get(prefix, op_type) if op_type.isupper() else op_type
        props = {"id": op_id}
        if stats:
            stat = _USER_STATS.search(stats)
            if stat:
                rows, actual, width = stat.groups()
                props.update(rows=int(rows), rows_actual=int(actual) if actual else None,
                             data_size=int(rows) * int(width))
        owner = vertex_ctx if vertex_ctx is not None else stage_ctx
        ops = vertex_ops[owner["name"]] if vertex_ctx is not None else stage["ops"]
        while owner["ops"] and owner["ops"][-1][0] >= indent:
            owner["ops"].pop()
        parent = owner["ops"][-1][1] if owner["ops"] else None
        ops.append(make_operator(op_type, parent=parent, **props))
        owner["ops"].append((indent, len(ops) - 1))
    if not stages:
        raise ParseError("user-level plan has no stage tree", path=path, line=segment.end,
                         expected="'Stage-N' lines", snippet=lines[segment.start].strip())
    containers = [s for s, info in stages.items() if info["kind"] == "container"]
    if containers:       # every vertex of the dependency lines is in a stage tree
        listed = {name: {"depends_on": [], "consists_of": []}
                  for edge in dep_edges for name in edge[:2]}
        _check_complete(listed, vertex_stage, lines, segment, path, what="vertex",
                        where="the stage tree")
    edges = dep_edges + tree_edges
    for src, dst, _, _ in edges:
        for name in (src, dst):
            if name not in vertex_stage:
                if not containers:
                    raise ParseError(f"vertex {name!r} has no stage", path=path,
                                     line=segment.start + 1,
                                     expected="the vertex in a Stage-N tree", snippet=name)
                vertex_stage[name] = containers[0]
                stages[containers[0]]["vertices"].append(name)
                vertex_ops.setdefault(name, [])
    plans = []
    engine_spark = any(t in ("PARTITION-LEVEL SORT", "GROUP", "SORT", "GROUP PARTITION-LEVEL SORT")
                       for _, _, t, _ in edges)
    container_type = "Spark" if engine_spark else "Tez"
    for stage_id, info in stages.items():
        if info["kind"] == "container":
            units = [_Unit(name, _vertex_kind(name, container_type), vertex_ops[name],
                           vertex_extra.get(name, {})) for name in info["vertices"]]
            stage_edges = []
            seen = set()
            for src, dst, edge_type, partitions in edges:
                if vertex_stage[dst] == stage_id and (src, dst) not in seen:
                    seen.add((src, dst))
                    stage_edges.append((src, dst, edge_type, partitions))
            plans.append(_StagePlan(stage_id, container_type, "container", units, stage_edges,
                                    line=info["line"]))
        else:
            kind = info["kind"] or "other"
            plans.append(_StagePlan(stage_id, info["type"], "single",
                                    [_Unit(stage_id, kind, info["ops"])], line=info["line"]))
    deps = {stage_id: {"root": not nested, "depends_on": nested, "consists_of": [], "backup": None}
            for stage_id, nested in depends.items()}
    return _build_stage_dag(deps, plans, fmt="hive-user", path=path, line=segment.start + 1)


def _user_vertex(name, stage_id, stage, vertex_stage, vertex_ops, vertex_extra, mode):
    if name not in vertex_stage:
        vertex_stage[name] = stage_id
        stage["vertices"].append(name)
        vertex_ops[name] = []
    if mode and name not in vertex_extra:
        vertex_extra[name] = {"execution_mode": mode.strip()}


# ---- Calcite CBO plan ------------------------------------------------------------------


def _parse_cbo(lines, segment: _Segment, path) -> QueryDag:
    dag = QueryDag()
    dag.graph.update(format="hive-cbo", engine="calcite")
    stack: list[tuple[int, str]] = []
    count = 0
    for i in range(segment.start + 1, segment.end):
        raw = lines[i].expandtabs(8).rstrip()
        text = raw.strip()
        if not text or text == MASKED:
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        match = _CBO_LINE.match(text)
        if not match:
            raise ParseError("cannot read CBO plan operator", path=path, line=i + 1,
                             expected="'HiveOperator(...)'", snippet=text)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not stack and count:
            raise ParseError("CBO plan has a second root operator", path=path, line=i + 1,
                             expected="one operator tree, children indented", snippet=text)
        count += 1
        name = match.group(1)
        node_id = f"{name} ({count})"
        rows_match = _CBO_ROWCOUNT.search(text)
        rows = int(float(rows_match.group(1))) if rows_match else None
        table = re.search(r"table=\[\[([^\]]*)\]\]", text)
        op = make_operator(name, rows=rows,
                           alias=table.group(1).replace(" ", "") if table else None)
        dag.add_node(node_id, **unit_attrs(op["category"], text if len(text) <= 80 else text[:77] + "...",
                                           [op]))
        if stack:
            edge_type = "exchange" if op["category"] == "exchange" else "pipeline"
            dag.add_edge(node_id, stack[-1][1], edge_type=edge_type)
        stack.append((indent, node_id))
    if not count:
        raise ParseError("CBO plan has no operators", path=path, line=segment.start + 1,
                         expected="operator lines after 'CBO PLAN:'", snippet="CBO PLAN:")
    _check_cbo_complete(dag, lines, segment, path)
    return dag


_CBO_LEAF = re.compile(r"^Hive\w*(Scan|Values)$")          # reads rows, needs no input
_CBO_TWO_INPUTS = re.compile(r"^Hive(\w*Join|Union|Intersect|Except)$")


def _check_cbo_complete(dag: QueryDag, lines, segment: _Segment, path) -> None:
    """Refuse a CBO tree cut short: every branch ends in a scan, joins and set
    operations have two inputs."""
    for node in dag.nodes:
        name = node.split(" (")[0]
        inputs = dag.in_degree(node)
        if (inputs == 0 and not _CBO_LEAF.match(name)) or \
                (inputs == 1 and _CBO_TWO_INPUTS.match(name)):
            last = max((i for i in range(segment.start, segment.end) if lines[i].strip()),
                       default=segment.start)
            raise ParseError(f"the CBO plan is incomplete (cut short?): {node} has "
                             f"{'no input' if inputs == 0 else 'one input'}", path=path,
                             line=last + 1, expected="every branch ending in a table scan",
                             snippet=lines[last].strip())


# ---- EXPLAIN FORMATTED JSON ------------------------------------------------------------
def _parse_json(lines, segment: _Segment, path) -> QueryDag:
    line_no = segment.start + 1
    try:
        data = json.loads(lines[segment.start])
    except (ValueError, RecursionError) as exc:
        reason = getattr(exc, "msg", "too deeply nested")
        pos = getattr(exc, "pos", 0) or 0
        raise ParseError(f"EXPLAIN FORMATTED JSON is malformed: {reason}", path=path, line=line_no,
                         column=getattr(exc, "colno", None), expected="one JSON object",
                         snippet=lines[segment.start][max(0, pos - 30):][:60]) from None
    if not isinstance(data, dict):
        raise ParseError("EXPLAIN FORMATTED JSON is not an object", path=path, line=line_no,
                         expected="a JSON object", snippet=lines[segment.start][:60])
    if isinstance(data.get("STAGE PLANS"), dict):
        deps_json = data.get("STAGE DEPENDENCIES")
        deps = {}
        for stage_id, info in (deps_json.items() if isinstance(deps_json, dict) else []):
            info = info if isinstance(info, dict) else {}
            deps[str(stage_id)] = {
                "root": str(info.get("ROOT STAGE", "")).upper() == "TRUE",
                "depends_on": _STAGE_ID.findall(str(info.get("DEPENDENT STAGES", ""))),
                "consists_of": _STAGE_ID.findall(str(info.get("CONDITIONAL CHILD TASKS", ""))),
                "backup": (_STAGE_ID.findall(str(info.get("BACKUP STAGE", ""))) or [None])[0],
            }
        plans = [_json_stage(str(stage_id), body) for stage_id, body in data["STAGE PLANS"].items()]
        return _build_stage_dag(deps, plans, fmt="hive-json", path=path, line=line_no)
    if isinstance(data.get("CBOPlan"), (str, dict)):
        return _json_cbo(data["CBOPlan"], path=path, line=line_no)
    raise ParseError("EXPLAIN FORMATTED JSON has no plan", path=path, line=line_no,
                     expected="'STAGE PLANS' or 'CBOPlan'", snippet=lines[segment.start][:60])


def _json_ops(value, ops: list[dict], parent=None) -> None:
    if isinstance(value, list):
        for item in value:
            _json_ops(item, ops, parent)
        return
    if not isinstance(value, dict):
        return
    for op_type, body in value.items():
        if not isinstance(body, dict) or not isinstance(op_type, str) or not op_type:
            continue
        props = _stats_from_text(str(body.get("Statistics:", "")))
        alias = body.get("alias:")
        op = make_operator(op_type, parent=parent, id=body.get("OperatorId:") if isinstance(
            body.get("OperatorId:"), str) else None, alias=alias if isinstance(alias, str) else None,
            **props)
        ops.append(op)
        _json_ops(body.get("children"), ops, parent=len(ops) - 1)


def _json_stage(stage_id: str, body) -> _StagePlan:
    if not isinstance(body, dict) or not body:
        return _StagePlan(stage_id, "", "single", [_Unit(stage_id, "other", [])])
    stage_type, content = next(iter(body.items()))
    stage_type = str(stage_type).rstrip(":").strip()
    content = content if isinstance(content, dict) else {}
    if stage_type == "Map Reduce":
        map_ops: list[dict] = []
        reduce_ops: list[dict] = []
        for key, value in content.items():
            if key.endswith("Map Operator Tree:"):
                if key.startswith("Alias ->") and isinstance(value, dict):
                    for tree in value.values():
                        _json_ops(tree, map_ops)
                else:
                    _json_ops(value, map_ops)
            elif key == "Reduce Operator Tree:":
                _json_ops(value, reduce_ops)
        extra = {}
        if isinstance(content.get("Execution mode:"), str):
            extra["execution_mode"] = content["Execution mode:"]
        if "Local Work:" in content:
            extra["local_work"] = True
        units = [_Unit("Map", "map", map_ops, extra)]
        edges = []
        if "Reduce Operator Tree:" in content:
            units.append(_Unit("Reduce", "reduce", reduce_ops))
            edges.append(("Map", "Reduce", "shuffle", None))
        return _StagePlan(stage_id, stage_type, "mapreduce", units, edges)
    if stage_type in ("Tez", "Spark"):
        edges = []
        json_edges = content.get("Edges:")
        for child, parents in (json_edges.items() if isinstance(json_edges, dict) else []):
            parents = parents if isinstance(parents, list) else [parents]
            items = []
            for parent in parents:
                if isinstance(parent, dict) and isinstance(parent.get("parent"), str):
                    edge_type = str(parent.get("type", ""))
                    partitions = parent.get("partitions")
                    items.append((parent["parent"], edge_type,
                                  partitions if isinstance(partitions, int) else None))
            edges += _vertex_edges(str(child), items)
        units = []
        vertices = content.get("Vertices:")
        for name, vertex in (vertices.items() if isinstance(vertices, dict) else []):
            vertex = vertex if isinstance(vertex, dict) else {}
            ops: list[dict] = []
            for key, value in vertex.items():
                if key.endswith("Operator Tree:"):
                    _json_ops(value, ops)
            extra = {}
            if isinstance(vertex.get("Execution mode:"), str):
                extra["execution_mode"] = vertex["Execution mode:"]
            units.append(_Unit(str(name), _vertex_kind(str(name), stage_type), ops, extra))
        return _StagePlan(stage_id, stage_type, "container", units, edges)
    kind = _stage_kind(stage_type)
    ops: list[dict] = []
    if kind == "map-local":
        tree = content.get("Alias -> Map Local Operator Tree:")
        for alias_tree in (tree.values() if isinstance(tree, dict) else []):
            _json_ops(alias_tree, ops)
    else:
        ops.append(make_operator(stage_type))
        for key, value in content.items():
            if key.endswith("Tree:"):
                _json_ops(value, ops, parent=0)
    return _StagePlan(stage_id, stage_type, "single", [_Unit(stage_id, kind, ops)])


def _json_cbo(plan, *, path, line) -> QueryDag:
    if isinstance(plan, str):
        try:
            plan = json.loads(plan)
        except (ValueError, RecursionError):
            raise ParseError("CBOPlan is not JSON", path=path, line=line,
                             expected="a JSON object with 'rels'", snippet=plan[:60]) from None
    rels = plan.get("rels") if isinstance(plan, dict) else None
    if not isinstance(rels, list) or not rels:
        raise ParseError("CBOPlan has no rels", path=path, line=line,
                         expected="a JSON object with 'rels'", snippet=str(plan)[:60])
    dag = QueryDag()
    dag.graph.update(format="hive-json-cbo", engine="calcite")
    ids: dict[str, str] = {}
    previous = None
    for rel in rels:
        if not isinstance(rel, dict):
            raise ParseError("CBOPlan rel is not an object", path=path, line=line,
                             expected="{'id': ..., 'relOp': ...}", snippet=str(rel)[:60])
        rel_id = str(rel.get("id", len(ids)))
        op_name = str(rel.get("relOp", "other")).rsplit(".", 1)[-1]
        node_id = f"{op_name} ({rel_id})"
        rows = rel.get("rowCount")
        table = rel.get("table")
        op = make_operator(op_name, rows=int(rows) if isinstance(rows, (int, float)) else None,
                           alias=".".join(map(str, table)) if isinstance(table, list) else None)
        dag.add_node(node_id, **unit_attrs(op["category"], node_id, [op]))
        inputs = rel.get("inputs")
        if not isinstance(inputs, list):
            inputs = [previous] if previous is not None else []
        for source in inputs:
            if str(source) not in ids:
                raise ParseError(f"CBOPlan rel {rel_id} names unknown input {source!r}", path=path,
                                 line=line, expected="inputs listed before use", snippet=str(rel)[:60])
            dag.add_edge(ids[str(source)], node_id, edge_type="pipeline")
        ids[rel_id] = node_id
        previous = rel_id
    return check_acyclic(dag, path=path, line=line)


# ---- the DAG of stages and vertices ---------------------------------------------------
def _build_stage_dag(deps: dict, plans: list[_StagePlan], *, fmt: str, path, line) -> QueryDag:
    dag = QueryDag()
    plan_by_id: dict[str, _StagePlan] = {}
    for plan in plans:
        if plan.stage_id in plan_by_id:
            raise ParseError(f"{plan.stage_id} has two plans", path=path, line=plan.line or line,
                             expected="each stage planned once", snippet=plan.stage_id)
        plan_by_id[plan.stage_id] = plan
    stage_ids = list(deps)
    for plan in plans:
        if plan.stage_id not in deps:
            stage_ids.append(plan.stage_id)
    for info in deps.values():
        for other in info["depends_on"] + info["consists_of"]:
            if other not in stage_ids:
                stage_ids.append(other)
    # a vertex name used by two container stages is qualified with its stage
    seen_names: dict[str, int] = {}
    for plan in plans:
        if plan.layout == "container":
            for unit in plan.units:
                seen_names[unit.name] = seen_names.get(unit.name, 0) + 1
    qualify = any(count > 1 for count in seen_names.values())
    entries: dict[str, list[str]] = {}
    exits: dict[str, list[str]] = {}
    stage_nodes: dict[str, list[str]] = {}
    engines = set()
    for stage_id in stage_ids:
        plan = plan_by_id.get(stage_id)
        if plan is None or (plan.layout == "container" and not plan.units and not plan.edges):
            stage_type = plan.stage_type if plan else None
            kind = "other"
            dag.add_node(stage_id, **unit_attrs(kind, stage_id, [], stage=stage_id,
                                                stage_type=stage_type))
            entries[stage_id] = exits[stage_id] = stage_nodes[stage_id] = [stage_id]
            continue
        if plan.stage_type == "Map Reduce" or plan.stage_type == "Map Reduce Local Work":
            engines.add("mapreduce")
        elif plan.stage_type in ("Tez", "Spark"):
            engines.add(plan.stage_type.lower())
        if plan.layout == "single":
            unit = plan.units[0]
            dag.add_node(stage_id, **unit_attrs(unit.kind, scan_label(stage_id, unit.operators),
                                                unit.operators, stage=stage_id,
                                                stage_type=plan.stage_type, **unit.extra))
            entries[stage_id] = exits[stage_id] = stage_nodes[stage_id] = [stage_id]
            continue

        def node_name(name, plan=plan):
            if plan.layout == "mapreduce" or qualify:
                return f"{plan.stage_id}:{name}"
            return name

        names = []
        for unit in plan.units:
            node_id = node_name(unit.name)
            if node_id in dag:
                raise ParseError(f"vertex {unit.name!r} listed twice in {stage_id}", path=path,
                                 line=plan.line or line, expected="each vertex once",
                                 snippet=unit.name)
            dag.add_node(node_id, **unit_attrs(unit.kind, scan_label(node_id, unit.operators),
                                               unit.operators, stage=stage_id,
                                               stage_type=plan.stage_type, **unit.extra))
            names.append(node_id)
        inner = []
        for src, dst, edge_type, partitions in plan.edges:
            u, v = node_name(src), node_name(dst)
            for end, name in ((u, src), (v, dst)):
                if end not in dag:
                    dag.add_node(end, **unit_attrs(_vertex_kind(name, plan.stage_type), end, [],
                                                   stage=stage_id, stage_type=plan.stage_type))
                    names.append(end)
            attrs = {"edge_type": edge_type}
            if partitions is not None:
                attrs["partitions"] = partitions
            dag.add_edge(u, v, **attrs)
            inner.append((u, v))
        stage_nodes[stage_id] = names
        has_in = {v for _, v in inner}
        has_out = {u for u, _ in inner}
        entries[stage_id] = [n for n in names if n not in has_in] or names[:1]
        exits[stage_id] = [n for n in names if n not in has_out] or names[-1:]
    for stage_id in stage_ids:
        info = deps.get(stage_id)
        if not info:
            continue
        for parent in info["depends_on"]:
            for u in exits[parent]:
                for v in entries[stage_id]:
                    if not dag.has_edge(u, v):
                        dag.add_edge(u, v, edge_type="dependency")
        for child in info["consists_of"]:
            for u in exits[stage_id]:
                for v in entries[child]:
                    if not dag.has_edge(u, v):
                        dag.add_edge(u, v, edge_type="conditional")
    stages = {}
    for stage_id in stage_ids:
        info = deps.get(stage_id, {})
        plan = plan_by_id.get(stage_id)
        kinds = {dag.nodes[n]["kind"] for n in stage_nodes[stage_id]}
        stages[stage_id] = {
            "kind": (plan.stage_type.lower() if plan and plan.layout == "container"
                     else "mapreduce" if plan and plan.layout == "mapreduce"
                     else next(iter(kinds))),
            "stage_type": plan.stage_type if plan else None,
            "root": bool(info.get("root", False)),
            "depends_on": list(info.get("depends_on", [])),
            "consists_of": list(info.get("consists_of", [])),
            "backup": info.get("backup"),
            "nodes": list(stage_nodes[stage_id]),
        }
    engine = ("tez" if "tez" in engines else "spark" if "spark" in engines
              else "mapreduce" if "mapreduce" in engines else None)
    dag.graph.update(format=fmt, engine=engine, stages=stages)
    return check_acyclic(dag, path=path, line=line)

