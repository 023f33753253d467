"""What the web form answers at SF 1, 3 and 10, next to what was measured on this machine.

    nice -n 10 .venv/bin/python bench/form_answers.py [--queries 3 9 18] [--scales 1 3 10]
        [--master local[2]]

For each TPC-H query and scale factor, on ``--master`` (local[2]) with Spark's defaults,
the answer of
``Service.estimate`` (the code behind the web form and ``POST /api/v1/estimate``) from
two models, each trained the way the service trains its first model (the default model
on a folder of run tables and their profiles):

- *before*: trained on the shipped quiet runs at SF <= 1 only (plus the HiBench and
  MapReduce runs), so every SF 3 and SF 10 measurement is new to it;
- *shipped*: trained on every shipped table (``data/runs``), as ``jobgauge serve`` does.

Measured: the median runtime of the query inside a warm application (3 warm-up runs,
then each configuration twice; ``time_kind=query``) with the defaults on that master, from
the shipped quiet tables, with the number of runs; the absolute percentage error of
each answer; and whether the answer said it was far outside what was measured.
Writes bench/reports/form_answers.md (``form_answers_local1.md`` for local[1]).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MASTERS = ("local[2]", "local[1]")


def defaults(master: str) -> str:
    """The run tables' ``config_json`` of Spark's defaults on ``master`` (serialised as
    ``jobgauge.runtable`` writes it)."""
    return json.dumps({"spark.master": master}, sort_keys=True)


def _scale(label: str) -> float | None:
    return float(label[2:]) if label.startswith("sf") else None


def measured(tables, master: str = MASTERS[0]) -> dict:
    """{(workload, scale factor): [runtimes]} of the finished runs on ``master`` with the
    defaults in ``tables``."""
    from jobgauge.runtable import read_run_tables

    frame = read_run_tables(tables)
    frame = frame[frame["completed"] & (frame["config_json"] == defaults(master))]
    out = {}
    for row in frame.itertuples():
        scale = _scale(str(row.datasize))
        if scale is not None:
            out.setdefault((row.workload, scale), []).append(float(row.runtime_s))
    return out


def service_for(tables, folder: Path):
    """A web service whose first model trains on ``tables`` (and the profiles beside them)."""
    from jobgauge.runtable import profiles_beside
    from jobgauge.webapp.service import Service

    runs, profiles = folder / "runs", folder / "profiles"
    runs.mkdir(parents=True)
    profiles.mkdir()
    for table in tables:
        shutil.copy(table, runs / table.name)
        for profile in profiles_beside(table):
            shutil.copy(profile, profiles / profile.name)
    return Service(store_url=str(folder / "store.db"), runs_dir=runs, profiles_dir=profiles)


def answer(service, workload: str, scale: float, master: str = "local[2]",
           config: dict | None = None) -> dict:
    """The web form's first option for ``workload`` at SF ``scale`` on ``master``, with
    the settings ``config`` (Spark's defaults without)."""
    from jobgauge.webapp.requests import parse_estimate

    request = parse_estimate({"workload": workload, "scale": scale,
                              "instance_types": [master], "config": dict(config or {})},
                             known_workloads=service.known_workloads(),
                             catalog_names=list(service.instance_options()))
    option = service.estimate(request, plan=False)["options"][0]
    return option


def _name_order(workload: str) -> tuple:
    """Sort key of a workload name: its text, then its number (tpch-q3 before tpch-q18)."""
    number = re.search(r"(\d+)$", workload)
    return (workload[:number.start()] if number else workload,
            int(number.group(1)) if number else -1)


def main(argv=None) -> int:
    from jobgauge.data import run_tables
    from jobgauge.models import DEFAULT_MODEL
    from jobgauge.models.evaluation import quiet_run_tables

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", nargs="+", type=int, default=[3, 9, 18])
    parser.add_argument("--scales", nargs="+", type=float, default=[1, 3, 10])
    parser.add_argument("--checks", nargs="*", default=None, metavar="TABLE",
                        help="run tables of sizes the corpus lacks, measured as a check and "
                             "never trained on (default: data/checks/runs/*.csv.gz)")
    parser.add_argument("--master", default=MASTERS[0], choices=MASTERS,
                        help="the Spark master asked about and measured (default local[2])")
    parser.add_argument("--out", default=str(REPO / "bench" / "reports"))
    args = parser.parse_args(argv)
    checks = [Path(p) for p in args.checks] if args.checks is not None \
        else sorted((REPO / "data" / "checks" / "runs").glob("*.csv.gz"))
    checks = [p for p in checks if measured([p], args.master)]   # that master's defaults
    checked = measured(checks, args.master) if checks else {}
    started = time.perf_counter()
    shipped = run_tables()
    quiet = {str(p) for p in quiet_run_tables()}
    small = [p for p in shipped if str(p) not in quiet
             or all((_scale(s) or 0) <= 1 for s in _sizes(p))]
    truth = measured([p for p in shipped if str(p) in quiet], args.master)
    rows = []
    with tempfile.TemporaryDirectory(prefix="jobgauge-form-") as tmp:
        services = {"before": service_for(small, Path(tmp) / "before"),
                    "shipped": service_for(shipped, Path(tmp) / "shipped")}
        for query in args.queries:
            for scale in args.scales:
                workload = f"tpch-q{query}"
                row = {"workload": workload, "scale": scale,
                       "measured": truth.get((workload, scale), [])}
                for name, service in services.items():
                    row[name] = answer(service, workload, scale, args.master)
                rows.append(row)
                print(_line(row), flush=True)
        extra = []
        for workload, scale in sorted(checked, key=lambda k: (_name_order(k[0]), k[1])):
            row = {"workload": workload, "scale": scale, "measured": checked[(workload, scale)]}
            for name, service in services.items():
                row[name] = answer(service, workload, scale, args.master)
            extra.append(row)
            print(_line(row), flush=True)
    report = _report(rows, args, small, shipped, DEFAULT_MODEL, time.perf_counter() - started,
                     extra=extra, checks=checks)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "form_answers.md" if args.master == MASTERS[0] else \
        f"form_answers_{args.master.replace('[', '').replace(']', '')}.md"
    (out / name).write_text(report)
    print(f"report: {out / name}", file=sys.stderr)
    return 0


def _sizes(path) -> set:
    from jobgauge.runtable import read_run_tables

    return set(read_run_tables([path])["datasize"].astype(str))


def _cell(option: dict, runs: list) -> str:
    predicted = option["runtime_s"]
    text = f"{predicted:.2f} s [{option['low_s']:.2f}, {option['high_s']:.2f}]"
    if runs:
        median = statistics.median(runs)
        text += f", {abs(predicted - median) / median:.0%} off"
    if option.get("outside_measured"):
        text += ", *far outside what was measured*"
    return text


def _line(row) -> str:
    runs = row["measured"]
    seen = f"{statistics.median(runs):.2f} s ({len(runs)} runs)" if runs else "not measured"
    return (f"| {row['workload']} | {row['scale']:g} | {seen} | "
            f"{_cell(row['before'], runs)} | {_cell(row['shipped'], runs)} |")


def _mdape_lines(rows) -> list[str]:
    lines = []
    for name in ("before", "shipped"):
        values = [abs(r[name]["runtime_s"] - statistics.median(r["measured"]))
                  / statistics.median(r["measured"]) for r in rows if r["measured"]]
        if values:
            lines.append(f"- {name}: MdAPE {statistics.median(values):.1%} over "
                         f"{len(values)} measured questions")
    return lines


def _report(rows, args, small, shipped, model, wall_s, *, extra=(), checks=()) -> str:
    def names(paths):
        return ", ".join(f"`{Path(p).name}`" for p in paths)

    command = "nice -n 10 .venv/bin/python bench/form_answers.py"
    if argv_given := sys.argv[1:]:
        command += " " + " ".join(argv_given)
    lines = ["# The web form's answers next to measurements (issue 13)", "",
             f"Reproduce with `{command}` ({wall_s:.0f} s). Model: `{model}` (the default), "
             f"trained as the web service trains its first model. Question: TPC-H on {args.master} "
             "with Spark's defaults; answer: `Service.estimate` (the web form and "
             "`POST /api/v1/estimate`), predicted runtime [80 % interval] and its error "
             "against the median measured runtime of the query inside a warm application.", "",
             f"- *before*: trained on {names(small)} (quiet runs at SF <= 1 plus the "
             "HiBench and MapReduce runs): the SF 3 and SF 10 measurements are new to it.",
             f"- *shipped*: trained on every shipped table, {names(shipped)}.", "",
             "| query | SF | measured (median) | before | shipped |", "|---|---|---|---|---|"]
    lines += [_line(row) for row in rows]
    lines.append("")
    lines += _mdape_lines(rows)
    if extra:
        lines += ["", "## A size the corpus lacks", "",
                  f"Measured as a check ({names(checks)}, `data/checks/`: never trained on), "
                  "the same question at a scale factor no shipped table holds.", "",
                  "| query | SF | measured (median) | before | shipped |", "|---|---|---|---|---|"]
        lines += [_line(row) for row in extra]
        lines.append("")
        lines += _mdape_lines(extra)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
