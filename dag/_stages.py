"""The stage DAG of a run, from the stage dicts a profile reader fills."""

from __future__ import annotations

import networkx as nx

from jobgauge.dag._graph import KINDS, QueryDag, make_operator
from jobgauge.errors import UsageError
from jobgauge.profiler.readers.profile import TOTAL_METRICS

_VOLUME_BYTES = ("input_bytes", "shuffle_read_bytes")
_VOLUME_ROWS = ("input_records", "shuffle_read_records")


def _first(stage: dict, *names):
    for name in names:
        if stage.get(name) is not None:
            return stage[name]
    return None


def _as_int(value, what: str, index: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"stage {index} has a {what} that is not a whole number: {value!r}") from None
    if isinstance(value, float) and value != number:
        raise UsageError(f"stage {index} has a {what} that is not a whole number: {value!r}")
    return number


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def dag_from_stages(stages) -> QueryDag:
    if hasattr(stages, "stages") and not isinstance(stages, (list, tuple)):
        stages = stages.stages
    if not isinstance(stages, (list, tuple)):
        raise UsageError(f"stages must be a list of dicts, got {type(stages).__name__}")
    by_id: dict[int, dict] = {}
    for index, stage in enumerate(stages):
        if not isinstance(stage, dict):
            raise UsageError(f"stage {index} must be a dict, got {type(stage).__name__}")
        raw_id = _first(stage, "stage_id", "id", "Stage ID")
        if raw_id is None:
            raise UsageError(f"stage {index} has no 'stage_id'")
        stage_id = _as_int(raw_id, "stage_id", index)
        previous = by_id.get(stage_id)
        attempt = _first(stage, "attempt_id", "attempt", "Stage Attempt ID") or 0
        if previous is not None and (_first(previous, "attempt_id", "attempt", "Stage Attempt ID")
                                     or 0) > attempt:
            continue  # keep the latest attempt of a retried stage
        by_id[stage_id] = stage
    dag = QueryDag()
    dag.graph.update(source="eventlog", format="spark-stages", engine="spark", line=None)
    for stage_id in sorted(by_id):
        stage = by_id[stage_id]
        metrics = dict(stage.get("metrics") or {}) if isinstance(stage.get("metrics"), dict) else {}
        for name in TOTAL_METRICS + ("duration_s", "file_bytes", "file_growth"):
            if name not in metrics and _number(stage.get(name)) is not None:
                metrics[name] = stage[name]
        data = [_number(metrics.get(n)) for n in _VOLUME_BYTES]
        rows = [_number(metrics.get(n)) for n in _VOLUME_ROWS]
        name = _first(stage, "name", "Stage Name")
        n_tasks = _first(stage, "n_tasks", "num_tasks", "Number of Tasks")
        kind = stage.get("kind") if stage.get("kind") in KINDS else "spark-stage"
        node_id = f"Stage {stage_id}"
        label = node_id if not name else f"{node_id}: {name}"
        dag.add_node(node_id, kind=kind,
                     label=label if len(label) <= 80 else label[:77] + "...",
                     operators=[make_operator(str(name) if name else "stage")],
                     rows=int(sum(r for r in rows if r is not None)) if any(
                         r is not None for r in rows) else None,
                     data_size=int(sum(d for d in data if d is not None)) if any(
                         d is not None for d in data) else None,
                     rows_actual=None,
                     exchange=bool(_number(metrics.get("shuffle_write_bytes"))),
                     stage_id=stage_id, name=name,
                     n_tasks=_as_int(n_tasks, "n_tasks", stage_id) if n_tasks is not None else None,
                     metrics={k: v for k, v in metrics.items() if _number(v) is not None})
    for stage_id in sorted(by_id):
        parents = _first(by_id[stage_id], "parent_ids", "Parent IDs")
        parents = [] if parents is None else parents
        if not isinstance(parents, (list, tuple)):
            raise UsageError(f"stage {stage_id} has parent_ids that are not a list: {parents!r}")
        absent = []
        for parent in parents:
            parent_id = _as_int(parent, "parent id", stage_id)
            if parent_id == stage_id:
                raise UsageError(f"stage {stage_id} names itself as its parent")
            if parent_id in by_id:
                dag.add_edge(f"Stage {parent_id}", f"Stage {stage_id}", edge_type="shuffle")
            else:
                absent.append(parent_id)
        if absent:
            dag.nodes[f"Stage {stage_id}"]["absent_parents"] = sorted(absent)
    if not nx.is_directed_acyclic_graph(dag):
        cycle = " -> ".join(u for u, _ in nx.find_cycle(dag))
        raise UsageError(f"stage parents form a cycle: {cycle}")
    return dag
