"""Where the corpus's repeat noise comes from, and how much of it the collector's guard takes out.

    nice -n 10 .venv/bin/python bench/guard_noise.py [--measure] [--repeats 5] [--pause 30]

Issue 13 asks for a repeat noise of at most 5 % at SF >= 1; the shipped tables have
11.8-12.5 % at SF 1 and SF 3 (``bench/reports/corpus.md``).

Always (a few seconds), from the shipped TPC-H tables and their profiles: each query's
*first* run in its application (the profiles' stage ids order the runs of an application)
against the other run of its configuration.  The collector warmed every application up
on one workload only, so that run compiled the query's code.

With ``--measure`` (about 15 minutes; run it alone on the machine), TPC-H Q3, Q5, Q9 and
Q18 at SF 1 on local[2]:

- ``jobgauge collect`` of a plan with Spark's defaults and 8 shuffle partitions, each 3
  times in one application, with this collector (its guard and its warm-ups);
- the four queries in one warm application (``WarmRunner``, 3 warm-up runs of each),
  ``--repeats`` times each in rounds, back to back and then with ``--pause`` seconds of
  idle machine before each run.

Noise here is the median over pairs of repeats of |log(a / b)| (the corpus's noise, a
run against its configuration's other run, is the same measure for two repeats), and,
for three or more repeats, the median deviation of a run from the median of the others.
Writes ``bench/reports/guard_noise.md``.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import report_main  # noqa: E402

QUERIES = ("tpch-q3", "tpch-q5", "tpch-q9", "tpch-q18")
SIZE = "sf1"
TABLES = ("quiet-tpch-sf0.1", "quiet-tpch-sf0.3", "tpch-sf1", "tpch-sf3", "tpch-sf10")
#: The same plan collected twice by the collector before session 41 (commit 1f4cd8f: the
#: guard waited on the 1-minute load average, one workload warmed each application up), on
#: this machine on 2026-11-29, alone: reproduce with ``git checkout 1f4cd8f --
#: profiler/runners`` and ``jobgauge collect`` of the plan this script writes.
BEFORE = [{"commit": "1f4cd8f", "runs": 24, "pair_log": 0.161, "vs_others": 0.111,
           "wall_s": 298.0, "waited_s": [0.0, 48.1]},
          {"commit": "1f4cd8f", "runs": 24, "pair_log": 0.119, "vs_others": 0.142,
           "wall_s": 118.0, "waited_s": [0.0, 4.0]}]

PLAN = """name = "{name}"
workloads = {workloads}
sizes = ["{size}"]
timeout_s = 300
seed = {seed}
warmup_runs = 3
{keys}out = "{out}"

[repeats]
fraction = 1.0
times = 3

[[groups]]
master = "local[2]"
conf = {{}}
sessions = [
    {{}},
    {{"spark.sql.shuffle.partitions" = "8"}},
]
"""


def plan_text(name: str, queries, size: str, out: Path, seed: int, **keys) -> str:
    """A collect plan of ``queries`` at ``size`` on local[2]: Spark's defaults and 8
    shuffle partitions, 3 times each in one application after 3 warm-ups, with the plan
    keys ``keys`` besides (``bench/noise_sources.py`` asks for more warm-ups and for one
    query per application)."""
    extra = "".join(f"{key} = {str(value).lower() if isinstance(value, bool) else value}\n"
                    for key, value in keys.items())
    return PLAN.format(name=name, workloads=json.dumps(list(queries)), size=size, seed=seed,
                       keys=extra, out=out)


def noise(groups) -> dict:
    """{pairs, pair_log, vs_others}: the median |log(a / b)| over pairs of repeats, and the
    repeat noise of the groups of 3 or more (``jobgauge.runtable.repeat_noise``: a run's
    deviation from the median of its group's other runs)."""
    from jobgauge.runtable import repeat_noise

    groups = [[t for t in times if t] for times in groups]
    pairs = [abs(math.log(a / b)) for times in groups
             for a, b in itertools.combinations(times, 2)]
    others = repeat_noise([times for times in groups if len(times) >= 3])
    return {"pairs": len(pairs), "pair_log": round(statistics.median(pairs), 3) if pairs else None,
            "vs_others": round(others["mdape"], 3) if others else None}


def first_runs() -> list[dict]:
    """Per shipped table: the pairs of repeats with and without a query's first run in its
    application, and how the first run compares with its partner."""
    from jobgauge.models.evaluation import quiet_frame_and_records

    _, records = quiet_frame_and_records()
    runs = []
    for (_, run_id), record in records.items():
        plan = run_id.split(":")[0]
        stages = record.get("stages") or []
        if plan not in TABLES or not stages or not (record.get("summary") or {}).get("app_id"):
            continue
        runs.append({"plan": plan, "query": run_id.split(":")[1], "run_id": run_id,
                     "config": run_id.rsplit(":", 1)[0], "app": record["summary"]["app_id"],
                     "first_stage": min(s["stage_id"] for s in stages),
                     "runtime_s": record["summary"]["runtime_s"]})
    earliest = {}
    for run in runs:
        key = (run["app"], run["query"])
        earliest[key] = min(earliest.get(key, run["first_stage"]), run["first_stage"])
    by_config = defaultdict(list)
    for run in runs:
        run["first"] = run["first_stage"] == earliest[(run["app"], run["query"])]
        by_config[(run["plan"], run["config"])].append(run)
    out = []
    for plan in TABLES:
        with_first, without, against = [], [], []
        for (name, _), pair in by_config.items():
            if name != plan or len(pair) != 2 or not all(r["runtime_s"] for r in pair):
                continue
            a, b = pair
            (with_first if a["first"] or b["first"] else without).append(
                [a["runtime_s"], b["runtime_s"]])
            if a["first"] != b["first"]:
                first, other = (a, b) if a["first"] else (b, a)
                against.append(math.log(first["runtime_s"] / other["runtime_s"]))
        if not with_first and not without:
            continue
        out.append({"plan": plan, "with_first": noise(with_first), "without": noise(without),
                    "first_vs_partner": round(statistics.median(against), 3) if against else None,
                    "first_slower": round(sum(x > 0 for x in against) / len(against), 2)
                    if against else None})
    return out


def collected(folder: Path) -> dict:
    """Collect the plan with this collector in ``folder``; its noise and timings."""
    from jobgauge.profiler.runners.collect import Journal, collect

    plan = folder / "guard-noise.toml"
    plan.write_text(plan_text("guard-noise", QUERIES, SIZE, folder / "guard-noise.csv.gz", 41),
                    encoding="utf-8")
    started = time.perf_counter()
    collect(plan, work_dir=folder / "work", progress=False)
    wall = time.perf_counter() - started
    rows = [e["run"] for e in Journal(folder / "work" / "journal.jsonl").entries.values()]
    groups = defaultdict(list)
    for row in rows:
        if row["status"] == "succeeded":
            groups[row["run_id"].rsplit(":r", 1)[0]].append(row["runtime_s"])
    waited = [row.get("load_waited_s") or 0.0 for row in rows]
    return {"runs": len(rows), **noise(groups.values()), "wall_s": round(wall, 1),
            "waited_s": [min(waited), max(waited)],
            "remeasured": sum(1 for row in rows if row.get("remeasured")),
            "per_config": {k.split(":", 1)[1]: v for k, v in sorted(groups.items())}}


def warm_rounds(folder: Path, repeats: int, pause_s: float) -> dict:
    """The queries in one warm application, ``repeats`` rounds in a seeded order, back to
    back and then with ``pause_s`` seconds idle before each run."""
    from jobgauge.profiler import WarmRunner

    out = {}
    with WarmRunner(master="local[2]", warmup="workload", warmup_runs=3, profiles=False,
                    work_dir=folder / "warm", eventlog_dir=folder / "eventlogs") as runner:
        for phase, pause in (("back to back", 0.0), (f"{pause_s:g} s idle before each", pause_s)):
            times = defaultdict(list)
            for round_ in range(repeats):
                order = list(QUERIES)
                random.Random(round_).shuffle(order)
                for query in order:
                    time.sleep(pause)
                    run = runner.run(query, SIZE, {}, timeout_s=300)
                    if run["status"] != "succeeded":
                        raise SystemExit(f"{query} {SIZE}: {run['status']}: {run.get('error')}")
                    times[query].append(run["runtime_s"])
            out[phase] = {**noise(times.values()), "runs": dict(times)}
    return out


def figures(args) -> dict:
    found = {"first_runs": first_runs()}
    if args.measure:
        with tempfile.TemporaryDirectory(prefix="guard-noise-") as tmp:
            found["collected"] = collected(Path(tmp))
            found["warm"] = warm_rounds(Path(tmp), args.repeats, args.pause)
        found["before"] = BEFORE
    return found


def _pct(value) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


def markdown(found: dict, seconds: float) -> str:
    lines = ["# Repeat noise and the collector's guard (`bench/guard_noise.py`)", "",
             "Noise: the median over pairs of repeats of |log(a / b)|, and, for 3 or more "
             "repeats, the median deviation of a run from the median of the others. "
             f"This run took {seconds / 60:.1f} min.", "",
             "## A query's first run in its application (the shipped tables)", "",
             "The collector warmed each application up on one workload; every other query's "
             "first run in the application compiled its code. Pairs of repeats with and "
             "without such a run, and the first run against its partner:", "",
             "| table | pairs with a first run | noise | pairs without | noise | first run / "
             "partner (median log) | first run slower |", "|---|---|---|---|---|---|---|"]
    for row in found["first_runs"]:
        slower = "—" if row["first_slower"] is None else f"{100 * row['first_slower']:.0f} %"
        lines.append(f"| {row['plan']} | {row['with_first']['pairs']} | "
                     f"{row['with_first']['pair_log']} | {row['without']['pairs']} | "
                     f"{row['without']['pair_log']} | {row['first_vs_partner']} | "
                     f"{slower} |")
    if "collected" in found:
        got, before = found["collected"], found["before"]
        lines += ["", "## The same plan collected before and after (TPC-H Q3, Q5, Q9, Q18 at "
                  "SF 1, local[2], the defaults and 8 shuffle partitions, 3 times each)", "",
                  "| collector | runs | pair noise | run vs the others | wall | waited before "
                  "a run | measured again |", "|---|---|---|---|---|---|---|"]
        lines += [f"| before ({row['commit']}: the 1-minute load average; one warm-up "
                  f"workload) | {row['runs']} | {row['pair_log']} | "
                  f"{_pct(row['vs_others'])} | {row['wall_s']:.0f} s | "
                  f"{row['waited_s'][0]:g}-{row['waited_s'][1]:g} s | — |" for row in before]
        lines += [f"| this one (other processes' CPU over 1 s; each workload warmed up) | "
                  f"{got['runs']} | {got['pair_log']} | {_pct(got['vs_others'])} | "
                  f"{got['wall_s']:.0f} s | {got['waited_s'][0]:g}-{got['waited_s'][1]:g} s | "
                  f"{got['remeasured']} |", "",
                  "The *before* rows were measured in session 41 with the collector of "
                  f"commit {before[0]['commit']} on the plan this script writes; they are not "
                  "measured again here.", "", "Runs per configuration (this collector):", ""]
        lines += [f"- {key}: {', '.join(f'{t:.2f}' for t in times)} s"
                  for key, times in got["per_config"].items()]
        lines += ["", "## Idle before a run (one warm application, the same four queries)", "",
                  "| runs | repeats | pair noise | run vs the others |", "|---|---|---|---|"]
        for phase, row in found["warm"].items():
            lines.append(f"| {phase} | {sum(len(t) for t in row['runs'].values())} | "
                         f"{row['pair_log']} | {_pct(row['vs_others'])} |")
    lines += ["", "Command: `nice -n 10 .venv/bin/python bench/guard_noise.py"
              f"{' --measure' if 'collected' in found else ''}`", ""]
    return "\n".join(lines)


def options(parser) -> None:
    parser.add_argument("--measure", action="store_true",
                        help="collect the plan and time the warm rounds (about 15 minutes)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pause", type=float, default=30.0,
                        help="seconds of idle machine before each run of the second phase")


def main(argv=None) -> int:
    return report_main(argv, __doc__, figures, markdown, "guard_noise.md", options)


if __name__ == "__main__":
    raise SystemExit(main())
