"""Plans from a real local Spark (pyspark 4.3) parse into the DAGs the golden files hold.

The golden inputs ``tests/golden/dag/inputs/spark-*.txt`` were written by this
module (``JOBGAUGE_REGEN_GOLDEN=1 pytest tests/test_dag_spark.py``); the tests
check that what Spark prints today still parses to the same nodes and edges.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from jobgauge.dag import QueryDag, serialize

GOLDEN = Path(__file__).resolve().parent / "golden" / "dag"
QUERY = ("SELECT d.name, count(*) AS n, sum(f.v) AS total "
         "FROM facts f JOIN dims d ON f.k = d.k WHERE f.v > 10 GROUP BY d.name ORDER BY n DESC")

NESTED_QUERY = ("SELECT k, v, rank() OVER (PARTITION BY k ORDER BY v) AS r FROM facts "
                "WHERE v > (SELECT avg(v) FROM facts) UNION ALL SELECT k, 0, 0 FROM dims")

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def join_aggregate(spark):
    spark.range(0, 1000).selectExpr("id", "id % 10 AS k", "id * 2 AS v").createOrReplaceTempView("facts")
    spark.range(0, 10).selectExpr("id AS k", "concat('name', id) AS name").createOrReplaceTempView("dims")
    formatted = spark.sql("EXPLAIN FORMATTED " + QUERY).collect()[0][0]
    frame = spark.sql(QUERY)
    rows = frame.collect()
    executed = frame._jdf.queryExecution().toString()
    # a scalar subquery, a window and a union, explained after it ran (adaptive final plans)
    nested = spark.sql(NESTED_QUERY)
    nested.collect()
    mode = spark._jvm.org.apache.spark.sql.execution.ExplainMode.fromString("formatted")
    return {"formatted": formatted, "executed": executed, "rows": rows,
            "nested_formatted": nested._jdf.queryExecution().explainString(mode),
            "nested_executed": nested._jdf.queryExecution().toString()}


def _shape(dag):
    return (sorted((n, dag.nodes[n]["kind"]) for n in dag),
            sorted((u, v, a["edge_type"]) for u, v, a in dag.edges(data=True)))


def _golden_shape(name):
    case = json.loads((GOLDEN / f"{name}.json").read_text())
    return (sorted((n["id"], n["kind"]) for n in case["nodes"]),
            sorted(tuple(e) for e in case["edges"])), case


@pytest.mark.parametrize("key, case_name, input_name", [
    ("formatted", "spark-formatted-pyspark", "spark-explain-formatted-join-agg.txt"),
    ("executed", "spark-physical-aqe", "spark-query-execution-aqe.txt"),
    ("nested_formatted", "spark-formatted-aqe-subquery", "spark-explain-formatted-aqe-subquery.txt"),
    ("nested_executed", "spark-physical-aqe-subquery", "spark-query-execution-aqe-subquery.txt"),
])
def test_live_spark_plan_matches_golden(join_aggregate, key, case_name, input_name):
    text = join_aggregate[key]
    if os.environ.get("JOBGAUGE_REGEN_GOLDEN") == "1":
        (GOLDEN / "inputs" / input_name).write_text(text, encoding="utf-8")
    live = QueryDag.from_spark_plan(text)
    expected, case = _golden_shape(case_name)
    assert _shape(live) == expected
    assert live.graph["format"] == case["format"]


def test_formatted_plan_has_the_query_shape(join_aggregate):
    dag = QueryDag.from_text(join_aggregate["formatted"])
    kinds = sorted(kind for _, kind in dag.nodes(data="kind"))
    # two scans (Range), one broadcast join, partial + final aggregate, sort, two shuffles
    assert kinds.count("scan") == 2
    assert kinds.count("join") == 1
    assert kinds.count("aggregate") == 2
    assert kinds.count("exchange") == 2
    assert kinds.count("broadcast") == 1
    sink = [n for n in dag if dag.out_degree(n) == 0]
    assert len(sink) == 1 and dag.nodes[sink[0]]["kind"] == "sort"
    shuffles = [n for n in dag if dag.nodes[n]["kind"] == "exchange"]
    assert all(dag.nodes[n]["partitions"] == 4 for n in shuffles)  # spark.sql.shuffle.partitions
    features, ids = serialize(dag)
    assert features.shape[0] == dag.number_of_nodes() and set(ids) == set(dag)


def test_executed_plan_reads_the_final_adaptive_plan(join_aggregate):
    dag = QueryDag.from_spark_plan(join_aggregate["executed"])
    assert dag.graph["format"] == "spark-physical"
    # codegen stage ids come from the *(n) marks of the final adaptive plan
    assert {a.get("codegen_stage") for _, a in dag.nodes(data=True)} >= {1, 2, 3, 4}
    assert not any("QueryStage" in n or "AdaptiveSparkPlan" in n for n in dag)
    assert len(join_aggregate["rows"]) == 10  # ten names survive the filter and the join


def test_subquery_of_an_adaptive_plan_feeds_its_filter(join_aggregate):
    for key in ("nested_formatted", "nested_executed"):
        dag = QueryDag.from_spark_plan(join_aggregate[key])
        edges = {(u, v): t for u, v, t in dag.edges(data="edge_type")}
        into_filter = [u for (u, v), t in edges.items() if t == "subquery"
                       and dag.nodes[v]["kind"] == "filter"]
        assert len(into_filter) == 1, key
        # the initial (pre-adaptive) plan is not read: one window, one union, three ranges
        kinds = [kind for _, kind in dag.nodes(data="kind")]
        assert kinds.count("window") == 1 and kinds.count("union") == 1
        assert kinds.count("scan") == 3


def test_spark_row_bytes_counts_each_type_as_spark_does():
    from jobgauge.dag import spark_row_bytes

    assert spark_row_bytes(["bigint", "string"]) == 8 + 8 + 20
    assert spark_row_bytes(["decimal(15,2)", "decimal(38, 10)", "date", "int"]) == 8 + 8 + 16 + 4 + 4
    assert spark_row_bytes([]) == 8
    assert spark_row_bytes(["bigint", "map<string,int>"]) is None


def test_the_broadcast_estimate_is_sparks_own(spark, tmp_path):
    """``broadcast_shares`` x the bytes of a table's files is the size Spark estimates for
    the broadcast side of a join (EXPLAIN COST of the same query): the columns the side
    keeps over the whole row, whatever its filter keeps of the rows."""
    import re

    from jobgauge.dag import broadcast_shares
    from jobgauge.profiler.runners.collect import scan_row_bytes

    part, line = tmp_path / "part.parquet", tmp_path / "line.parquet"
    spark.range(0, 50000).selectExpr(
        "id AS p_partkey", "concat('name', id) AS p_name", "'mfgr' AS p_mfgr",
        "CAST(id % 50 AS INT) AS p_size", "CAST(id AS DECIMAL(15,2)) AS p_price",
        "current_date() AS p_date").write.parquet(str(part))
    spark.range(0, 200000).selectExpr("id % 50000 AS l_partkey", "id AS l_orderkey") \
        .write.parquet(str(line))
    spark.read.parquet(str(part)).createOrReplaceTempView("part_t")
    spark.read.parquet(str(line)).createOrReplaceTempView("line_t")
    query = ("SELECT count(*) FROM line_t JOIN part_t ON l_partkey = p_partkey "
             "WHERE p_name LIKE '%7%'")
    formatted = spark.sql("EXPLAIN FORMATTED " + query).collect()[0][0]
    cost = spark.sql("EXPLAIN COST " + query).collect()[0][0]
    rows = scan_row_bytes(formatted)
    location = next(k for k in rows if k.rstrip("/").endswith("part.parquet"))
    assert rows[location] == 8 + 8 + 20 + 20 + 4 + 8 + 4     # the whole row of part_t
    shares = broadcast_shares(QueryDag.from_spark_plan(formatted).to_dict(), rows)
    assert set(shares.values()) == {(8 + 8) / rows[location]}   # p_partkey alone
    # Spark's own estimate: the Project of p_partkey over the filtered scan
    found = re.search(r"Project \[p_partkey#\d+L\], Statistics\(sizeInBytes=([0-9.]+) "
                      r"(B|KiB|MiB)\)", cost)
    assert found, cost
    spark_bytes = float(found.group(1)) * {"B": 1, "KiB": 1024, "MiB": 2 ** 20}[found.group(2)]
    files = sum(p.stat().st_size for p in part.glob("*.parquet"))
    assert files * shares[next(iter(shares))] == pytest.approx(spark_bytes, rel=0.01)
