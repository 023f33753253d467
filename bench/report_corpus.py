"""Report on the shipped corpus of measured runs: spread across configurations and noise.

    python bench/report_corpus.py [--runs 'data/runs/*.csv.gz'] [--out bench/reports]

For each workload and size: runs, failures, the fastest and slowest measured
runtime (median of repeats per configuration), max/min, Spark's defaults
(``jobgauge.knobs.default_config``) over the best configuration, and the repeat noise
of repeated configurations (``jobgauge.runtable.repeat_noise``, the one definition the
evaluation and ``jobgauge collect`` use too).  Writes
``corpus.md`` and ``corpus.png``.

With quiet tables (``--quiet``, default: the tables of ``data/runs`` measured under the
collector's load guard, the re-collection of issue 13) it adds, per plan, the runs, failures, quiet
starts and the load at start; the repeat noise per scale;
and the shipped-versus-quiet comparison: every (workload, size, configuration) measured
in both, shipped median over quiet median.
"""

from __future__ import annotations

import argparse
import glob
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _report import shown  # noqa: E402

from jobgauge.knobs import is_default_config  # noqa: E402
from jobgauge.runtable import read_run_tables, repeat_noise  # noqa: E402


def summarize(frame):
    groups = defaultdict(lambda: defaultdict(list))
    failures = defaultdict(int)
    for row in frame.itertuples():
        key = (row.workload, row.datasize, row.framework)
        if not row.completed:
            failures[key] += 1
            continue
        base = row.run_id.rsplit(":r", 1)[0]
        groups[key][base].append((row.runtime_s, row.config))
    table = []
    for key in sorted(groups, key=lambda k: (k[2], k[1], _order(k[0]))):
        configs = groups[key]
        medians = {b: statistics.median(v for v, _ in runs) for b, runs in configs.items()}
        defaults = [medians[b] for b, runs in configs.items() if is_default_config(runs[0][1])]
        repeated = [[v for v, _ in runs] for runs in configs.values() if len(runs) >= 2]
        noise = repeat_noise(repeated)
        best, worst = min(medians.values()), max(medians.values())
        table.append({
            "workload": key[0], "datasize": key[1], "framework": key[2],
            "runs": sum(len(r) for r in configs.values()) + failures[key],
            "configs": len(configs), "failed": failures[key],
            "best_s": best, "worst_s": worst, "spread": worst / best,
            "default_s": defaults[0] if defaults else None,
            "default_over_best": defaults[0] / best if defaults else None,
            "noise": noise["mdape"] if noise else None, "repeated": len(repeated),
        })
    return table


def warmup_drift(runs_files, profile_dir: Path) -> list[dict]:
    """Per plan: does a run's position in its application predict its runtime?

    The position comes from the profiles (``app_id``, and the first stage id a
    run used: stage ids grow within an application).  Reported per plan: the
    median over workloads of Spearman's rank correlation between position and
    runtime, and for configurations measured several times in one application,
    the earliest run's runtime over the median of its repeats.
    """
    import gzip
    import json

    import pandas as pd

    rows = []
    for runs_file in runs_files:
        name = Path(runs_file).name.split(".csv")[0]
        profile_file = profile_dir / f"{name}.jsonl.gz"
        if not profile_file.is_file():
            continue
        records = []
        with gzip.open(profile_file, "rt", encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                summary = record.get("summary") or {}
                stage_ids = [st["stage_id"] for st in record.get("stages") or []
                             if st.get("stage_id") is not None]
                if summary.get("engine") != "spark" or not stage_ids:
                    continue
                records.append({"run_id": record["run_id"], "app": summary.get("app_id"),
                                "first_stage": min(stage_ids)})
        if not records:
            continue
        frame = read_run_tables([runs_file])
        frame = frame[frame["completed"]].merge(pd.DataFrame(records), on="run_id")
        frame["position"] = frame.groupby("app")["first_stage"].rank(pct=True)
        correlations = [part["position"].corr(part["runtime_s"], method="spearman")
                        for _, part in frame.groupby("workload") if len(part) >= 5]
        frame["config_key"] = frame["run_id"].str.rsplit(":r", n=1).str[0]
        earliest = []
        for _, part in frame.groupby(["config_key", "app"]):
            if len(part) >= 2:
                part = part.sort_values("first_stage")
                earliest.append(part["runtime_s"].iloc[0] / part["runtime_s"].median())
        rows.append({"plan": name, "runs": len(frame), "workloads": len(correlations),
                     "spearman": statistics.median(correlations) if correlations else None,
                     "negative": sum(c < 0 for c in correlations),
                     "earliest_over_median": statistics.median(earliest) if earliest else None,
                     "repeat_sets": len(earliest)})
    return rows


def quiet_summary(frame) -> dict:
    """Per plan and per scale: runs, failures, quiet starts, load at start and repeat noise
    (``jobgauge.runtable.repeat_noise``: a finished run against the median of its
    configuration's other runs)."""
    import numpy as np

    frame = frame.copy()
    frame["plan"] = frame["run_id"].str.split(":").str[0]
    frame["config_key"] = frame["run_id"].str.rsplit(":r", n=1).str[0]

    def rows(key):
        out = []
        for value, part in frame.groupby(key, sort=False):
            done = part[part["completed"]]
            noise = repeat_noise(g["runtime_s"] for _, g in done.groupby("config_key"))
            quiet = part["quiet_start"].dropna() if "quiet_start" in part else []
            load = part["load_at_start"].dropna() if "load_at_start" in part else []
            out.append({key: value, "runs": len(part), "failed": int((~part["completed"]).sum()),
                        "quiet_share": float(np.mean(quiet.astype(bool))) if len(quiet) else None,
                        "load_median": float(np.median(load)) if len(load) else None,
                        "noise": noise["mdape"] if noise else None,
                        "noise_p90": noise["p90"] if noise else None,
                        "sum_default_s": _default_sum(part)})
        return out

    return {"plans": rows("plan"), "scales": rows("datasize")}


def _default_sum(part):
    """Sum over the TPC-H queries of their median runtime with Spark's defaults on local[2]
    (None unless all 22 have one)."""
    defaults = part[part["completed"] & (part["config_json"] == '{"spark.master": "local[2]"}')
                    & part["workload"].str.startswith("tpch-")]
    medians = defaults.groupby("workload")["runtime_s"].median()
    return float(medians.sum()) if len(medians) == 22 else None


def shipped_versus_quiet(shipped, quiet):
    """Every (workload, size, configuration) measured in both: medians and their ratio."""
    keys = ["workload", "datasize", "framework", "config_json"]
    a = shipped[shipped["completed"]].groupby(keys)["runtime_s"].agg(["median", "count"])
    b = quiet[quiet["completed"]].groupby(keys)["runtime_s"].agg(["median", "count"])
    both = a.merge(b, left_index=True, right_index=True, suffixes=("_shipped", "_quiet"))
    both = both.reset_index()
    both["ratio"] = both["median_shipped"] / both["median_quiet"]
    return both


def quiet_lines(summary, both, sources) -> list[str]:
    def fmt(value, pattern="{:.2f}"):
        return "" if value is None else pattern.format(value)

    lines = ["", "## Quiet re-collection (issue 13)", "",
             "Sources: " + ", ".join(f"`{s}`" for s in sources), "",
             "Measured with nothing else running: each run waits until the 1-minute load of "
             "other processes is low, every application is warmed up with 3 runs, every "
             "configuration is measured twice. *noise* is the repeat noise: the median over "
             "runs of a run's deviation from the median of its configuration's other runs, "
             "relative to the run (p90 beside it); *sum of defaults* adds the "
             "22 queries' medians with Spark's defaults on local[2].", "",
             "| plan | runs | failed | quiet starts | median load at start | noise (p90) "
             "| sum of defaults s |", "|---|---|---|---|---|---|---|"]
    for r in summary["plans"]:
        lines.append(f"| {r['plan']} | {r['runs']} | {r['failed']} | "
                     f"{fmt(r['quiet_share'], '{:.0%}')} | {fmt(r['load_median'])} | "
                     f"{fmt(r['noise'], '{:.1%}')} ({fmt(r['noise_p90'], '{:.1%}')}) | "
                     f"{fmt(r['sum_default_s'], '{:.1f}')} |")
    lines += ["", "Repeat noise per scale (the target at SF >= 1 is <= 5 %):", "",
              "| scale | runs | failed | noise | p90 |", "|---|---|---|---|---|"]
    for r in summary["scales"]:
        lines.append(f"| {r['datasize']} | {r['runs']} | {r['failed']} | "
                     f"{fmt(r['noise'], '{:.1%}')} | {fmt(r['noise_p90'], '{:.1%}')} |")
    if len(both):
        lines += ["", "### Shipped versus quiet", "",
                  "The same workload, size and configuration in the first corpus "
                  "(`data/loaded/runs/`, measured beside other work, shipped until issue 13) "
                  "and in the quiet tables: its median over the quiet median.", "",
                  "| size | configurations | median ratio | min | max |", "|---|---|---|---|---|"]
        for size, part in both.groupby("datasize"):
            lines.append(f"| {size} | {len(part)} | {part['ratio'].median():.2f}x | "
                         f"{part['ratio'].min():.2f}x | {part['ratio'].max():.2f}x |")
        defaults = both[both["config_json"] == '{"spark.master": "local[2]"}']
        if len(defaults):
            lines += ["", "Spark's defaults on local[2], per query:", "",
                      "| workload | size | shipped median s | quiet median s | ratio |",
                      "|---|---|---|---|---|"]
            for r in defaults.sort_values(["datasize", "workload"],
                                          key=lambda c: c.map(_sort_key)).itertuples():
                lines.append(f"| {r.workload} | {r.datasize} | {r.median_shipped:.2f} | "
                             f"{r.median_quiet:.2f} | {r.ratio:.2f}x |")
    return lines


def _sort_key(value):
    return _order(value) if "-q" in str(value) else str(value)


def _order(name: str):
    return (name.split("-q")[0], int(name.split("-q")[1])) if "-q" in name else (name, 0)


def write_report(table, out_dir: Path, sources: list[str], drift=(), extra=()) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    labels = [f"{r['framework']} {r['workload']} {r['datasize']}" for r in table]
    fig, ax = plt.subplots(figsize=(max(8, 0.32 * len(table)), 4.5))
    xs = range(len(table))
    ax.vlines(xs, [r["best_s"] for r in table], [r["worst_s"] for r in table], color="#7a8ca3",
              linewidth=3, label="best to worst configuration")
    ax.scatter(xs, [r["default_s"] if r["default_s"] else float("nan") for r in table],
               color="#c0392b", zorder=3, s=14, label="Spark defaults")
    ax.set_yscale("log")
    ax.set_ylabel("runtime (s, log scale)")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=90, fontsize=7)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title("Measured runtime across configurations")
    fig.tight_layout()
    fig.savefig(out_dir / "corpus.png", dpi=120)
    plt.close(fig)

    def fmt(value, pattern="{:.2f}"):
        return "" if value is None else pattern.format(value)

    lines = ["# Measured corpus: spread across configurations and noise", "",
             "Regenerate: `python bench/report_corpus.py`", "",
             "Sources: " + ", ".join(f"`{s}`" for s in sources), "",
             f"{sum(r['runs'] for r in table)} runs, {len(table)} workload x size groups.", "",
             "Runtime per configuration is the median of its repeats. *default/best* is Spark's "
             "defaults (local[2] and nothing else set; for MapReduce Hadoop's defaults) over the fastest configuration; *noise* is the "
             "repeat noise over configurations measured 2 or more times (a run against the "
             "median of its configuration's other runs, median over runs).", "",
             "![spread](corpus.png)", "",
             "| framework | workload | size | runs | configs | failed | best s | worst s | max/min | default s | default/best | noise | repeated configs |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        lines.append(f"| {r['framework']} | {r['workload']} | {r['datasize']} | {r['runs']} | {r['configs']} | "
                     f"{r['failed']} | {fmt(r['best_s'])} | {fmt(r['worst_s'])} | "
                     f"{fmt(r['spread'], '{:.1f}x')} | {fmt(r['default_s'])} | "
                     f"{fmt(r['default_over_best'], '{:.2f}')} | {fmt(r['noise'], '{:.1%}')} | "
                     f"{r['repeated']} |")
    if drift:
        lines += ["", "## Warm-up drift inside an application", "",
                  "Spark runs of one application group were timed one after another after a "
                  "single warm-up query (data/README.md). If the JVM still warms up after that, "
                  "later runs are faster whatever their settings, and the repeats of one "
                  "configuration (run at different positions) differ for that reason too. "
                  "*rank corr.* is the median over workloads of Spearman's correlation between a "
                  "run's position in its application (from its profile's stage ids) and its "
                  "runtime (negative: later is faster); *earliest/median* is, for configurations "
                  "repeated within one application, the first repeat's runtime over the median of "
                  "its repeats.", "",
                  "| plan | runs | workloads | rank corr. (median) | workloads with corr. < 0 | "
                  "earliest/median | repeat sets |", "|---|---|---|---|---|---|---|"]
        for r in drift:
            lines.append(f"| {r['plan']} | {r['runs']} | {r['workloads']} | "
                         f"{fmt(r['spearman'])} | {r['negative']} | "
                         f"{fmt(r['earliest_over_median'])} | {r['repeat_sets']} |")
    lines += list(extra)
    path = out_dir / "corpus.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=str(REPO / "data" / "loaded" / "runs" / "*.csv.gz")
                        + "," + str(REPO / "data" / "runs" / "*.csv.gz"),
                        help="run tables measured beside other work: comma-separated globs; "
                             "tables measured under the load guard are left to --quiet")
    parser.add_argument("--out", default=str(REPO / "bench" / "reports"))
    parser.add_argument("--profiles", default=str(REPO / "data" / "profiles"),
                        help="folder of <plan>.jsonl.gz profiles (for the warm-up drift)")
    parser.add_argument("--quiet", default=str(REPO / "data" / "runs" / "*.csv.gz"),
                        help="globs of the quiet run tables (issue 13; only those measured "
                             "under the load guard count); '' for none")
    args = parser.parse_args(argv)
    from jobgauge.models.evaluation import quiet_run_tables

    guarded = {str(p) for p in quiet_run_tables()}
    files = [f for pattern in args.runs.split(",") for f in sorted(glob.glob(pattern))
             if str(Path(f)) not in guarded]
    if not files:
        print(f"no run tables match {args.runs}", file=sys.stderr)
        return 1
    table = summarize(read_run_tables(files))
    drift = warmup_drift(files, Path(args.profiles))
    quiet_files = [f for pattern in args.quiet.split(",") if pattern
                   for f in sorted(glob.glob(pattern)) if str(Path(f)) in guarded]
    extra = []
    if quiet_files:
        quiet = read_run_tables(quiet_files)
        extra = quiet_lines(quiet_summary(quiet),
                            shipped_versus_quiet(read_run_tables(files), quiet),
                            [shown(f) for f in quiet_files])
    path = write_report(table, Path(args.out), [shown(f) for f in files], drift, extra)
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
