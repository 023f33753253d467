"""Queries the model never trained on, answered from their own profile at larger sizes.

    nice -n 10 .venv/bin/python bench/unseen_profile.py [--json]

The 22 quiet TPC-H queries (``data/runs``, ``data/profiles``) in 5 folds by query: each
fold's queries are held out of training altogether (the stage model, as shipped), as a
user's jobs are between retrainings.  Every finished run of theirs at SF 3 and SF 10 is
then asked with a profile of the query's own, as ``jobgauge predict`` and the wrapper ask
(``models._default.job_history``: the newest run's profile summary):

- ``sf1 summary``: the summary of the query's SF 1 run at Spark's defaults (the
  reference rule of ``models._stage.reference_runs`` among those runs);
- ``sf1 summary + size``: the same with its run's input bytes as ``dataset_bytes``, as
  ``job_history`` gives it since session 29 (before, the model guessed the profiled
  size from the bytes the profile read over the median share of a data set a query
  reads);
- ``reference DAG`` and ``reference DAG + size``: the query's SF 0.1-0.3 reference
  profile (its stage DAG and summary), without and with its run's input bytes.

And after the model has retrained on that one SF 1 run (the service retrains every
few runs), asked with the same summary and size:

- ``trained on its sf1 run``: the model's answer;
- ``trained on it + calibrated``: times the factor that calibrates an answer to the
  job's own runs (``models._default.calibration_factor``, as the web form, ``jobgauge
  predict`` and the wrapper apply it): that run priced as it ran.

Prints MdAPE and the median of predicted over measured per variant and scale factor
(``--json``: the rows; ``--per-query VARIANT``: that median per query too).  Measured runtimes only; 10 fits of the stage model, about 5 min.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

FOLDS = 5
SIZES = ("sf3", "sf10")
VARIANTS = ("sf1 summary", "sf1 summary + size", "reference DAG", "reference DAG + size",
            "trained on its sf1 run", "trained on it + calibrated")


def sf1_runs(frame, records) -> dict:
    """{query: (its SF 1 defaults run (the reference rule of
    ``models._stage.reference_runs`` among its local[2] runs at SF 1 with a profile), that
    run's profile summary with its input bytes as ``dataset_bytes``, as
    ``models._default.job_history`` gives it, and its profile record)}."""
    from jobgauge.models._stage import reference_runs

    keys = list(zip(frame["source"].astype(str), frame["run_id"].astype(str)))
    profiled = np.array([key in records for key in keys])
    at_sf1 = frame[(frame["datasize"] == "sf1") & (frame["instance_type"] == "local[2]")
                   & profiled]
    out = {}
    for (workload, _), i in reference_runs(at_sf1, np.ones(len(at_sf1), bool)).items():
        row = at_sf1.iloc[i]
        record = records[(str(row["source"]), str(row["run_id"]))]
        out[workload] = (row, dict(record["summary"], dataset_bytes=float(row["input_bytes"])),
                         record)
    return out


def trained_once(frame, held, runs):
    """The stage model trained without the ``held`` queries but for one run each: their
    SF 1 run of :func:`sf1_runs`, with the profile it was recorded with (its summary and
    its stage DAG, as training on a store reads a run's profile record)."""
    import pandas as pd

    from jobgauge.models import StagePredictor
    from jobgauge.models.evaluation import record_dag

    once = pd.DataFrame([runs[w][0] for w in held])
    once = once.assign(dag=[record_dag(runs[w][2]) for w in held],
                       profile=[runs[w][1] for w in held], profile_reference=True)
    train = pd.concat([frame[~frame["workload"].isin(held)], once], ignore_index=True)
    return StagePredictor(random_state=0).fit(train), once


def evaluate(per_query=None) -> list[dict]:
    from jobgauge.models import StagePredictor
    from jobgauge.models._default import calibration_factor
    from jobgauge.models.evaluation import quiet_frame_and_records

    frame, records = quiet_frame_and_records()
    runs = sf1_runs(frame, records)
    reference = frame[frame["profile_reference"].astype(bool)].set_index("workload")
    queries = sorted(runs)
    answers = {}        # (variant, size) -> predicted / measured of each run asked
    mine = {}           # (size, query) -> the same, of the variant asked per query
    for fold in range(FOLDS):
        held = queries[fold::FOLDS]
        model = StagePredictor(random_state=0).fit(frame[~frame["workload"].isin(held)])
        asked = frame[frame["workload"].isin(held) & frame["datasize"].isin(SIZES)
                      & frame["completed"].astype(bool)]
        own = [runs[w][1] for w in asked["workload"]]
        sized = [dict(p, dataset_bytes=float(reference.at[w, "input_bytes"]))
                 for p, w in zip(asked["profile"], asked["workload"])]
        with_size = asked.assign(dag=None, profile=own)
        variants = {
            "sf1 summary": asked.assign(dag=None, profile=[
                {k: v for k, v in s.items() if k != "dataset_bytes"} for s in own]),
            "sf1 summary + size": with_size,
            "reference DAG": asked,
            "reference DAG + size": asked.assign(profile=sized),
        }
        answers_of = {name: model.predict(question) for name, question in variants.items()}
        retrained, once = trained_once(frame, held, runs)
        answers_of["trained on its sf1 run"] = retrained.predict(with_size)
        factors = dict(zip(once["workload"], (
            calibration_factor([measured], [priced])[0] for measured, priced in
            zip(once["runtime_s"], retrained.predict(once)))))
        answers_of["trained on it + calibrated"] = answers_of["trained on its sf1 run"] \
            * np.array([factors[w] for w in asked["workload"]])
        for name, answer in answers_of.items():
            ratio = answer / asked["runtime_s"].to_numpy()
            for size, value, query in zip(asked["datasize"], ratio, asked["workload"]):
                answers.setdefault((name, size), []).append(float(value))
                if name == per_query:
                    mine.setdefault((size, query), []).append(float(value))
        print(f"fold {fold + 1} of {FOLDS}: {', '.join(held)}", file=sys.stderr, flush=True)
    rows = []
    for name in VARIANTS:
        rows += [_row(answers[name, size], variant=name, datasize=size) for size in SIZES]
        if name == per_query:
            rows += [_row(mine[size, query], variant=name, datasize=size, query=query)
                     for size in SIZES for query in queries]
    return rows


def _row(ratios, **labels) -> dict:
    """A row of the report: ``labels``, the runs, MdAPE and the median ratio."""
    return {**labels, "runs": len(ratios),
            "mdape": float(np.median(np.abs(np.array(ratios) - 1))),
            "median_ratio": float(np.median(ratios))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--per-query", metavar="VARIANT", choices=VARIANTS,
                        help="also print that variant's rows per query")
    args = parser.parse_args(argv)
    rows = evaluate(args.per_query)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| profile asked with | SF | runs | MdAPE | predicted / measured |")
    print("|---|---|---|---|---|")
    for row in rows:
        query = f" ({row['query']})" if "query" in row else ""
        print(f"| {row['variant']}{query} | {row['datasize']} | {row['runs']} | "
              f"{100 * row['mdape']:.1f} % | x{row['median_ratio']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
