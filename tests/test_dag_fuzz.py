"""Mutated and truncated real plans give a QueryDag or a ParseError, nothing else."""

from __future__ import annotations

import sys
from pathlib import Path

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobgauge.dag import QueryDag, serialize, to_svg
from jobgauge.errors import ParseError

sys.path.insert(0, str(Path(__file__).resolve().parent / "golden" / "dag"))
import regenerate  # noqa: E402

CORPUS = regenerate.CORPUS
_FILES = sorted([*(CORPUS / "hive-explain").rglob("*.q.out"), *(CORPUS / "spark-plans").rglob("*.txt")])
# the large files make each example slow without adding structure the others lack
TEXTS = [p.read_text(encoding="utf-8") for p in _FILES if p.stat().st_size < 60_000]


@st.composite
def mutated_plans(draw):
    text = draw(st.sampled_from(TEXTS))
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        action = draw(st.sampled_from(["truncate", "delete", "duplicate", "swap", "indent",
                                       "dedent", "garble", "cut_line"]))
        i = draw(st.integers(0, len(lines) - 1))
        if action == "truncate":
            lines = lines[:i]
        elif action == "delete":
            del lines[i]
        elif action == "duplicate":
            lines.insert(i, lines[i])
        elif action == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif action == "indent":
            lines[i] = " " * draw(st.integers(1, 8)) + lines[i]
        elif action == "dedent":
            lines[i] = lines[i].lstrip()
        elif action == "garble":
            junk = draw(st.text(alphabet="()[]{}<>:,#*-+| \"'$0123456789abcXYZ\t", max_size=12))
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + junk + lines[i][at:]
        else:
            lines[i] = lines[i][:draw(st.integers(0, len(lines[i])))]
    return "\n".join(lines)


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated_plans())
def test_mutated_plans_parse_or_raise_parse_error(text):
    try:
        dags = QueryDag.all_from_text(text)
    except ParseError as exc:
        assert exc.reason  # a message, and the rendered text names it
        assert exc.reason in str(exc)
        return
    assert dags
    for dag in dags:
        assert isinstance(dag, QueryDag)
        assert nx.is_directed_acyclic_graph(dag)
        features, ids = serialize(dag)
        assert features.shape[0] == len(ids) == dag.number_of_nodes()
        assert to_svg(dag).startswith("<svg")
