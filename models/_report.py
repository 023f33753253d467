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
    _breakdown_order,
    _environment,
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

        def draw(axis, panel, own=own):
            protocol, subset = panel
            _cdf_axis(axis, [c for c in own if c["protocol"] == protocol],
                      lambda cell: None if subset is None else
                      np.array([SUBSETS[subset][1](w) for w in cell["workload"]], bool),
                      protocol_label(f"{protocol}:{subset}" if subset else protocol))

        path = out / f"evaluation_cdf_{dataset}.png"
        _cdf_figure(panels, draw, f"{dataset}: CDF of relative error", path)
        written.append(path)
    return written


def _cdf_axis(axis, cells, keep_of, title, noise=None):
    """One panel: the CDF of the absolute percentage error of each cell's finished test
    runs (``keep_of(cell)``: a mask of them, or None for all), one line per model; a
    dashed line at the repeat-noise MdAPE where given."""
    for cell in cells:
        done = np.array(cell["completed"], bool)
        keep = keep_of(cell)
        if keep is not None:
            done &= keep
        y = np.array(cell["y"], float)[done]
        ape = np.sort(np.abs(np.array(cell["predicted"], float)[done] - y) / y) * 100
        if len(ape) == 0:
            continue
        axis.plot(ape, np.arange(1, len(ape) + 1) / len(ape), label=cell["model"],
                  linewidth=1.2)
    if noise is not None:
        axis.axvline(100 * noise, color="black", linewidth=0.9, linestyle="--",
                     label="repeat-noise MdAPE")
    axis.set_title(title, fontsize=9)
    axis.set_xscale("symlog", linthresh=10)
    axis.set_xlim(0, 300)
    axis.set_xlabel("absolute percentage error (%)")
    axis.axvline(10, color="grey", linewidth=0.6, linestyle=":")
    axis.grid(alpha=0.3)


def _cdf_figure(panels, draw, title, path):
    """A row of CDF panels, ``draw(axis, panel)`` filling each, saved as a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6),
                                squeeze=False)
    for axis, panel in zip(axes[0], panels):
        draw(axis, panel)
    axes[0][0].set_ylabel("share of test runs")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


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
         f"cells computed, {timing['cached']} from the cache), with "
         + ", ".join(_environment().split(";")) + ".")
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


# ------------------------------------------------------------- the quiet corpus (issue 13)
#: The issue-13 targets per protocol: MdAPE bound of the stage predictor.
QUIET_TARGETS = {"scaleup": 0.15, "configs-sf1": 0.10, "workloads-sf1": 0.20, "slots": 0.15,
                 "families": 0.10}
#: Target band of the 80 % intervals' coverage, and the width (high / low) to aim under.
COVERAGE_BAND = (0.75, 0.85)
WIDTH_TARGET = 2.0
#: One prediction with its what-if grid should take at most this many milliseconds.
WHAT_IF_TARGET_MS = 20.0


def _width(value) -> str:
    return "—" if value is None or not math.isfinite(value) else f"×{value:.2f}"


def _quiet_protocol_rows(rows):
    """(dataset, protocol) pairs in report order: each protocol, then its breakdown rows."""
    order = []
    for row in rows:
        key = (row["dataset"], row["protocol"])
        if key not in order:
            order.append(key)
    return order


def quiet_results_table(rows, models) -> list[str]:
    """Protocol x model table: MdAPE, 80 % interval coverage and median width, beside the
    repeat noise of the same test runs."""
    by_key = {(r["dataset"], r["protocol"], r["model"]): r for r in rows}
    lines = ["| dataset | protocol | test runs | repeat noise MdAPE | "
             + " | ".join(models) + " |", "|---|---|---|---|" + "---|" * len(models)]
    for dataset, protocol in _quiet_protocol_rows(rows):
        present = [by_key.get((dataset, protocol, m)) for m in models]
        first = next(r for r in present if r is not None)
        best = min(r["mdape"] for r in present if r is not None)
        cells = []
        for row in present:
            if row is None:
                cells.append("—")
                continue
            text = (f"{_percent(row['mdape'])} % · {_percent(row.get('coverage80'))} % · "
                    f"{_width(row.get('width80'))}")
            cells.append(f"**{text}**" if row["mdape"] == best else text)
        noise = first.get("noise_mdape")
        noise_text = "no repeats" if noise is None else \
            f"{_percent(noise)} % ({first.get('noise_runs', 0)} runs)"
        lines.append(f"| {dataset} | {protocol_label(protocol)} | {first['n']} | {noise_text} | "
                     + " | ".join(cells) + " |")
    return lines


def quiet_targets_section(rows, default_model, what_if=None) -> list[str]:
    """The issue-13 targets checked on the rows, for the stage predictor."""
    lines = ["## Targets (issue 13)", "",
             "Checked for the stage predictor (`stage`) where it was evaluated.", ""]

    def get(dataset, protocol, model):
        return _row(rows, dataset, protocol, model)

    for dataset, protocol in _quiet_protocol_rows(rows):
        base, _, part = protocol.partition(":")
        stage = get(dataset, protocol, "stage")
        if stage is None or base not in QUIET_TARGETS:
            continue
        if base in ("configs-sf1", "workloads-sf1", "scaleup") and \
                (base == "scaleup") != bool(part):
            continue  # (e) per test scale; (a) and (c) over all scales at SF >= 1
        if base in ("slots", "families") and part:
            continue  # one line over both directions / all families
        bound = QUIET_TARGETS[base]
        text = (f"- {dataset}, {protocol_label(protocol)}: stage MdAPE "
                f"{_percent(stage['mdape'])} % (target ≤ {100 * bound:.0f} %: "
                f"{_check(stage['mdape'] <= bound)})")
        if base == "scaleup":
            # today's default model: the registry's now, and fc (the default when filed)
            others = dict.fromkeys([("ernest", 0.5), (default_model, 0.3), ("fc", 0.3)])
            for other, ratio in others:
                row = get(dataset, protocol, other)
                if row is not None and other != "stage":
                    text += _versus(stage, row, target_ratio=ratio)
        if base == "configs-sf1" and stage.get("noise_mdape"):
            ratio = stage["mdape"] / stage["noise_mdape"]
            text += (f"; {ratio:.2f} × the repeat noise {_percent(stage['noise_mdape'])} % "
                     f"(target ≤ 1.5 ×: {_check(ratio <= 1.5)})")
        if base == "workloads-sf1":
            fc = get(dataset, protocol, "fc")
            for dag_model in ("stage", "rnn"):
                row = get(dataset, protocol, dag_model)
                if row is not None and fc is not None:
                    text += _versus(row, fc, target_ratio=0.8)
        lines.append(text)
    for row in rows:
        if ":" in row["protocol"] or row.get("coverage80") is None:
            continue
        low, high = COVERAGE_BAND
        coverage, width = row["coverage80"], row.get("width80")
        lines.append(f"- 80 % interval, {row['dataset']} {protocol_label(row['protocol'])}, "
                     f"{row['model']}: coverage {_percent(coverage)} % (target "
                     f"{100 * low:.0f}–{100 * high:.0f} %: {_check(low <= coverage <= high)}), "
                     f"median width {_width(width)} (aim < ×{WIDTH_TARGET:g}: "
                     f"{_check(width is not None and width < WIDTH_TARGET)})")
    if what_if:
        for timing in what_if:
            lines.append(
                f"- What-if: one prediction with its grid of {timing['grid']}, model "
                f"{timing['model']}: median {timing['median_ms']:.1f} ms over "
                f"{timing['repeats']} repeats (target ≤ {WHAT_IF_TARGET_MS:g} ms: "
                f"{_check(timing['median_ms'] <= WHAT_IF_TARGET_MS)}); timed: "
                f"`{timing['function']}`")
    return lines + [""]


def plot_quiet_cdfs(cells, rows, out: Path, prefix="evaluation_quiet") -> list[Path]:
    """One PNG per dataset: a panel per protocol (and per test scale of (e), per direction
    of (f)), a CDF line per model and the repeat noise's MdAPE as a dashed line."""
    written = []
    for dataset in sorted({c["dataset"] for c in cells}):
        own = [c for c in cells if c["dataset"] == dataset and len(c["y"])]
        panels = []
        for protocol in dict.fromkeys(c["protocol"] for c in own):
            values = sorted({v for c in own if c["protocol"] == protocol
                             for v in (c.get("breakdown") or [])}, key=_breakdown_order)
            if protocol in ("scaleup", "slots") and len(values) > 1:
                panels += [(protocol, value) for value in values]
            else:
                panels.append((protocol, None))
        if not panels:
            continue

        def draw(axis, panel, own=own, dataset=dataset):
            protocol, value = panel
            name = f"{protocol}:{value}" if value is not None else protocol
            noise = next((r.get("noise_mdape") for r in rows if r["dataset"] == dataset
                          and r["protocol"] == name), None)
            _cdf_axis(axis, [c for c in own if c["protocol"] == protocol],
                      lambda cell: None if value is None else
                      np.array(cell.get("breakdown") or [], dtype=object) == value,
                      protocol_label(name), noise=noise)

        path = out / f"{prefix}_cdf_{dataset}.png"
        _cdf_figure(panels, draw, f"{dataset}: CDF of relative error (quiet corpus "
                                  "protocols)", path)
        written.append(path)
    return written


def _shown_path(path) -> str:
    """``path`` relative to the current folder where it lies inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def write_quiet_report(result, out: Path, *, quick=False, command=None, what_if=None,
                       name="evaluation_quiet.md") -> Path:
    """``bench/reports/evaluation_quiet.md``: the issue-13 protocols on the quiet corpus and
    the shared tables, the stage predictor, Ernest and the default model side by side."""
    from jobgauge.models import DEFAULT_MODEL, evaluation

    out.mkdir(parents=True, exist_ok=True)
    rows, cells, frames = result["rows"], result["cells"], result["frames"]
    models = result.get("models") or sorted({r["model"] for r in rows})
    pictures = plot_quiet_cdfs(cells, rows, out, prefix=Path(name).stem)
    timing = result.get("timing") or {}
    command = command or "nice -n 10 .venv/bin/python bench/evaluate.py --quiet-corpus"
    quiet = frames.get("quiet")
    lines = ["# Runtime model evaluation on the quiet corpus (issue 13)", "",
             f"Generated {datetime.date.today().isoformat()} by `bench/evaluate.py`"
             + (" in **quick mode (smoke run: fewer folds and epochs, not a result)**"
                if quick else "")
             + f". Reproduce with `{command}`. This run took "
             f"{timing.get('wall_s', 0.0) / 60:.1f} min of wall time "
             f"({timing.get('computed', 0)} cells computed, {timing.get('cached', 0)} from "
             "the cache in `bench/reports/cache/`), with "
             + ", ".join(_environment().split(";"))
             + ": the same code gives other figures with other versions of these or on "
             "another machine (ff99e5c's scale-up from SF <= 1, 17.1 / 16.5 % in sessions "
             "63 and 66, is 16.8 / 16.8 % in session 64, with the same library versions; "
             "`models.evaluation._machine`).", "",
             f"Models: `stage` (the stage predictor), `ernest` (Ernest), the current "
             f"default model `{DEFAULT_MODEL}` (`models.DEFAULT_MODEL`), `fc` (the "
             "default when issue 13 was filed) and `rnn` (the DAG network, which target (c) "
             "compares with `fc` as it does the stage predictor; it needs the runs' DAGs, "
             "which Scout's and C3O's tables lack); evaluated here: "
             + ", ".join(f"`{m}`" for m in models) + ".", "", "## Data", "",
             "| file | rows | in this evaluation |", "|---|---|---|"]
    lines += [f"| `{_shown_path(path)}` | {count} | {used} |"
              for path, count, used in result.get("files", [])]
    if quiet is not None:
        references = quiet[quiet["profile_reference"]]
        shipped = int((references["corpus"] == "shipped").sum())
        sizes = ", ".join(sorted(set(references["datasize"].astype(str)))) or "none"
        lines += ["", f"Dataset `quiet`: {int((quiet['corpus'] == 'quiet').sum())} quiet runs "
                  f"and {shipped} shipped runs. The reference (profiling) runs, one per "
                  f"workload, at {sizes}: {len(references) - shipped} quiet runs and the "
                  f"{shipped} shipped ones (whose runtimes "
                  "were measured under load; they are here for their profiles). As the "
                  "profiling run a user has, a reference run is on the training side of "
                  "every fold and never scored.", "",
                  "Repeat noise of the quiet runs per scale factor "
                  "(MdAPE of a run against the median of its configuration's other runs; "
                  "with two repeats that is |a − b| / a, twice the deviation from the "
                  "pair's median that the corpus report quotes):",
                  "", "| scale | runs | repeat noise MdAPE (P90) |", "|---|---|---|"]
        own = quiet[quiet["corpus"] == "quiet"] if "corpus" in quiet.columns else quiet
        for label in sorted(set(own["datasize"].astype(str)), key=_breakdown_order):
            noise = noise_floor(own[own["datasize"].astype(str) == label])
            lines.append(f"| {label} | {int((own['datasize'].astype(str) == label).sum())} | "
                         + ("no repeats |" if noise is None else
                            f"{_percent(noise['mdape'])} % ({_percent(noise['p90'])} %) |"))
    doc = evaluation.__doc__
    start, end = doc.find("The quiet corpus"), doc.find("Metrics on the finished")
    quiet_doc = doc[start:end] if 0 <= start < end else doc
    lines += ["", "## Protocols", "", quiet_doc.strip(), "",
              "## Results", "",
              "Per model: MdAPE · coverage of the 80 % interval · median interval width "
              "(high / low); best MdAPE per row in bold. Repeat noise: MdAPE of the finished "
              "test runs against their own repeats, the floor no model can be expected to "
              "beat. A protocol's value rows (SF 3, local[1], a family) follow it.", ""]
    lines += quiet_results_table(rows, models) if rows else ["(no results)"]
    lines += [""] + quiet_targets_section(rows, DEFAULT_MODEL, what_if)
    lines += detail_table(rows)
    for picture in pictures:
        lines += [f"![{picture.stem}]({picture.name})", ""]
    path = out / name
    path.write_text("\n".join(lines))
    return path
