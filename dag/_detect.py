"""Tell Hive plan text from Spark plan text."""

from __future__ import annotations

import re

from jobgauge.dag._graph import require_text
from jobgauge.errors import ParseError

_SPARK_HEADER = re.compile(r"^== (Physical Plan|(Parsed|Analyzed|Optimized) Logical Plan) ==\s*$", re.M)
_HIVE_MARKERS = re.compile(
    r"^(STAGE DEPENDENCIES:|STAGE PLANS:|CBO PLAN:|Vertex dependency in |Stage-\d+\s*$|"
    r"PREHOOK: |POSTHOOK: |Plan (not )?optimized by CBO|\{\"(cboInfo|CBOPlan|STAGE|optimizedSQL))",
    re.M)
_SPARK_OPERATOR_LINE = re.compile(r"^[A-Z][A-Za-z]*(\s|$)")


def detect_plan_language(text, *, path=None) -> str:
    """``"hive"`` or ``"spark"`` for plan text; ParseError when it is neither.

    >>> detect_plan_language("STAGE DEPENDENCIES:\\n  Stage-0 is a root stage\\n")
    'hive'
    >>> detect_plan_language("== Physical Plan ==\\n* Project (2)\\n")
    'spark'
    """
    text = require_text(text, path=path)
    if _SPARK_HEADER.search(text):
        return "spark"
    if _HIVE_MARKERS.search(text):
        return "hive"
    first = next((line for line in text.splitlines() if line.strip()), None)
    if first is not None and _SPARK_OPERATOR_LINE.match(first):
        return "spark"  # a simplified.txt tree: an operator name at column 0
    raise ParseError("no Hive or Spark plan found", path=path, line=1 if first is not None else None,
                     expected="Hive EXPLAIN output or a Spark physical plan",
                     snippet=(first or "").strip())
