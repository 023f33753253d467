"""Fill in or refresh the expected DAG of golden cases (review the diff by hand!).

    python tests/golden/dag/regenerate.py tests/golden/dag/hive-tez.json [...]

A case file needs only ``input`` (``corpus:<path under the shared corpus>`` or
``golden:<path under this folder>``), ``parser`` (``hive``, ``spark`` or
``auto``) and ``plan`` (1-based index of the plan in the file); this script
writes ``format``, ``engine``, ``nodes`` and ``edges`` from the current parser.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = Path(os.environ.get("JOBGAUGE_SHARED", HERE.parents[3] / "shared")) / "corpus"


def input_path(case: dict) -> Path:
    where, _, rel = case["input"].partition(":")
    return (CORPUS if where == "corpus" else HERE) / rel


def parse_case(case: dict):
    from jobgauge.dag import QueryDag

    path = input_path(case)
    text = path.read_text(encoding="utf-8")
    parser = case.get("parser", "auto")
    if parser == "hive":
        dags = QueryDag.all_from_hive_output(text, path=path)
    elif parser == "spark":
        dags = [QueryDag.from_spark_plan(text, path=path)]
    else:
        dags = QueryDag.all_from_text(text, path=path)
    return dags[case.get("plan", 1) - 1]


def expected_of(dag) -> dict:
    data = dag.to_dict()
    nodes = []
    for node in data["nodes"]:
        item = {"id": node["id"], "kind": node["kind"]}
        for key in ("rows", "data_size", "rows_actual", "location"):
            if node.get(key) is not None:
                item[key] = node[key]
        item["operators"] = [op["type"] for op in node["operators"]]
        nodes.append(item)
    return {
        "format": data["graph"]["format"], "engine": data["graph"]["engine"],
        "nodes": nodes,
        "edges": [[e["source"], e["target"], e["edge_type"]] for e in data["edges"]],
    }


def main(paths) -> int:
    for name in paths:
        case_path = Path(name)
        case = json.loads(case_path.read_text(encoding="utf-8"))
        keep = {k: case[k] for k in ("description", "input", "parser", "plan") if k in case}
        keep.update(expected_of(parse_case(case)))
        case_path.write_text(json.dumps(keep, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {case_path}: {len(keep['nodes'])} nodes, {len(keep['edges'])} edges")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
