"""Replay benchmark of the tuner: how many measured runs until within 10 % (5 %) of the cheapest?

For every job of a run table (workload x framework x datasize x job
parameters) and every seed, three searches replay the table through
``jobgauge.tuner.tune_replay`` (the same code path as ``jobgauge tune
--replay``), minimising cost:

- ``ours``: TransferSampler, history = the other workloads of the same
  table (leave-one-workload-out: no row of the tuned workload is read);
- ``random``: random search without replacement;
- ``gp``: plain GP-BO, Optuna's GPSampler over the table's own parameters
  (instance_type categorical, instance_count integer), 3 random start
  trials, proposals snapped to the nearest untried measured configuration.

A search stops once a completed trial is within 5 % of the job's cheapest
completed configuration (median of repeated runs), or when its budget is
spent: every configuration for ours and random, ``--gp-budget`` trials for
GP-BO (its fits are slow); a search that never gets there counts as
budget + 1 trials.  Writes ``bench/reports/tuning.md`` and a PNG per table.

    python bench/tune_replay.py            # both tables, 10 seeds
    python bench/tune_replay.py --jobs 2 --datasets scout
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from jobgauge.runtable import PUBLIC_TABLES

REPO = Path(__file__).resolve().parent.parent
# the public run tables by their short names here (jobgauge.runtable.PUBLIC_TABLES)
DATASETS = {"scout": PUBLIC_TABLES["scout-multinode"], "c3o": PUBLIC_TABLES["c3o-emr"]}
METHODS = ("ours", "random", "gp")
TOLERANCES = (0.10, 0.05)
# --ablation: ours with one design choice changed at a time (defaults: kappa 0.5,
# profile_weight 1, min_coverage 0.5, one prior trial, zero-mean GP).
ABLATION = {
    "as shipped": {},
    "no history (first trial random)": {"history": False},
    "profile_weight=0 (history jobs weigh the same)": {"profile_weight": 0.0},
    "min_coverage=0 (trust configurations few jobs ran)": {"min_coverage": 0.0},
    "kappa=0.25": {"sampler_options": {"kappa": 0.25}},
    "kappa=1": {"sampler_options": {"kappa": 1.0}},
    "history prior as GP mean (slope 1)": {"sampler_options": {"prior_mean": 1.0}},
    "two trials from the prior": {"sampler_options": {"n_prior_trials": 2}},
}


def _shared() -> Path:
    env = os.environ.get("JOBGAUGE_SHARED")
    return Path(env) if env else REPO.parent / "shared"


def _jobs(frame):
    keys = ["workload", "framework", "datasize", "config_json"]
    return [tuple(k) for k, _ in frame.groupby(keys, sort=True)]


_FRAMES = {}


def _frame(name):
    if name not in _FRAMES:
        from jobgauge.runtable import read_run_tables

        _FRAMES[name] = read_run_tables([_shared() / "datasets" / DATASETS[name]])
    return _FRAMES[name]


def run_one(task):
    """One search: (dataset, job, method, seed, gp_budget) -> trials to 10 % and 5 %."""
    from jobgauge.tuner import ReplayTable, tune_replay

    dataset, job, method, seed, gp_budget, variant = task
    options = dict(ABLATION[variant]) if variant else {}
    use_history = options.pop("history", True)
    if method == "gp":
        import torch

        torch.set_num_threads(1)     # one core per search; threads only fight on shared cores
    frame = _frame(dataset)
    workload, framework, datasize, config_json = job
    rows = frame[(frame["workload"] == workload) & (frame["framework"] == framework)
                 & (frame["datasize"] == datasize) & (frame["config_json"] == config_json)]
    table = ReplayTable(rows, workload)
    optimum = table.optimum("cost")
    budget = len(table) if method != "gp" else min(gp_budget, len(table))

    def stop(frozen):
        return (not frozen.user_attrs.get("censored")
                and frozen.values[0] <= (1 + min(TOLERANCES)) * optimum)

    started = time.process_time()
    result = tune_replay(rows, workload, objective="cost", n_trials=budget, seed=seed,
                         history=frame if method == "ours" and use_history else None,
                         sampler={"ours": "transfer", "random": "random", "gp": "gp"}[method],
                         stop=stop, **options)
    seconds = time.process_time() - started
    reached = {}
    for tolerance in TOLERANCES:
        reached[tolerance] = next(
            (i + 1 for i, t in enumerate(result.trials)
             if not t.censored and t.value <= (1 + tolerance) * optimum), budget + 1)
    return {"dataset": dataset, "job": list(job), "method": method, "seed": seed,
            "variant": variant,
            "configurations": len(table), "budget": budget,
            "to10": reached[0.10], "to5": reached[0.05], "seconds": seconds}


def _summary(results, dataset, method, variant=None):
    rows = [r for r in results if r["dataset"] == dataset and r["method"] == method
            and r["variant"] == variant]
    to10 = np.array([r["to10"] for r in rows])
    to5 = np.array([r["to5"] for r in rows])
    missed = sum(r["to10"] > r["budget"] for r in rows)
    return {"runs": len(rows), "median10": float(np.median(to10)),
            "mean10": float(np.mean(to10)), "p90_10": float(np.percentile(to10, 90)),
            "median5": float(np.median(to5)), "within5trials": float(np.mean(to10 <= 5)),
            "missed10": int(missed), "seconds": float(sum(r["seconds"] for r in rows))}


def _curve(results, dataset, method, horizon):
    rows = [r for r in results if r["dataset"] == dataset and r["method"] == method
            and r["variant"] is None]
    reached = np.array([r["to10"] if r["to10"] <= r["budget"] else np.inf for r in rows])
    horizon = min(horizon, max(r["budget"] for r in rows))   # nothing is known past the budget
    return [float(np.mean(reached <= n)) for n in range(1, horizon + 1)]


def _plot(results, dataset, horizon, path, methods=METHODS):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 4))
    labels = {"ours": "ours (transfer + GP on features)", "random": "random search",
              "gp": "plain GP-BO (Optuna GPSampler)"}
    for method in methods:
        curve = _curve(results, dataset, method, horizon)
        axis.plot(range(1, len(curve) + 1), curve, marker="o", markersize=3, label=labels[method])
    axis.set_xlabel("measured runs (trials)")
    axis.set_ylabel("fraction of searches within 10 % of cheapest")
    axis.set_title(f"Replay on {DATASETS[dataset]}")
    axis.set_ylim(0, 1.02)
    axis.grid(alpha=0.3)
    axis.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _report(results, args, elapsed, out_dir: Path) -> str:
    lines = ["# Tuner replay benchmark", "",
             "Generated by `bench/tune_replay.py` (command below); every number is a replay "
             "of runtimes measured in the shared run tables -- nothing is simulated.", "",
             "```", "nice -n 10 .venv/bin/python bench/tune_replay.py " + " ".join(
                 f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
                 for k, v in vars(args).items()
                 if k not in ("out", "runs_json", "ablation", "ablation_seeds"))
             + (f" --ablation --ablation-seeds {args.ablation_seeds}" if args.ablation else ""),
             "```", "",
             f"Wall time: {elapsed:.0f} s on this machine (2 cores shared with other "
             f"workers, {args.jobs} worker process(es)); CPU time of all searches: "
             f"{sum(r['seconds'] for r in results):.0f} s.", "",
             "How it is measured:", "",
             "- *trials to 10 %*: the index of the first trial whose measured cost is within "
             "10 % of the job's cheapest completed configuration. A configuration's cost is the "
             "median of its repeated runs; a configuration with a run that did not complete "
             "(`completed=false`) is censored: it never counts as reached, and the search sees "
             "it as infeasible and at least as bad as the worst completed run.",
             "- *ours*: `tune_replay(..., sampler=\"transfer\")` as shipped -- the first trial "
             "is the configuration other workloads ran closest to their own cheapest (weighted "
             "median of log cost ratios, weights from framework, size label and input bytes); "
             "then a GP on log cost over log total vCPUs, log total memory, log nodes and log "
             "memory per vCPU, lowest mean - 0.5 sd. History is the same table less every row "
             "of the tuned workload (all its sizes and frameworks): leave-one-workload-out.",
             "- *random*: uniform over the untried measured configurations (no replacement).",
             f"- *gp*: Optuna `GPSampler` (its own kernel and acquisition) over the table's "
             f"parameters (instance_type categorical, instance_count integer), 3 random start "
             f"trials, each proposal snapped to the nearest untried measured configuration; at "
             f"most {args.gp_budget} trials per search (its fits take ~0.5-1 s each), a search "
             f"that does not get within 10 % counts as {args.gp_budget + 1}. No history.",
             "- The sampler's settings (kappa 0.5, lengthscale 2, signal sd 1, noise sd 0.05) "
             "were chosen while developing on Scout replays, and `profile_weight=1`, "
             "`min_coverage=0.5` after looking at both tables, so these figures are in-sample "
             "for those few choices; the ablation below shows how much each one moves them.",
             ""]
    for dataset in args.datasets:
        jobs = len({tuple(r["job"]) for r in results if r["dataset"] == dataset})
        sizes = sorted({r["configurations"] for r in results if r["dataset"] == dataset})
        lines += [f"## {DATASETS[dataset]}", "",
                  f"{jobs} jobs (workload x framework x datasize x job parameters) x "
                  f"{args.seeds} seeds; {'/'.join(map(str, sizes))} measured configurations "
                  "per job. Objective: cost = runtime x nodes x hourly price / 3600.", "",
                  "| method | searches | median trials to 10 % | mean | p90 | median trials "
                  "to 5 % | share within 10 % in <= 5 trials | never within 10 % | CPU s |",
                  "|---|---|---|---|---|---|---|---|---|"]
        summaries = {m: _summary(results, dataset, m) for m in args.methods}
        for method, s in summaries.items():
            lines.append(f"| {method} | {s['runs']} | {s['median10']:g} | {s['mean10']:.1f} | "
                         f"{s['p90_10']:.1f} | {s['median5']:g} | {s['within5trials']:.2f} | "
                         f"{s['missed10']} | {s['seconds']:.0f} |")
        if set(METHODS) <= set(summaries):
            ours, rnd, gp = (summaries[m]["median10"] for m in METHODS)
            means = [summaries[m]["mean10"] for m in METHODS]
            lines += ["", f"Ratios (trials to 10 %): median ours / random = {ours / rnd:.2f}, "
                          f"ours / GP-BO = {ours / gp:.2f}; mean ours / random = "
                          f"{means[0] / means[1]:.2f}, ours / GP-BO = {means[0] / means[2]:.2f}."]
        lines += ["", f"![fraction within 10 %](tuning_{dataset}_within10.png)", ""]
        jobs_here = sorted({tuple(r["job"]) for r in results if r["dataset"] == dataset})
        by_workload = len(jobs_here) > 30

        def group(job):
            if by_workload:
                return job[0]
            return " ".join(p for p in job[:3] if p) + ("" if job[3] == "{}" else " " + job[3])

        lines += [("Per workload (median over its jobs and seeds" if by_workload else
                   "Per job (median over seeds") + " of trials to 10 %; mean in brackets):", "",
                  "| " + ("workload | jobs" if by_workload else "job | configurations")
                  + " | " + " | ".join(args.methods) + " |",
                  "|---|---|" + "---|" * len(args.methods)]
        for name in sorted({group(job) for job in jobs_here}):
            members = [job for job in jobs_here if group(job) == name]
            cells = []
            for method in args.methods:
                values = [r["to10"] for r in results if r["dataset"] == dataset
                          and tuple(r["job"]) in members and r["method"] == method
                          and r["variant"] is None]
                cells.append(f"{np.median(values):g} ({np.mean(values):.1f})")
            size = len(members) if by_workload else next(
                r["configurations"] for r in results if tuple(r["job"]) == members[0])
            lines.append(f"| {name} | {size} | " + " | ".join(cells) + " |")
        lines.append("")
        _plot(results, dataset, min(30, max(r["configurations"] for r in results
                                          if r["dataset"] == dataset)),
              out_dir / f"tuning_{dataset}_within10.png", args.methods)
    if args.ablation:
        lines += ["## Ablation: ours with one choice changed", "",
                  f"{args.ablation_seeds} seeds per job (ours is deterministic apart from ties); "
                  "median / mean / p90 trials to 10 % and the share of searches within 10 % "
                  "in <= 5 trials.", "",
                  "| variant | " + " | ".join(DATASETS[d] for d in args.datasets) + " |",
                  "|---|" + "---|" * len(args.datasets)]
        for variant in ABLATION:
            cells = []
            for dataset in args.datasets:
                s = _summary(results, dataset, "ours", variant)
                cells.append(f"{s['median10']:g} / {s['mean10']:.1f} / {s['p90_10']:.0f} / "
                             f"{s['within5trials']:.2f}")
            lines.append(f"| {variant} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=sorted(DATASETS),
                        default=["scout", "c3o"])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--gp-budget", type=int, default=20,
                        help="most trials of a GP-BO search (default 20)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--ablation", action="store_true",
                        help="also run ours with each design choice changed (ABLATION)")
    parser.add_argument("--ablation-seeds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "reports")
    parser.add_argument("--runs-json", type=Path, default=None,
                        help="also write every search's result to this JSON file")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    tasks = [(dataset, job, method, seed, args.gp_budget, None)
             for dataset in args.datasets for job in _jobs(_frame(dataset))
             for method in args.methods for seed in range(args.seeds)]
    if args.ablation:
        tasks += [(dataset, job, "ours", seed, args.gp_budget, variant)
                  for dataset in args.datasets for job in _jobs(_frame(dataset))
                  for variant in ABLATION for seed in range(args.ablation_seeds)]
    started = time.perf_counter()
    from tqdm import tqdm

    if args.jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
            results = list(tqdm(pool.imap_unordered(run_one, tasks, chunksize=4),
                                total=len(tasks), file=sys.stderr))
    else:
        results = [run_one(task) for task in tqdm(tasks, file=sys.stderr)]
    elapsed = time.perf_counter() - started
    if args.runs_json:
        args.runs_json.write_text(json.dumps(results, indent=1))
    report = _report(results, args, elapsed, args.out)
    (args.out / "tuning.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
