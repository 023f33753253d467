"""A user's own jobs with a history at several sizes, asked at larger ones: replayed from
one reference profile, or from the profile of the size level nearest the asked input.

    nice -n 10 .venv/bin/python bench/own_history.py [--json]

The jobs are the quiet corpus's odd-numbered TPC-H queries, renamed (``own-q3`` ...) so
that jobgauge takes them for a user's own jobs, whose own history is their profile (the
even ones stay TPC-H's, with one reference profile each): every finished run
at SF 3 and SF 10 is asked (without a profile, as the form and the API ask) of a stage
model trained as the scale-up protocol (e) trains it (every quiet run at SF <= 1), but
with each run's profile attached as ``models.evaluation.attach_reference_profiles``
attaches a user's job's: one reference run per size level (SF 0.1, 0.3 and 1), and the
question replayed from the level nearest its input
(``models._stage.sized_reference_runs``, ``StagePredictor._nearest_profile``).  Beside
it, the same runs under their TPC-H names: one reference profile each, at SF 0.1 (what
a user's job got before, and protocol (e) as ``bench/evaluate.py`` scores it).  The
model alone, without the calibration by the job's own runs the service adds.  Prints a
Markdown table and writes ``bench/reports/own_history.md``; ``--json`` prints the
figures.  About 2 minutes.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from _report import report_main  # noqa: E402  (bench/_report.py)

#: The name a TPC-H query takes as a user's own job (no benchmark knows it).
OWN_PREFIX = "own-"
#: The queries taken for a user's own jobs: the odd ones.  The others stay TPC-H's, one
#: reference profile each, and teach the model how work grows with the data (a job
#: replayed from the profile of its own size learns nothing of that from its runs: with
#: every query taken for a user's, SF 10 was over-predicted x1.23, 28.9 % MdAPE).
OWN_QUERIES = [f"tpch-q{n}" for n in range(1, 23, 2)]


def answers() -> dict:
    """{method: {scale label: (MdAPE, coverage of the 80 % interval, median answer /
    measured, runs)}}."""
    import numpy as np

    from jobgauge.models import predict_frame
    from jobgauge.models.evaluation import (
        attach_reference_profiles,
        load_quiet_frames,
        model_from_spec,
        protocol_folds,
        quiet_run_tables,
    )
    from jobgauge.runtable import profiles_beside, read_profile_records

    frames, _ = load_quiet_frames()
    frame = frames["quiet"].reset_index(drop=True)
    (train, test), = protocol_folds(frame, "scaleup")
    tables = [p for p in quiet_run_tables() if p.name.startswith(("quiet-tpch", "tpch-"))]
    records = read_profile_records([p for t in tables for p in profiles_beside(t)])
    bare = frame.drop(columns=["profile", "dag", "profile_reference"])
    own = bare["workload"].astype(str).isin(OWN_QUERIES).to_numpy()
    out = {}
    for method, rename in (("one reference profile (SF 0.1)", False),
                           ("a profile per size level (nearest the asked input)", True)):
        runs = bare.assign(workload=np.where(own, OWN_PREFIX + bare["workload"].astype(
            str).str.removeprefix("tpch-"), bare["workload"])) if rename else bare
        trained = attach_reference_profiles(runs.iloc[train].reset_index(drop=True), records)
        model = model_from_spec("stage", random_state=0).fit(trained)
        asked = runs.iloc[test].reset_index(drop=True)
        asked = asked[asked["completed"].astype(bool).to_numpy() & own[test]
                      ].reset_index(drop=True)
        answer = predict_frame(model, asked)
        predicted = answer["predicted_runtime_s"].to_numpy(dtype=float)
        low = answer["predicted_low_s"].to_numpy(dtype=float)
        high = answer["predicted_high_s"].to_numpy(dtype=float)
        measured = asked["runtime_s"].to_numpy(dtype=float)
        labels = asked["datasize"].astype(str).to_numpy()
        out[method] = {}
        for label in ("sf3", "sf10"):
            at = labels == label
            ratio = predicted[at] / measured[at]
            inside = (low[at] <= measured[at]) & (measured[at] <= high[at])
            out[method][label] = (float(np.median(np.abs(ratio - 1))), float(inside.mean()),
                                  float(np.median(ratio)), int(at.sum()))
    return out


def markdown(figures: dict, seconds: float) -> str:
    lines = ["# A user's own jobs with a history at SF 0.1-1, asked at SF 3 and SF 10", "",
             "Reproduce with `nice -n 10 .venv/bin/python bench/own_history.py` "
             f"({seconds:.0f} s). The quiet TPC-H runs at SF <= 1 train the "
             "stage model (protocol (e)'s training runs); every finished run at SF 3 and SF "
             "10 is asked without a profile. The model's answer alone (the service "
             "calibrates it by the job's own runs near the asked size besides).", "",
             "| profile replayed | asked at | runs | MdAPE | inside the 80 % interval | "
             "answer / measured (median) |", "|---|---|---|---|---|---|"]
    for method, per_scale in figures.items():
        for label, (mdape, inside, ratio, n) in per_scale.items():
            lines.append(f"| {method} | {label.upper().replace('SF', 'SF ')} | {n} | "
                         f"{100 * mdape:.1f} % | {100 * inside:.1f} % | x{ratio:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    return report_main(argv, __doc__, answers, markdown, "own_history.md")


if __name__ == "__main__":
    sys.exit(main())
