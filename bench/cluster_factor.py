"""Other jobs' runs on the same cluster as a calibration for a job never run there.

    nice -n 10 .venv/bin/python bench/cluster_factor.py [--tables T ...] [--draws N] [--shrink S]
        [--no-slots]

A user's store holds runs of some jobs on their cluster; a job it holds no run of is
answered by the model alone, learned on the shipped runs of this project's machine.
Where the user's cluster is slower or faster than that machine, every such answer is
off alike.  This asks, for each TPC-H query in a run table the default model did not
learn from: its runs answered by the model (the store's default, trained on the
shipped runs, ``models._default.store_model``) against their measured runtimes,
uncalibrated and calibrated by the other queries' runs in the same table
(``models._default.cluster_factor``: per query the mean log ratio of measured to
answered, their mean, shrunk by J / (J + 1) over the J queries; ``--shrink S`` tries
J / (J + S)), with 1, 3 or all of the other queries (1 and 3 drawn ``--draws`` times,
seeded).  The MdAPE of each.

Default tables, all measured and none in training: SF 1 on the slower machine of
session 48 (``tpch-sf1-v5-slower``: its runs 1.6x the shipped ones, the CPU probe 43 %
slower), and SF 1 and SF 3 measured again on the machine the shipped runs came from
(``tpch-sf1-v5``, ``tpch-sf3-v5``).

Then protocol (f) of the quiet corpus, where the cluster changes between training and
test: the default model trained on local[2] answers local[1] and the 2-worker
standalone cluster (and the reverse), and each target's runs are calibrated by the
other queries' runs on it.  Under two minutes (three fits of the model); writes
``bench/reports/cluster_factor.md``.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import report_main, shown  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TABLES = [REPO / "data" / "recollect" / "runs" / f"{name}.csv.gz"
          for name in ("tpch-sf1-v5-slower", "tpch-sf1-v5", "tpch-sf3-v5")]
OTHERS = (1, 3, None)           # how many other queries calibrate (None: all of them)


def _scored(model, path: Path, draws: int) -> dict:
    """One table's figures (:mod:`this module <cluster_factor>`)."""
    import numpy as np

    from jobgauge.job import Job, jobs_frame
    from jobgauge.runtable import read_run_table

    rows = [r for r in read_run_table(path) if r["completed"] and r["runtime_s"]]
    if not rows:
        raise SystemExit(f"{path}: no finished runs")
    answered = model.predict(jobs_frame(Job.from_row(row) for row in rows))
    measured = np.array([row["runtime_s"] for row in rows], dtype=float)
    names = np.array([row["workload"] for row in rows], dtype=object)
    return {"table": shown(path), **_calibrated(answered, measured, names, draws)}


def _calibrated(answered, measured, names, draws: int) -> dict:
    """The MdAPE of the answers for each query's runs, uncalibrated and calibrated by 1,
    3 or all of the other queries' runs (``models._default.cluster_factor``)."""
    import numpy as np

    from jobgauge.models._default import cluster_factor

    queries = sorted(set(names))

    def mdape(predicted, truth):
        return round(float(np.median(np.abs(predicted - truth) / truth)), 4)

    out = {"runs": len(measured), "queries": len(queries),
           "uncalibrated": mdape(answered, measured),
           "median_log_ratio": round(float(np.median(np.log(measured / answered))), 3),
           "calibrated": {}}
    for count in OTHERS:
        rng = random.Random(0)
        errors = []
        for query in queries:
            others = [q for q in queries if q != query]
            mine = names == query
            for _ in range(1 if count is None else draws):
                chosen = others if count is None else rng.sample(others, min(count, len(others)))
                use = np.isin(names, chosen)
                factor, _ = cluster_factor(measured[use], answered[use], names[use])
                errors.extend(np.abs(answered[mine] * factor - measured[mine]) / measured[mine])
        out["calibrated"]["all" if count is None else str(count)] = \
            round(float(np.median(errors)), 4)
    return out


def _slots(draws: int) -> list[dict]:
    """Protocol (f) of the quiet corpus (``models.evaluation``): the default model trained
    on local[2] answers local[1] and the standalone cluster, and trained on those answers
    local[2]; each target's runs calibrated by the other queries' runs on it."""
    import numpy as np

    from jobgauge.models import DEFAULT_MODEL
    from jobgauge.models.evaluation import (DEFAULT_REPORT_DIR, evaluate_cell,
                                            load_quiet_frames, protocol_label)

    frame = load_quiet_frames(shared_tables=[])[0]["quiet"]
    cell = evaluate_cell(frame, "quiet", "slots", DEFAULT_MODEL,
                         cache_dir=REPO / DEFAULT_REPORT_DIR / "cache")
    done = np.array(cell["completed"], dtype=bool)
    answered, measured = np.array(cell["predicted"], float), np.array(cell["y"], float)
    names, targets = np.array(cell["workload"], dtype=object), np.array(cell["breakdown"])
    rows = []
    for target in sorted(set(targets[done])):
        mine = done & (targets == target)
        rows.append({"table": protocol_label(f"slots:{target}"),
                     **_calibrated(answered[mine], measured[mine], names[mine], draws)})
    return rows


def figures(args) -> dict:
    import tempfile

    from jobgauge.models import _default
    from jobgauge.store import open_store

    if args.shrink is not None:
        _default.CLUSTER_SHRINK_JOBS = args.shrink      # this process's only
    with tempfile.TemporaryDirectory() as folder:
        model, meta = _default.store_model(open_store(Path(folder) / "fresh.db"))
    return {"model": meta["kind"], "draws": args.draws, "shrink": _default.CLUSTER_SHRINK_JOBS,
            "tables": [_scored(model, Path(table), args.draws) for table in args.tables],
            "slots": [] if args.no_slots else _slots(args.draws)}


def _table(first: str, rows) -> list[str]:
    """The markdown table of :func:`_calibrated`'s figures, one row each."""
    lines = [f"| {first} | runs | queries | measured / answered (median) | uncalibrated | "
             "1 other query | 3 other queries | all other queries |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        c = row["calibrated"]
        lines.append(f"| {row['table']} | {row['runs']} | {row['queries']} | "
                     f"x{2.718281828 ** row['median_log_ratio']:.2f} | "
                     f"{100 * row['uncalibrated']:.1f} % | {100 * c['1']:.1f} % | "
                     f"{100 * c['3']:.1f} % | {100 * c['all']:.1f} % |")
    return lines


def markdown(found: dict, seconds: float) -> str:
    lines = ["# Other jobs' runs on the same cluster as a calibration "
             "(`bench/cluster_factor.py`)", "",
             f"Each TPC-H query of a table answered by the store's default model "
             f"({found['model']}, trained on the shipped runs), against its measured runs: "
             f"uncalibrated, and calibrated by the other queries' runs in the same table "
             f"(`models._default.cluster_factor`, shrunk by J / (J + {found['shrink']:g}); "
             f"1 and 3 other queries drawn {found['draws']} times each). MdAPE over the "
             f"table's finished runs.", "",
             *_table("table", [dict(row, table=f"`{row['table']}`")
                               for row in found["tables"]])]
    if found.get("slots"):
        lines += ["", "Protocol (f) of the quiet corpus (`models.evaluation`, its default-model "
                  "cell): the model trained on one side's masters answers the other's runs, "
                  "uncalibrated and calibrated by the other queries' runs on the asked master "
                  "(every size the test side holds; the product takes the newest 100 quiet "
                  "ones).", "", *_table("protocol", found["slots"])]
    lines += ["", f"Command: `nice -n 10 .venv/bin/python bench/cluster_factor.py` "
              f"({seconds:.0f} s; `--shrink S` for another shrinkage, `--no-slots` without "
              f"protocol (f))", ""]
    return "\n".join(lines)


def options(parser) -> None:
    parser.add_argument("--tables", type=Path, nargs="+", default=TABLES, metavar="TABLE",
                        help="run tables of TPC-H queries the model did not learn from")
    parser.add_argument("--draws", type=int, default=5, metavar="N",
                        help="draws of the 1 and 3 other queries per query")
    parser.add_argument("--no-slots", action="store_true",
                        help="leave out protocol (f), the quiet corpus's other masters "
                             "(two more fits of the model: about a minute)")
    parser.add_argument("--shrink", type=float, default=None, metavar="S",
                        help="shrink by J / (J + S) instead of the product's "
                             "CLUSTER_SHRINK_JOBS")


def main(argv=None) -> int:
    return report_main(argv, __doc__, figures, markdown, "cluster_factor.md", options)


if __name__ == "__main__":
    raise SystemExit(main())
