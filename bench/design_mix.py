"""Which SF 1 table the stage model should learn from, scored on the SF 3 table measured
the same way and on the one measured the other way: protocol (e) of issue 13 (scale-up
from SF <= 1) with each design on each side.

    nice -n 10 .venv/bin/python bench/design_mix.py [--json]

Two designs measured the same TPC-H configurations at SF 1 and SF 3 on this machine:

- ``tpch-sf1`` and ``tpch-sf3`` (``data/runs``, in training): every query of a
  configuration in one application, 3 warm-ups;
- ``tpch-sf1-v5`` and ``tpch-sf3-v5`` (``data/recollect/runs``, out of training): the
  same design with 8 warm-ups of the query, measured alone (repeat noise 8.9 and 6.8 %
  against 11.9 and 10.6 %).

SF 10 was measured both ways too: ``tpch-sf10`` (``data/runs``) and ``tpch-sf10-v5``
(``data/recollect/runs``, the same configurations, Spark's defaults first; it may hold
only part of its plan, ``bench/plans/tpch-sf10-v5.toml``).

For each SF 1 table the model is fitted on protocol (e)'s training
side (``models.evaluation.protocol_folds(frame, "scaleup")``: the quiet runs at
SF <= 1 and every workload's reference run), with the other quiet tables of
``data/runs`` as shipped, and asked every run of both SF 3 tables and of both SF 10
tables.  Each cell is the MdAPE over the finished runs and the median log bias (log of
predicted over measured); an SF 10 table is scored on all its runs and on the
queries and configurations both SF 10 tables hold ("shared"), so that a partly
measured table is compared on like runs.  Per configuration, the bias at SF 3, and what
the configuration measured against Spark's defaults in each table.  Each model
(``--models``: specs as ``bench/evaluate.py`` takes them; by default the stage model as
shipped and with ``corrector_beyond="factor"``) is fitted twice; about 90 seconds a model
alone on the machine.  Prints Markdown and
writes ``bench/reports/design_mix.md``; ``--json`` prints the figures.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from _report import report_main  # noqa: E402  (bench/_report.py)

#: SF 1 and SF 3 tables of each design: (folder under the repository, table name).
DESIGNS = {"one application, 3 warm-ups": {"sf1": ("data", "tpch-sf1"),
                                           "sf3": ("data", "tpch-sf3"),
                                           "sf10": ("data", "tpch-sf10")},
           "v5: 8 warm-ups, alone": {"sf1": ("data/recollect", "tpch-sf1-v5"),
                                     "sf3": ("data/recollect", "tpch-sf3-v5"),
                                     "sf10": ("data/recollect", "tpch-sf10-v5")}}
#: Both designs' SF 10 tables: in every folder, scored, never learned from.
SF10 = tuple(design["sf10"] for design in DESIGNS.values())
SF10_NAMES = tuple(name for _, name in SF10)
#: The shipped TPC-H tables a design's pair replaces.
REPLACED = ("tpch-sf1", "tpch-sf3")


def _folder(root: Path, sf1, sf3) -> Path:
    """A quiet-corpus folder of links: ``data/runs`` and ``data/profiles`` as shipped,
    with :data:`REPLACED` swapped for the tables ``sf1`` and ``sf3``, and both SF 10
    tables (:data:`SF10`)."""
    out = root / f"{sf1[1]}+{sf3[1]}"
    for kind in ("runs", "profiles"):
        (out / kind).mkdir(parents=True)
        for path in sorted((REPO / "data" / kind).iterdir()):
            if path.name.split(".")[0] not in REPLACED + SF10_NAMES:
                (out / kind / path.name).symlink_to(path)
        for base, name in (sf1, sf3) + SF10:
            for path in sorted((REPO / base / kind).glob(f"{name}.*")):
                (out / kind / path.name).symlink_to(path)
    return out


def _label(config: str) -> str:
    """A configuration's settings as the report names them: each key's last word, the
    local[2] master left out."""
    import json

    settings = {k: v for k, v in json.loads(config).items()
                if (k, v) != ("spark.master", "local[2]")}
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in sorted(settings.items())) \
        or "defaults"


def _scores(frame, predicted) -> dict:
    """Over the finished runs: their count, the MdAPE (``models.evaluation.metrics``) and
    the median log of predicted over measured."""
    import numpy as np

    from jobgauge.models.evaluation import metrics

    done = frame["completed"].astype(bool).to_numpy()
    measured = frame["runtime_s"].to_numpy()[done]
    return {"runs": int(done.sum()),
            "mdape": round(metrics(measured, predicted[done])["mdape"], 4),
            "bias": round(float(np.median(np.log(predicted[done] / measured))), 4)}


def _sf10_cells(asked, predicted, plans, cell: dict) -> list:
    """``cell`` scored on each SF 10 table (:data:`SF10`) that holds runs: on all of them,
    then on the queries and configurations every one of those tables holds
    (``shared``)."""
    import numpy as np

    tables = [name for name in SF10_NAMES if (plans == name).any()]
    pairs = (asked["workload"].astype(str) + " " + asked["config_json"].astype(str)).to_numpy()
    shared = set.intersection(*(set(pairs[plans == name]) for name in tables)) \
        if tables else set()
    cells = []
    for name in tables:
        for label, at in ((name, plans == name),
                          (f"{name} (shared)", (plans == name) & np.isin(pairs, list(shared)))):
            if label.endswith("(shared)") and at.sum() == (plans == name).sum():
                continue            # the same runs as the line above
            cells.append({**cell, "scored": label, **_scores(asked[at], predicted[at])})
    return cells


def _effects(frame, table: str) -> dict:
    """Per local configuration of ``table``, what it measured against Spark's defaults:
    the median over queries of the log ratio of the query's median finished times."""
    import numpy as np

    runs = frame[(frame["run_id"].astype(str).str.split(":").str[0] == table)
                 & frame["completed"].astype(bool)]
    times = runs.groupby(["config_json", "workload"])["runtime_s"].median()
    labels = {config: _label(config) for config in times.index.get_level_values(0)}
    base = [config for config, label in labels.items() if label == "defaults"]
    if len(base) != 1:
        return {}
    defaults = times.loc[base[0]]
    return {labels[config]: round(float(np.median(np.log(
        times.loc[config] / defaults.reindex(times.loc[config].index)).dropna())), 3)
        for config in sorted(labels) if config != base[0]}


def options(parser) -> None:
    parser.add_argument("--models", nargs="+", metavar="SPEC",
                        default=["stage", "stage:corrector_beyond=factor"],
                        help="models to score, as bench/evaluate.py names them "
                        "(name or name:key=value,...; default: the stage model, and the "
                        "same with its corrector's factor carried past the measured sizes)")


def figures(args) -> dict:
    from jobgauge.models.evaluation import (model_from_spec, protocol_folds,
                                            quiet_frame_and_records)

    cells, per_configuration, effects, frames = [], {}, {}, {}
    with tempfile.TemporaryDirectory() as root:
        for spec in args.models:
            for trained, design in DESIGNS.items():
                model = None
                for scored, other in DESIGNS.items():
                    pair = (design["sf1"], other["sf3"])
                    if pair not in frames:      # read once, for every model
                        frames[pair] = quiet_frame_and_records(
                            _folder(Path(root), *pair))[0].reset_index(drop=True)
                    frame = frames[pair]
                    ((train, test),) = protocol_folds(frame, "scaleup")
                    if model is None:
                        model = model_from_spec(spec, random_state=0).fit(
                            frame.iloc[train].reset_index(drop=True))
                    for table in (design["sf1"][1], other["sf3"][1]) + SF10_NAMES:
                        if table not in effects:
                            effects[table] = _effects(frame, table)
                    asked = frame.iloc[test].reset_index(drop=True)
                    predicted = model.predict(asked)
                    plans = asked["run_id"].astype(str).str.split(":").str[0].to_numpy()
                    at = plans == other["sf3"][1]
                    cells.append({"model": spec, "trained": trained,
                                  "scored": other["sf3"][1],
                                  **_scores(asked[at], predicted[at])})
                    if scored == trained:   # the SF 10 tables are in both folders: once
                        cells += _sf10_cells(asked, predicted, plans,
                                             {"model": spec, "trained": trained})
                    for config in sorted(set(asked["config_json"][at])):
                        pick = at & (asked["config_json"] == config).to_numpy()
                        per_configuration.setdefault(_label(config), {})[
                            f"{spec}: {design['sf1'][1]} → {other['sf3'][1]}"] = \
                            _scores(asked[pick], predicted[pick])["bias"]
    return {"cells": cells, "per_configuration": per_configuration, "effects": effects}


def markdown(found: dict, seconds: float) -> str:
    lines = ["# Which SF 1 design to learn from", "",
             f"Generated by `bench/design_mix.py` in {seconds:.0f} s. Reproduce with "
             "`nice -n 10 .venv/bin/python bench/design_mix.py`. The stage model fitted on "
             "protocol (e)'s training side with each SF 1 table, scored at SF 3 on each "
             "design's table and at SF 10 on both designs' tables (\"shared\": the "
             "queries and configurations both SF 10 tables hold): MdAPE over the finished runs, "
             "and the median log bias.", "",
             "| model | SF 1 table learned from | scored on | runs | MdAPE | bias |",
             "|---|---|---|---|---|---|"]
    for cell in found["cells"]:
        lines.append(f"| `{cell['model']}` | {cell['trained']} | `{cell['scored']}` | {cell['runs']} | {100 * cell['mdape']:.1f} % | {cell['bias']:+.3f} |")
    columns = sorted({key for row in found["per_configuration"].values() for key in row})
    lines += ["", "Median log bias at SF 3 per local configuration (learned from → scored "
              "on):", "", "| configuration | " + " | ".join(columns) + " |",
              "|---|" + "---|" * len(columns)]
    for config, row in sorted(found["per_configuration"].items()):
        lines.append(f"| {config} | " + " | ".join(
            f"{row[c]:+.3f}" if c in row else "—" for c in columns) + " |")
    tables = sorted(found["effects"])
    lines += ["", "Measured: each local configuration against Spark's defaults, the median "
              "over queries of the log ratio of their median times (+0.693 is twice as "
              "slow):", "", "| configuration | " + " | ".join(f"`{t}`" for t in tables)
              + " |", "|---|" + "---|" * len(tables)]
    for config in sorted({c for t in tables for c in found["effects"][t]}):
        lines.append(f"| {config} | " + " | ".join(
            f"{found['effects'][t][config]:+.3f}" if config in found["effects"][t] else "—"
            for t in tables) + " |")
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    return report_main(argv, __doc__, figures, markdown, "design_mix.md", options)


if __name__ == "__main__":
    sys.exit(main())
