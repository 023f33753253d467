"""The whole cycle for one benchmark suite: data, runs, train, evaluate, tune, report.

Used by ``bench/tpch.py`` and ``bench/hibench.py``:

1. data and runs: with ``--collect`` the suite's plans (``bench/plans``) are run
   to completion on this machine (resumable; inputs generated and cached);
   otherwise the shipped run tables ``data/runs/<plan>.csv.gz`` are loaded;
2. train: the default model on every run of the suite, saved to the report folder;
3. evaluate: every model under the protocols that fit the suite
   (``jobgauge.models.evaluation``);
4. tune: for every workload and size, the tuner in replay mode picks
   configurations among the measured ones, learning from the suite's other
   workloads; its pick after 5 trials is compared, by measured runtime, with
   Spark's defaults (``jobgauge.knobs.default_config``) and with the best
   configuration of the grid;
5. report: ``bench/reports/<suite>.md`` with plots.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PLANS = REPO / "bench" / "plans"
sys.path.insert(0, str(REPO / "bench"))

from _report import shown  # noqa: E402


def _tables(plans) -> list[Path]:
    from jobgauge.profiler.runners.collect import load_plan

    tables = []
    for plan in plans:
        out = load_plan(PLANS / f"{plan}.toml").get("out")
        if out and (REPO / out).exists():
            tables.append(REPO / out)
    return tables


def _default_runtime(group) -> float | None:
    from jobgauge.knobs import is_default_config  # the same rule as the corpus report

    defaults = [r.runtime_s for r in group.itertuples()
                if r.completed and is_default_config(r.config)]
    return statistics.median(defaults) if defaults else None


def tune_section(frame, trials: int, seeds: int) -> tuple[list[dict], list[str]]:
    """Measured default vs the tuner's replay pick vs the best of the grid."""
    from jobgauge.errors import GaugeError
    from jobgauge.tuner import tune_replay

    rows = []
    for (workload, datasize, framework), group in frame.groupby(
            ["workload", "datasize", "framework"], sort=True):
        completed = group[group.completed]
        if completed.empty:
            continue
        per_config = completed.groupby("config_json").runtime_s.median()
        best = float(per_config.min())
        default = _default_runtime(group)
        picks = []
        for seed in range(seeds):
            try:
                result = tune_replay(frame, workload, framework=framework, datasize=datasize,
                                     objective="time", n_trials=min(trials, len(per_config)),
                                     seed=seed,
                                     history=frame[frame.workload != workload])
            except GaugeError as exc:
                print(f"tune {workload} {datasize}: {exc}", file=sys.stderr)
                break
            picks.append(min(t.value for t in result.trials if t.value is not None))
        if not picks:
            continue
        tuned = statistics.median(picks)
        rows.append({"workload": workload, "datasize": datasize, "framework": framework,
                     "configs": int(len(per_config)), "default_s": default, "tuned_s": tuned,
                     "best_s": best,
                     "tuned_over_default": tuned / default if default else None,
                     "tuned_over_best": tuned / best})
    lines = [f"Replay tuning: {trials} measured trials per workload (median over {seeds} seeds), "
             "choosing only among measured configurations and learning from the suite's "
             "other workloads (never the tuned one's rows).", "",
             "| workload | size | framework | configs | default s | tuned s | best s | tuned/default | tuned/best |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['datasize']} | {r['framework']} | {r['configs']} | "
                     f"{_f(r['default_s'])} | {_f(r['tuned_s'])} | {_f(r['best_s'])} | "
                     f"{_f(r['tuned_over_default'])} | {_f(r['tuned_over_best'])} |")
    ratios_default = [r["tuned_over_default"] for r in rows if r["tuned_over_default"]]
    ratios_best = [r["tuned_over_best"] for r in rows]
    if rows:
        lines += ["", f"Median tuned/default: {_f(statistics.median(ratios_default)) if ratios_default else 'n/a'}; "
                      f"median tuned/best-of-grid: {_f(statistics.median(ratios_best))} "
                      f"(targets: 0.6 or less, 1.05 or less)."]
    return rows, lines


def _f(value) -> str:
    return "" if value is None else f"{value:.2f}"


def plot_tuning(rows, out: Path) -> Path | None:
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(7, 0.35 * len(rows)), 4))
    xs = range(len(rows))
    ax.scatter(xs, [r["default_s"] or float("nan") for r in rows], label="Spark defaults",
               color="#c0392b", s=16)
    ax.scatter(xs, [r["tuned_s"] for r in rows], label="tuned (replay)", color="#2471a3", s=16)
    ax.scatter(xs, [r["best_s"] for r in rows], label="best of grid", color="#1e8449", marker="x",
               s=16)
    ax.set_yscale("log")
    ax.set_ylabel("measured runtime (s)")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{r['workload']} {r['datasize']}" for r in rows], rotation=90, fontsize=7)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def run_suite(name: str, plans: list[str], argv=None) -> int:
    parser = argparse.ArgumentParser(description=f"The whole {name} cycle: data, runs, train, "
                                                 "evaluate, tune, report.")
    parser.add_argument("--collect", action="store_true",
                        help="run the suite's plans on this machine first (resumable; long)")
    parser.add_argument("--plans", nargs="+", default=plans, help="plans in bench/plans")
    parser.add_argument("--models", nargs="+", default=None, help="models to evaluate")
    parser.add_argument("--quick", action="store_true", help="smoke run: fewer folds and epochs")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", default=str(REPO / "bench" / "reports"))
    args = parser.parse_args(argv)

    from jobgauge.errors import GaugeError
    from jobgauge.models import DEFAULT_MODEL, make_model, save_model
    from jobgauge.models.evaluation import load_evaluation_frames, run_evaluation
    from jobgauge.profiler.runners.collect import collect

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        if args.collect:
            for plan in args.plans:
                print(f"[1/5] collecting {plan}", file=sys.stderr)
                collect(PLANS / f"{plan}.toml")
        tables = _tables(args.plans)
        if not tables:
            print(f"no run tables for {', '.join(args.plans)}; run with --collect", file=sys.stderr)
            return 1
        print(f"[2/5] loading {len(tables)} run tables", file=sys.stderr)
        frames = load_evaluation_frames(tables)
        frame = next(iter(frames.values())) if len(frames) == 1 else None
        import pandas as pd

        frame = frame if frame is not None else pd.concat(list(frames.values()), ignore_index=True)
        print(f"[3/5] training {DEFAULT_MODEL} on {len(frame)} runs", file=sys.stderr)
        model = make_model(DEFAULT_MODEL).fit(frame)
        model_path = out / f"{name}-model.jg"
        save_model(model, model_path)
        print("[4/5] evaluating", file=sys.stderr)
        evaluation = run_evaluation(tables, models=args.models, out_dir=out / f"{name}-evaluation",
                                    quick=args.quick)
        print("[5/5] tuning", file=sys.stderr)
        rows, tune_lines = tune_section(frame, args.trials, args.seeds)
        plot = plot_tuning(rows, out / f"{name}-tuning.png")
    except GaugeError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 1
    report = out / f"{name}.md"
    lines = [f"# {name}: runs, models, tuning", "",
             f"Regenerate: `python bench/{name.lower().replace('-', '')}.py`" + (" (add `--collect` to measure "
                                                              "the runs again)"), "",
             "Run tables: " + ", ".join(f"`{shown(t)}`" for t in tables),
             f"({len(frame)} runs, {frame.workload.nunique()} workloads). "
             f"Default model `{DEFAULT_MODEL}` saved to `{shown(model_path)}`.", "",
             "## Model accuracy", "",
             evaluation["markdown_table"], "",
             f"Full evaluation report: `{shown(evaluation['report'])}`" if evaluation.get("report")
             else "", "",
             "## Tuning", "", *tune_lines, ""]
    if plot:
        lines += [f"![tuning]({plot.name})", ""]
    lines.append(f"Wall time of this report: {time.monotonic() - started:.0f} s.")
    report.write_text("\n".join(lines) + "\n")
    print(report.read_text())
    return 0
