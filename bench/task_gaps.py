"""What one task of a many-task stage costs on local[1] and on local[2]: the time per task
of the quiet corpus's stages of 100 tasks or more (AQE off: 200 per shuffle), from the
shipped profiles.

    .venv/bin/python bench/task_gaps.py [--json]

The stage model (``models._stage``) charges a per-task overhead per *wave*: a stage of
``n`` tasks on ``s`` slots pays it ``ceil(n / s)`` times, so two slots halve it.  Protocol
(f) (train on local[2], answer local[1]) answers local[1] with AQE off at SF 1 about 1.5x
too slow.  This script reads what the event logs say a task costs there.  Per stage:
``duration`` (first task start to last task end, over the tasks), ``run`` (the tasks'
summed executor run time) and the gap ``duration - run / slots`` (the stage's time that
its slots were not running tasks: the driver launching tasks and handling their results,
one at a time); each over the stage's tasks, in ms, the median over the stages of each
scale factor, master and configuration.

Prints a Markdown table and writes bench/reports/task_gaps.md; ``--json`` prints the rows.
A few seconds.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from _report import report_main, table_lines  # noqa: E402  (bench/_report.py)

#: The quiet TPC-H tables on local[1] and local[2] at SF 1 and SF 3 (data/runs, data/profiles).
TABLES = ("tpch-sf1", "tpch-sf3")
#: A stage of at least this many tasks counts.
MIN_TASKS = 100
SLOTS = {"local[1]": 1, "local[2]": 2}


def figures() -> list[dict]:
    import numpy as np

    from jobgauge.runtable import read_profile_records, read_run_tables

    out = []
    for table in TABLES:
        runs = read_run_tables([REPO / "data" / "runs" / f"{table}.csv.gz"])
        runs = runs[runs["completed"].astype(bool) & runs["instance_type"].isin(list(SLOTS))]
        records = read_profile_records([REPO / "data" / "profiles" / f"{table}.jsonl.gz"])
        by_id = {run_id: record for (_, run_id), record in records.items()}
        stages = {}
        for row in runs.to_dict("records"):
            record = by_id.get(row["run_id"])
            if record is None:
                continue
            settings = {k: v for k, v in row["config"].items() if k != "spark.master"}
            key = (row["instance_type"], ", ".join(f"{k}={v}" for k, v in sorted(settings.items()))
                   or "defaults")
            for stage in record.get("stages") or []:
                tasks = stage.get("n_tasks") or 0
                if tasks < MIN_TASKS or stage.get("duration_s") is None:
                    continue
                run_s = (stage.get("executor_run_time_ms") or 0) / 1000
                slots = SLOTS[row["instance_type"]]
                stages.setdefault(key, []).append(
                    (tasks, stage["duration_s"] / tasks, run_s / tasks,
                     (stage["duration_s"] - run_s / slots) / tasks, row["runtime_s"]))
        for (master, settings), values in sorted(stages.items()):
            values = np.array(values)
            out.append({"size": table.split("-")[1], "master": master, "settings": settings,
                        "stages": len(values),
                        "tasks per stage": int(np.median(values[:, 0])),
                        "ms per task": round(1000 * float(np.median(values[:, 1])), 2),
                        "run ms per task": round(1000 * float(np.median(values[:, 2])), 2),
                        "gap ms per task": round(1000 * float(np.median(values[:, 3])), 2)})
    return out


def markdown(table: list[dict], seconds: float) -> str:
    lines = ["# What a task of a many-task stage costs on local[1] and local[2]",
             "",
             f"Reproduce with `.venv/bin/python bench/task_gaps.py` ({seconds:.0f} s).  "
             f"Stages of {MIN_TASKS} tasks or more in the quiet TPC-H profiles; per stage, "
             f"its duration, its tasks' summed run time and the gap (duration less run time "
             f"over the slots), each over its tasks; medians over the stages.",
             "", *table_lines(table)]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    return report_main(argv, __doc__, figures, markdown, "task_gaps.md")


if __name__ == "__main__":
    raise SystemExit(main())
