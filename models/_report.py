"""The Markdown report and CDF plots of :func:`jobgauge.models.evaluation.run_evaluation`."""

from __future__ import annotations

import datetime
import math
from pathlib import Path

import numpy as np

from jobgauge.models.evaluation import (
    EVAL_PARAMS,
    PROTOCOLS,
    SUBSETS,
    _percent,
    markdown_table,
    noise_floor,
    protocol_label,
)

# What the seed (the project brief's literature) reports, for comparison.
SEED_FIGURES = (
    ("NN on HiBench (MAPE-style error)", "8 %", "fc"),
    ("Decision tree on HiBench", "16 %", "tree"),
    ("SVM on HiBench", "12 %", "svm"),
    ("AI Gauge offline", "7–8 %", None),
    ("plain random forest, Scout held-out configurations (MdAPE)", "9.4 %", "forest"),
)

# Hand-written analysis, kept next to the generator so a re-run keeps it.
# Figures quoted here are re-checked by the "Targets" section, which is computed.
NOTES = """\
- All errors are on runs the model never saw in training, grouped so that
  repeated runs of one configuration never straddle the split.  A random row
  split would report lower errors and is not used.
- Censored runs (Scout's 75 runs that hit the 2-hour limit) are kept in
  training as lower bounds and never scored as if their limit were their
  runtime; the tables show how many censored test runs each model predicted
  at or above the limit.
- Intervals are split-conformal on held-out configurations (or clusters)
  inside the training data, so their coverage is close to 80 % where the test
  runs are as far from the training runs as the calibration runs were, and
  lower under (b)/(c) on the shared tables, where they are further: the
  interval then understates the uncertainty, and the report says so rather
  than widening it by hand.
- Scale extrapolation (b) is hard for tree models by construction: a tree
  cannot predict beyond the largest runtime it was trained on.  Ernest and
  the networks extrapolate through log input size.
- Leave-one-workload-out (c) on Scout and C3O has no profile of the held-out
  job, so every model can only guess from the size and cluster: those errors
  are large and are shown as they are.  Local runs carry one reference
  profile per workload and a DAG made of the reference run's physical plan
  (operators) and its event-log stages (with each stage's measured time,
  CPU, input and shuffle bytes), which is what makes unseen TPC-H queries
  predictable at all.
- ``gbm:size_exponent=auto`` learns runtime relative to (input size) **
  exponent, the exponent measured on training runs of one workload at
  several sizes, or, where each workload ran at one size only (the local
  runs' training side under (b)), across workloads run with the same
  settings.
"""


def _row(rows, dataset, protocol, model):
    for row in rows:
        if (row["dataset"], row["protocol"], row["model"]) == (dataset, protocol, model):
            return row
    return None


def _best(rows, dataset, protocol, exclude_classes=True):
    candidates = [r for r in rows if r["dataset"] == dataset and r["protocol"] == protocol
                  and (not exclude_classes or "+classes" not in r["model"])]
    return min(candidates, key=lambda r: r["mdape"]) if candidates else None


def _check(ok) -> str:
    return "met" if ok else "**missed**"


def _versus(first, second, target_ratio=None) -> str:
    """Two models' MdAPE side by side, ``; fc 4.0 % vs tree 8.0 %``, and with a
    ``target_ratio`` their ratio against it, `` = 0.50 × (target ≤ 0.6 ×: met)``."""
    text = (f"; {first['model']} {_percent(first['mdape'])} % "
            f"vs {second['model']} {_percent(second['mdape'])} %")
    if target_ratio is None:
        return text
    ratio = first["mdape"] / second["mdape"] if second["mdape"] else math.inf
    return text + f" = {ratio:.2f} × (target ≤ {target_ratio} ×: {_check(ratio <= target_ratio)})"


def _noise(frames, dataset, subset=None):
    """Repeat-noise MdAPE of a dataset's runs (optionally one subset), or None."""
    frame = frames.get(dataset) if frames else None
    if frame is None:
        return None
    if subset is not None:
        frame = frame[[SUBSETS[subset][1](w) for w in frame["workload"].astype(str)]]
    return noise_floor(frame) if len(frame) else None


def _noise_text(noise) -> str:
    return "" if noise is None else \
        f"; repeat noise of these runs {_percent(noise['mdape'])} %"


def targets_section(rows, default_model, frames=None) -> list[str]:
    """Each issue-5 target checked on the rows; repeat noise beside each local figure."""
    lines = ["## Targets", "",
             "Best model per line among the models without classes; \"repeat noise\" is the "
             "MdAPE of a run against its own repeats (the Data section), which no model can "
             "be expected to beat.", ""]
    datasets = sorted({r["dataset"] for r in rows})
    # (a) held-out configurations
    for dataset in datasets:
        protocol = "configs" if _row(rows, dataset, "configs", "fc") or \
            _row(rows, dataset, "configs", "tree") else "cluster"
        fc, tree = _row(rows, dataset, protocol, "fc"), _row(rows, dataset, protocol, "tree")
        best = _best(rows, dataset, protocol)
        if best is None:
            continue
        text = (f"- (a) {dataset}, {PROTOCOLS[protocol]}: best {best['model']} MdAPE "
                f"{_percent(best['mdape'])} % (target ≤ 5 %: {_check(best['mdape'] <= 0.05)})")
        if fc and tree:
            text += _versus(fc, tree, target_ratio=0.6)
        lines.append(text + _noise_text(_noise(frames, dataset)))
    # (b) scale extrapolation of the local runs (no numeric target: reported)
    for protocol in ("scale:tpch", "scale:jobs"):
        best = _best(rows, "local", protocol)
        if best is None:
            continue
        subset = protocol.split(":")[1]
        fc = _row(rows, "local", protocol, "fc")
        text = (f"- (b) local, {protocol_label(protocol)}: best {best['model']} MdAPE "
                f"{_percent(best['mdape'])} %, 80 % interval coverage "
                f"{_percent(best.get('coverage80'))} %")
        if fc:
            text += f"; fc {_percent(fc['mdape'])} %"
        lines.append(text + " (no numeric target)" + _noise_text(_noise(frames, "local", subset)))
    if not any(r["protocol"] == "scale:tpch" for r in rows) and "local" in datasets:
        lines.append("- (b) local, TPC-H scale extrapolation: only one TPC-H scale factor in "
                     "data/runs, nothing to extrapolate to")
    # (c) unseen TPC-H queries
    tpch = [r for r in rows if r["protocol"] == "workloads:tpch"]
    if tpch:
        dataset = tpch[0]["dataset"]
        best = _best(rows, dataset, "workloads:tpch")
        rnn, fc = _row(rows, dataset, "workloads:tpch", "rnn"), \
            _row(rows, dataset, "workloads:tpch", "fc")
        text = (f"- (c) unseen TPC-H queries: best {best['model']} MdAPE "
                f"{_percent(best['mdape'])} % (target ≤ 15 %: {_check(best['mdape'] <= 0.15)})")
        if rnn and fc:
            text += _versus(rnn, fc, target_ratio=0.8)
        lines.append(text + _noise_text(_noise(frames, dataset, "tpch")))
        best = _best(rows, dataset, "workloads:jobs")
        if best:
            rnn, fc = _row(rows, dataset, "workloads:jobs", "rnn"), \
                _row(rows, dataset, "workloads:jobs", "fc")
            text = (f"- (c) unseen HiBench/MapReduce jobs: best {best['model']} MdAPE "
                    f"{_percent(best['mdape'])} % (no numeric target)")
            if rnn and fc:
                text += _versus(rnn, fc)
            lines.append(text + _noise_text(_noise(frames, dataset, "jobs")))
    else:
        lines.append("- (c) unseen TPC-H queries: no local TPC-H runs in this evaluation")
    # (d) Scout held-out cluster configurations
    best = _best(rows, "scout-multinode", "cluster")
    if best:
        default = _row(rows, "scout-multinode", "cluster", default_model)
        text = (f"- (d) Scout held-out cluster configurations: best {best['model']} MdAPE "
                f"{_percent(best['mdape'])} % (target ≤ 6 %: {_check(best['mdape'] <= 0.06)})")
        if default:
            text += f"; default model {default_model}: {_percent(default['mdape'])} %"
        lines.append(text)
    # coverage of the 80 % intervals
    for dataset in datasets:
        covered = [r for r in rows if r["dataset"] == dataset and ":" not in r["protocol"]
                   and r.get("coverage80") is not None and r["model"] == default_model]
        if covered:
            lines.append(f"- 80 % interval coverage, {dataset}, default model {default_model}: "
                         + ", ".join(f"{PROTOCOLS[r['protocol']].split(' ')[0]} "
                                     f"{_percent(r['coverage80'])} %" for r in covered))
    return lines + [""]


def classes_section(rows) -> list[str]:
    pairs = [(r, _row(rows, r["dataset"], r["protocol"], r["model"].replace("+classes", "")))
             for r in rows if r["model"].endswith("+classes")]
    pairs = [(w, wo) for w, wo in pairs if wo is not None]
    if not pairs:
        return []
    lines = ["## Job classes: with vs without", "",
             "MdAPE (%) of the same model without and with JobClassifier class features.", "",
             "| dataset | protocol | model | without | with | change |",
             "|---|---|---|---|---|---|"]
    for with_, without in pairs:
        change = with_["mdape"] - without["mdape"]
        lines.append(f"| {with_['dataset']} | {with_['protocol']} | {without['model']} | "
                     f"{_percent(without['mdape'])} | {_percent(with_['mdape'])} | "
                     f"{100 * change:+.1f} |")
    return lines + [""]


def seed_section(rows, default_model) -> list[str]:
    """The seed's literature figures beside ours: the closest shared table (C3O's held-out
    configurations, Scout's held-out clusters) and the local HiBench/MapReduce runs."""
    lines = ["## The seed's figures beside ours", "",
             "The seed's figures come from other data (HiBench runs of the cited papers); "
             "ours are measured on the tables above, as MdAPE / MAPE.", "",
             "| seed figure | seed | ours: shared table | where | ours: local HiBench/MapReduce, "
             "(a) held-out configurations |", "|---|---|---|---|---|"]

    def text(row):
        return "—" if row is None else f"{_percent(row['mdape'])} % / {_percent(row['mape'])} %"

    for label, figure, model in SEED_FIGURES:
        name = model or default_model
        if "Scout" in label:
            row = _row(rows, "scout-multinode", "cluster", name)
            where = "Scout (d) held-out cluster configurations"
        else:
            candidates = sorted((r for r in rows if r["protocol"] in ("configs", "cluster")
                                 and r["model"] == name and r["dataset"] != "local"),
                                key=lambda r: (r["dataset"], r["protocol"] != "configs"))
            row = candidates[0] if candidates else None
            where = "" if row is None else \
                f"{row['dataset']} {protocol_label(row['protocol'])}, {row['model']}"
        local = _row(rows, "local", "configs:jobs", name)
        lines.append(f"| {label} | {figure} | {text(row)} | {where} | "
                     f"{text(local)} ({name}) |" if local else
                     f"| {label} | {figure} | {text(row)} | {where} | — |")
    return lines + [""]


def detail_table(rows) -> list[str]:
    lines = ["## All metrics", "",
             "APE = |predicted − measured| / measured on finished test runs. Coverage: share "
             "of finished test runs inside the 80 % interval. Censored: test runs that hit a "
             "time limit (not scored) and the share predicted at or above the limit.", "",
             "| dataset | protocol | model | test runs | MdAPE % | MAPE % | P90 % | ≤10 % | "
             "80 % cov. | censored (≥ limit) | fit s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        censored = "0" if not row["censored_test"] else \
            f"{row['censored_test']} ({_percent(row['censored_at_least_bound'])} %)"
        lines.append(
            f"| {row['dataset']} | {row['protocol']} | {row['model']} | {row['n']} | "
            f"{_percent(row['mdape'])} | {_percent(row['mape'])} | {_percent(row['p90'])} | "
            f"{_percent(row['within10'])} | {_percent(row.get('coverage80'))} | {censored} | "
            f"{row['fit_s']:.0f} |")
    return lines + [""]


def plot_cdfs(cells, out: Path) -> list[Path]:
    """One PNG per dataset: CDF of the absolute percentage error per protocol and model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for dataset in sorted({c["dataset"] for c in cells}):
        own = [c for c in cells if c["dataset"] == dataset and len(c["y"])]
        panels = []
        for protocol in PROTOCOLS:
            mine = [c for c in own if c["protocol"] == protocol]
            if not mine:
                continue
            workloads = {w for c in mine for w in c["workload"]}
            if any(w.startswith("tpch-") for w in workloads) and \
                    any(not w.startswith("tpch-") for w in workloads):
                panels += [(protocol, subset) for subset in SUBSETS]
            else:
                panels.append((protocol, None))
        if not panels:
            continue
        figure, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6),
                                    squeeze=False)
        for axis, (protocol, subset) in zip(axes[0], panels):
            for cell in own:
                if cell["protocol"] != protocol:
                    continue
                done = np.array(cell["completed"], bool)
                if subset is not None:
                    done &= np.array([SUBSETS[subset][1](w) for w in cell["workload"]], bool)
                y = np.array(cell["y"], float)[done]
                ape = np.sort(np.abs(np.array(cell["predicted"], float)[done] - y) / y) * 100
                if len(ape) == 0:
                    continue
                axis.plot(ape, np.arange(1, len(ape) + 1) / len(ape), label=cell["model"],
                          linewidth=1.2)
            axis.set_title(protocol_label(f"{protocol}:{subset}" if subset else protocol),
                           fontsize=9)
            axis.set_xscale("symlog", linthresh=10)
            axis.set_xlim(0, 300)
            axis.set_xlabel("absolute percentage error (%)")
            axis.axvline(10, color="grey", linewidth=0.6, linestyle=":")
            axis.grid(alpha=0.3)
        axes[0][0].set_ylabel("share of test runs")
        axes[0][-1].legend(fontsize=7, loc="lower right")
        figure.suptitle(f"{dataset}: CDF of relative error", fontsize=10)
        figure.tight_layout()
        path = out / f"evaluation_cdf_{dataset}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)
    return written


def _plan(run_id) -> str:
    """The collector plan of a local run (``tpch-sf0.1`` of ``tpch-sf0.1:tpch-q1:...``)."""
    return str(run_id).split(":", 1)[0]


def data_rows(frames) -> list[str]:
    """One Data-table row per source, and for the local source one more per plan."""
    lines = []

    def row(name, frame, profiled):
        configurations = len(set(zip(frame["instance_type"], frame["instance_count"],
                                     frame["config_json"])))
        noise = noise_floor(frame)
        noise_text = "no repeated configurations" if noise is None else \
            f"{_percent(noise['mdape'])} % ({_percent(noise['p90'])} %), {noise['runs']}"
        lines.append(f"| {name} | {len(frame)} | {int((~frame['completed']).sum())} | "
                     f"{frame['workload'].nunique()} | {configurations} | {profiled} | "
                     f"{noise_text} |")

    for name, frame in frames.items():
        has_profiles = "profile" in frame.columns
        row(name, frame, "one reference run per workload" if has_profiles else "none")
        if name != "local":
            continue
        plans = np.array([_plan(r) for r in frame["run_id"]])
        for plan in sorted(set(plans)):
            part = frame[plans == plan]
            profiled = int(part["profile"].notna().sum()) if has_profiles else 0
            row(f"local: {plan}", part, f"{profiled} rows carry one")
    return lines


def misses_section(rows, frames, default_model) -> list[str]:
    """Where a target is missed, what the measured repeat noise says about why (computed)."""
    lines = ["## Where we miss and why", ""]
    local = frames.get("local") if frames else None
    if local is None:
        return []
    noise = noise_floor(local)
    tpch = _noise(frames, "local", "tpch")
    jobs = _noise(frames, "local", "jobs")
    configs = _best(rows, "local", "configs")
    if noise is not None and configs is not None:
        lines.append(
            f"- Local (a) misses 5 % because the local runs are far noisier than 5 %: a run "
            f"repeated with the very same settings differs from its own repeats by "
            f"{_percent(noise['mdape'])} % (MdAPE; P90 {_percent(noise['p90'])} %)"
            + (f"; TPC-H {_percent(tpch['mdape'])} %" if tpch else "")
            + (f", HiBench/MapReduce {_percent(jobs['mdape'])} %" if jobs else "")
            + f". The best model's {_percent(configs['mdape'])} % is "
            f"{configs['mdape'] / noise['mdape']:.1f} × that floor. The runs were measured on "
            "the shared 2-vCPU development machine (load averages of 10–20, see "
            "data/README.md): seconds-long local queries are dominated by scheduling noise, "
            "not by their settings; and the JVM was still warming up after the collector's "
            "one warm-up query, so later runs of an application are faster whatever their "
            "settings (the warm-up drift in bench/reports/corpus.md)."
            + _c3o_contrast(rows, frames))
    best = _best(rows, "local", "workloads:tpch")
    if best is not None and tpch is not None:
        rnn, fc = _row(rows, "local", "workloads:tpch", "rnn"), \
            _row(rows, "local", "workloads:tpch", "fc")
        text = (f"- (c) unseen TPC-H queries: {_percent(best['mdape'])} % against a 15 % "
                f"target, with {_percent(tpch['mdape'])} % of repeat noise in the same runs: "
                "15 % is below what repeating the query itself achieves, so it cannot be met on "
                "these runs whatever the model.")
        if rnn and fc:
            text += (f" The DAG network (rnn {_percent(rnn['mdape'])} %) and the plain network "
                     f"(fc {_percent(fc['mdape'])} %) are both close to that floor, so the "
                     "0.8 × ratio cannot show either: what the DAG adds is smaller than the "
                     "noise.")
        lines.append(text)
    scale = _best(rows, "local", "scale:jobs")
    if scale is not None:
        lines.append(
            f"- (b) local HiBench/MapReduce scale extrapolation (best {scale['model']} "
            f"{_percent(scale['mdape'])} %): the training side holds each job at its smallest "
            "size only, where most runs take a few seconds, much of it fixed start-up cost, so "
            "how a job's runtime grows with its input cannot be measured on that job; it is "
            "borrowed from other jobs (``size_exponent=auto``) or not extrapolated at all.")
    return lines + [""]


def _c3o_contrast(rows, frames) -> str:
    noise = _noise(frames, "c3o-emr")
    best = _best(rows, "c3o-emr", "configs")
    if noise is None or best is None:
        return ""
    return (f" The shared C3O table, measured on dedicated clusters, has a repeat noise of "
            f"{_percent(noise['mdape'])} %, and there the best model reaches "
            f"{_percent(best['mdape'])} %.")


def write_report(result, frames, out: Path, *, quick=False, command=None) -> Path:
    from jobgauge.models import DEFAULT_MODEL

    out.mkdir(parents=True, exist_ok=True)
    rows, cells = result["rows"], result["cells"]
    pictures = plot_cdfs(cells, out)
    today = datetime.date.today().isoformat()
    command = command or "nice -n 10 .venv/bin/python bench/evaluate.py"
    timing = result.get("timing")
    timing_text = "" if not timing else \
        (f" This run took {timing['wall_s'] / 60:.1f} min of wall time ({timing['computed']} "
         f"cells computed, {timing['cached']} from the cache).")
    lines = ["# Runtime model evaluation", "",
             f"Generated {today} by `bench/evaluate.py`"
             + (" in **quick mode (smoke run: fewer folds and epochs, not a result)**" if quick
                else "") + f". Reproduce with `{command}` "
             "(per-cell predictions are cached in `bench/reports/cache/`, keyed by the runs, "
             "the protocol and the model's parameters; delete it to recompute)." + timing_text,
             "", f"Default model (`DEFAULT_MODEL`): **{DEFAULT_MODEL}**. Every model runs with "
             "its defaults except "
             + "; ".join(f"{name}: " + ", ".join(f"{k}={v}" for k, v in params.items())
                         for name, params in EVAL_PARAMS.items())
             + " (`EVAL_PARAMS`: the CPU budget of a full run).", "", "## Data", "",
             "Repeat noise: MdAPE of each run against the median of the other runs of the very "
             "same configuration (only where a configuration was run more than once) — a floor "
             "for any model's error on held-out configurations. Local runs are also shown per "
             "collector plan (`data/runs/<plan>.csv.gz`).", "",
             "| source | runs | censored | workloads | configurations | profiles | "
             "repeat noise MdAPE (P90), runs |",
             "|---|---|---|---|---|---|---|"]
    lines += data_rows(frames)
    lines += ["", "## Protocols", ""]
    from jobgauge.models import evaluation

    doc = evaluation.__doc__.split("\n\n", 1)[1]
    lines += [doc.strip(), "",
              "## MdAPE by model and protocol", "",
              "MdAPE in %, coverage of the 80 % interval in brackets; best per row in bold.",
              "", markdown_table(rows), ""]
    lines += targets_section(rows, DEFAULT_MODEL, frames)
    lines += misses_section(rows, frames, DEFAULT_MODEL)
    lines += seed_section(rows, DEFAULT_MODEL)
    lines += classes_section(rows)
    lines += detail_table(rows)
    lines += ["## Notes", "", NOTES]
    for picture in pictures:
        lines += [f"![{picture.stem}]({picture.name})", ""]
    path = out / "evaluation.md"
    path.write_text("\n".join(lines))
    return path
