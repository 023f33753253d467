"""The Markdown report and CDF plots of :func:`jobgauge.models.evaluation.run_evaluation`."""

from __future__ import annotations

import datetime
import math
from pathlib import Path

import numpy as np

from jobgauge.models.evaluation import PROTOCOLS, _percent, markdown_table, noise_floor

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
- Intervals are split-conformal on held-out configurations inside the
  training data, so their coverage is close to 80 % under protocols (a)/(d)
  and lower under (b)/(c), where the test runs are further from the training
  data than the calibration runs were: the interval then understates the
  uncertainty, and the report says so rather than widening it by hand.
- Scale extrapolation (b) is hard for tree models by construction: a tree
  cannot predict beyond the largest runtime it was trained on.  Ernest and
  the networks extrapolate through log input size.
- Leave-one-workload-out (c) on Scout and C3O has no profile of the held-out
  job, so every model can only guess from the size and cluster: those errors
  are large and are shown as they are.  Local runs carry one reference
  profile (and plan DAG) per workload, which is what makes unseen TPC-H
  queries predictable at all.
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


def targets_section(rows, default_model) -> list[str]:
    lines = ["## Targets", ""]
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
            ratio = fc["mdape"] / tree["mdape"] if tree["mdape"] else math.inf
            text += (f"; fc {_percent(fc['mdape'])} % vs tree {_percent(tree['mdape'])} % = "
                     f"{ratio:.2f} × (target ≤ 0.6 ×: {_check(ratio <= 0.6)})")
        lines.append(text)
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
            ratio = rnn["mdape"] / fc["mdape"] if fc["mdape"] else math.inf
            text += (f"; rnn {_percent(rnn['mdape'])} % vs fc {_percent(fc['mdape'])} % = "
                     f"{ratio:.2f} × (target ≤ 0.8 ×: {_check(ratio <= 0.8)})")
        lines.append(text)
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
    lines = ["## The seed's figures beside ours", "",
             "The seed's figures come from other data (HiBench runs of the cited papers); "
             "ours are measured on the tables above. Closest comparison shown.", "",
             "| seed figure | seed | ours | where |", "|---|---|---|---|"]
    for label, figure, model in SEED_FIGURES:
        if "Scout" in label:
            row = _row(rows, "scout-multinode", "cluster", model)
            where = "Scout (d) held-out cluster configurations, MdAPE"
        else:
            candidates = [r for r in rows if r["protocol"] in ("configs", "cluster")
                          and (model is None or r["model"] == model)
                          and (model is not None or r["model"] == default_model)]
            local = [r for r in candidates if r["dataset"] == "local"]
            row = (local or sorted(candidates, key=lambda r: r["dataset"]) or [None])[0]
            where = "" if row is None else \
                f"{row['dataset']} {PROTOCOLS[row['protocol']]}, {row['model']}, MdAPE / MAPE"
        ours = "—" if row is None else f"{_percent(row['mdape'])} % / {_percent(row['mape'])} %"
        lines.append(f"| {label} | {figure} | {ours} | {where} |")
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
        protocols = [p for p in PROTOCOLS if any(c["protocol"] == p for c in own)]
        if not protocols:
            continue
        figure, axes = plt.subplots(1, len(protocols), figsize=(4.2 * len(protocols), 3.6),
                                    squeeze=False)
        for axis, protocol in zip(axes[0], protocols):
            for cell in own:
                if cell["protocol"] != protocol:
                    continue
                done = np.array(cell["completed"], bool)
                y = np.array(cell["y"], float)[done]
                ape = np.sort(np.abs(np.array(cell["predicted"], float)[done] - y) / y) * 100
                if len(ape) == 0:
                    continue
                axis.plot(ape, np.arange(1, len(ape) + 1) / len(ape), label=cell["model"],
                          linewidth=1.2)
            axis.set_xscale("symlog", linthresh=10)
            axis.set_xlim(0, 300)
            axis.set_xlabel("absolute percentage error (%)")
            axis.set_title(PROTOCOLS[protocol], fontsize=9)
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


def write_report(result, frames, out: Path, *, quick=False) -> Path:
    from jobgauge.models import DEFAULT_MODEL

    out.mkdir(parents=True, exist_ok=True)
    rows, cells = result["rows"], result["cells"]
    pictures = plot_cdfs(cells, out)
    today = datetime.date.today().isoformat()
    lines = ["# Runtime model evaluation", "",
             f"Generated {today} by `bench/evaluate.py`"
             + (" in **quick mode (smoke run: fewer folds and epochs, not a result)**" if quick
                else "") + ". Reproduce with `nice -n 10 .venv/bin/python bench/evaluate.py` "
             "(per-cell predictions are cached in `bench/reports/cache/`; delete it to "
             "recompute).", "",
             f"Default model (`DEFAULT_MODEL`): **{DEFAULT_MODEL}**.", "", "## Data", "",
             "Repeat noise: MdAPE of each run against the median of the other runs of the very "
             "same configuration (only where a configuration was run more than once) — a floor "
             "for any model's error on held-out configurations.", "",
             "| source | runs | censored | workloads | configurations | profiles | "
             "repeat noise MdAPE (P90), runs |",
             "|---|---|---|---|---|---|---|"]
    for name, frame in frames.items():
        configurations = len(set(zip(frame["instance_type"], frame["instance_count"],
                                     frame["config_json"])))
        profiled = "one reference run per workload" if "profile" in frame.columns else "none"
        noise = noise_floor(frame)
        noise_text = "no repeated configurations" if noise is None else \
            f"{_percent(noise['mdape'])} % ({_percent(noise['p90'])} %), {noise['runs']}"
        lines.append(f"| {name} | {len(frame)} | {int((~frame['completed']).sum())} | "
                     f"{frame['workload'].nunique()} | {configurations} | {profiled} | "
                     f"{noise_text} |")
    lines += ["", "## Protocols", ""]
    from jobgauge.models import evaluation

    doc = evaluation.__doc__.split("\n\n", 1)[1]
    lines += [doc.strip(), "",
              "## MdAPE by model and protocol", "",
              "MdAPE in %, coverage of the 80 % interval in brackets; best per row in bold.",
              "", markdown_table(rows), ""]
    lines += targets_section(rows, DEFAULT_MODEL)
    lines += seed_section(rows, DEFAULT_MODEL)
    lines += classes_section(rows)
    lines += detail_table(rows)
    lines += ["## Notes", "", NOTES]
    for picture in pictures:
        lines += [f"![{picture.stem}]({picture.name})", ""]
    path = out / "evaluation.md"
    path.write_text("\n".join(lines))
    return path
