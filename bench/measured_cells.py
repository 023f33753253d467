"""How close the answer for a configuration that was measured comes to a repeat of it: the
stage model's replay alone, the configuration's own measured runs, the two shrunk
together, and the stage model's answer (which shrinks them so).

    nice -n 10 .venv/bin/python bench/measured_cells.py [--json]

A user's most common question is one the corpus measured: a TPC-H query at SF 1, 3 or 10
on local[2] with Spark's defaults.  The replay and its corrector answer it without those
runs' own times, so the replay's answer can sit well away from them (Q9 at SF 3 with the
defaults: 9.8 s where 5 runs measured 8.2-10.6 s, median 9.2 s).  This script measures
whether the runs themselves answer better, and how much to trust them
(``models._stage.MEASURED_CELL_SHRINK``).

A cell is one query, size, master and configuration of the quiet corpus
(``models.evaluation.load_quiet_frames``).  From each cell with two finished runs or more
the last run (by run id) is held out; the stage model is trained on everything else, with
its measured cells (``measured_cell_shrink``, the default) and without (the replay alone).
Each held-out run is then answered: by the replay alone; by the median of its cell's
other runs; by the two shrunk together in log, the runs weighing ``n / (n + k)``
(``n`` the cell's other runs) for several ``k`` (the ratio of one run's noise variance to
the replay's error variance at a measured cell); and by the model.  The figures are the
median absolute log error against the held-out run, overall and per scale factor.

Prints a Markdown table and writes bench/reports/measured_cells.md; ``--json`` prints the
rows.  About 2 minutes.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from _report import report_main, table_lines  # noqa: E402  (bench/_report.py)

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
    replay = model_from_spec("stage:measured_cell_shrink=null", random_state=0)
    replay.fit(frame[~held])
    model = model_from_spec("stage", random_state=0).fit(frame[~held])
    asked = frame[held].reset_index(drop=True)
    answer = np.log(replay.predict(asked))
    answered = np.log(model.predict(asked))
    measured = np.log(asked["runtime_s"].to_numpy(dtype=float))
    kept = frame[done & ~held].assign(cell=cells[done & ~held])
    logs = np.log(kept["runtime_s"].astype(float)).groupby(kept["cell"])
    own = logs.median().reindex(cells[held].to_numpy()).to_numpy()
    count = logs.size().reindex(cells[held].to_numpy()).to_numpy(dtype=float)
    sizes = asked["datasize"].astype(str).to_numpy()

    def errors(values, mask):
        return round(100 * float(np.median(np.abs(values[mask] - measured[mask]))), 1)

    rows = []
    for label in ["all", *sorted(set(sizes), key=lambda s: float(s[2:]))]:
        mask = np.ones(len(sizes), dtype=bool) if label == "all" else sizes == label
        row = {"size": label, "held-out runs": int(mask.sum()),
               "replay alone": errors(answer, mask), "own runs": errors(own, mask)}
        for k in SHRINK:
            weight = count / (count + k)
            row[f"shrunk, k={k:g}"] = errors(weight * own + (1 - weight) * answer, mask)
        row["the model"] = errors(answered, mask)
        rows.append(row)
    # the replay trained on every run against the cells' own runs (in training)
    full = model_from_spec("stage:measured_cell_shrink=null", random_state=0).fit(frame)
    trained = frame[done].reset_index(drop=True)
    gap = np.log(full.predict(trained)) - np.log(trained["runtime_s"].to_numpy(dtype=float))
    per_cell = np.abs(pd.Series(gap).groupby(cells[done].to_numpy()).mean().to_numpy())
    return {"rows": rows, "cells": int(len(per_cell)),
            "in_training": {"median": round(100 * float(np.median(per_cell)), 1),
                            "over 10 %": round(100 * float(np.mean(per_cell > 0.1)), 1),
                            "over 20 %": round(100 * float(np.mean(per_cell > 0.2)), 1)}}


def markdown(found: dict, seconds: float) -> str:
    table = found["rows"]
    inside = found["in_training"]
    lines = ["# A measured configuration: the model's answer against its own runs",
             "",
             f"Reproduce with `nice -n 10 .venv/bin/python bench/measured_cells.py` "
             f"({seconds:.0f} s).  Median absolute log error (in %) against one held-out "
             f"repeat of each quiet cell (query, size, master, configuration) with two "
             f"finished runs or more; the stage model trained on the rest.  Replay alone: "
             f"the model without its measured cells (`measured_cell_shrink=None`).  Own "
             f"runs: the median of the cell's other runs.  Shrunk: the two in log, "
             f"the runs weighing n / (n + k).  The model: its answer, which shrinks them "
             f"with k = 0.5 (`MEASURED_CELL_SHRINK`).",
             "", *table_lines(table)]
    lines += ["",
              f"The replay alone trained on every run, against the mean log runtime of each "
              f"of the "
              f"{found['cells']} cells it learned from: median miss {inside['median']} %; "
              f"{inside['over 10 %']} % of the cells missed by more than 10 %, "
              f"{inside['over 20 %']} % by more than 20 %."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    return report_main(argv, __doc__, figures, markdown, "measured_cells.md")


if __name__ == "__main__":
    raise SystemExit(main())
