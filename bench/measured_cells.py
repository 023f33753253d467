"""How close the answer for a configuration that was measured comes to a repeat of it: the
stage model's answer, the configuration's own measured runs, and the two shrunk together.

    nice -n 10 .venv/bin/python bench/measured_cells.py [--json]

A user's most common question is one the corpus measured: a TPC-H query at SF 1, 3 or 10
on local[2] with Spark's defaults.  The model answers it from its replay and corrector,
not from those runs, so its answer can sit well away from them (Q9 at SF 3 with the
defaults: 9.8 s answered where 5 runs measured 8.2-10.6 s, median 9.2 s).  This script
measures whether the runs themselves would answer better.

A cell is one query, size, master and configuration of the quiet corpus
(``models.evaluation.load_quiet_frames``).  From each cell with two finished runs or more
the last run (by run id) is held out; the stage model is trained on everything else.  Each
held-out run is then answered three ways: the model's answer; the geometric mean of its
cell's other runs; and the two shrunk together in log, the runs weighing ``n / (n + k)``
(``n`` the cell's other runs) for several ``k`` (``k`` is the ratio of one run's noise
variance to the model's error variance at a measured cell).  The figures are the median
absolute log error against the held-out run, overall and per scale factor.

Prints a Markdown table and writes bench/reports/measured_cells.md; ``--json`` prints the
rows.  About 2 minutes.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from _report import report_main  # noqa: E402  (bench/_report.py)

#: The shrinkage constants tried: the runs weigh n / (n + k).
SHRINK = (0.25, 0.5, 1.0, 2.0, 4.0)
CELL = ("workload", "datasize", "instance_type", "config_json")


def figures() -> dict:
    import numpy as np
    import pandas as pd

    from jobgauge.models.evaluation import load_quiet_frames, model_from_spec

    frame = load_quiet_frames()[0]["quiet"].reset_index(drop=True)
    cells = frame[list(CELL)].astype(str).agg("|".join, axis=1)
    done = (frame["completed"].astype(bool) & ~frame["profile_reference"].astype(bool))
    finished = frame[done].assign(cell=cells[done]).sort_values("run_id")
    repeats = finished.groupby("cell")["run_id"].transform("size")
    held = np.zeros(len(frame), dtype=bool)
    held[finished[repeats >= 2].groupby("cell").tail(1).index] = True
    model = model_from_spec("stage", random_state=0).fit(frame[~held])
    asked = frame[held].reset_index(drop=True)
    answer = np.log(model.predict(asked))
    measured = np.log(asked["runtime_s"].to_numpy(dtype=float))
    kept = frame[done & ~held].assign(cell=cells[done & ~held])
    logs = np.log(kept["runtime_s"].astype(float)).groupby(kept["cell"])
    own = logs.mean().reindex(cells[held].to_numpy()).to_numpy()
    count = logs.size().reindex(cells[held].to_numpy()).to_numpy(dtype=float)
    sizes = asked["datasize"].astype(str).to_numpy()

    def errors(values, mask):
        return round(100 * float(np.median(np.abs(values[mask] - measured[mask]))), 1)

    rows = []
    for label in ["all", *sorted(set(sizes), key=lambda s: float(s[2:]))]:
        mask = np.ones(len(sizes), dtype=bool) if label == "all" else sizes == label
        row = {"size": label, "held-out runs": int(mask.sum()),
               "model": errors(answer, mask), "own runs": errors(own, mask)}
        for k in SHRINK:
            weight = count / (count + k)
            row[f"shrunk, k={k:g}"] = errors(weight * own + (1 - weight) * answer, mask)
        rows.append(row)
    # the full model's answers against the cells' own runs (in training)
    full = model_from_spec("stage", random_state=0).fit(frame)
    trained = frame[done].reset_index(drop=True)
    gap = np.log(full.predict(trained)) - np.log(trained["runtime_s"].to_numpy(dtype=float))
    per_cell = np.abs(pd.Series(gap).groupby(cells[done].to_numpy()).mean().to_numpy())
    return {"rows": rows, "cells": int(len(per_cell)),
            "in_training": {"median": round(100 * float(np.median(per_cell)), 1),
                            "over 10 %": round(100 * float(np.mean(per_cell > 0.1)), 1),
                            "over 20 %": round(100 * float(np.mean(per_cell > 0.2)), 1)}}


def markdown(found: dict, seconds: float) -> str:
    table = found["rows"]
    columns = list(table[0])
    inside = found["in_training"]
    lines = ["# A measured configuration: the model's answer against its own runs",
             "",
             f"Reproduce with `nice -n 10 .venv/bin/python bench/measured_cells.py` "
             f"({seconds:.0f} s).  Median absolute log error (in %) against one held-out "
             f"repeat of each quiet cell (query, size, master, configuration) with two "
             f"finished runs or more; the stage model trained on the rest.  Own runs: the "
             f"geometric mean of the cell's other runs.  Shrunk: the two in log, the runs "
             f"weighing n / (n + k).",
             "",
             "| " + " | ".join(columns) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row[c]) for c in columns) + " |" for row in table]
    lines += ["",
              f"The model trained on every run, against the mean log runtime of each of the "
              f"{found['cells']} cells it learned from: median miss {inside['median']} %; "
              f"{inside['over 10 %']} % of the cells missed by more than 10 %, "
              f"{inside['over 20 %']} % by more than 20 %."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    return report_main(argv, __doc__, figures, markdown, "measured_cells.md")


if __name__ == "__main__":
    raise SystemExit(main())
