"""The default model's answers for a cluster and size the corpus lacks, next to runs measured
there as a check.

    nice -n 10 .venv/bin/python bench/cluster_check.py [--checks data/checks/runs/X.csv.gz]

A check table (``data/checks/runs``, collected by a plan in ``bench/plans`` and never
trained on) holds runs at a (size, cluster) no shipped table holds: TPC-H Q3 and Q9 at
SF 5 on the 2-worker standalone cluster (``tpch-standalone-sf5-check``; the shipped tables
have that cluster at SF 1 and 3, and SF 5 on local[2] only).  Each question (a job, size,
cluster and settings of the check runs) is asked of the default model trained on every
shipped table two ways:

- *replay*: with the runs' profiles, as ``jobgauge serve`` trains it (the stage model
  replays the job's reference profile);
- *anchors*: the same tables without their profiles, as a table of runtimes alone
  (Scout, C3O, a CSV of a user's runs) trains it: the measured runs scaled along the
  job's own curves of size and node count.

Measured: the median runtime of the check runs (inside a warm application); each
answer's 80 % interval and its absolute percentage error.  Writes
bench/reports/cluster_check.md.  Tables without runs off local[2] are skipped (the web
form's check, ``bench/form_answers.py``, reads those).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The columns of a check run that make its question (its settings less the master URL,
#: whose port changes with every cluster start).
QUESTION = ("workload", "framework", "datasize", "input_bytes", "instance_type",
            "instance_count", "vcpus", "memory_gib")


def questions(tables):
    """(the question rows, {question index: measured runtimes}) of the finished check runs
    off local[2]: one row per job, size, cluster and settings (its first run's columns)."""
    from jobgauge.models.features import row_configs, settings_key
    from jobgauge.runtable import read_run_tables

    frame = read_run_tables(tables)
    frame = frame[frame["completed"] & (frame["instance_type"].astype(str) != "local[2]")]
    frame = frame.assign(settings=[settings_key(c) for c in row_configs(frame)])
    rows, runs = [], {}
    for _, group in frame.groupby([*QUESTION, "settings"], sort=True):
        runs[len(rows)] = group["runtime_s"].astype(float).tolist()
        rows.append(group.iloc[0])
    if not rows:
        return None, {}
    import pandas as pd

    asked = pd.DataFrame(rows).drop(
        columns=["runtime_s", "completed", "settings", "profile", "dag", "profile_reference"],
        errors="ignore").reset_index(drop=True)
    return asked, runs


def trained(with_profiles: bool):
    """The default model trained on the tables a fresh store learns from (the shipped
    ones), with or without their profiles, as ``jobgauge serve`` trains its first one."""
    from jobgauge.models._default import prior_profile_files, prior_run_tables, \
        reference_profile_records
    from jobgauge.models._training import train_model
    from jobgauge.runtable import read_run_tables

    tables = prior_run_tables()
    profiles = reference_profile_records(None, prior_profile_files(tables)) \
        if with_profiles else None
    return train_model(read_run_tables(tables), profiles=profiles)[0]


def _cell(center, low, high, runs) -> str:
    median = statistics.median(runs)
    inside = "inside" if low <= median <= high else "outside"
    return (f"{center:.2f} s [{low:.2f}, {high:.2f}], {abs(center - median) / median:.0%} off, "
            f"measured {inside}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", nargs="*", default=None, metavar="TABLE",
                        help="check run tables (default: data/checks/runs/*.csv.gz)")
    parser.add_argument("--out", default=str(REPO / "bench" / "reports"))
    args = parser.parse_args(argv)
    checks = [Path(p) for p in args.checks] if args.checks is not None \
        else sorted((REPO / "data" / "checks" / "runs").glob("*.csv.gz"))
    started = time.perf_counter()
    asked, runs = questions(checks) if checks else (None, {})
    if asked is None:
        print("no check runs off local[2] in " + ", ".join(map(str, checks)), file=sys.stderr)
        return 1
    answers = {}
    for name, profiles in (("replay", True), ("anchors", False)):
        model = trained(profiles)
        answers[name] = (model.predict_with_interval(asked), model.prediction_method(asked))
    from jobgauge.models.features import row_configs, settings_key

    lines = []
    for (i, row), config in zip(asked.iterrows(), row_configs(asked)):
        cells = []
        for name in ("replay", "anchors"):
            (center, low, high), _ = answers[name]
            cells.append(_cell(center[i], low[i], high[i], runs[i]))
        settings = settings_key(config)
        where = f"{row['instance_count']:g} x {row['instance_type']}" \
            if row["instance_type"] == "standalone" else str(row["instance_type"])
        lines.append(f"| {row['workload']} | {row['datasize']} | {where} | "
                     f"{'defaults' if settings == '{}' else settings} | "
                     f"{statistics.median(runs[i]):.2f} s ({len(runs[i])} runs) | "
                     + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    methods = {name: sorted(set(m.split(";")[0] for m in answers[name][1])) for name in answers}
    report = ["# A cluster and size the corpus lacks: answers next to check runs", "",
              f"Reproduce with `nice -n 10 .venv/bin/python bench/cluster_check.py` "
              f"({time.perf_counter() - started:.0f} s).  Check runs: "
              + ", ".join(f"`{p.relative_to(REPO) if p.is_relative_to(REPO) else p}`"
                          for p in checks)
              + " (never trained on).  Model: the default, trained on every shipped table "
              "with its profiles (*replay*: " + "; ".join(methods["replay"]) + ") and "
              "without them (*anchors*: " + "; ".join(methods["anchors"]) + ").  "
              "Answers: predicted runtime [80 % interval].", "",
              "| query | size | cluster | settings | measured (median) | replay | anchors |",
              "|---|---|---|---|---|---|---|", *lines]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cluster_check.md").write_text("\n".join(report) + "\n")
    print(f"report: {out / 'cluster_check.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
