"""Benchmark: online remaining-time estimation of running Spark applications.

Two parts, both written to ``bench/reports/remaining.md`` (plus the plot
``remaining.png``, and ``remaining.json`` with the error summaries and the
live runs' per-point results):

1. **Enel replay** (``/work/shared/datasets/enel``: 4 iterative Spark ML apps,
   120 distinct runs each, dynamic scale-out on Kubernetes).  Every run is
   replayed in time order; at 10, 25, 50 and 75 % of its true runtime the
   estimator sees only the jobs submitted/finished by then and predicts the
   seconds left.  Anything learned comes from *other* runs: leave-one-run-out
   (main table) and train-on-earlier-runs (only runs that ended before this
   one started; runs with fewer than 5 such runs are not scored).
2. **Live local runs**: real pyspark applications (``local[2]``: KMeans,
   a loop of aggregations, LogisticRegression), each run several times in
   one child process with event logging on; this process polls the driver's
   REST API every 0.5 s while they run, then scores the estimator at the same
   points against the measured end (from the event log).  Later runs of an
   application use the earlier runs (read back from their event logs) as
   history.

Errors: absolute percentage error (APE) of the predicted **remaining** time
(|pred - true| / true remaining) and of the implied **total** runtime
(|elapsed + pred - true total| / true total).

Run::

    nice -n 10 .venv/bin/python bench/remaining.py            # everything (~4-6 min)
    nice -n 10 .venv/bin/python bench/remaining.py --skip-live --alpha-sweep
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from jobgauge.profiler.runners.cluster import free_ports

REPO = Path(__file__).resolve().parent.parent
REPORTS = REPO / "bench" / "reports"
ENEL = Path(os.environ.get("JOBGAUGE_SHARED", REPO.parent / "shared")) / "datasets" / "enel"
POINTS = (0.10, 0.25, 0.50, 0.75)
MIN_EARLIER = 5
LIVE_APPS = ("kmeans", "aggregations", "logreg")


# ---------------------------------------------------------------- scoring helpers

def _row(app, run_id, point, method, predicted, elapsed, true_left, true_total, low=None, high=None):
    row = {"app": app, "run_id": run_id, "point": point, "method": method,
           "predicted_left_s": predicted, "elapsed_s": elapsed, "true_left_s": true_left,
           "true_total_s": true_total}
    if predicted is None:
        row.update(ape_left=None, ape_total=None, covered=None)
        return row
    row["ape_left"] = 100.0 * abs(predicted - true_left) / true_left
    row["ape_total"] = 100.0 * abs(elapsed + predicted - true_total) / true_total
    row["covered"] = None if low is None else bool(low <= true_left <= high)
    return row


def _linear(elapsed, fraction):
    """Naive: elapsed / progress * (1 - progress); None before any progress."""
    if fraction is None or fraction <= 0:
        return None
    return elapsed * (1.0 - min(fraction, 1.0)) / min(fraction, 1.0)


def score_replay(run, estimator, train_runs, method_suffix=""):
    """Score one enel run at every point: ours, linear extrapolation, mean of past runs."""
    rows = []
    same = [r for r in train_runs if r.signature == run.signature]
    mean_total = float(np.mean([r.runtime_s for r in same])) if same else None
    typical_jobs = float(np.median([len(r.jobs) for r in same])) if same else None
    for point in POINTS:
        moment = run.started_s + point * run.runtime_s
        snapshot = run.snapshot_at(moment)
        true_left = run.ended_s - moment
        elapsed = snapshot.elapsed_s
        estimate = estimator.estimate(snapshot)
        rows.append(_row(run.signature, run.run_id, point, "ours" + method_suffix,
                         estimate.remaining_seconds, elapsed, true_left, run.runtime_s,
                         estimate.low_seconds, estimate.high_seconds))
        fraction = snapshot.jobs_completed / typical_jobs if typical_jobs else None
        linear = _linear(elapsed, fraction)
        if linear is None and mean_total is not None:   # before the first job ends
            linear = max(mean_total - elapsed, 0.0)
        rows.append(_row(run.signature, run.run_id, point, "linear" + method_suffix,
                         linear, elapsed, true_left, run.runtime_s))
        rows.append(_row(run.signature, run.run_id, point, "mean_past" + method_suffix,
                         None if mean_total is None else max(mean_total - elapsed, 0.0),
                         elapsed, true_left, run.runtime_s))
        survivors = [r.runtime_s - elapsed for r in same if r.runtime_s > elapsed]
        rows.append(_row(run.signature, run.run_id, point, "past_median" + method_suffix,
                         float(np.median(survivors)) if len(survivors) >= 3 else None,
                         elapsed, true_left, run.runtime_s))
    return rows


def evaluate_enel(runs, *, split, alpha):
    """Rows of errors for every run; ``split`` is ``loro`` or ``earlier``."""
    from jobgauge.models.remaining import RemainingTimeEstimator

    by_signature = defaultdict(list)
    for run in runs:
        by_signature[run.signature].append(run)
    rows, skipped = [], 0
    for signature, group in by_signature.items():
        group = sorted(group, key=lambda r: r.started_s)
        for index, run in enumerate(group):
            if split == "loro":
                train = group[:index] + group[index + 1:]
            else:
                train = [r for r in group if r.ended_s <= run.started_s]
                if len(train) < MIN_EARLIER:
                    skipped += 1
                    continue
            estimator = RemainingTimeEstimator(alpha=alpha).fit(train)
            rows += score_replay(run, estimator, train)
    return rows, skipped


def summarize(rows, key):
    """{(app, method, point): (median, mean, n, no_estimate, coverage)} for errors ``key``."""
    groups = defaultdict(list)
    for row in rows:
        for app in (row["app"], "all"):
            groups[(app, row["method"], row["point"])].append(row)
    out = {}
    for group_key, group in groups.items():
        values = [r[key] for r in group if r[key] is not None]
        covered = [r["covered"] for r in group if r.get("covered") is not None]
        out[group_key] = (float(np.median(values)) if values else None,
                          float(np.mean(values)) if values else None,
                          len(group), len(group) - len(values),
                          100.0 * float(np.mean(covered)) if covered else None)
    return out


def _cell(stat):
    median, mean, n, missing, _ = stat
    if median is None:
        return "n/a"
    text = f"{median:.1f} / {mean:.1f}"
    return text + (f" ({missing} n/a)" if missing else "")


def table(rows, key, methods, apps):
    stats = summarize(rows, key)
    lines = ["| app | method | " + " | ".join(f"{int(p * 100)} %" for p in POINTS) + " |",
             "|---|---|" + "---|" * len(POINTS)]
    for app in apps:
        for method in methods:
            if not any((app, method, p) in stats for p in POINTS):
                continue
            cells = [_cell(stats[(app, method, p)]) if (app, method, p) in stats else "" for p in POINTS]
            lines.append(f"| {app} | {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def coverage_line(rows, method="ours"):
    stats = summarize(rows, "ape_left")
    parts = []
    for p in POINTS:
        cov = stats.get(("all", method, p), (None,) * 5)[4]
        parts.append(f"{int(p * 100)} %: {cov:.0f} %" if cov is not None else f"{int(p * 100)} %: n/a")
    return ", ".join(parts)


# ---------------------------------------------------------------- live local runs

def _workload(spark, name: str, scale: float) -> None:
    """One application's work; ``scale`` 1.0 is the measured size (~40-60 s
    warm on a loaded 2-core machine), the warm-up uses a small fraction."""
    from pyspark.sql import functions as F

    if name == "kmeans":
        from pyspark.ml.clustering import KMeans
        from pyspark.ml.feature import VectorAssembler

        cols = [f"x{i}" for i in range(8)]
        frame = spark.range(0, int(80000 * scale), numPartitions=4).selectExpr(
            *[f"rand({i}) * 10 + (id % 7) as x{i}" for i in range(8)])
        data = VectorAssembler(inputCols=cols, outputCol="features").transform(frame).select("features").cache()
        KMeans(k=8, maxIter=max(2, int(40 * scale)), tol=0.0, seed=1, initMode="random").fit(data)
    elif name == "aggregations":
        frame = spark.range(0, int(1000000 * scale), numPartitions=4).selectExpr(
            "id", "id % 997 as key", "rand(3) as v").cache()
        for i in range(max(2, int(24 * scale))):
            frame.groupBy((F.col("key") % (7 * (i + 1))).alias("g")).agg(
                F.avg("v"), F.count("*"), F.stddev("v")).collect()
    elif name == "logreg":
        from pyspark.ml.classification import LogisticRegression
        from pyspark.ml.feature import VectorAssembler

        cols = [f"x{i}" for i in range(10)]
        frame = spark.range(0, int(80000 * scale), numPartitions=4).selectExpr(
            *[f"rand({i}) as x{i}" for i in range(10)]).selectExpr(
            "*", "cast(x0 + x1 > 1.0 as double) as label")
        data = VectorAssembler(inputCols=cols, outputCol="features").transform(frame).select(
            "features", "label").cache()
        LogisticRegression(maxIter=max(2, int(40 * scale)), regParam=0.01).fit(data)
    else:
        raise SystemExit(f"unknown app {name}")


def _child(apps: list[str], port: int, eventlog_dir: str) -> int:
    """Run the applications one after another in this process (one JVM, so
    only the first pays for starting Java; it is a warm-up running a small
    version of every workload, so JIT compilation does not skew run 1)."""
    import warnings

    warnings.simplefilter("ignore")
    from pyspark.sql import SparkSession

    for position, app in enumerate(apps):
        name = app.split("#")[0]
        spark = (SparkSession.builder.master("local[2]").appName(f"jobgauge-bench-{name}")
                 .config("spark.ui.port", str(port)).config("spark.ui.showConsoleProgress", "false")
                 .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", eventlog_dir)
                 .config("spark.sql.shuffle.partitions", "4").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        started = time.time()
        if name == "warmup":
            for workload in LIVE_APPS:
                _workload(spark, workload, 0.1)
        else:
            _workload(spark, name, 1.0)
        print(json.dumps({"position": position, "app": name, "app_id": spark.sparkContext.applicationId,
                          "work_s": round(time.time() - started, 2)}), flush=True)
        spark.stop()
    return 0


def run_live(apps: list[str], runs_per_app: int, poll_s: float = 0.5, budget_s: float = 480.0):
    """Run the live apps in a child process; poll REST; return (rows, notes)."""
    from jobgauge.errors import GaugeError
    from jobgauge.models.remaining import AppTimeline, RemainingTimeEstimator
    from jobgauge.profiler.readers.live import read_rest_snapshot

    port = free_ports(1)[0]
    eventlog_dir = Path(tempfile.mkdtemp(prefix="jobgauge-bench-events-"))
    order = ["warmup"] + [f"{app}#{i}" for i in range(runs_per_app) for app in apps]
    child = subprocess.Popen(
        [sys.executable, __file__, "--child", ",".join(order), "--port", str(port),
         "--eventlog-dir", str(eventlog_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO)
    snapshots = defaultdict(list)   # app id -> snapshots
    polls = errors = 0
    started = time.time()
    try:
        while child.poll() is None:
            if time.time() - started > budget_s:
                raise RuntimeError(f"live runs took over {budget_s:.0f} s; stopped")
            polls += 1
            try:
                snap = read_rest_snapshot(f"http://127.0.0.1:{port}", timeout_s=2.0)
                snapshots[snap.app_id].append(snap)
            except GaugeError:
                errors += 1          # between applications, or the JVM still starting
            time.sleep(poll_s)
    finally:
        if child.poll() is None:
            child.kill()
    finished = [json.loads(line) for line in child.stdout.read().splitlines() if line.startswith("{")]
    if child.returncode != 0 or len(finished) != len(order):
        raise RuntimeError(f"live child failed (exit {child.returncode}, {len(finished)} of {len(order)} apps)")
    timelines = {}
    for entry in finished:
        timelines[entry["app_id"]] = AppTimeline.from_eventlog(eventlog_dir / f"eventlog_v2_{entry['app_id']}")
    rows, notes = [], []
    history = defaultdict(list)
    for entry in finished:
        if entry["app"] == "warmup":
            continue
        timeline = timelines[entry["app_id"]]
        snaps = sorted(snapshots[entry["app_id"]], key=lambda s: s.taken_s)
        past = history[entry["app"]]
        with_history = RemainingTimeEstimator().fit(past) if past else None
        plain = RemainingTimeEstimator().fit([])
        mean_total = float(np.mean([r.runtime_s for r in past])) if past else None
        typical_jobs = float(np.median([len(r.jobs) for r in past])) if past else None
        notes.append({"app": entry["app"], "app_id": entry["app_id"], "runtime_s": round(timeline.runtime_s, 2),
                      "jobs": len(timeline.jobs), "snapshots": len(snaps), "history_runs": len(past),
                      "first_answer_s": round(snaps[0].taken_s - timeline.started_s, 1) if snaps else None})
        for point in POINTS:
            target = timeline.started_s + point * timeline.runtime_s
            usable = [s for s in snaps if s.taken_s <= target and s.status == "running"]
            if not usable:
                methods = ("ours (no history)", "linear (tasks)")
                if with_history is not None:
                    methods += ("ours", "linear", "mean_past")
                for method in methods:
                    rows.append(_row(entry["app"], entry["app_id"], point, method, None, None, None, None))
                continue
            snap = usable[-1]
            true_left = timeline.ended_s - snap.taken_s
            elapsed = snap.elapsed_s
            est = plain.estimate(snap)
            rows.append(_row(entry["app"], entry["app_id"], point, "ours (no history)",
                             est.remaining_seconds, elapsed, true_left, timeline.runtime_s,
                             est.low_seconds, est.high_seconds))
            fraction = snap.tasks_completed / snap.tasks_total if snap.tasks_total else None
            rows.append(_row(entry["app"], entry["app_id"], point, "linear (tasks)",
                             _linear(elapsed, fraction), elapsed, true_left, timeline.runtime_s))
            if with_history is not None:
                est = with_history.estimate(snap)
                rows.append(_row(entry["app"], entry["app_id"], point, "ours",
                                 est.remaining_seconds, elapsed, true_left, timeline.runtime_s,
                                 est.low_seconds, est.high_seconds))
                linear = _linear(elapsed, snap.jobs_completed / typical_jobs)
                rows.append(_row(entry["app"], entry["app_id"], point, "linear",
                                 max(mean_total - elapsed, 0.0) if linear is None else linear,
                                 elapsed, true_left, timeline.runtime_s))
                rows.append(_row(entry["app"], entry["app_id"], point, "mean_past",
                                 max(mean_total - elapsed, 0.0), elapsed, true_left, timeline.runtime_s))
        past.append(timeline)
    shutil.rmtree(eventlog_dir, ignore_errors=True)
    return rows, notes, {"polls": polls, "unanswered_polls": errors, "wall_s": round(time.time() - started, 1)}


# ---------------------------------------------------------------- plot and report

def plot(enel_rows, live_rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    styles = {"ours": ("o-", "tab:green"), "linear": ("s--", "tab:blue"), "mean_past": ("^:", "tab:orange"), "past_median": ("v-.", "tab:red"),
              "ours (no history)": ("d-.", "tab:purple"), "linear (tasks)": ("x--", "tab:gray")}
    panels = [(axes[0], enel_rows, "ape_left", "Enel replay (leave-one-run-out): remaining time"),
              (axes[1], enel_rows, "ape_total", "Enel replay: total runtime"),
              (axes[2], live_rows, "ape_left", "Live local Spark runs: remaining time")]
    for axis, rows, key, title in panels:
        stats = summarize(rows, key)
        methods = sorted({m for (_, m, _) in stats})
        for method in methods:
            xs = [100 * p for p in POINTS if stats.get(("all", method, p), (None,))[0] is not None]
            ys = [stats[("all", method, p)][0] for p in POINTS if stats.get(("all", method, p), (None,))[0] is not None]
            if xs:
                style, color = styles.get(method, ("o-", None))
                axis.plot(xs, ys, style, color=color, label=method)
        axis.axhline(10, color="grey", lw=0.8)
        axis.set_yscale("log")
        axis.set_xlabel("progress (% of true runtime elapsed)")
        axis.set_ylabel("median APE (%)")
        axis.set_title(title, fontsize=10)
        axis.set_xticks([100 * p for p in POINTS])
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--alpha", type=float, default=0.3)
    parser.add_argument("--skip-live", action="store_true")
    parser.add_argument("--live-runs", type=int, default=2, help="runs per live application")
    parser.add_argument("--live-apps", default="kmeans,aggregations",
                        help=f"comma-separated, from {', '.join(LIVE_APPS)}")
    parser.add_argument("--alpha-sweep", action="store_true", help="also sweep alpha (leave-one-run-out)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--eventlog-dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.child.split(","), args.port, args.eventlog_dir)

    from jobgauge.models.remaining import read_enel_runs

    clock = time.time()
    runs = read_enel_runs(ENEL)
    apps = sorted({r.signature for r in runs})
    print(f"enel: {len(runs)} runs of {len(apps)} apps", file=sys.stderr)
    loro, _ = evaluate_enel(runs, split="loro", alpha=args.alpha)
    earlier, skipped = evaluate_enel(runs, split="earlier", alpha=args.alpha)
    print(f"enel scored in {time.time() - clock:.0f} s", file=sys.stderr)
    sweep = {}
    if args.alpha_sweep:
        for alpha in (0.1, 0.2, 0.3, 0.5, 1.0):
            rows, _ = evaluate_enel(runs, split="loro", alpha=alpha)
            stats = summarize([r for r in rows if r["method"] == "ours"], "ape_left")
            sweep[alpha] = [stats[("all", "ours", p)][0] for p in POINTS]
    live_rows, live_notes, live_meta = [], [], {}
    if not args.skip_live:
        live_clock = time.time()
        live_apps = args.live_apps.split(",")
        unknown = set(live_apps) - set(LIVE_APPS)
        if unknown:
            parser.error(f"unknown live apps: {', '.join(sorted(unknown))}")
        live_rows, live_notes, live_meta = run_live(live_apps, args.live_runs)
        print(f"live runs in {time.time() - live_clock:.0f} s", file=sys.stderr)

    REPORTS.mkdir(parents=True, exist_ok=True)
    plot(loro, live_rows, REPORTS / "remaining.png")
    def compact(rows):   # {app: {method: {point: {median, mean, n, no_estimate, coverage}}}} per error
        out = {}
        for key in ("ape_left", "ape_total"):
            for (app, method, point), (median, mean, n, missing, cover) in summarize(rows, key).items():
                out.setdefault(key, {}).setdefault(app, {}).setdefault(method, {})[str(point)] = {
                    "median": median, "mean": mean, "n": n, "no_estimate": missing, "coverage": cover}
        return out

    # per-run enel rows are regenerated by this script; the live rows cannot be, so they are kept
    (REPORTS / "remaining.json").write_text(json.dumps(
        {"alpha": args.alpha, "enel_loro": compact(loro), "enel_earlier": compact(earlier),
         "live_summary": compact(live_rows), "live_rows": live_rows, "live_runs": live_notes,
         "live_meta": live_meta, "alpha_sweep": sweep}, indent=1))
    enel_apps = apps + ["all"]
    methods = ["ours", "linear", "mean_past", "past_median"]
    counts = defaultdict(int)
    for run in runs:
        counts[run.signature] += 1
    lines = [
        "# Remaining-time estimation of running Spark applications",
        "",
        f"Command: `nice -n 10 .venv/bin/python bench/remaining.py"
        f"{' --alpha-sweep' if args.alpha_sweep else ''}{' --skip-live' if args.skip_live else ''}` "
        f"(alpha={args.alpha}); wall time {time.time() - clock:.0f} s on a shared 2-core machine.",
        "",
        "Cells: **median / mean absolute percentage error** over runs, in %.  "
        "`ours` = `RemainingTimeEstimator` with history of the same application; "
        "`linear` = elapsed / progress x (1 - progress), progress = finished jobs / typical job count "
        "of past runs (before the first job ends it falls back to `mean_past`); "
        "`mean_past` = mean runtime of past runs minus elapsed (0 when already exceeded).  "
        "`past_median` = median time left of the past runs still running at this elapsed time "
        "(n/a when fewer than 3 were).",
        "",
        "## Enel replay (real runs, /work/shared/datasets/enel)",
        "",
        "Runs per app: " + ", ".join(f"{a} {counts[a]}" for a in apps)
        + " (ellis-*.csv and enel_runs.json; the 10 runs per app present in both are counted once).  "
        "The only units of work these data have are Spark jobs (start/end per job).",
        "",
        "### Error of the predicted remaining time, leave-one-run-out",
        "",
        table(loro, "ape_left", methods, enel_apps),
        "",
        "### Error of the predicted total runtime (elapsed + remaining), leave-one-run-out",
        "",
        table(loro, "ape_total", methods, enel_apps),
        "",
        f"Coverage of the 80 % interval of `ours` (share of runs whose true remaining time fell "
        f"inside low..high): {coverage_line(loro)}.",
        "",
        f"### Train on earlier runs only (runs ending before this one started; {skipped} runs with "
        f"fewer than {MIN_EARLIER} earlier runs not scored)",
        "",
        "Remaining time:",
        "",
        table(earlier, "ape_left", methods, enel_apps),
        "",
        "Total runtime:",
        "",
        table(earlier, "ape_total", methods, ["all"]),
        "",
    ]
    if sweep:
        lines += ["### Sensitivity to alpha (leave-one-run-out, all apps, median APE of remaining time)", "",
                  "| alpha | " + " | ".join(f"{int(p * 100)} %" for p in POINTS) + " |",
                  "|---|" + "---|" * len(POINTS)]
        lines += [f"| {a} | " + " | ".join(f"{v:.1f}" for v in vals) + " |" for a, vals in sweep.items()]
        lines.append("")
    if live_rows:
        live_apps = args.live_apps.split(",") + ["all"]
        live_methods = ["ours", "linear", "mean_past", "ours (no history)", "linear (tasks)"]
        lines += [
            "## Live local Spark runs (pyspark local[2], REST API polled every 0.5 s)",
            "",
            f"One child process (one JVM) ran a warm-up application (a tenth of every workload, not "
            f"scored, not used as history) and then {args.live_runs} runs of each of "
            f"{', '.join(args.live_apps.split(','))} in turn (kmeans: pyspark.ml KMeans on 80k generated "
            "8-dim points, k=8, 40 iterations; aggregations: 24 group-by aggregations over 1M cached rows; "
            "logreg: pyspark.ml LogisticRegression on 80k x 10, 40 iterations).  The end of each run is its "
            "ApplicationEnd event.  `ours`/`linear`/`mean_past` need history, so they are scored only on "
            "the later runs (history = the earlier runs of the same application, read back from their "
            "event logs); `ours (no history)` counts the tasks of the stages announced so far; "
            "`linear (tasks)` = elapsed x (1 - f) / f with f = finished / announced tasks.",
            "",
            "| app | app id | runtime s | jobs | REST snapshots | first REST answer (s after start) "
            "| history runs |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [f"| {n['app']} | {n['app_id']} | {n['runtime_s']} | {n['jobs']} | {n['snapshots']} | "
                  f"{n['first_answer_s']} | {n['history_runs']} |" for n in live_notes]
        lines += ["", f"Polls: {live_meta['polls']} ({live_meta['unanswered_polls']} unanswered: JVM starting "
                  f"or between applications); live part {live_meta['wall_s']} s.", "",
                  "Remaining time:", "", table(live_rows, "ape_left", live_methods, live_apps), "",
                  "Total runtime:", "", table(live_rows, "ape_total", live_methods, ["all"]), ""]
    lines += ["![error vs progress](remaining.png)", ""]
    report = REPORTS / "remaining.md"
    existing_notes = ""
    if report.exists():
        text = report.read_text()
        marker = "## Discussion"
        if marker in text:
            existing_notes = text[text.index(marker):]
    report.write_text("\n".join(lines) + ("\n" + existing_notes if existing_notes else ""))
    print(f"wrote {report} in {time.time() - clock:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
