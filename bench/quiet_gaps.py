"""Where the stage model misses on the quiet corpus: protocols (a), (c), (e) and (f) of
issue 13, split by TPC-H query and by configuration (cluster and settings) at each scale.

    nice -n 10 .venv/bin/python bench/quiet_gaps.py [--json]

The cells are those of ``bench/evaluate.py --quiet-corpus`` (the same folds, so the same
MdAPE) and share its cache, ``bench/reports/cache/``: after that command this script
takes seconds, else about 20 minutes on 2 cores (the held-out configurations and the
unseen queries refit the model per fold).  For each protocol it prints every query's and
every configuration's runs, MdAPE, median log(predicted / measured) (above 0: answered
too slow) and the share inside the 80 % interval, largest error first: the cells that
hold a target back, and whether they miss one way (a bias the replay lacks a term for)
or both.  Beside them, what the runs say without a model: each query's growth with
Spark's defaults from scale to scale, and each configuration's measured effect against
the defaults on its cluster.  Writes ``bench/reports/quiet_gaps.md``; ``--json`` prints the figures.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from _report import REPORTS, report_main, table_lines  # noqa: E402  (bench/_report.py)

#: The quiet corpus's protocols this report splits, with the names the report gives them.
PROTOCOLS = {"configs-sf1": "(a) held-out configurations at SF >= 1",
             "workloads-sf1": "(c) unseen TPC-H queries at SF >= 1",
             "scaleup": "(e) scale-up from SF <= 1",
             "slots": "(f) slots"}


def figures() -> dict:
    import numpy as np

    from jobgauge.models.evaluation import evaluate_cell, load_quiet_frames, metrics
    from jobgauge.models.features import row_configs, settings_key

    frame = load_quiet_frames()[0]["quiet"]
    configurations = np.array([f"{cluster} {settings_key(config)}" for cluster, config
                               in zip(frame["instance_type"].astype(str), row_configs(frame))],
                              dtype=object)
    out = {"protocols": {}, "measured": _measured(frame, configurations)}
    for protocol in PROTOCOLS:
        cell = evaluate_cell(frame, "quiet", protocol, "stage", cache_dir=REPORTS / "cache")
        done = np.array(cell["completed"], bool)
        index = np.array(cell["index"])[done]
        measured, predicted, low, high = (np.array(cell[key], float)[done]
                                          for key in ("y", "predicted", "low", "high"))
        bias = np.log(predicted / measured)

        def rows(keys):
            found = []
            for key in sorted(set(keys)):
                mine = keys == key
                scores = metrics(measured[mine], predicted[mine], low[mine], high[mine])
                found.append({"key": key, "runs": int(mine.sum()), "mdape": scores["mdape"],
                              "median_log_ratio": float(np.median(bias[mine])),
                              "coverage": scores["coverage80"]})
            return sorted(found, key=lambda row: -row["mdape"])

        sizes = np.array(cell["datasize"], dtype=object)[done]
        settings = np.array([f"{size} {key}" for size, key
                             in zip(sizes, configurations[index])], dtype=object)
        out["protocols"][protocol] = {
            "runs": int(done.sum()), "mdape": metrics(measured, predicted)["mdape"],
            "median_log_ratio": float(np.median(bias)),
            "queries": rows(frame["workload"].astype(str).to_numpy()[index]),
            "configurations": rows(settings)}
    return out


def _measured(frame, configurations) -> dict:
    """What the runs themselves say, no model: per query, the median runtime of Spark's
    defaults on ``local[2]`` at each scale; per configuration and scale, the median over
    the queries of log(its median runtime / the defaults' on the same cluster and scale)."""
    import numpy as np

    finished = frame["completed"].astype(bool).to_numpy()
    done = frame[finished].assign(configuration=configurations[finished])
    medians = done.groupby(["datasize", "configuration", "workload"])["runtime_s"].median()
    growth = medians.xs("local[2] {}", level="configuration").unstack("datasize")
    measured = set(medians.index.droplevel("workload"))
    effects = []
    for (size, configuration), runs in medians.groupby(level=["datasize", "configuration"]):
        defaults = f"{configuration.split(' ', 1)[0]} {{}}"
        if configuration == defaults or (size, defaults) not in measured:
            continue
        ratio = np.log(runs.droplevel([0, 1]) / medians.loc[size, defaults]).dropna()
        if len(ratio):
            effects.append({"key": f"{size} {configuration}", "queries": int(len(ratio)),
                            "median_log_ratio": float(ratio.median())})
    order = sorted(growth.columns, key=lambda size: float(size.removeprefix("sf")))
    return {"scales": order,
            "defaults_s": {query: {size: float(growth.loc[query, size]) for size in order
                                   if np.isfinite(growth.loc[query, size])}
                           for query in sorted(growth.index, key=lambda q: int(q[6:]))},
            "effects": effects}


def _table(title: str, rows: list[dict]) -> list[str]:
    return table_lines([{title: row["key"], "runs": row["runs"],
                         "MdAPE": f"{100 * row['mdape']:.1f} %",
                         "median log(predicted / measured)": f"{row['median_log_ratio']:+.3f}",
                         "inside the 80 % interval": f"{100 * row['coverage']:.0f} %"}
                        for row in rows])


def markdown(found: dict, seconds: float) -> str:
    lines = ["# Where the stage model misses on the quiet corpus", "",
             f"Generated by `bench/quiet_gaps.py` in {seconds:.0f} s. Reproduce with "
             "`nice -n 10 .venv/bin/python bench/quiet_gaps.py` (the cells of "
             "`bench/evaluate.py --quiet-corpus`, from its cache where that ran first). "
             "Finished test runs only. A median log ratio above 0: answered too slow; below: "
             "too fast. A configuration is its cluster and its settings less "
             "`spark.master`, at one scale.", ""]
    for protocol, part in found["protocols"].items():
        lines += [f"## {PROTOCOLS[protocol]}", "",
                  f"{part['runs']} finished test runs, MdAPE {100 * part['mdape']:.1f} %, "
                  f"median log ratio {part['median_log_ratio']:+.3f}.", ""]
        lines += _table("query", part["queries"]) + [""]
        lines += _table("scale, cluster and settings", part["configurations"]) + [""]
    measured = found["measured"]
    scales = measured["scales"]
    growth = []
    for query, seconds in measured["defaults_s"].items():
        row = {"query": query}
        row.update({size: f"{seconds[size]:.2f} s" if size in seconds else "—"
                    for size in scales})
        row.update({f"{a} to {b}": f"x{seconds[b] / seconds[a]:.2f}"
                    if a in seconds and b in seconds else "—"
                    for a, b in zip(scales, scales[1:])})
        growth.append(row)
    lines += ["## Measured, no model", "",
              "Spark's defaults on `local[2]`: each query's median runtime per scale, and "
              "its growth from each scale to the next.", ""]
    lines += table_lines(growth)
    lines += ["", "Each configuration against Spark's defaults on the same cluster at the "
              "same scale: the median over the queries of log(its median runtime / the "
              "defaults'); below 0, faster.", ""]
    lines += table_lines([{"scale, cluster and settings": row["key"], "queries": row["queries"],
                           "median log ratio to the defaults": f"{row['median_log_ratio']:+.3f}"}
                          for row in measured["effects"]])
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    return report_main(argv, __doc__, figures, markdown, "quiet_gaps.md")


if __name__ == "__main__":
    sys.exit(main())
