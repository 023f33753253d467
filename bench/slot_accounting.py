"""Why a second slot on this machine is worth less than the stage model assumes: the CPU
accounting of the quiet TPC-H runs on local[1] next to the same questions on local[2].

    nice -n 10 .venv/bin/python bench/slot_accounting.py [--json] [--no-fit]

Pairs every (query, scale factor, settings less the master URL) that finished on both
local[1] and local[2] in the shipped quiet tables (``data/runs``), medians over repeats,
runtimes inside a warm application.  Per scale factor, the median over pairs of:

- *runtime local[1] / local[2]*: what the second slot buys (2 would be perfect);
- *task time local[2] / local[1]*: the summed task run time (event log) with two slots over
  one, the slowdown of one slot when two share the machine; ``log2`` of it is the
  contention exponent of ``models/_stage.py`` (a slot among ``c`` runs at ``c ** -contention``);
- *background cores*: the process CPU time (``cpu_time_s``, the whole JVM) less the
  tasks' CPU time, per second of runtime: what the JVM spends outside tasks (garbage
  collection, JIT compilation, the driver's planning and scheduling);
- *task CPU / run*: the tasks' CPU time over their run time.

Then (unless ``--no-fit``) the contention the stage model learns from the local[2] runs
alone (protocol (f)'s fold "train local[2], predict local[1]") and from the whole quiet
corpus, beside the one their CPU accounting implies (``accounted_contention``, the fit's
prior), with the median ratio of its local[1] answers to the measured runtimes.  Last,
what each setting changed alone adds to the defaults' runtime on local[1] and on local[2]
(:func:`setting_costs`): AQE off adds as much on one slot as on two; and how the
background, and the contention it implies, falls as the data grows over every local run
(:func:`background_by_size`).  Writes
bench/reports/slot_accounting.md; ``--json`` prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAIR = ("local[1]", "local[2]")


def paired_runs(frame, records):
    """One row per (workload, datasize, settings) finished on both local[1] and local[2]:
    per master the median runtime, process CPU, task run and task CPU seconds (the task
    run time from the run's own profile summary in ``records``, keyed by (source,
    run_id); the task CPU time from the frame's ``task_cpu_s``, read from the same)."""
    import pandas as pd

    from jobgauge.models.features import row_configs, settings_key

    rows = []
    for (_, run), config in zip(frame.iterrows(), row_configs(frame)):
        summary = (records.get((run["source"], run["run_id"])) or {}).get("summary")
        if not isinstance(summary, dict) or run["instance_type"] not in PAIR \
                or not run["completed"] or not math.isfinite(float(run.get("cpu_time_s", "nan"))) \
                or not math.isfinite(float(run.get("task_cpu_s", "nan"))):
            continue
        rows.append({"workload": run["workload"], "datasize": run["datasize"],
                     "settings": settings_key(config), "master": run["instance_type"],
                     "runtime_s": float(run["runtime_s"]), "process_cpu_s": float(run["cpu_time_s"]),
                     "task_run_s": summary["executor_run_time_ms"] / 1e3,
                     "task_cpu_s": float(run["task_cpu_s"])})
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame(rows).groupby(["workload", "datasize", "settings", "master"]).median()
    return table.unstack("master").dropna()


def figures(pairs) -> dict:
    """Per scale factor, the medians described in the module docstring."""
    out = {}
    for size in sorted(pairs.index.get_level_values("datasize").unique()):
        one = pairs.xs(size, level="datasize")

        def column(name, master):
            return one[(name, master)]

        per_slot = column("task_run_s", PAIR[1]) / column("task_run_s", PAIR[0])
        out[str(size)] = {
            "pairs": int(len(one)),
            "runtime_ratio": float((column("runtime_s", PAIR[0])
                                    / column("runtime_s", PAIR[1])).median()),
            "slot_slowdown": float(per_slot.median()),
            "contention": float(per_slot.map(math.log2).median()),
            **{f"background_cores_{m}": float(((column("process_cpu_s", m) - column("task_cpu_s", m))
                                               / column("runtime_s", m)).median()) for m in PAIR},
            **{f"task_cpu_share_{m}": float((column("task_cpu_s", m)
                                             / column("task_run_s", m)).median()) for m in PAIR},
        }
    return out


def setting_costs(frame) -> dict:
    """{setting: {datasize: {master: (seconds, pairs)}}}: per setting changed alone from
    Spark's defaults, the median over queries of the seconds it adds to the defaults'
    runtime (medians over repeats) on local[1] and on local[2], where both were measured.
    AQE off runs every shuffle in ``spark.sql.shuffle.partitions`` (200) tasks: where its
    cost is the same on one slot and two, the tasks' overhead is paid one task after
    another, not per wave."""
    import pandas as pd

    from jobgauge.models.features import row_configs

    rows = []
    for (_, run), config in zip(frame.iterrows(), row_configs(frame)):
        changed = {k: v for k, v in config.items() if k != "spark.master"}
        if run["instance_type"] not in PAIR or not run["completed"] or len(changed) > 1:
            continue
        rows.append({"workload": run["workload"], "datasize": run["datasize"],
                     "master": run["instance_type"], "runtime_s": float(run["runtime_s"]),
                     "setting": "=".join(next(iter(changed.items()))) if changed else ""})
    if not rows:
        return {}
    table = pd.DataFrame(rows).groupby(["setting", "datasize", "master", "workload"]) \
        .runtime_s.median()
    out = {}
    for setting in sorted(set(table.index.get_level_values("setting")) - {""}):
        for (size, master), runs in table.xs(setting, level="setting").groupby(
                level=["datasize", "master"]):
            runs = runs.droplevel(["datasize", "master"])
            try:
                base = table.loc[("", size, master)]
            except KeyError:
                continue
            added = (runs - base).dropna()
            if len(added):
                out.setdefault(setting, {}).setdefault(str(size), {})[master] = (
                    float(added.median()), int(len(added)))
    return {setting: sizes for setting, sizes in out.items()
            if any(len(masters) == len(PAIR) for masters in sizes.values())}


def fitted_contention(frame) -> dict:
    """The stage model's contention trained on local[2] alone (the (f) fold) and on the
    whole quiet frame, and the median of its local[1] answers over the measured runtimes
    at each scale factor (the fold's answers are held out; the whole corpus's are not)."""
    import numpy as np

    from jobgauge.models.evaluation import EVAL_PARAMS, model_from_spec, protocol_folds

    local = frame["instance_type"].astype(str).to_numpy() == PAIR[1]
    folds = [fold for fold in protocol_folds(frame, "slots") if local[fold[0]].mean() > 0.5]
    one = frame["instance_type"].astype(str).to_numpy() == PAIR[0]
    result = {}
    for name, train in (("local[2] alone", folds[0][0] if folds else None),
                        ("whole quiet corpus", np.arange(len(frame)))):
        if train is None:
            continue
        model = model_from_spec("stage", random_state=0, **EVAL_PARAMS.get("stage", {}))
        model.fit(frame.iloc[train])
        asked = frame[one & frame["completed"].to_numpy(dtype=bool)]
        ratio = model.predict(asked) / asked["runtime_s"].to_numpy(dtype=float)
        sizes = asked["datasize"].astype(str).to_numpy()
        prior = getattr(model, "contention_prior_", None)
        result[name] = {"contention": float(model.params_.get("contention", 0.0)),
                        "accounted": None if prior is None else float(prior),
                        "local[1] answer / measured": {
                            str(s): float(np.median(ratio[sizes == s])) for s in np.unique(sizes)}}
    return result


def background_by_size(frame) -> dict:
    """How the JVM's background falls as the data grows, over every finished local Spark
    run with its CPU accounting (paired or not): per master and scale factor the runs,
    the median runtime, the median background cores (process CPU less task CPU, per
    second of runtime) and the contention they imply, ``log2(1 + background / 2)`` on
    the 2 host cores, as ``accounted_contention`` takes it per run; then, over the
    local[2] runs, the least-squares slope of that contention on the natural log of the
    input bytes, and the background CPU seconds as a fixed part plus a share of the
    tasks' CPU seconds (the share is the part that grows with the data)."""
    import numpy as np

    local = frame["instance_type"].astype(str).isin(PAIR) & frame["completed"].astype(bool)
    runs = frame[local]
    cpu, tasks, runtime, size = (runs[c].astype(float).to_numpy() for c in
                                 ("cpu_time_s", "task_cpu_s", "runtime_s", "input_bytes"))
    usable = np.isfinite(cpu) & np.isfinite(tasks) & (runtime > 0) & (size > 0)
    runs, cpu, tasks, runtime, size = (runs[usable], cpu[usable], tasks[usable],
                                       runtime[usable], size[usable])
    background = np.maximum(cpu - tasks, 0.0) / runtime
    implied = np.log2(1.0 + background / 2.0)
    masters = runs["instance_type"].astype(str).to_numpy()
    labels = runs["datasize"].astype(str).to_numpy()
    table = {}
    for master in PAIR:
        for label in sorted(set(labels[masters == master]),
                            key=lambda value: float(value.removeprefix("sf") or "nan")):
            rows = (masters == master) & (labels == label)
            table.setdefault(master, {})[label] = {
                "runs": int(rows.sum()), "runtime_s": float(np.median(runtime[rows])),
                "background_cores": float(np.median(background[rows])),
                "implied_contention": float(np.median(implied[rows]))}
    two = masters == PAIR[1]
    slope = float(np.polyfit(np.log(size[two]), implied[two], 1)[0]) if two.sum() > 2 else None
    fixed_s, share = (float(v) for v in np.polyfit(tasks[two], (cpu - tasks)[two], 1)[::-1]) \
        if two.sum() > 2 else (None, None)
    from jobgauge.models._stage import falling_contention_slope

    model_slope = falling_contention_slope(frame[frame["completed"].astype(bool)],
                                           frame.loc[frame["completed"].astype(bool),
                                                     "runtime_s"].astype(float))
    return {"by_size": table, "contention_slope_per_log_bytes": slope,
            "model_slope_per_log_bytes": model_slope,
            "background_fixed_s": fixed_s, "background_share_of_task_cpu": share}


def _report(found, fitted, seconds, costs=None, falling=None) -> str:
    sizes = list(found)
    lines = ["# What a second slot buys on this machine: CPU accounting of local[1] and local[2]",
             "",
             f"Reproduce with `nice -n 10 .venv/bin/python bench/slot_accounting.py` "
             f"({seconds:.0f} s).  Quiet TPC-H runs of the shipped tables (`data/runs`), paired "
             "by query, scale factor and settings; runtimes inside a warm application; "
             "medians over the pairs.  The machine has 2 cores.", "",
             "| figure | " + " | ".join(sizes) + " |", "|---|" + "---|" * len(sizes)]
    labels = [("pairs", "pairs (query x settings)", "{:.0f}"),
              ("runtime_ratio", "runtime local[1] / local[2]", "{:.2f}"),
              ("slot_slowdown", "task time local[2] / local[1] (one slot's slowdown)", "{:.2f}"),
              ("contention", "contention exponent, log2 of it", "{:.2f}"),
              ("background_cores_local[2]", "background cores, local[2]", "{:.2f}"),
              ("background_cores_local[1]", "background cores, local[1]", "{:.2f}"),
              ("task_cpu_share_local[2]", "task CPU / task run time, local[2]", "{:.2f}"),
              ("task_cpu_share_local[1]", "task CPU / task run time, local[1]", "{:.2f}")]
    for key, label, form in labels:
        lines.append(f"| {label} | " + " | ".join(form.format(found[s][key]) for s in sizes) + " |")
    if fitted:
        lines += ["", "The stage model's contention: the one its training runs' CPU accounting "
                  "implies (`accounted_contention`, the median of log2(1 + background cores / "
                  "2)), which the fit is pulled to, and the one it learned; then its local[1] "
                  "answers over the measured runtimes (median):", "",
                  "| trained on | accounted | learned | " + " | ".join(sizes) + " |",
                  "|---|---|---|" + "---|" * len(sizes)]
        for name, entry in fitted.items():
            ratios = entry["local[1] answer / measured"]
            accounted = "—" if entry.get("accounted") is None else f"{entry['accounted']:.2f}"
            lines.append(f"| {name} | {accounted} | {entry['contention']:.2f} | "
                         + " | ".join(f"{ratios[s]:.2f}" if s in ratios else "" for s in sizes)
                         + " |")
    if falling:
        lines += ["", "The background falls as the data grows, and with it the contention it "
                  "implies (every finished local run with its CPU accounting, paired or not; "
                  "medians):", "",
                  "| master | scale factor | runs | runtime | background cores | implied "
                  "contention |", "|---|---|---|---|---|---|"]
        for master, sizes in falling["by_size"].items():
            for size, entry in sizes.items():
                lines.append(f"| {master} | {size} | {entry['runs']} | "
                             f"{entry['runtime_s']:.2f} s | {entry['background_cores']:.2f} | "
                             f"{entry['implied_contention']:.2f} |")
        if falling["contention_slope_per_log_bytes"] is not None:
            lines += ["", f"On local[2] the implied contention falls by "
                      f"{-falling['contention_slope_per_log_bytes']:.3f} per e-fold of input "
                      f"bytes (least squares over the runs); the background CPU is "
                      f"{falling['background_fixed_s']:.2f} s plus "
                      f"{falling['background_share_of_task_cpu']:.3f} x the tasks' CPU "
                      f"seconds."]
        if falling.get("model_slope_per_log_bytes") is not None:
            lines += ["", f"The stage model's own accounting (`falling_contention_slope`, "
                      f"which holds a slot alone to one core's speed, so a background above "
                      f"one core implies less) gives "
                      f"{falling['model_slope_per_log_bytes']:.3f} per e-fold: the slope "
                      f"`StagePredictor(falling_contention=True)` trains with."]
    if costs:
        lines += ["", "What a setting changed alone adds to the defaults' runtime, on one slot "
                  "and on two (median over the queries measured with both; seconds, queries):",
                  "", "| setting | scale factor | " + " | ".join(PAIR) + " |",
                  "|---|---|" + "---|" * len(PAIR)]
        for setting, sizes in costs.items():
            for size, masters in sizes.items():
                if len(masters) == len(PAIR):
                    lines.append(f"| `{setting}` | {size} | " + " | ".join(
                        f"{masters[m][0]:+.2f} s ({masters[m][1]})" for m in PAIR) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--no-fit", action="store_true",
                        help="skip the stage model's fits (the accounting alone, seconds)")
    parser.add_argument("--out", default=str(REPO / "bench" / "reports"))
    args = parser.parse_args(argv)
    from jobgauge.models.evaluation import quiet_frame_and_records

    started = time.perf_counter()
    frame, records = quiet_frame_and_records()   # the frame's profiles: the references
    found = figures(paired_runs(frame, records))
    if not found:
        print("no TPC-H question finished on both local[1] and local[2] with its profile "
              "and process CPU time", file=sys.stderr)
        return 1
    fitted = {} if args.no_fit else fitted_contention(frame)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    costs = setting_costs(frame)
    falling = background_by_size(frame)
    (out / "slot_accounting.md").write_text(_report(found, fitted, time.perf_counter() - started,
                                                    costs, falling))
    if args.json:
        print(json.dumps({"per_scale_factor": found, "fitted": fitted,
                          "setting_costs": costs, "background_by_size": falling}, indent=2))
    else:
        print((out / "slot_accounting.md").read_text())
    print(f"report: {out / 'slot_accounting.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
