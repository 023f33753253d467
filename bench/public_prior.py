"""The public Scout and C3O tables in the prior beside jobgauge's own runs: what they
do to the answers of other jobs, and how their own held-out family is answered.

    nice -n 10 .venv/bin/python bench/public_prior.py [--json]

The web service, the wrapper and the retraining learn the shipped runs plus the public
tables where ``$JOBGAUGE_SHARED_DATASETS`` names their folder (the README's ``jobgauge
import`` of them does the same).  This script trains the stage model as they do
(``models._default.prior_run_tables``, the shipped profiles attached) twice: on the
shipped runs alone, and on the shipped runs plus the public tables less every run on
m4 (the family held out).  It then asks

- every finished m4 run of the public tables (MdAPE per table and job; per table, the
  share inside the 80 % interval and its median width);
- TPC-H Q18 at SF 100 on 1 and 8 m5.xlarge and on 1 m4.xlarge and c4.xlarge (families
  no TPC-H run had), with and without the public tables: the answer and its 80 %
  interval must not depend on runs of other jobs;
- Scout's pagerank (spark) at bigdata on 2-48 c4.2xlarge and r4.xlarge (node counts
  among and between the measured ones): how often more nodes answer slower; and how
  long the web form's what-if grid of it (3 types x 8 node counts) takes;
- sort from 0.1 to 40 GB on 4 c4.2xlarge and on local[2]: jobgauge's HiBench sort
  (profiled here at 33 KiB-153 MiB) and C3O's sort (its own program, 9.3-19 GiB on
  EMR) share the name; which table's runs answer each question, and whether the
  answers rise with the data without a step where the answering runs change;
- the HiBench runs at ``small`` measured on local[2] and never trained on
  (``data/checks/runs/hibench-small-check.csv.gz``: kmeans at 460 MiB, 10x jobgauge's
  largest trained kmeans, where C3O's ran at 8-30 GiB; wordcount at 305 MiB), with and
  without the public tables.

Prints Markdown and writes ``bench/reports/public_prior.md``; ``--json`` prints the
figures.  About 1 minute.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from _report import report_main  # noqa: E402  (bench/_report.py)

HELD_FAMILY = "m4"
CLOUD = (("m5.xlarge", 1), ("m5.xlarge", 8), ("m4.xlarge", 1), ("c4.xlarge", 1))
COUNTS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 20, 24, 32, 48)
WHAT_IF_TYPES = ("c4.2xlarge", "r4.xlarge", "m4.2xlarge")
WHAT_IF_REPEATS = 7
SORT_GB = (0.1, 1, 2, 4, 10, 15, 40)
SORT_CLUSTERS = (("c4.2xlarge", 4), ("local[2]", 1))


def _trained(frame, profiles):
    from jobgauge.models._registry import make_model
    from jobgauge.models.evaluation import attach_reference_profiles

    return make_model("stage", random_state=0).fit(
        attach_reference_profiles(frame.reset_index(drop=True), profiles))


def figures() -> dict:
    import numpy as np
    import pandas as pd

    from jobgauge.errors import UsageError
    from jobgauge.job import Cluster, Job, jobs_frame
    from jobgauge.models._default import (
        prior_profile_files,
        prior_run_tables,
        reference_profile_records,
    )
    from jobgauge.models.evaluation import shared_run_tables
    from jobgauge.models._registry import predict_frame
    from jobgauge.models.features import instance_family
    from jobgauge.runtable import PUBLIC_TABLES, read_run_tables

    shipped = prior_run_tables()
    public_files = list(shared_run_tables())
    if not public_files:
        raise UsageError("no public run tables: set $JOBGAUGE_SHARED_DATASETS to the folder "
                         f"of {' and '.join(PUBLIC_TABLES.values())} (or run from the "
                         "project folder beside ../shared)")
    shipped = [p for p in shipped if p not in public_files]
    profiles = reference_profile_records("stage", prior_profile_files(shipped))
    own = read_run_tables(shipped)
    public = read_run_tables(public_files)
    held = np.array([instance_family(t) == HELD_FAMILY for t in public["instance_type"]])
    alone = _trained(own, profiles)
    mixed = _trained(pd.concat([own, public[~held]], ignore_index=True), profiles)

    asked = public[held & public["completed"].astype(bool).to_numpy()].reset_index(drop=True)
    center, low, high = mixed.predict_with_interval(asked)
    measured = asked["runtime_s"].to_numpy()
    ape = np.abs(center / measured - 1)
    inside = (low <= measured) & (measured <= high)
    jobs = asked["source"] + " " + asked["workload"] + " (" + asked["framework"] + ")"
    held_out = {"runs": len(asked), "mdape": {}, "coverage": {}, "width": {}, "jobs": []}
    for source in sorted(set(asked["source"])):
        mine = (asked["source"] == source).to_numpy()
        held_out["mdape"][source] = float(np.median(ape[mine]))
        held_out["coverage"][source] = float(inside[mine].mean())
        held_out["width"][source] = float(np.median(high[mine] / low[mine]))
    for job in sorted(set(jobs)):
        mine = (jobs == job).to_numpy()
        held_out["jobs"].append({"job": job, "runs": int(mine.sum()),
                                 "mdape": float(np.median(ape[mine]))})

    cloud = jobs_frame([Job("tpch-q18", "sf100", Cluster.from_catalog(t, n)) for t, n in CLOUD])
    answers = []
    for name, model in (("shipped runs", alone), ("with the public tables", mixed)):
        center, low, high = model.predict_with_interval(cloud)
        answers += [{"prior": name, "instance_type": t, "nodes": n, "runtime_s": float(c),
                     "low_s": float(lo), "high_s": float(hi)}
                    for (t, n), c, lo, hi in zip(CLOUD, center, low, high)]

    pagerank = public[(public["source"] == "scout-multinode") & (public["workload"] == "pagerank")
                      & (public["framework"] == "spark") & (public["datasize"] == "bigdata")]
    ladders = []
    for instance_type in ("c4.2xlarge", "r4.xlarge"):
        row = pagerank[pagerank["instance_type"] == instance_type].iloc[[0]]
        answered = mixed.predict(pd.concat([row.assign(instance_count=n) for n in COUNTS],
                                           ignore_index=True))
        measured = pagerank[(pagerank["instance_type"] == instance_type)
                            & pagerank["completed"].astype(bool)]
        ladders.append({"instance_type": instance_type,
                        "answers": {int(n): float(v) for n, v in zip(COUNTS, answered)},
                        "measured": {int(n): float(v) for n, v in zip(
                            measured["instance_count"], measured["runtime_s"])},
                        "slower_steps": int((np.diff(answered) > 0).sum()),
                        "largest_rise": float(np.max(answered[1:] / answered[:-1]))})
    # the what-if grid of the web form (3 types x 8 node counts) asked of a public table's
    # job: most node counts were never measured, each answered between measured ones
    grid = jobs_frame([Job("pagerank", "bigdata", Cluster.from_catalog(t, n))
                       for t in WHAT_IF_TYPES for n in range(1, 9)])
    predict_frame(mixed, grid)
    took = []
    for _ in range(WHAT_IF_REPEATS):
        started = time.perf_counter()
        predict_frame(mixed, grid)
        took.append(time.perf_counter() - started)
    what_if = {"job": "scout-multinode pagerank (spark) at bigdata", "rows": len(grid),
               "median_ms": 1000 * float(np.median(took)), "repeats": WHAT_IF_REPEATS}
    sort = []
    for instance_type, nodes in SORT_CLUSTERS:
        cluster = Cluster.named(instance_type, nodes)
        answered = predict_frame(mixed, jobs_frame([Job("sort", "", cluster, input_bytes=gb * 1e9)
                                                    for gb in SORT_GB]))
        sort.append({"instance_type": instance_type, "nodes": nodes, "answers": [
            {"gb": gb, "runtime_s": float(row["predicted_runtime_s"]),
             "low_s": float(row["predicted_low_s"]), "high_s": float(row["predicted_high_s"]),
             "table": row["answered_from_table"] or "", "outside": bool(row["outside_measured"])}
            for gb, (_, row) in zip(SORT_GB, answered.iterrows())]})
    c3o = public[(public["source"] == "c3o-emr") & (public["workload"] == "sort")
                 & (public["instance_type"] == SORT_CLUSTERS[0][0])
                 & (public["instance_count"] == SORT_CLUSTERS[0][1])]
    sort_measured = {f"{gb:.1f}": float(v) for gb, v in c3o.groupby(
        (c3o["input_bytes"] / 1e9).round(1))["runtime_s"].median().items()}
    checks = read_run_tables([REPO / "data" / "checks" / "runs" / "hibench-small-check.csv.gz"])
    checks = checks[checks["completed"].astype(bool)]
    first = checks.drop_duplicates("workload").reset_index(drop=True).assign(source="query")
    measured_checks = []
    for name, model in (("shipped runs", alone), ("with the public tables", mixed)):
        center, low, high = model.predict_with_interval(first)
        for workload, c, lo, hi in zip(first["workload"], center, low, high):
            times = checks.loc[checks["workload"] == workload, "runtime_s"].astype(float)
            measured_checks.append({"prior": name, "workload": workload,
                                    "input_bytes": float(first.loc[first["workload"] == workload,
                                                                   "input_bytes"].iloc[0]),
                                    "measured_s": [float(times.min()), float(times.max())],
                                    "runtime_s": float(c), "low_s": float(lo),
                                    "high_s": float(hi)})
    return {"held_family": HELD_FAMILY, "held_out": held_out, "cloud": answers,
            "ladders": ladders, "what_if": what_if, "checks": measured_checks,
            "sort": sort, "sort_measured": sort_measured,
            "slot_speeds": {"shipped runs": alone.instance_speeds_,
                            "with the public tables": mixed.instance_speeds_}}


def markdown(found: dict, seconds: float) -> str:
    part = found["held_out"]
    lines = ["# The public tables in the prior", "",
             f"Generated by `bench/public_prior.py` in {seconds:.0f} s. Reproduce with "
             "`nice -n 10 .venv/bin/python bench/public_prior.py`. The stage model trained "
             "as the web service trains it with `$JOBGAUGE_SHARED_DATASETS` set: the shipped "
             "runs with their profiles, plus the Scout and C3O tables less every run on "
             f"{found['held_family']} (held out).", "",
             f"## The held-out family: {part['runs']} finished {found['held_family']} runs", "",
             "| table | MdAPE | 80 % interval coverage | median width (high / low) |",
             "|---|---|---|---|"]
    lines += [f"| {source} | {100 * value:.1f} % | {100 * part['coverage'][source]:.1f} % | "
              f"x{part['width'][source]:.2f} |" for source, value in part["mdape"].items()]
    lines += ["", "| job | runs | MdAPE |", "|---|---|---|"]
    lines += [f"| {row['job']} | {row['runs']} | {100 * row['mdape']:.1f} % |"
              for row in part["jobs"]]
    lines += ["", "## TPC-H Q18 at SF 100 on families no TPC-H run had", "",
              "Slot speeds learned: " + "; ".join(
                  f"{name}: " + ", ".join(f"{k} {v:.3g}" for k, v in sorted(speeds.items()))
                  for name, speeds in found["slot_speeds"].items()) + ".", "",
              "| prior | instance type | nodes | answer | 80 % interval |",
              "|---|---|---|---|---|"]
    lines += [f"| {row['prior']} | {row['instance_type']} | {row['nodes']} | "
              f"{row['runtime_s']:.1f} s | [{row['low_s']:.1f}, {row['high_s']:.1f}] |"
              for row in found["cloud"]]
    lines += ["", "## Scout's pagerank (spark) at bigdata across node counts", ""]
    for ladder in found["ladders"]:
        measured = ", ".join(f"{n}: {v:.0f} s" for n, v in sorted(ladder["measured"].items()))
        lines += [f"{ladder['instance_type']}: {ladder['slower_steps']} of "
                  f"{len(ladder['answers']) - 1} steps up in nodes answered slower (largest "
                  f"rise x{ladder['largest_rise']:.2f}); measured (finished) {measured}.", "",
                  "| nodes | " + " | ".join(str(n) for n in ladder["answers"]) + " |",
                  "|---" * (len(ladder["answers"]) + 1) + "|",
                  "| answer (s) | " + " | ".join(f"{v:.0f}" for v in ladder["answers"].values())
                  + " |", ""]
    what_if = found["what_if"]
    lines += ["## The what-if grid of a public table's job", "",
              f"{what_if['job']} on {', '.join(WHAT_IF_TYPES)} x 1-8 nodes ({what_if['rows']} "
              f"answers, most between measured node counts), with its intervals and notes "
              f"(`models.predict_frame`): median {what_if['median_ms']:.1f} ms over "
              f"{what_if['repeats']} repeats.", ""]
    lines += ["## sort, jobgauge's and C3O's, across sizes", "",
              "Answered with the public tables (m4 held out); the table whose runs answer "
              "(`answered_from_table`; none: jobgauge's runs), and * where the answer is "
              "noted far outside what was measured. C3O measured on "
              f"{SORT_CLUSTERS[0][1]} {SORT_CLUSTERS[0][0]} (median, GB: s): "
              + ", ".join(f"{gb}: {v:.0f}" for gb, v in found["sort_measured"].items()) + ".",
              "", "| cluster | " + " | ".join(f"{gb:g} GB" for gb in SORT_GB) + " |",
              "|---" * (len(SORT_GB) + 1) + "|"]
    for ladder in found["sort"]:
        where = ladder["instance_type"] if ladder["nodes"] == 1 \
            else f"{ladder['nodes']} x {ladder['instance_type']}"
        lines.append(f"| {where} | " + " | ".join(
            f"{a['runtime_s']:.1f} s [{a['low_s']:.1f}, {a['high_s']:.1f}]"
            f"{' ' + a['table'] if a['table'] else ''}{' *' if a['outside'] else ''}"
            for a in ladder["answers"]) + " |")
    lines += [""]
    lines += ["## Measured here and never trained on: HiBench at small on local[2]", "",
              "| prior | workload | input | measured | answer | 80 % interval |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {row['prior']} | {row['workload']} | {row['input_bytes'] / 2 ** 20:.0f} MiB | "
              f"{row['measured_s'][0]:.2f}-{row['measured_s'][1]:.2f} s | {row['runtime_s']:.2f} s "
              f"| [{row['low_s']:.2f}, {row['high_s']:.2f}] |" for row in found["checks"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    return report_main(argv, __doc__, figures, markdown, "public_prior.md")


if __name__ == "__main__":
    sys.exit(main())
