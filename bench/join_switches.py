"""Which broadcast joins Spark ran as shuffle joins, next to the ones the stage model's
replay switches: how well the replay's rule follows the plans of the measured runs.

    nice -n 10 .venv/bin/python bench/join_switches.py [--json] [--shares 0.05 0.1 0.25 0.5 1]

For every quiet TPC-H run in the shipped tables (``data/runs``) with its own event-log
profile (``data/profiles``), the broadcast joins its plan ran as shuffle joins: the
broadcast stages (a scan that writes no shuffle, ``models._stage.stage_kind``) of its
workload's reference profile less its own.  Beside it, the count the replay switches for
the same question (``StagePredictor._target_stages``: a broadcast side switches where the
bytes of its scan's files times Spark's share of them, grown with the asked input, pass
``spark.sql.autoBroadcastJoinThreshold``, or with the threshold off; every shipped TPC-H
profile knows its files, ``data/scan-files.json``, and the share is the row share of
the columns the broadcast keeps, ``jobgauge.dag.broadcast_shares``, where its plan
names them, else the model's ``broadcast_file_share``).  One row per query, scale
factor and threshold (Spark's defaults otherwise, local[2]; the median over its runs).
Per scale factor it prints how often the two agree and, where they do not, which way
the rule errs; then, with Spark's default threshold, the agreement for each value of
``broadcast_file_share`` where the plan does not say (``--shares``; by default
``models._stage.BROADCAST_FILE_SHARE``).  Writes bench/reports/join_switches.md;
``--json`` prints the rows.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
THRESHOLD = "spark.sql.autoBroadcastJoinThreshold"


def _broadcast_stages(record) -> float:
    """The broadcast stages of one profile record's own run; NaN without stages."""
    from jobgauge.models._stage import _has_stages, profile_stages
    from jobgauge.models.evaluation import record_dag

    dag = record_dag(record) if isinstance(record, dict) else None
    if not _has_stages(dag):
        return math.nan
    return float(sum(stage["kind"] == "broadcast" for stage in profile_stages(dag, None)))


def measured_switches(frame, records, model) -> dict:
    """{(query, scale factor, threshold): {"positions", "measured"}} for the finished
    local[2] runs with no other setting: their frame positions and, per run, the
    reference's broadcast stages less the run's own (each run's plan parsed once)."""
    from jobgauge.models.features import row_configs

    rows = {}
    configs = row_configs(frame)
    for position, config in enumerate(configs):
        run = frame.iloc[position]
        if run["instance_type"] != "local[2]" or not bool(run["completed"]) \
                or set(config) - {"spark.master", THRESHOLD}:
            continue
        own = _broadcast_stages(records.get((str(run["source"]), str(run["run_id"]))))
        reference = model.reference_profiles_.get((str(run["workload"]), "spark"))
        if not math.isfinite(own) or reference is None:
            continue
        built = sum(stage["kind"] == "broadcast" for stage in reference["stages"])
        key = (str(run["workload"]), str(run["datasize"]), config.get(THRESHOLD, "default"))
        rows.setdefault(key, {"positions": [], "measured": []})
        rows[key]["positions"].append(position)
        rows[key]["measured"].append(max(built - own, 0.0))
    return rows


def switch_rows(frame, records, model, measured=None) -> list[dict]:
    """One dict per (query, scale factor, threshold) on local[2] with no other setting:
    ``measured`` (median over its runs of the reference's broadcast stages less the run's
    own), ``replayed`` (the replay's switched joins) and ``runs``.  ``measured``: the
    :func:`measured_switches` already read, else they are read here."""
    import numpy as np

    rows = measured_switches(frame, records, model) if measured is None else measured
    out = []
    for (workload, datasize, threshold), entry in sorted(rows.items()):
        asked = frame.iloc[[entry["positions"][0]]].drop(
            columns=["dag", "profile", "profile_reference"], errors="ignore").reset_index(drop=True)
        replay_rows, _ = model._rows(asked)
        replayed = sum(stage["switched"] for stage in model._target_stages(replay_rows[0]))
        out.append({"workload": workload, "datasize": datasize, "threshold": threshold,
                    "runs": len(entry["measured"]),
                    "measured": float(np.median(entry["measured"])),
                    "replayed": float(replayed)})
    return out


def summary(rows) -> dict:
    """Per threshold and scale factor: questions, agreements, and how often the rule
    switches fewer joins than Spark did (too late) or more (too early)."""
    out = {}
    for row in rows:
        entry = out.setdefault(row["threshold"], {}).setdefault(
            row["datasize"], {"questions": 0, "agree": 0, "fewer": 0, "more": 0})
        entry["questions"] += 1
        difference = row["replayed"] - row["measured"]
        entry["agree" if abs(difference) < 0.5 else "fewer" if difference < 0 else "more"] += 1
    return out


def share_sweep(frame, records, model, shares) -> list[dict]:
    """With Spark's default threshold, for each share of a build side's files' bytes
    (the model's ``broadcast_file_share``, set on a copy of the fitted ``model``: the
    rule reads it when it replays, nothing fitted depends on it but the learned prices):
    questions, agreements, and how often the replay switches fewer or more joins."""
    import copy

    out = []
    measured = measured_switches(frame, records, model)    # the plans do not change
    for share in shares:
        swept = copy.copy(model).set_params(broadcast_file_share=float(share))
        rows = [r for r in switch_rows(frame, records, swept, measured)
                if r["threshold"] == "default"]
        found = summary(rows).get("default", {})
        out.append({"share": float(share),
                    **{k: sum(entry[k] for entry in found.values())
                       for k in ("questions", "agree", "fewer", "more")}})
    return out


def _fitted(frame, **params):
    """The stage model fitted on ``frame`` as far as the rule needs: it reads the
    reference profiles and the measured volume exponents alone, both set before the
    fit's least squares, so one evaluation of it is enough."""
    from jobgauge.models import make_model

    return make_model("stage", max_iterations=1, residual_corrector=None, **params).fit(frame)


def _size_order(label: str) -> float:
    return float(label[2:]) if label.startswith("sf") else math.inf


def _report(rows, found, seconds, sweep=()) -> str:
    lines = ["# Broadcast joins that ran as shuffle joins: measured plans against the replay",
             "",
             f"Reproduce with `nice -n 10 .venv/bin/python bench/join_switches.py` "
             f"({seconds:.0f} s).  Quiet TPC-H runs of the shipped tables on local[2], each with "
             "its own event-log profile; per query, scale factor and broadcast threshold, the "
             "broadcast joins of the reference profile that the run's plan ran as shuffle "
             "joins (median over its runs), against the ones the stage model's replay switches "
             "(its rule: the bytes of a side's files times Spark's share of them, the row "
             "share of the columns the broadcast keeps, grown with the input, past the "
             "threshold).", "",
             "| threshold | scale factor | questions | agree | replay switches fewer | "
             "replay switches more |", "|---|---|---|---|---|---|"]
    for threshold in sorted(found):
        for size in sorted(found[threshold], key=_size_order):
            entry = found[threshold][size]
            lines.append(f"| {threshold} | {size} | {entry['questions']} | {entry['agree']} | "
                         f"{entry['fewer']} | {entry['more']} |")
    lines += ["", "Per question with Spark's default threshold (measured / replayed):", "",
              "| query | " + " | ".join(sorted({r['datasize'] for r in rows}, key=_size_order))
              + " |"]
    sizes = sorted({r["datasize"] for r in rows}, key=_size_order)
    lines.append("|---|" + "---|" * len(sizes))
    default = [r for r in rows if r["threshold"] == "default"]
    for workload in sorted({r["workload"] for r in default},
                           key=lambda w: int(w.rsplit("q", 1)[-1]) if w[-1].isdigit() else 0):
        cells = {r["datasize"]: f"{r['measured']:g} / {r['replayed']:g}"
                 for r in default if r["workload"] == workload}
        lines.append(f"| {workload} | " + " | ".join(cells.get(s, "") for s in sizes) + " |")
    if sweep:
        from jobgauge.models._stage import BROADCAST_FILE_SHARE

        lines += ["", "With Spark's default threshold, every scale factor, by the share of the "
                  "files' bytes where a plan does not name the columns a broadcast keeps (the "
                  "model's ``broadcast_file_share``; its default: "
                  f"{BROADCAST_FILE_SHARE:g}; before the plan's own share was read, 0.25 "
                  "agreed with 92 of the 103):", "",
                  "| share | questions | agree | replay switches fewer | replay switches more |",
                  "|---|---|---|---|---|"]
        for entry in sweep:
            lines.append(f"| {entry['share']:g} | {entry['questions']} | {entry['agree']} | "
                         f"{entry['fewer']} | {entry['more']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--shares", nargs="*", type=float,
                        default=[0.05, 0.1, 0.15, 0.25, 0.4, 0.6, 1.0],
                        help="shares of the files' bytes to compare "
                             "(default: 0.05 0.1 0.15 0.25 0.4 0.6 1)")
    parser.add_argument("--out", default=str(REPO / "bench" / "reports"))
    args = parser.parse_args(argv)
    from jobgauge.models.evaluation import quiet_frame_and_records

    started = time.perf_counter()
    frame, records = quiet_frame_and_records()   # the frame's profiles: the references
    model = _fitted(frame)
    rows = switch_rows(frame, records, model)
    if not rows:
        print("no quiet TPC-H run on local[2] with its own profile", file=sys.stderr)
        return 1
    found = summary(rows)
    sweep = share_sweep(frame, records, model, args.shares)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "join_switches.md").write_text(_report(rows, found, time.perf_counter() - started,
                                                  sweep))
    if args.json:
        print(json.dumps({"summary": found, "rows": rows, "shares": sweep}, indent=2))
    else:
        print((out / "join_switches.md").read_text())
    print(f"report: {out / 'join_switches.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
