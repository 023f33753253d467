"""What a held-out instance family's questions ask that the trained families never ran:
protocol (g) of issue 13 on the Scout and C3O tables, run by run.

    nice -n 10 .venv/bin/python bench/family_gaps.py [--json]

Protocol (g) trains on two instance families and asks every run of the third
(``models.evaluation``, ``families``).  This script asks them with the stage model as
``bench/evaluate.py --quiet-corpus`` does (the same folds, so the same MdAPE) and splits
the held-out runs by what the training side holds of them: a run whose job ran with the
same parameters (``config_json``: C3O's data sizes, grep's share of matching lines,
k-means' k; Scout's size label) on a trained family, or one whose parameters no trained run had.  It also
sets the families side by side where they ran the very same job, parameters and node
count: the runtime of each family over the others' mean there, which no instance spec of
the trained families can foretell when it differs by family.  Prints Markdown tables and
writes ``bench/reports/family_gaps.md``; ``--json`` prints the figures.  About 15 seconds.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from _report import report_main  # noqa: E402  (bench/_report.py)

DATASETS = ("c3o-emr", "scout-multinode")


def figures() -> dict:
    import numpy as np

    import pandas as pd

    from jobgauge.models.evaluation import breakdown_values, evaluate_cell, shared_frames

    frames = shared_frames()[0]
    out = {}
    for dataset in DATASETS:
        frame = frames[dataset]
        cell = evaluate_cell(frame, dataset, "families", "stage")
        index = np.array(cell["index"])
        done = np.array(cell["completed"], bool)
        measured = np.array(cell["y"], float)[done]
        predicted = np.array(cell["predicted"], float)[done]
        asked = frame.iloc[index[done]]
        families = pd.Series(breakdown_values(frame, "families"), index=frame.index)
        held = families.iloc[index[done]].to_numpy()
        asked_workloads = asked["workload"].astype(str).to_numpy()
        jobs = frame["workload"].astype(str) + "|" + _parameters(frame)
        trained_jobs = {family: set(jobs[families != family]) for family in set(held)}
        seen = np.array([job in trained_jobs[family]
                         for job, family in zip(jobs.iloc[index[done]], held)])
        ape = np.abs(predicted - measured) / measured
        bias = np.log(predicted / measured)
        rows = []
        for family in sorted(set(held)):
            for workload in sorted(set(asked_workloads)):
                mine = (held == family) & (asked_workloads == workload)
                if not mine.any():
                    continue
                trained = frame[(families != family) & (frame["workload"] == workload)]
                rows.append({"family": family, "workload": workload, "runs": int(mine.sum()),
                             "parameters_asked": int(_parameters(asked[mine]).nunique()),
                             "parameters_trained": int(_parameters(trained).nunique()),
                             "seen_share": float(seen[mine].mean()),
                             "mdape": float(np.median(ape[mine])),
                             "median_log_ratio": float(np.median(bias[mine]))})
        split = {kind: {"runs": int(keep.sum()),
                        "mdape": float(np.median(ape[keep])) if keep.any() else None}
                 for kind, keep in (("parameters trained", seen), ("parameters not trained",
                                                                      ~seen))}
        out[dataset] = {"runs": int(done.sum()), "mdape": float(np.median(ape)),
                        "by_kind": split, "rows": rows, "speeds": _family_speeds(frame)}
    return out


def _parameters(frame):
    """A run's parameters: its size label (Scout's ``bigdata``, ``huge``) and its
    ``config_json`` (C3O's job parameters and data size)."""
    return frame["datasize"].fillna("").astype(str) + "|" + frame["config_json"].astype(str)


def _family_speeds(frame) -> list[dict]:
    """Per workload and family: the median, over the (parameters, node count) cells every
    family of the workload ran, of the family's median runtime over the mean (in log) of
    the families' medians there.  Only instance types of 8 vCPUs (the *.2xlarge), so a
    family's cells differ from the others' in the family alone."""
    import numpy as np

    from jobgauge.models.evaluation import breakdown_values

    done = frame[frame["completed"].astype(bool) & (frame["vcpus"] == 8)].copy()
    done["family"] = breakdown_values(done, "families")
    done["parameters"] = _parameters(done)
    rows = []
    for workload, runs in done.groupby("workload"):
        cells = runs.groupby(["parameters", "instance_count", "family"])["runtime_s"] \
            .median().unstack("family").dropna()
        if cells.shape[1] < 2 or cells.empty:
            continue
        logs = np.log(cells)
        relative = logs.sub(logs.mean(axis=1), axis=0)
        for family in cells.columns:
            rows.append({"workload": workload, "family": family, "cells": int(len(cells)),
                         "relative_runtime": float(np.exp(relative[family].median()))})
    return rows


def markdown(found: dict, seconds: float) -> str:
    lines = ["# What a held-out instance family asks that the trained ones never ran", "",
             f"Generated by `bench/family_gaps.py` in {seconds:.0f} s. Reproduce with "
             "`nice -n 10 .venv/bin/python bench/family_gaps.py`. The stage model under "
             "protocol (g) (train on two instance families, ask every finished run of the "
             "third; the folds of `bench/evaluate.py --quiet-corpus`). A run's parameters "
             "are its size label and `config_json` (Scout's `bigdata` or `huge`; C3O's job "
             "parameters and data size).",
             ""]
    for dataset, part in found.items():
        lines += [f"## {dataset}", "",
                  f"{part['runs']} finished runs asked, MdAPE {100 * part['mdape']:.1f} %.",
                  "", "| the run's job and parameters | runs | MdAPE |", "|---|---|---|"]
        for kind, row in part["by_kind"].items():
            value = "—" if row["mdape"] is None else f"{100 * row['mdape']:.1f} %"
            lines.append(f"| {kind} on another family | {row['runs']} | {value} |")
        lines += ["", "| held-out family | workload | runs | parameter sets asked | "
                  "parameter sets trained | asked with trained parameters | MdAPE | "
                  "median log(predicted / measured) |", "|---|---|---|---|---|---|---|---|"]
        for row in part["rows"]:
            lines.append(f"| {row['family']} | {row['workload']} | {row['runs']} | "
                         f"{row['parameters_asked']} | {row['parameters_trained']} | "
                         f"{100 * row['seen_share']:.0f} % | {100 * row['mdape']:.1f} % | "
                         f"{row['median_log_ratio']:+.3f} |")
        if part["speeds"]:
            lines += ["", "Where the 8-vCPU types of every family ran the same job, "
                      "parameters and node count: each family's runtime over the "
                      "families' mean there (median over those cells).", "",
                      "| workload | family | cells | runtime over the mean |",
                      "|---|---|---|---|"]
            for row in part["speeds"]:
                lines.append(f"| {row['workload']} | {row['family']} | {row['cells']} | "
                             f"×{row['relative_runtime']:.2f} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    return report_main(argv, __doc__, figures, markdown, "family_gaps.md")


if __name__ == "__main__":
    sys.exit(main())
