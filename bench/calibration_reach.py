"""How far a job's own runs should calibrate its answers: the quiet TPC-H corpus's answers
at SF 3 and SF 10, calibrated by each query's runs at one smaller scale factor.

    nice -n 10 .venv/bin/python bench/calibration_reach.py [--json]

The stage model (the default) is trained as the scale-up protocol (e) trains it: on every
quiet run at SF <= 1 and the reference profiles.  Each finished run at SF 3 and SF 10 is
then answered three ways: the model's answer alone; times the factor of its query's runs
at one smaller scale (SF 0.1, 0.3 or 1), every run weighted alike (the calibration before
session 33); and times the factor with each run weighted by its distance from the asked
input (``models._default.reach_weights``: 1 within 3x, 0 beyond 10x), as the form, the
API, ``jobgauge predict`` and the wrapper calibrate now.  The factor is
``models._default.calibration_factor`` of the query's runs at that scale (its measured
times against the model's answers for them, all configurations of the query: the job
key calibrates).  The runs at SF <= 1 are in the model's training, so their residuals
are smaller than a user's unseen job's would be; the question is only whether they say
anything about the larger scales.  Prints a Markdown table and writes
bench/reports/calibration_reach.md; ``--json`` prints the rows.  About 2 minutes.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from _report import report_main, table_lines  # noqa: E402  (bench/_report.py)



def rows() -> list[dict]:
    import numpy as np

    from jobgauge.models._default import calibration_factor, reach_weights
    from jobgauge.models.evaluation import load_quiet_frames, model_from_spec, protocol_folds

    frames, _ = load_quiet_frames()
    frame = frames["quiet"].reset_index(drop=True)
    (train, test), = protocol_folds(frame, "scaleup")
    model = model_from_spec("stage", random_state=0)
    model.fit(frame.iloc[train])
    predicted = model.predict(frame)
    done = frame["completed"].astype(bool).to_numpy()
    measured = frame["runtime_s"].to_numpy(dtype=float)
    sizes = frame["input_bytes"].to_numpy(dtype=float)
    labels = frame["datasize"].astype(str).to_numpy()
    jobs = frame["workload"].astype(str).to_numpy()
    out = []
    for small in ("sf0.1", "sf0.3", "sf1"):
        for large in ("sf3", "sf10"):
            plain, alike, weighted, ratios = [], [], [], []
            for job in np.unique(jobs):
                runs = np.flatnonzero(done & (jobs == job) & (labels == small))
                asked = np.flatnonzero(done & (jobs == job) & (labels == large))
                if not len(runs) or not len(asked):
                    continue
                uniform = calibration_factor(measured[runs], predicted[runs])[0]
                for i in asked:
                    near = calibration_factor(measured[runs], predicted[runs],
                                              reach_weights(sizes[runs] / sizes[i]))[0]
                    plain.append(predicted[i] / measured[i])
                    alike.append(predicted[i] * uniform / measured[i])
                    weighted.append(predicted[i] * near / measured[i])
                    ratios.append(float(np.median(sizes[i] / sizes[runs])))
            if not plain:
                continue

            def mdape(values):
                return round(100 * float(np.median(np.abs(np.asarray(values) - 1))), 1)

            out.append({"runs at": small, "asked at": large, "answers": len(plain),
                        "input ratio": round(float(np.median(ratios)), 1),
                        "MdAPE alone": mdape(plain), "MdAPE, runs alike": mdape(alike),
                        "MdAPE, runs by distance": mdape(weighted)})
    return out


def markdown(table: list[dict], seconds: float) -> str:
    lines = ["# A job's own runs as calibration, by how far they are from the question",
             "",
             f"Reproduce with `nice -n 10 .venv/bin/python bench/calibration_reach.py` "
             f"({seconds:.0f} s).  The stage model trained on the "
             f"quiet TPC-H runs at SF <= 1 (protocol (e)); each finished run at SF 3 and "
             f"SF 10 answered alone, times its query's calibration factor from its runs at "
             f"one smaller scale with every run weighted alike, and with each run weighted "
             f"by its distance from the asked input (1 within 3x, 0 beyond 10x: "
             f"`models._default.reach_weights`).  Input ratio: the median of the asked "
             f"input over the runs'.",
             "", *table_lines(table)]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    return report_main(argv, __doc__, rows, markdown, "calibration_reach.md")


if __name__ == "__main__":
    raise SystemExit(main())
