"""Subcommands of the dag area (registered by jobgauge.cli): ``jobgauge dag``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from jobgauge.cli_options import add_command, read_input_file
from jobgauge.errors import UsageError


def register(subparsers) -> None:
    """Add this area's subcommands to the jobgauge parser."""
    parser = add_command(subparsers, "dag", run_dag,
                         help="read a Hive or Spark plan and print its DAG",
                         json="one object per plan, one per line")
    parser.add_argument("file", metavar="FILE", help="plan text file ('-' reads stdin)")
    parser.add_argument("--svg", metavar="OUT",
                        help="write an SVG drawing to OUT (several plans: OUT-1.svg, OUT-2.svg, ...)")
    parser.add_argument("--plan", metavar="N", type=int, default=None,
                        help="only the N-th plan of the file (1-based)")


def _read(file: str) -> str:
    if file == "-":
        return sys.stdin.read()
    try:
        return read_input_file(file, "plan file").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{file} is not UTF-8 text: {exc.reason}") from None


def plan_json(dag) -> dict:
    """The ``--json`` view of one DAG: nodes in topological order with their
    scalar attributes and operator types, edges as ``[src, dst]`` pairs with
    their types alongside."""
    data = dag.to_dict()
    nodes = []
    for node in data["nodes"]:
        item = {"id": node["id"], "kind": node.get("kind")}
        for key, value in node.items():
            if key in ("id", "kind", "operators"):
                continue
            if value is None or isinstance(value, (dict, list)):
                continue
            item[key] = value
        item["operators"] = [op.get("type") for op in node.get("operators") or []]
        nodes.append(item)
    graph = data["graph"]
    return {
        "format": graph.get("format"), "engine": graph.get("engine"), "line": graph.get("line"),
        "query": graph.get("query"),
        "nodes": nodes,
        "edges": [[edge["source"], edge["target"]] for edge in data["edges"]],
        "edge_types": [edge.get("edge_type") for edge in data["edges"]],
    }


def outline(dag, index: int, total: int) -> str:
    """A readable outline: one line per node in topological order with its inputs."""
    from jobgauge.dag import topological_order

    summary = dag.summary()
    head = (f"plan {index} of {total}: {summary['format']}"
            + (f" ({summary['engine']})" if summary["engine"] else "")
            + f", {summary['n_nodes']} nodes, {summary['n_edges']} edges")
    if dag.graph.get("line"):
        head += f", line {dag.graph['line']}"
    lines = [head]
    if dag.graph.get("query"):
        query = " ".join(dag.graph["query"].split())
        lines.append("  query: " + (query if len(query) <= 100 else query[:97] + "..."))
    for node in topological_order(dag):
        attrs = dag.nodes[node]
        text = f"  {node} [{attrs.get('kind')}]"
        if attrs.get("rows") is not None:
            text += f" rows={attrs['rows']}"
        if attrs.get("data_size") is not None:
            text += f" bytes={attrs['data_size']}"
        if attrs.get("rows_actual") is not None:
            text += f" actual_rows={attrs['rows_actual']}"
        inputs = [f"{u} ({a.get('edge_type')})" for u, _, a in sorted(
            dag.in_edges(node, data=True), key=lambda e: str(e[0]))]
        if inputs:
            text += " <- " + ", ".join(inputs)
        lines.append(text)
    return "\n".join(lines)


def run_dag(args) -> int:
    """Read Hive EXPLAIN output (a .q.out file may hold several plans) or a Spark physical plan
    (EXPLAIN FORMATTED, explain.txt, simplified.txt, EXPLAIN text) and print each plan's
    DAG: an outline, or with --json one JSON object per plan and line: {"nodes": [...],
    "edges": [[src, dst], ...], ...}."""

    from jobgauge.dag import QueryDag

    path = None if args.file == "-" else args.file
    dags = QueryDag.all_from_text(_read(args.file), path=path)
    numbered = list(enumerate(dags, start=1))
    if args.plan is not None:
        if not 1 <= args.plan <= len(dags):
            raise UsageError(f"--plan must be between 1 and {len(dags)} for {args.file}. "
                             f"Got {args.plan} instead.")
        numbered = [numbered[args.plan - 1]]
    for index, dag in numbered:
        if args.json:
            print(json.dumps(plan_json(dag), sort_keys=False))
        else:
            print(outline(dag, index, len(dags)))
    if args.svg:
        out = Path(args.svg)
        targets = ([(out, numbered[0][1])] if len(numbered) == 1 else
                   [(out.with_name(f"{out.stem}-{index}{out.suffix or '.svg'}"), dag)
                    for index, dag in numbered])
        for target, dag in targets:
            try:
                target.write_text(dag.to_svg(), encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"cannot write {target}: {exc.strerror}") from None
            print(f"wrote {target}", file=sys.stderr)
    return 0
