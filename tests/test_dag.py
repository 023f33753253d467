"""jobgauge.dag: plan readers, golden DAGs, corpus counts, serialization, SVG, CLI."""

from __future__ import annotations

import json
import random
import re
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from jobgauge.cli import main
from jobgauge.dag import (
    FEATURE_NAMES, KINDS, OPERATOR_CATEGORIES, QueryDag, detect_plan_language, operator_category,
    pack, pad_sequences, parse_plans, serialize, to_svg, topological_order,
)
from jobgauge.errors import GaugeError, ParseError, UsageError

GOLDEN = Path(__file__).resolve().parent / "golden" / "dag"
sys.path.insert(0, str(GOLDEN))
import regenerate  # noqa: E402  (the golden folder's own reader of case files)

CORPUS = regenerate.CORPUS
HIVE_FILES = sorted(p.relative_to(CORPUS).as_posix() for p in (CORPUS / "hive-explain").rglob("*.q.out"))
SPARK_FILES = sorted(p.relative_to(CORPUS).as_posix() for p in (CORPUS / "spark-plans").rglob("*.txt"))
GOLDEN_CASES = sorted(p.stem for p in GOLDEN.glob("*.json"))


def _read(rel: str) -> str:
    return (CORPUS / rel).read_text(encoding="utf-8")


# ---- golden cases: one input file and its expected DAG side by side ---------------------
@pytest.mark.parametrize("name", GOLDEN_CASES)
def test_golden_case(name):
    case = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    assert regenerate.input_path(case).is_file(), case["input"]
    got = regenerate.expected_of(regenerate.parse_case(case))
    assert got["format"] == case["format"]
    assert got["engine"] == case["engine"]
    assert got["nodes"] == case["nodes"]
    assert got["edges"] == case["edges"]


def test_golden_cases_cover_every_variant():
    formats = {json.loads((GOLDEN / f"{n}.json").read_text())["format"] for n in GOLDEN_CASES}
    assert formats == {"hive-classic", "hive-user", "hive-cbo", "hive-json", "spark-explain",
                       "spark-simplified", "spark-physical"}


# ---- every corpus file parses; counts agree with what the file says ---------------------
def _blocks(lines, start_test):
    """(start, end) of each block that begins where start_test is true and ends
    at the next PREHOOK/POSTHOOK line, the next block or the end of the file."""
    starts = [i for i, line in enumerate(lines) if start_test(line)]
    blocks = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        for j in range(start + 1, end):
            if lines[j].startswith(("PREHOOK:", "POSTHOOK:")):
                end = j
                break
        blocks.append((start, end))
    return blocks


def _edge_items(line: str) -> int:
    return len(re.findall(r"\([^()]*\)", line.split(" <- ", 1)[1]))


@pytest.mark.parametrize("rel", HIVE_FILES)
def test_every_hive_file_parses_with_the_counts_it_states(rel):
    text = _read(rel)
    lines = text.splitlines()
    dags = QueryDag.all_from_hive_output(text, path=rel)
    by_format = {}
    for dag in dags:
        assert nx.is_directed_acyclic_graph(dag)
        by_format.setdefault(dag.graph["format"], []).append(dag)

    classic = _blocks(lines, lambda ln: ln == "STAGE DEPENDENCIES:")
    user = _blocks(lines, lambda ln: ln.startswith("Vertex dependency in root stage"))
    cbo = _blocks(lines, lambda ln: ln == "CBO PLAN:")
    json_lines = [ln for ln in lines if ln.startswith("{") and '"STAGE PLANS"' in ln]
    assert len(dags) == len(classic) + len(user) + len(cbo) + len(json_lines)
    assert len(by_format.get("hive-classic", [])) == len(classic)
    assert len(by_format.get("hive-user", [])) == len(user)
    assert len(by_format.get("hive-cbo", [])) == len(cbo)
    assert len(by_format.get("hive-json", [])) == len(json_lines)

    for dag, (start, end) in zip(by_format.get("hive-classic", []), classic, strict=True):
        stage_lines = []
        for line in lines[start + 1:end]:
            if not line.startswith("  Stage-"):
                break
            stage_lines.append(line)
        n_dependencies = 0
        for line in stage_lines:
            for clause in ("depends on stages: ", "consists of "):
                part = re.search(re.escape(clause) + r"((?:Stage-\d+(?:, )?)+)", line)
                n_dependencies += len(re.findall(r"Stage-\d+", part.group(1))) if part else 0
        assert len(dag.graph["stages"]) == len(stage_lines)
        assert dag.stage_graph().number_of_edges() == n_dependencies
        assert {a["stage"] for _, a in dag.nodes(data=True)} == {
            re.match(r"\s+(Stage-\d+)", ln).group(1) for ln in stage_lines}
        block = lines[start:end]
        vertex_edges = sum(_edge_items(ln) for ln in block if re.match(r"^\s+[A-Z][a-z]+ \d+ <- ", ln))
        vertex_headers = [ln for ln in block if re.match(r"^\s+(?:Map|Reducer|Union) \d+\s*$", ln)]
        vertices = [n for n, a in dag.nodes(data=True) if a.get("stage_type") in ("Tez", "Spark")]
        assert len(vertices) == len(vertex_headers)
        dag_vertex_edges = [e for e in dag.edges(data=True)
                            if e[2]["edge_type"] not in ("dependency", "conditional", "shuffle")]
        assert len(dag_vertex_edges) == vertex_edges

    for dag, (start, end) in zip(by_format.get("hive-user", []), user, strict=True):
        dependency_lines = []
        for line in lines[start + 1:end]:
            if not line.strip():
                break
            dependency_lines.append(line)
        block = "\n".join(lines[start:end])
        vertices = set(re.findall(r"\b(?:Map|Reducer|Union) \d+\b", block))
        assert {n for n, a in dag.nodes(data=True) if a.get("stage_type") == "Tez"} == vertices
        vertex_edges = [e for e in dag.edges(data=True) if e[2]["edge_type"] != "dependency"]
        assert len(vertex_edges) == sum(_edge_items(ln) for ln in dependency_lines)
        assert set(dag.graph["stages"]) == set(re.findall(r"^\s*(Stage-\d+)\s*$", block, re.M))

    for dag, (start, end) in zip(by_format.get("hive-cbo", []), cbo, strict=True):
        operators = 0
        for line in lines[start + 1:end]:
            if not line.strip():
                break
            operators += 1
        assert dag.number_of_nodes() == operators
        assert dag.number_of_edges() == operators - 1

    for dag, line in zip(by_format.get("hive-json", []), json_lines, strict=True):
        data = json.loads(line)
        stated = sum(len(re.findall(r"Stage-\d+", str(info.get(key, ""))))
                     for info in data["STAGE DEPENDENCIES"].values()
                     for key in ("DEPENDENT STAGES", "CONDITIONAL CHILD TASKS"))
        assert set(dag.graph["stages"]) == set(data["STAGE DEPENDENCIES"])
        assert dag.stage_graph().number_of_edges() == stated


@pytest.mark.parametrize("rel", SPARK_FILES)
def test_every_spark_file_parses_with_the_counts_it_states(rel):
    text = _read(rel)
    lines = text.splitlines()
    dag = QueryDag.from_spark_plan(text, path=rel)
    assert nx.is_directed_acyclic_graph(dag)
    edge_types = [a["edge_type"] for _, _, a in dag.edges(data=True)]
    if rel.endswith("explain.txt"):
        assert dag.graph["format"] == "spark-explain"
        tree_lines = [ln for ln in lines if re.search(r" \(\d+\)$", ln) and not ln.startswith("(")]
        roots = [ln for ln in tree_lines if not re.match(r"^[ :]*[+:]- ", ln)]
        reuses = [ln for ln in lines if re.match(r"^\(\d+\) ReusedExchange \[Reuses operator id: \d+\]", ln)]
        subqueries = [ln for ln in lines if ln.startswith("Subquery:")]
        assert dag.number_of_nodes() == len(tree_lines)
        assert edge_types.count("reuse") == len(reuses)
        assert edge_types.count("subquery") == len(subqueries)
        assert dag.number_of_edges() == len(tree_lines) - len(roots) + len(reuses) + len(subqueries)
        codegen = {int(m.group(1)): int(m.group(2)) for m in
                   (re.match(r"^\((\d+)\) .*\[codegen id : (\d+)\]", ln) for ln in lines) if m}
        for node, attrs in dag.nodes(data=True):
            assert attrs.get("codegen_stage") == codegen.get(attrs["operator_id"]), node
    else:
        assert dag.graph["format"] == "spark-simplified"
        operators = [ln for ln in lines if ln.strip()
                     and ln.split()[0] not in ("WholeStageCodegen", "InputAdapter")]
        reuses = [ln for ln in operators if ln.split()[0] in ("ReusedExchange", "ReusedSubquery")]
        assert dag.number_of_nodes() == len(operators)
        assert edge_types.count("reuse") == len(reuses)
        assert dag.number_of_edges() == len(operators) - 1 + len(reuses)
    exchanges = [ln for ln in lines if re.match(r"^[ :+\-*]*(Exchange|BroadcastExchange) ", ln)]
    assert sum(1 for _, a in dag.nodes(data=True) if a["kind"] in ("exchange", "broadcast")
               and a["operators"][0]["type"] != "ReusedExchange") == len(exchanges)


def test_explain_and_simplified_of_a_query_agree():
    explain = QueryDag.from_spark_plan(_read("spark-plans/tpch/q5/explain.txt"))
    simplified = QueryDag.from_spark_plan(_read("spark-plans/tpch/q5/simplified.txt"))
    assert nx.is_isomorphic(explain, simplified, node_match=lambda a, b: a["kind"] == b["kind"],
                            edge_match=lambda a, b: a["edge_type"] == b["edge_type"])


def test_hive_statistics_are_read():
    dag = QueryDag.from_hive_explain(_read("hive-explain/tpcds30tb-tez/query3.q.out"))
    map1 = dag.nodes["Map 1"]
    assert map1["rows"] == 82510879939 and map1["data_size"] == 10343396725952
    assert [op["type"] for op in map1["operators"]][:3] == ["TableScan", "Select Operator",
                                                            "Map Join Operator"]
    assert map1["operators"][0]["alias"] == "store_sales"
    assert map1["execution_mode"] == "vectorized, llap"
    assert map1["exchange"] is True
    assert dag.edges["Map 4", "Map 1"]["edge_type"] == "BROADCAST_EDGE"
    analyze = QueryDag.all_from_hive_output(_read("hive-explain/explain-analyze/explainanalyze_4.q.out"))
    # "TableScan [TS_0] (rows=12288/12288 width=251)" and "Merge Join ... (rows=1019/10 width=484)"
    assert analyze[0].nodes["Map 1"]["rows_actual"] == 12288
    assert analyze[0].nodes["Reducer 2"]["rows"] == 1019
    assert analyze[0].nodes["Reducer 2"]["rows_actual"] == 10
    assert analyze[0].nodes["Reducer 2"]["data_size"] == 1019 * 484


def test_hive_plans_carry_their_query_and_stage_structure():
    text = _read("hive-explain/mapreduce-2019/auto_join_without_localtask.q.out")
    dags = QueryDag.all_from_hive_output(text)
    assert len(dags) == 3
    assert dags[0].graph["query"].startswith("select a.* from src a join src b on a.key=b.key")
    stages = dags[0].graph["stages"]
    assert stages["Stage-6"]["consists_of"] == ["Stage-7", "Stage-8", "Stage-1"]
    assert stages["Stage-7"]["backup"] == "Stage-1"
    assert stages["Stage-2"]["depends_on"] == ["Stage-1", "Stage-4", "Stage-5"]
    assert dags[0].nodes["Stage-7"]["kind"] == "map-local"
    assert dags[0].edges["Stage-6", "Stage-7"]["edge_type"] == "conditional"
    assert dags[0].edges["Stage-1:Map", "Stage-1:Reduce"]["edge_type"] == "shuffle"


def test_union_edges_point_into_the_union():
    dag = QueryDag.from_hive_explain(_read("hive-explain/tpcds30tb-tez/query5.q.out"))
    # "Reducer 3 <- Union 2 (SIMPLE_EDGE), Union 4 (CONTAINS)": Reducer 3 feeds Union 4
    assert dag.edges["Reducer 3", "Union 4"]["edge_type"] == "CONTAINS"
    assert dag.edges["Union 2", "Reducer 3"]["edge_type"] == "SIMPLE_EDGE"
    assert dag.nodes["Union 4"]["kind"] == "tez-union"


def test_hive_on_spark_edges_keep_partitions():
    dag = QueryDag.from_hive_explain(_read("hive-explain/perf-spark-2019/query1.q.out"))
    assert dag.graph["engine"] == "spark"
    assert dag.edges["Map 9", "Reducer 5"] == {"edge_type": "PARTITION-LEVEL SORT", "partitions": 559}
    assert dag.nodes["Map 1"]["kind"] == "spark-map"


def test_from_text_detects_the_language():
    assert detect_plan_language(_read("spark-plans/tpch/q1/simplified.txt")) == "spark"
    assert detect_plan_language(_read("hive-explain/tpcds30tb-tez-cbo/cbo_query3.q.out")) == "hive"
    assert len(parse_plans(_read("hive-explain/tpch/tpch18.q.out"))) == 3
    assert QueryDag.from_text(_read("spark-plans/tpch/q1/explain.txt")).graph["source"] == "spark"


def test_explain_prefix_is_dropped_from_the_query():
    dag = QueryDag.all_from_hive_output(_read("hive-explain/tpch/tpch18.q.out"))[0]
    assert dag.graph["query"].startswith("select\n")
    assert "explain" not in dag.graph["query"].split("\n")[0].lower()


# ---- docstrings show real input and the DAG it yields -----------------------------------
def _doc_example(method) -> str:
    block = method.__doc__.split("Input::", 1)[1].split("\n\n        DAG:", 1)[0]
    return textwrap.dedent(block.strip("\n"))


def test_hive_docstring_example():
    dag = QueryDag.from_hive_explain(_doc_example(QueryDag.from_hive_explain))
    assert dict(dag.nodes(data="kind")) == {"Map 1": "tez-map", "Reducer 2": "tez-reducer",
                                            "Stage-0": "fetch"}
    assert dict(((u, v), t) for u, v, t in dag.edges(data="edge_type")) == {
        ("Map 1", "Reducer 2"): "SIMPLE_EDGE", ("Reducer 2", "Stage-0"): "dependency"}
    assert dag.nodes["Map 1"]["rows"] == 500
    assert [op["type"] for op in dag.nodes["Map 1"]["operators"]] == ["TableScan", "Reduce Output Operator"]


def test_spark_docstring_example():
    dag = QueryDag.from_spark_plan(_doc_example(QueryDag.from_spark_plan))
    assert list(topological_order(dag)) == ["Scan (1)", "HashAggregate (2)", "Exchange (3)",
                                            "HashAggregate (4)"]
    assert dag.nodes["HashAggregate (2)"]["codegen_stage"] == 1
    assert dag.nodes["Exchange (3)"]["exchange"] is True
    assert dag.edges["Exchange (3)", "HashAggregate (4)"]["edge_type"] == "exchange"


def test_stages_docstring_example():
    dag = QueryDag.from_stages([
        {"stage_id": 0, "name": "map at x.py:3", "n_tasks": 4},
        {"stage_id": 1, "parent_ids": [0], "n_tasks": 2, "metrics": {"shuffle_read_bytes": 2048}}])
    assert dict(dag.nodes(data="n_tasks")) == {"Stage 0": 4, "Stage 1": 2}
    assert dag.nodes["Stage 1"]["data_size"] == 2048
    assert list(dag.edges(data="edge_type")) == [("Stage 0", "Stage 1", "shuffle")]


# ---- errors carry line, expectation and snippet --------------------------------------------
HIVE_BAD = [
    ("no plan at all\n", "no Hive plan found", 1),
    ("STAGE DEPENDENCIES:\n  Stage-1 is a root stage\n", "no STAGE PLANS section", 2),
    ("STAGE DEPENDENCIES:\n  Stage-1 is a root stage\n  oops\n\nSTAGE PLANS:\n  Stage: Stage-1\n"
     "    Fetch Operator\n", "cannot read stage dependency", 3),
    ("STAGE DEPENDENCIES:\n  Stage-1 is a root stage\n\nSTAGE PLANS:\n  Stage Stage-1\n",
     "cannot read stage plan header", 5),
    ("STAGE DEPENDENCIES:\n  Stage-1 is a root stage\n\nSTAGE PLANS:\n  Stage: Stage-1\n    Tez\n"
     "      Edges:\n        Reducer 2 <- Map 1\n", "cannot read vertex edge", 8),
    ("STAGE DEPENDENCIES:\n  Stage-1 is a root stage\n\nSTAGE PLANS:\n  Stage: Stage-1\n    Tez\n"
     "      Edges:\n        Reducer 2 <- Map 1 (SIMPLE_EDGE)\n        Map 1 <- Reducer 2 (SIMPLE_EDGE)\n",
     "plan edges form a cycle", 1),
    ("STAGE DEPENDENCIES:\n  Stage-1 depends on stages: Stage-2\n  Stage-2 depends on stages: Stage-1\n\n"
     "STAGE PLANS:\n  Stage: Stage-1\n    Move Operator\n  Stage: Stage-2\n    Move Operator\n",
     "cycle", 1),
    ("Vertex dependency in root stage\nReducer 2 <- Map 1 SIMPLE_EDGE\n", "cannot read vertex edge list", 2),
    ("Vertex dependency in root stage\nReducer 2 <- Map 1 (SIMPLE_EDGE)\n", "no stage tree", 2),
    ("Stage-0\n  Fetch Operator\n    Stage-0\n", "Stage-0 appears twice", 3),
    ("CBO PLAN:\nHiveProject(a=[$0])\n  not an operator\n", "cannot read CBO plan operator", 3),
    ("CBO PLAN:\nHiveProject(a=[$0])\nHiveProject(b=[$0])\n", "second root operator", 3),
    ('{"STAGE PLANS": {"Stage-0": \n', "JSON is malformed", 1),
    ('{"STAGE DEPENDENCIES": {}, "other": 1}\n', "JSON has no plan", 1),
]


@pytest.mark.parametrize("text, message, line", HIVE_BAD)
def test_hive_parse_errors(text, message, line):
    with pytest.raises(ParseError, match=message) as info:
        QueryDag.all_from_hive_output(text, path="bad.q.out")
    assert info.value.line == line
    assert info.value.path == "bad.q.out"
    assert info.value.expected
    assert str(info.value).startswith("bad.q.out, line")


SPARK_BAD = [
    ("", "no Spark physical plan found"),
    ("== Optimized Logical Plan ==\nProject [a#1]\n", "no Spark physical plan found"),
    ("== Physical Plan ==\n* Project (2)\n+- Scan parquet t\n\n(2) Project\n", "has no operator id"),
    ("== Physical Plan ==\nReusedExchange (1)\n\n(1) ReusedExchange [Reuses operator id: 9]\n",
     "reuse of unknown operator 9"),
    ("== Physical Plan ==\n* Project (1)\n\n(1) Project\n\n===== Subqueries =====\n\n"
     "Subquery:1 Hosting operator id = 7 Hosting Expression = Subquery scalar-subquery#1, [id=#2]\n",
     "unknown operator id 7"),
    ("== Physical Plan ==\nProject (1)\n+- Scan (1)\n\n(1) Project\n", "operator id 1 appears twice"),
    ("  indented first line\n", "no Spark plan found"),
    ("TakeOrderedAndProject [a]\n  ReusedExchange [a] #4\n", "reuse of unknown exchange 4"),
    ("== Physical Plan ==\n+- ???\n", "cannot read plan operator"),
]


@pytest.mark.parametrize("text, message", SPARK_BAD)
def test_spark_parse_errors(text, message):
    with pytest.raises(ParseError, match=re.escape(message)):
        QueryDag.from_spark_plan(text)


def test_neither_hive_nor_spark_is_a_parse_error():
    with pytest.raises(ParseError, match="no Hive or Spark plan found"):
        QueryDag.from_text("  just some words\n")
    with pytest.raises(ParseError, match="not UTF-8"):
        QueryDag.from_text(b"\xff\xfe STAGE")
    with pytest.raises(UsageError, match="must be a str"):
        QueryDag.from_text(42)


def test_parse_error_points_at_the_line():
    text = _read("hive-explain/tpcds30tb-tez/query3.q.out").replace(
        "Reducer 2 <- Map 1 (SIMPLE_EDGE)", "Reducer 2 <- Map 1 (SIMPLE_EDGE) trailing", 1)
    with pytest.raises(ParseError) as info:
        QueryDag.from_hive_explain(text)
    assert info.value.line == 11
    assert "trailing" in info.value.snippet
    assert isinstance(info.value, ValueError) and isinstance(info.value, GaugeError)


# ---- event-log stages ------------------------------------------------------------------------
def test_from_stages_builds_the_stage_dag():
    stages = [
        {"stage_id": 2, "parent_ids": [0, 1], "name": "collect", "n_tasks": 4,
         "shuffle_read_bytes": 100, "shuffle_read_records": 10},
        {"stage_id": 0, "parent_ids": [], "name": "scan", "n_tasks": 8,
         "metrics": {"input_bytes": 4096, "input_records": 64, "shuffle_write_bytes": 100}},
        {"stage_id": 1, "parent_ids": [7], "name": "scan b", "n_tasks": 2},
        {"stage_id": 1, "attempt_id": 1, "parent_ids": [7], "name": "scan b retry", "n_tasks": 2},
    ]
    dag = QueryDag.from_stages(stages)
    assert sorted(dag.edges) == [("Stage 0", "Stage 2"), ("Stage 1", "Stage 2")]
    assert dag.nodes["Stage 0"]["rows"] == 64 and dag.nodes["Stage 0"]["data_size"] == 4096
    assert dag.nodes["Stage 0"]["exchange"] is True
    assert dag.nodes["Stage 2"]["data_size"] == 100 and dag.nodes["Stage 2"]["rows"] == 10
    assert dag.nodes["Stage 1"]["name"] == "scan b retry"
    assert dag.nodes["Stage 1"]["absent_parents"] == [7]
    assert all(kind == "spark-stage" for _, kind in dag.nodes(data="kind"))
    assert dag.graph["format"] == "spark-stages"

    class FakeProfile:
        def __init__(self, stages):
            self.stages = stages

    assert sorted(QueryDag.from_profile(FakeProfile(stages)).edges) == sorted(dag.edges)


@pytest.mark.parametrize("stages, message", [
    ("nope", "must be a list"),
    ([{"name": "x"}], "has no 'stage_id'"),
    ([{"stage_id": "x1"}], "not a whole number"),
    ([{"stage_id": 1, "parent_ids": 0}], "not a list"),
    ([{"stage_id": 1, "parent_ids": [1]}], "names itself"),
    ([{"stage_id": 1, "parent_ids": [2]}, {"stage_id": 2, "parent_ids": [1]}], "cycle"),
    (["x"], "must be a dict"),
])
def test_from_stages_errors(stages, message):
    with pytest.raises(UsageError, match=message):
        QueryDag.from_stages(stages)


# ---- serialization ---------------------------------------------------------------------------
def test_feature_names_match_the_matrix():
    dag = QueryDag.from_hive_explain(_read("hive-explain/tpcds30tb-tez/query64.q.out"))
    features, ids = serialize(dag)
    assert features.shape == (dag.number_of_nodes(), len(FEATURE_NAMES))
    assert features.dtype == np.float32
    assert len(set(FEATURE_NAMES)) == len(FEATURE_NAMES)
    kinds = features[:, :len(KINDS)]
    assert (kinds.sum(axis=1) == 1).all()
    for row, node in enumerate(ids):  # the inverse lookup: row i is node ids[i]
        assert KINDS[int(kinds[row].argmax())] == dag.nodes[node]["kind"]
        rows = dag.nodes[node]["rows"]
        column = FEATURE_NAMES.index("log1p_rows")
        assert features[row, column] == pytest.approx(np.log1p(rows) if rows else 0.0)
        assert features[row, FEATURE_NAMES.index("n_inputs")] == dag.in_degree(node)
    join_column = FEATURE_NAMES.index("ops_join")
    map1 = ids.index("Map 1")
    joins = sum(op["category"] == "join" for op in dag.nodes["Map 1"]["operators"])
    assert features[map1, join_column] == pytest.approx(np.log1p(joins)) and joins > 0


def test_order_is_topological_with_documented_tie_break():
    dag = QueryDag.from_hive_explain(_read("hive-explain/tpcds30tb-tez/query3.q.out"))
    assert topological_order(dag) == ["Map 4", "Map 5", "Map 1", "Reducer 2", "Reducer 3", "Stage-0"]
    order = topological_order(QueryDag.from_hive_explain(_read("hive-explain/perf-tez-2019/query72.q.out")))
    position = {n: i for i, n in enumerate(order)}
    assert position["Map 8"] < position["Map 16"]  # natural order: 8 before 16


def _shuffled_copy(dag, seed):
    rng = random.Random(seed)
    nodes = list(dag.nodes(data=True))
    edges = list(dag.edges(data=True))
    rng.shuffle(nodes)
    rng.shuffle(edges)
    copy = QueryDag()
    copy.graph.update(dag.graph)
    copy.add_nodes_from(nodes)
    copy.add_edges_from(edges)
    return copy


@pytest.mark.parametrize("rel", ["hive-explain/tpcds30tb-tez/query64.q.out",
                                 "hive-explain/perf-tez-2019/query14.q.out",
                                 "spark-plans/tpcds/approved-plans-v1_4/q14a/explain.txt",
                                 "hive-explain/tpcds30tb-tez-cbo/cbo_query64.q.out"])
def test_serialization_is_deterministic(rel):
    text = _read(rel)
    first, second = QueryDag.from_text(text), QueryDag.from_text(text)
    features, ids = serialize(first)
    again, again_ids = serialize(second)
    assert ids == again_ids and np.array_equal(features, again)
    for seed in range(3):
        shuffled, shuffled_ids = serialize(_shuffled_copy(first, seed))
        assert shuffled_ids == ids
        assert np.array_equal(shuffled, features)
    assert first.to_dict() == _shuffled_copy(first, 9).to_dict()


def test_pad_sequences_and_pack():
    dags = [QueryDag.from_text(_read(rel)) for rel in (
        "hive-explain/tpcds30tb-tez/query3.q.out", "spark-plans/tpch/q1/explain.txt",
        "hive-explain/tpcds30tb-tez-cbo/cbo_query3.q.out")]
    arrays = [serialize(d)[0] for d in dags]
    batch, lengths = pad_sequences(arrays)
    assert batch.shape == (3, max(a.shape[0] for a in arrays), len(FEATURE_NAMES))
    assert lengths.tolist() == [a.shape[0] for a in arrays]
    assert np.array_equal(batch[0, :lengths[0]], arrays[0])
    assert not batch[0, lengths[0]:].any()
    short, short_lengths = pad_sequences(arrays, max_len=7)
    assert short.shape[1] == 7 and short_lengths.tolist() == [6, 7, 7]
    assert np.array_equal(short[1], arrays[1][:7])
    packed = pack(batch, lengths)
    import torch

    assert int(packed.batch_sizes.sum()) == int(lengths.sum())
    unpacked, unpacked_lengths = torch.nn.utils.rnn.pad_packed_sequence(packed, batch_first=True)
    assert unpacked_lengths.tolist() == lengths.tolist()
    assert np.allclose(unpacked.numpy(), batch)


@pytest.mark.parametrize("call, message", [
    (lambda: pad_sequences([]), "at least one array"),
    (lambda: pad_sequences([np.zeros(3)]), "2-D numpy array"),
    (lambda: pad_sequences([np.zeros((2, 3)), np.zeros((2, 4))]), "different feature counts"),
    (lambda: pad_sequences([np.zeros((2, 3))], max_len=0), "max_len must be an int >= 1"),
    (lambda: pack(np.zeros((2, 3, 4)), [3, 0]), "at least one node"),
    (lambda: pack(np.zeros((2, 3, 4)), [3]), "one length per sequence"),
    (lambda: pack(np.zeros((2, 3, 4)), [3, 5]), "steps >= every length"),
    (lambda: serialize("not a dag"), "expected a QueryDag"),
])
def test_serialization_errors(call, message):
    with pytest.raises(UsageError, match=message):
        call()


def test_serialize_refuses_a_cycle():
    dag = QueryDag()
    dag.add_edge("a", "b")
    dag.add_edge("b", "a")
    with pytest.raises(UsageError, match="cycle"):
        serialize(dag)


def test_operator_categories():
    assert operator_category("Spark HashTable Sink Operator") == "broadcast"
    assert operator_category("SortMergeJoin") == "join"
    assert operator_category("ObjectHashAggregate") == "aggregate"
    assert operator_category("PTF Operator") == "window"
    assert operator_category("Top N Key Operator") == "limit"
    assert operator_category("SubqueryBroadcast") == "subquery"
    assert operator_category("Scan parquet") == "scan"
    assert operator_category("File Output Operator") == "output"
    assert operator_category("Something New") == "other"
    assert set(OPERATOR_CATEGORIES) <= set(KINDS)


# ---- node-link JSON and SVG ---------------------------------------------------------------
@pytest.mark.parametrize("rel", ["hive-explain/mapreduce-2019/auto_join_without_localtask.q.out",
                                 "spark-plans/tpcds/approved-plans-v1_4/q64/simplified.txt"])
def test_dict_round_trip(rel):
    dag = QueryDag.from_text(_read(rel))
    data = json.loads(json.dumps(dag.to_dict()))
    back = QueryDag.from_dict(data)
    assert back.to_dict() == data
    assert nx.utils.graphs_equal(back, dag)
    assert back.stage_graph().edges == dag.stage_graph().edges


@pytest.mark.parametrize("data, message", [
    ([], "not a QueryDag dict"),
    ({"nodes": [{"kind": "map"}], "edges": []}, "node without an id"),
    ({"nodes": [{"id": "a"}], "edges": [{"source": "a"}]}, "edge without source and target"),
    ({"nodes": [{"id": "a"}], "edges": [{"source": "a", "target": "b"}]}, "unknown node 'b'"),
])
def test_from_dict_errors(data, message):
    with pytest.raises(ParseError, match=message):
        QueryDag.from_dict(data)


@pytest.mark.parametrize("rel", ["hive-explain/tpcds30tb-tez/query64.q.out",
                                 "spark-plans/tpcds/approved-plans-v1_4/q14a/explain.txt"])
def test_svg_is_well_formed(rel):
    dag = QueryDag.from_text(_read(rel))
    svg = to_svg(dag)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == f"{ns}svg"
    nodes = root.findall(f".//{ns}g[@class='node']")
    assert sorted(n.get("data-id") for n in nodes) == sorted(dag.nodes)
    assert len(root.findall(f".//{ns}line")) == dag.number_of_edges()
    assert all(line.get("marker-end", "").startswith("url(#arrow-") for line in root.iter(f"{ns}line"))
    texts = [t.text for t in root.iter(f"{ns}text")]
    assert any(t == "Map 1" or t.startswith("HashAggregate") for t in texts)
    assert dag.to_svg() == svg


def test_svg_escapes_markup():
    dag = QueryDag.from_dict({"graph": {"format": "x<y"}, "nodes": [
        {"id": "a<b&c", "kind": "scan", "label": "<script>", "rows": 5,
         "operators": [{"type": "Filter & <Go>"}]},
        {"id": "d\"e'f", "kind": "join"}],
        "edges": [{"source": "a<b&c", "target": "d\"e'f", "edge_type": "<edge>"}]})
    svg = to_svg(dag)
    assert "a&lt;b&amp;c" in svg and "<script>" not in svg and "Filter &amp; &lt;Go&gt;" in svg
    root = ET.fromstring(svg)
    ids = [g.get("data-id") for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("data-id")]
    assert ids == ["a<b&c", "d\"e'f"]


def test_layers_follow_depth():
    dag = QueryDag.from_hive_explain(_read("hive-explain/tpcds30tb-tez/query3.q.out"))
    root = ET.fromstring(to_svg(dag))
    ns = "{http://www.w3.org/2000/svg}"
    y = {g.get("data-id"): float(g.find(f"{ns}rect").get("y")) for g in root.iter(f"{ns}g")
         if g.get("data-id")}
    for u, v in dag.edges:
        assert y[u] < y[v]  # producers above consumers


# ---- CLI ---------------------------------------------------------------------------------
def test_cli_json_one_object_per_plan(capsys):
    path = CORPUS / "hive-explain/mapreduce-2019/auto_join_without_localtask.q.out"
    assert main(["dag", str(path), "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    plans = [json.loads(line) for line in lines]
    first = plans[0]
    assert {n["id"] for n in first["nodes"]} >= {"Stage-6", "Stage-1:Map", "Stage-0"}
    assert ["Stage-2:Reduce", "Stage-0"] in first["edges"]
    assert len(first["edges"]) == len(first["edge_types"]) == 11
    assert all({"id", "kind"} <= set(n) for n in first["nodes"])


def test_cli_outline_and_svg(tmp_path, capsys):
    path = CORPUS / "spark-plans/tpch/q3/explain.txt"
    out = tmp_path / "q3.svg"
    assert main(["dag", str(path), "--svg", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("plan 1 of 1: spark-explain (spark), 21 nodes, 20 edges")
    assert "  Exchange (19) [exchange] <- HashAggregate (18) (pipeline)" in captured.out.splitlines()
    assert f"wrote {out}" in captured.err
    ET.fromstring(out.read_text())


def test_cli_several_plans_to_svg(tmp_path, capsys):
    path = CORPUS / "hive-explain/tpch/tpch18.q.out"
    assert main(["dag", str(path), "--svg", str(tmp_path / "plan.svg")]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan-1.svg", "plan-2.svg", "plan-3.svg"]
    assert main(["dag", str(path), "--plan", "2", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(json.loads(lines[-1])["nodes"]) == 18


@pytest.mark.parametrize("argv, message", [
    (["dag", "/nonexistent/plan.txt"], "no such file"),
    (["dag", "--plan", "9", "{corpus}/hive-explain/tpch/tpch18.q.out"], "--plan must be between 1 and 3"),
    (["dag", "{corpus}/hive-explain"], "is a directory"),
    (["dag", "{corpus}/hibench-conf/conf/hibench.conf"], "no Hive or Spark plan found"),
])
def test_cli_errors(argv, message, capsys):
    argv = [a.replace("{corpus}", str(CORPUS)) for a in argv]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("jobgauge: error:") and message in err
    assert "Traceback" not in err


def test_cli_reads_stdin(monkeypatch, capsys):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(_read("spark-plans/tpch/q1/simplified.txt")))
    assert main(["dag", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["format"] == "spark-simplified"


def test_stage_dag_of_a_real_event_log():
    from jobgauge.profiler.readers._eventlog import read_eventlog

    path = CORPUS / "spark-eventlogs/apache-spark/local-1642039451826"
    submitted = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["Event"] == "SparkListenerStageSubmitted":
            info = event["Stage Info"]
            submitted[info["Stage ID"]] = info["Parent IDs"]
    dag = QueryDag.from_profile(read_eventlog(path))
    assert set(dag) == {f"Stage {i}" for i in submitted}
    expected = {(f"Stage {p}", f"Stage {s}") for s, parents in submitted.items()
                for p in parents if p in submitted}
    assert set(dag.edges) == expected
    skipped = {f"Stage {s}": sorted(p for p in parents if p not in submitted)
               for s, parents in submitted.items() if any(p not in submitted for p in parents)}
    assert {n: a["absent_parents"] for n, a in dag.nodes(data=True) if "absent_parents" in a} == skipped
    assert all(dag.nodes[n]["n_tasks"] for n in dag)
    features, ids = serialize(dag)
    assert features[:, FEATURE_NAMES.index("log1p_n_tasks")].min() > 0


def test_json_tez_plan_edges_and_vertices():
    # the corpus has no Tez JSON plan; this one follows the shape Hive's ExplainTask
    # writes ("Edges:" maps a vertex to one {"parent", "type"} object or a list of them)
    plan = {
        "STAGE DEPENDENCIES": {"Stage-1": {"ROOT STAGE": "TRUE"},
                               "Stage-0": {"DEPENDENT STAGES": "Stage-1"}},
        "STAGE PLANS": {
            "Stage-1": {"Tez": {
                "Edges:": {"Reducer 2": [{"parent": "Map 1", "type": "SIMPLE_EDGE"},
                                         {"parent": "Map 3", "type": "BROADCAST_EDGE"}],
                           "Map 1": {"parent": "Union 4", "type": "CONTAINS"}},
                "Vertices:": {
                    "Map 1": {"Map Operator Tree:": [{"TableScan": {
                        "alias:": "src", "OperatorId:": "TS_0",
                        "Statistics:": "Num rows: 500 Data size: 89000 Basic stats: COMPLETE",
                        "children": {"Reduce Output Operator": {"OperatorId:": "RS_1"}}}}],
                        "Execution mode:": "vectorized"},
                    "Map 3": {"Map Operator Tree:": [{"TableScan": {"alias:": "b"}}]},
                    "Reducer 2": {"Reduce Operator Tree:": {"Group By Operator": {}}},
                    "Union 4": {"Vertex:": "Union 4"}}}},
            "Stage-0": {"Fetch Operator": {"limit:": "-1", "Processor Tree:": {"ListSink": {}}}}}}
    dag = QueryDag.from_hive_explain(json.dumps(plan))
    assert dag.graph["format"] == "hive-json" and dag.graph["engine"] == "tez"
    assert sorted(dag.edges(data="edge_type")) == [
        ("Map 1", "Reducer 2", "SIMPLE_EDGE"), ("Map 1", "Union 4", "CONTAINS"),
        ("Map 3", "Reducer 2", "BROADCAST_EDGE"), ("Reducer 2", "Stage-0", "dependency"),
        ("Union 4", "Stage-0", "dependency")]
    assert dag.nodes["Map 1"]["rows"] == 500
    assert [op["id"] for op in dag.nodes["Map 1"]["operators"]] == ["TS_0", "RS_1"]
    assert dag.nodes["Map 1"]["execution_mode"] == "vectorized"
    assert [op["type"] for op in dag.nodes["Stage-0"]["operators"]] == ["Fetch Operator", "ListSink"]
