"""Jobs without a profile asked beyond their largest measured size: grown as their work
grows (a fixed part and a part in proportion to the data), or as the power law they grew
by inside their sizes.

    nice -n 10 .venv/bin/python bench/unprofiled_growth.py [--json]

A job the model knows only from its runs (a run table without event logs, a job of the
user's imported so) is answered from its measured anchors and its own curve of size
(``StagePredictor._fallback_log``).  Here the jobs are the quiet corpus's TPC-H queries
(local[1], local[2] and the standalone cluster), without their profiles: trained on
every finished run at SF <= 1 (then at SF <= 0.3), every finished run above is asked,
once as its own query (its own curve) and once under a name no run has (a job never
measured: the anchors pooled over every job).  "now" continues the curve beyond its
largest size by ``models._stage._grown_beyond`` (from its last step's slope); "power
law" by the pooled exponent alone (what the model did before session 35).  Prints a
Markdown table and writes ``bench/reports/unprofiled_growth.md``; ``--json`` prints the
figures.  About 10 seconds.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from _report import report_main  # noqa: E402  (bench/_report.py)

#: (training sizes, asked sizes): the quiet runs' scale factors.
SPLITS = ((("sf0.1", "sf0.3", "sf1"), ("sf3", "sf10")),
          (("sf0.1", "sf0.3"), ("sf1", "sf3", "sf10")))
#: The name a question of a job never measured is asked under.
NEVER_MEASURED = "a-job-never-measured"


def answers() -> list[dict]:
    """One row per training split, way of growing, job and asked scale: MdAPE, the median
    answer / measured and the runs."""
    import numpy as np

    import jobgauge.models._stage as stage
    from jobgauge.models.evaluation import EVAL_PARAMS, load_quiet_frames, model_from_spec

    frame = load_quiet_frames()[0]["quiet"].reset_index(drop=True)
    frame = frame[frame["completed"].astype(bool)]
    frame = frame.drop(columns=["profile", "dag"])
    grown = stage._grown_beyond
    rows = []
    for trained, asked in SPLITS:
        model = model_from_spec("stage", random_state=0, **EVAL_PARAMS.get("stage", {}))
        model.fit(frame[frame["datasize"].isin(trained)])
        test = frame[frame["datasize"].isin(asked)].reset_index(drop=True)
        measured = test["runtime_s"].to_numpy(dtype=float)
        for way, continued in (("now", grown),
                               ("power law", lambda distance, exponent, last=None:
                                exponent * np.maximum(distance, 0.0))):
            stage._grown_beyond = continued
            try:
                for job, questions in (("its own", test),
                                       ("never measured", test.assign(workload=NEVER_MEASURED))):
                    ratio = model.predict(questions) / measured
                    for label in asked:
                        mine = (test["datasize"] == label).to_numpy()
                        rows.append({"trained": f"SF <= {trained[-1][2:]}", "growth": way,
                                     "job": job, "asked": label, "runs": int(mine.sum()),
                                     "mdape": float(np.median(np.abs(ratio[mine] - 1))),
                                     "ratio": float(np.median(ratio[mine])),
                                     "exponent": model.fallback_size_exponent_})
            finally:
                stage._grown_beyond = grown
    return rows


def markdown(rows: list[dict], seconds: float) -> str:
    lines = ["# Jobs without a profile, asked beyond their largest measured size", "",
             "Reproduce with `nice -n 10 .venv/bin/python bench/unprofiled_growth.py` "
             f"({seconds:.0f} s). The quiet TPC-H runs without their profiles "
             "(local[1], local[2], the standalone cluster): trained on the finished runs up "
             "to a scale factor, every finished run above asked as its own query and as "
             "a job never measured. "
             "*now*: beyond its largest size a job's fixed part stays and the rest grows "
             "with the data, by the slope of its last measured step or the pooled exponent, "
             "the larger (`models._stage._grown_beyond`); *power law*: grown by the pooled "
             "exponent as a power law, as before.", "",
             "| trained on | size exponent | growth | job | asked at | runs | MdAPE | "
             "answer / measured (median) |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['trained']} | {row['exponent']:.2f} | {row['growth']} | "
                     f"{row['job']} | SF {row['asked'][2:]} | {row['runs']} | "
                     f"{100 * row['mdape']:.1f} % | x{row['ratio']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    return report_main(argv, __doc__, answers, markdown, "unprofiled_growth.md")


if __name__ == "__main__":
    sys.exit(main())
