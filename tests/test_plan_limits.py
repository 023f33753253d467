"""Planning limits (issue 15): SQL nested 3,000 parentheses deep, ``repeat('x', 2000000000)``
and slow planning give a clear UsageError, never a JVM stack overflow, an out-of-memory
planner or a hung request."""

from __future__ import annotations

import pytest

from jobgauge.errors import UsageError
from jobgauge.profiler.readers._hive_session import (MAX_NESTING, MAX_SIZE_ARGUMENT, check_plan_limits,
                                             jvm_limit_error)

NESTED_3000 = "select " + "(" * 3000 + "1" + ")" * 3000
REPEAT_2E9 = "select length(repeat('x', 2000000000))"


@pytest.mark.parametrize("sql, message", [
    (NESTED_3000, "nests parentheses 3000 deep"),
    (REPEAT_2E9, r"repeat\(\.\.\.\) asks for 2,000,000,000 elements"),
    ("select lpad('a', 2e9, 'b')", r"lpad\(\.\.\.\) asks for 2,000,000,000"),
    ("select * from values (repeat(repeat('x', 100000), 100000)) as t(a)",
     "10,000,000,000 elements"),
    ("select array_repeat(1, 1000000000L)", "array_repeat"),
    ("select sequence(1, 50000000)", "sequence"),
])
def test_statements_past_the_limits_are_refused_before_planning(sql, message):
    with pytest.raises(UsageError, match=message):
        check_plan_limits(sql)


@pytest.mark.parametrize("sql", [
    "select repeat('-', 80), lpad(l_comment, 50, ' ') from lineitem",
    "select '" + "(" * 500 + "' as text -- " + "(" * 500,        # in a literal or a comment
    "select " + "(" * MAX_NESTING + "1" + ")" * MAX_NESTING,
    f"select repeat('x', {MAX_SIZE_ARGUMENT})",
    "select l_orderkey from lineitem where l_quantity > 2000000000",   # not a size function
])
def test_ordinary_statements_pass(sql):
    check_plan_limits(sql)


def test_jvm_errors_become_usage_errors():
    assert "too deeply nested" in str(jvm_limit_error("java.lang.StackOverflowError\n\tat x"))
    assert "more memory" in str(jvm_limit_error("java.lang.OutOfMemoryError: Java heap space"))
    assert jvm_limit_error("[TABLE_OR_VIEW_NOT_FOUND] nope") is None


@pytest.fixture(scope="module")
def plans(tpch_data_root):
    from jobgauge.webapp._plans import plans_for

    return plans_for(data_root=tpch_data_root)


@pytest.mark.spark
@pytest.mark.parametrize("sql, message", [
    (NESTED_3000, "nests parentheses"),
    (REPEAT_2E9, "asks for 2,000,000,000"),
    # Under the parenthesis limit but too complex for Spark's parser: its own error,
    # answered as a usage error (it overflowed the parser's stack).
    ("select " + "+".join(["1"] * 5000), "too deeply nested or too complex"),
])
def test_local_planner_refuses_with_a_usage_error(plans, sql, message):
    with pytest.raises(UsageError, match=message):
        plans.explain(sql)
    assert "Project" in plans.explain("select 1")      # the planner still answers


@pytest.mark.spark
def test_constant_folding_cannot_fill_the_planner_heap(plans):
    # Each argument is under the limit, the product is not: only folding would build it.
    plan = plans.explain("select length(repeat('x', 50000 * 40000)) as n")
    assert "Project" in plan and "repeat" in plan


@pytest.mark.spark
def test_planning_has_a_time_limit(plans, monkeypatch):
    import jobgauge.webapp._plans as module

    monkeypatch.setattr(module, "PLAN_TIMEOUT_S", 0.001)
    with pytest.raises(UsageError, match="took longer than"):
        plans.explain("select count(*) from lineitem join orders on l_orderkey = o_orderkey")
    monkeypatch.setattr(module, "PLAN_TIMEOUT_S", 60.0)
    assert "Project" in plans.explain("select 1")      # the session was handed back
