"""The what-if picture: predicted runtime and cost against node count, one line
per instance type (as Sparklens draws a job's runtime against executors).

Drawn with matplotlib's object API on the Agg canvas (no pyplot state, so it is
safe in a threaded server) and returned as PNG bytes.
"""

from __future__ import annotations

import base64
import io

FAR_ABOVE = 3.0   # a deadline/budget more than this many times the largest value is not drawn
_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22")


def what_if_png(rows: list[dict], *, recommended: dict | None = None, deadline_s=None,
                budget_usd=None, title: str = "") -> bytes:
    """PNG of runtime (with its interval) and cost per node count, per instance type.

    ``rows`` are :meth:`Service.estimate` options (``instance_type``,
    ``instance_count``, ``runtime_s``, ``low_s``, ``high_s``, ``cost_usd``, and
    ``outside_measured``: such points are drawn hollow, with a legend entry).
    Local types (one point each) are drawn as markers; their cost axis is empty
    (this machine has no hourly price).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(9.6, 4.0), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    runtime_axes, cost_axes = figure.subplots(1, 2)
    names = list(dict.fromkeys(r["instance_type"] for r in rows))
    any_cost = any_outside = False
    for index, name in enumerate(names):
        own = sorted((r for r in rows if r["instance_type"] == name),
                     key=lambda r: r["instance_count"])
        color = _COLORS[index % len(_COLORS)]
        counts = [r["instance_count"] for r in own]
        runtime = [r["runtime_s"] for r in own]
        marker = "s" if len(own) == 1 else "o"
        runtime_axes.plot(counts, runtime, marker=marker, markersize=4, color=color, label=name)
        if len(own) > 1:
            runtime_axes.fill_between(counts, [r["low_s"] for r in own],
                                      [r["high_s"] for r in own], color=color, alpha=0.12,
                                      linewidth=0)
        else:
            runtime_axes.errorbar(counts, runtime, yerr=[[runtime[0] - own[0]["low_s"]],
                                                         [own[0]["high_s"] - runtime[0]]],
                                  color=color, capsize=3, linewidth=1)
        costs = [r["cost_usd"] for r in own]
        if all(c is not None for c in costs):
            any_cost = True
            cost_axes.plot(counts, costs, marker=marker, markersize=4, color=color, label=name)
        outside = [r for r in own if r.get("outside_measured")]
        if outside:
            any_outside = True
            hollow = {"marker": marker, "markersize": 7, "linestyle": "none",
                      "markerfacecolor": "white", "markeredgecolor": color,
                      "markeredgewidth": 1.5, "zorder": 4}
            runtime_axes.plot([r["instance_count"] for r in outside],
                              [r["runtime_s"] for r in outside], **hollow)
            priced = [r for r in outside if r["cost_usd"] is not None]
            if priced and all(c is not None for c in costs):
                cost_axes.plot([r["instance_count"] for r in priced],
                               [r["cost_usd"] for r in priced], **hollow)
    if any_outside:   # one legend entry for every hollow point
        runtime_axes.plot([], [], marker="o", markersize=7, linestyle="none",
                          markerfacecolor="white", markeredgecolor="#555", markeredgewidth=1.5,
                          label="far outside what was measured")
    if recommended is not None:
        runtime_axes.plot([recommended["instance_count"]], [recommended["runtime_s"]],
                          marker="*", markersize=14, color="#222", linestyle="none",
                          label="recommended", zorder=5)
        if recommended.get("cost_usd") is not None:
            cost_axes.plot([recommended["instance_count"]], [recommended["cost_usd"]],
                           marker="*", markersize=14, color="#222", linestyle="none", zorder=5)
    # A limit far above every prediction would squash the lines: say so instead of drawing it.
    if deadline_s is not None:
        if deadline_s <= FAR_ABOVE * max(r["high_s"] for r in rows):
            runtime_axes.axhline(deadline_s, color="#b00020", linestyle="--", linewidth=1,
                                 label=f"deadline {deadline_s:g} s")
        else:
            runtime_axes.text(0.98, 0.96, f"deadline {deadline_s:g} s: far above",
                              ha="right", va="top", transform=runtime_axes.transAxes,
                              color="#b00020", fontsize=8)
    costs_known = [r.get("cost_high_usd") or r["cost_usd"] for r in rows
                   if r["cost_usd"] is not None]
    if budget_usd is not None and any_cost:
        if budget_usd <= FAR_ABOVE * max(costs_known):
            cost_axes.axhline(budget_usd, color="#b00020", linestyle="--", linewidth=1,
                              label=f"budget ${budget_usd:g}")
        else:
            cost_axes.text(0.98, 0.96, f"budget ${budget_usd:g}: far above", ha="right",
                           va="top", transform=cost_axes.transAxes, color="#b00020", fontsize=8)
    runtime_axes.set_title("Predicted runtime (80 % interval shaded)", fontsize=10)
    runtime_axes.set_xlabel("nodes")
    runtime_axes.set_ylabel("seconds")
    runtime_axes.grid(alpha=0.3)
    cost_axes.set_title("Predicted cost per run", fontsize=10)
    cost_axes.set_xlabel("nodes")
    cost_axes.set_ylabel("US dollars")
    cost_axes.grid(alpha=0.3)
    handles, labels = runtime_axes.get_legend_handles_labels()
    extra = [(h, lbl) for h, lbl in zip(*cost_axes.get_legend_handles_labels())
             if lbl.startswith("budget")]
    for handle, label in extra:
        handles.append(handle)
        labels.append(label)
    figure.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 6),
                  fontsize=8, frameon=False)
    if not any_cost:
        cost_axes.text(0.5, 0.5, "no hourly price:\nonly this machine (local) was chosen",
                       ha="center", va="center", transform=cost_axes.transAxes, color="#5b6675")
    counts = sorted({r["instance_count"] for r in rows})
    for axes in (runtime_axes, cost_axes):
        axes.set_xticks(counts if len(counts) <= 12 else counts[::max(1, len(counts) // 10)])
    if title:
        figure.suptitle(title, fontsize=11)
    return _png(figure)


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def job_runs_png(runs: list[dict]) -> bytes:
    """PNG of one job's runs, oldest first: runtime, and cost (US dollars where every
    run's node price is known, else core-hours), failed runs as red crosses.

    ``runs`` are :func:`jobgauge.webapp.jobs.job_history` runs (``index``,
    ``runtime_s``, ``status``, ``cost_usd``, ``core_hours``).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(9.6, 3.4), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    runtime_axes, cost_axes = figure.subplots(1, 2)
    priced = all(r["cost_usd"] is not None for r in runs)
    cost_key, cost_label = ("cost_usd", "US dollars") if priced else ("core_hours", "core-hours")
    for axes, key in ((runtime_axes, "runtime_s"), (cost_axes, cost_key)):
        shown = [r for r in runs if r[key] is not None]
        axes.plot([r["index"] for r in shown], [r[key] for r in shown], color=_COLORS[0],
                  marker="o", markersize=4, linewidth=1)
        failed = [r for r in shown if r["status"] != "succeeded"]
        if failed:
            axes.plot([r["index"] for r in failed], [r[key] for r in failed], color="#b00020",
                      marker="x", markersize=8, linestyle="none", label="failed")
            axes.legend(fontsize=8, frameon=False)
        axes.set_xlabel("run (oldest first)")
        axes.grid(alpha=0.3)
        axes.set_ylim(bottom=0)
        indexes = [r["index"] for r in runs]
        axes.set_xticks(indexes if len(indexes) <= 12 else indexes[::max(1, len(indexes) // 10)])
    runtime_axes.set_title("Runtime per run", fontsize=10)
    runtime_axes.set_ylabel("seconds")
    cost_axes.set_title("Cost per run" if priced else
                        "Cost per run (core-hours: no node price known)", fontsize=10)
    cost_axes.set_ylabel(cost_label)
    return _png(figure)


def what_if_executors_png(what_if: list[dict], executors: int) -> bytes:
    """PNG of an application's replayed runtime and utilisation against its executor count
    (the report's ``what_if`` rows), the run itself starred."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.4), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    points = [p for p in what_if if p["runtime_s"] is not None]
    counts = [p["executors"] for p in points]
    axes.plot(counts, [p["runtime_s"] for p in points], color=_COLORS[0], marker="o",
              markersize=4, label="runtime")
    own = [p for p in points if p["share"] == 1.0]
    if own:
        axes.plot([own[0]["executors"]], [own[0]["runtime_s"]], marker="*", markersize=14,
                  color="#222", linestyle="none", label=f"this run ({executors})", zorder=5)
    axes.set_xlabel("executors")
    axes.set_ylabel("seconds")
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)
    used = [p for p in points if p["utilisation"] is not None]
    handles, labels = axes.get_legend_handles_labels()
    if used:
        share_axes = axes.twinx()
        share_axes.plot([p["executors"] for p in used], [100 * p["utilisation"] for p in used],
                        color=_COLORS[1], linestyle="--", linewidth=1, label="utilisation")
        share_axes.set_ylabel("utilisation (%)")
        share_axes.set_ylim(0, 105)
        more = share_axes.get_legend_handles_labels()
        handles, labels = handles + more[0], labels + more[1]
    figure.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=8,
                  frameon=False)
    axes.set_title("Runtime on more or fewer executors (replayed)", fontsize=10)
    return _png(figure)


def png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
