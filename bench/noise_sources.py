"""Where the repeat noise of a quiet collection comes from: the run's own work or the machine.

    nice -n 19 .venv/bin/python bench/noise_sources.py [--table T] [--profiles P ...]
    nice -n 10 .venv/bin/python bench/noise_sources.py --probe 60 --measure 2  # alone

Over every pair of repeats of the same (query, configuration) in a run table that has
the collector's CPU time (``cpu_time_s``: the driver and its JVM) and a profile of each
run (the event log's task metrics), the median |log(a / b)| of: the wall time; the
process CPU time; the tasks' CPU time (``executor_cpu_time_ms``); the tasks' run time
(``executor_run_time_ms``); and the JVM's GC pauses in tasks.  How much of the
difference in process CPU the tasks' CPU and the rest (the JVM's compiler and GC
threads, the driver) carry: each one's covariance with it over its variance, each
difference taken over the pair's mean process CPU, per length of run.

If the process CPU moves with the wall time, the noise is work the machine did, not
waiting on other processes (the guard's business).  ``--probe N`` then asks whether the
machine itself is steady: a fixed piece of CPU work (SHA-256 over 64 MiB ten times,
about 0.5 s), timed N times on one core and N times on both cores at once, and its
repeat noise (``jobgauge.runtable.repeat_noise``).

``--measure K`` collects a plan of eight TPC-H queries at SF 1 (five under 2 s, two of
2-5 s, one longer), Spark's defaults and 8 shuffle partitions, three times each in one
application, ``K`` times with each workload warmed up once before its first measured run,
``K`` times with three warm-ups (``warmup_each``), and ``K`` times with each query in
applications of its own, warmed up on itself (``application_per_workload``), in turn; per
collection its repeat noise, the share of the JVM's CPU during the measured runs that went
to the task threads, the JIT compiler threads and the GC threads (``cpu_tasks_s``,
``cpu_compiler_s``, ``cpu_gc_s``: ``driver.jvm_thread_cpu_s``), and which of them the
differences between repeats came from.  Run both alone.  Default table: the SF 1
re-measurement (``data/recollect``); writes ``bench/reports/noise_sources.md``.
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import report_main  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "data" / "recollect" / "runs" / "tpch-sf1-v2.csv.gz"
PROFILES = [REPO / "data" / "recollect" / "profiles" / "tpch-sf1-v2.jsonl.gz"]
#: What a pair of repeats is compared on: name -> (what it is, how to read it from
#: (run row, profile summary)), seconds.
MEASURES = {
    "wall": ("the run's wall time", lambda run, s: run["runtime_s"]),
    "process_cpu": ("CPU time of the driver and its JVM", lambda run, s: run["cpu_time_s"]),
    "task_cpu": ("the tasks' CPU time", lambda run, s: s["executor_cpu_time_ms"] / 1e3),
    "task_run": ("the tasks' run time", lambda run, s: s["executor_run_time_ms"] / 1e3),
    "gc": ("GC pauses in the tasks", lambda run, s: s["jvm_gc_time_ms"] / 1e3),
}
#: Lengths of runs (the mean wall time of a pair), seconds.
LENGTHS = ((0.0, 2.0), (2.0, 5.0), (5.0, math.inf), (0.0, math.inf))
#: --measure: the queries at SF 1, by tpch-sf1's medians with Spark's defaults five under
#: 2 s (most of the corpus's runs are), two of 2-5 s and one longer.
QUERIES = ("tpch-q6", "tpch-q14", "tpch-q11", "tpch-q19", "tpch-q12", "tpch-q3", "tpch-q9",
           "tpch-q18")


def repeats(table: Path, profiles: list[Path]) -> list[dict]:
    """Per (query, configuration) with two or more finished, profiled runs that carry
    their CPU time: ``{"key", "runs": [{measure: seconds}]}``."""
    from jobgauge.runtable import config_json, read_profile_records, read_run_table

    records = read_profile_records(profiles)
    groups = defaultdict(list)
    for run in read_run_table(table):
        record = records.get((run["source"], run["run_id"]))
        if not run["completed"] or record is None or not run.get("cpu_time_s"):
            continue
        groups[(run["workload"], config_json(run["config"]))].append(
            {name: read(run, record["summary"]) for name, (_, read) in MEASURES.items()})
    return [{"key": key, "runs": runs} for key, runs in groups.items() if len(runs) >= 2]


def _length(low, high) -> str:
    return "all" if (low, high) == (0.0, math.inf) else \
        f"{low:g} s and longer" if high == math.inf else f"{low:g}-{high:g} s"


def _difference_parts(pairs, total: str, names) -> tuple[list, dict]:
    """Each pair's difference in ``total`` and in each of ``names``, over the pair's mean
    ``total`` (so every pair weighs alike, as in the noise), and ``"rest"``: the part of
    the difference in ``total`` that ``names`` leave."""
    whole, parts = [], {name: [] for name in names}
    for a, b in pairs:
        size = (a[total] + b[total]) / 2
        whole.append((a[total] - b[total]) / size)
        for name in names:
            parts[name].append((a[name] - b[name]) / size)
    parts["rest"] = [w - sum(parts[name][i] for name in names) for i, w in enumerate(whole)]
    return whole, parts


def _covariance_share(part, whole) -> float:
    """cov(part, whole) / var(whole): the share of ``whole``'s variance ``part`` carries
    (the shares of parts summing to the whole sum to 1)."""
    mean_p, mean_w = statistics.fmean(part), statistics.fmean(whole)
    var = sum((w - mean_w) ** 2 for w in whole)
    return sum((p - mean_p) * (w - mean_w) for p, w in zip(part, whole)) / var


def decompose(groups: list[dict]) -> dict:
    """The pairs' median |log ratio| per measure, the correlation of each measure's log
    ratio with the wall time's, and the shares of the process CPU difference."""
    pairs = [(a, b) for group in groups for a, b in itertools.combinations(group["runs"], 2)]
    logs = {name: [math.log(a[name] / b[name]) if a[name] > 0 and b[name] > 0 else None
                   for a, b in pairs] for name in MEASURES}
    out = {"pairs": len(pairs), "configurations": len({g["key"][1] for g in groups}),
           "median_abs_log": {}, "correlation_with_wall": {}}
    for name, values in logs.items():
        both = [(v, w) for v, w in zip(values, logs["wall"]) if v is not None]
        out["median_abs_log"][name] = round(statistics.median(abs(v) for v, _ in both), 3)
        if name != "wall" and len(both) > 2:
            out["correlation_with_wall"][name] = round(statistics.correlation(
                [v for v, _ in both], [w for _, w in both]), 3)
    # each pair's differences over its mean process CPU, so every pair weighs alike (as
    # in the noise), then the shares per length of run
    total, parts = _difference_parts(pairs, "process_cpu", ["task_cpu"])
    out["process_cpu_shares"] = {}
    for low, high in LENGTHS:
        mine = [i for i, (a, b) in enumerate(pairs) if low <= (a["wall"] + b["wall"]) / 2 < high]
        if len(mine) > 2:
            whole = [total[i] for i in mine]
            out["process_cpu_shares"][_length(low, high)] = {"pairs": len(mine), **{
                name: round(_covariance_share([parts[name][i] for i in mine], whole), 3)
                for name in ("task_cpu", "rest")}}
    medians = {name: statistics.median(r[name] for g in groups for r in g["runs"])
               for name in MEASURES}
    out["median_seconds"] = {name: round(value, 3) for name, value in medians.items()}
    return out


def probe(runs: int) -> dict:
    """The probe timed ``runs`` times on one core, then ``runs`` times as two processes at
    once (both cores, as local[2] keeps them); the repeat noise of each."""
    from jobgauge.profiler.speed import probe_once
    from jobgauge.runtable import repeat_noise
    from tqdm import tqdm

    one = [probe_once() for _ in tqdm(range(runs), desc="probe, one core", unit="run")]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(probe_once, range(2))         # the workers started before timing
        two = [t for _ in tqdm(range(runs), desc="probe, two cores", unit="run")
               for t in pool.map(probe_once, range(2))]
    out = {}
    for name, times in (("one core", one), ("two cores", two)):
        wall, cpu = repeat_noise([[w for w, _ in times]]), repeat_noise([[c for _, c in times]])
        out[name] = {"runs": len(times),
                     "median_s": round(statistics.median(w for w, _ in times), 4),
                     "wall_noise": round(wall["mdape"], 4), "wall_p90": round(wall["p90"], 4),
                     "cpu_noise": round(cpu["mdape"], 4)}
    return out


def _collect(folder: Path, warmup_each: int, apart: bool) -> list[dict]:
    """Collect the plan in ``folder``; its finished runs (journal rows)."""
    from jobgauge.profiler.runners.collect import Journal, collect

    from guard_noise import plan_text

    plan = folder / "noise-sources.toml"
    plan.write_text(plan_text("noise-sources", QUERIES, "sf1", folder / "noise-sources.csv.gz",
                              42, warmup_each=warmup_each, application_per_workload=apart),
                    encoding="utf-8")
    collect(plan, work_dir=folder / "work", progress=False)
    return [e["run"] for e in Journal(folder / "work" / "journal.jsonl").entries.values()
            if e["run"]["status"] == "succeeded"]


def collected(folder: Path, warmup_each: int, apart: bool = False) -> dict:
    """Collect the plan in ``folder`` with ``warmup_each`` warm-ups of each workload (with
    ``apart``, each query in applications of its own, warmed up on itself: the plan's
    ``application_per_workload``): its repeat noise and where the JVM's CPU went during
    the measured runs."""
    from jobgauge.runtable import repeat_noise

    started = time.perf_counter()
    rows = _collect(folder, warmup_each, apart)
    wall = time.perf_counter() - started
    groups = defaultdict(list)
    for row in rows:
        groups[row["run_id"].rsplit(":r", 1)[0]].append(row["runtime_s"])
    noise = repeat_noise(groups.values())
    short = repeat_noise([t for t in groups.values() if statistics.median(t) < 2.0])
    shares = {kind: round(statistics.median(row[f"cpu_{kind}_s"] / row["cpu_time_s"]
                                            for row in rows), 3)
              for kind in ("tasks", "compiler", "gc")}
    return {"warmup_each": warmup_each, "apart": apart, "runs": len(rows),
            "wall_s": round(wall, 1),
            "noise": round(noise["mdape"], 4), "p90": round(noise["p90"], 4),
            "noise_under_2s": round(short["mdape"], 4) if short else None,
            "cpu_shares": shares,
            "compiler_s_median": round(statistics.median(r["cpu_compiler_s"] for r in rows), 3),
            "difference_shares": thread_shares(rows)}


#: A run's process CPU and the share its JVM's task, JIT compiler and GC threads took.
THREAD_FIELDS = ("cpu_time_s", "cpu_tasks_s", "cpu_compiler_s", "cpu_gc_s")


def thread_shares(rows) -> dict | None:
    """Over the pairs of repeats of a collection's runs, where the difference in process
    CPU went (each over the pair's mean process CPU; covariance shares): the JVM's task,
    JIT compiler and GC threads, and the rest (its other threads, the Python driver).
    Only the runs that recorded all of :data:`THREAD_FIELDS` count (a run table's are
    blank where a run recorded none); None where fewer than three pairs did."""
    groups = defaultdict(list)
    for row in rows:
        if all(isinstance(row.get(f), (int, float)) and math.isfinite(row[f])
               for f in THREAD_FIELDS):
            groups[row["run_id"].rsplit(":r", 1)[0]].append(row)
    pairs = [pair for runs in groups.values() for pair in itertools.combinations(runs, 2)]
    if len(pairs) < 3:
        return None
    whole, parts = _difference_parts(pairs, "cpu_time_s", list(THREAD_FIELDS[1:]))
    return {name.removeprefix("cpu_").removesuffix("_s"): round(_covariance_share(p, whole), 3)
            for name, p in parts.items()}


def figures(args) -> dict:
    groups = repeats(args.table, args.profiles)
    if not groups:
        raise SystemExit(f"no (query, configuration) in {args.table} with two finished runs "
                         f"that carry cpu_time_s and a profile in {args.profiles}")
    found = {"table": str(args.table.relative_to(REPO)) if args.table.is_relative_to(REPO)
             else str(args.table), **decompose(groups)}
    if args.probe:
        found["probe"] = probe(args.probe)
    if args.measure:
        found["collections"] = []
        for round_ in range(args.measure):
            for warmup_each, apart in ((1, False), (3, False), (1, True)):
                with tempfile.TemporaryDirectory(prefix="noise-sources-") as tmp:
                    found["collections"].append(collected(Path(tmp), warmup_each, apart))
    return found


def _pct(value) -> str:
    return f"{100 * value:.1f} %"


def markdown(found: dict, seconds: float) -> str:
    lines = ["# Where the repeat noise comes from (`bench/noise_sources.py`)", "",
             f"Table: `{found['table']}`; {found['pairs']} pairs of repeats of the same query "
             f"and configuration ({found['configurations']} configurations). This run took "
             f"{seconds:.0f} s.", "",
             "| measure | median per run | median \\|log a/b\\| over the pairs | correlation "
             "of its log ratio with the wall time's |", "|---|---|---|---|"]
    for name, (what, _) in MEASURES.items():
        corr = found["correlation_with_wall"].get(name, "—")
        lines.append(f"| {what} | {found['median_seconds'][name]:g} s | "
                     f"{found['median_abs_log'][name]} | {corr} |")
    lines += ["", "Where the pairs' differences in process CPU time went (each difference over "
              "the pair's mean process CPU; covariance shares): the tasks' own CPU, and the "
              "rest (the JVM's JIT compiler and GC threads, the driver).", "",
              "| runs | pairs | tasks' CPU | the rest |", "|---|---|---|---|"]
    lines += [f"| {length} | {row['pairs']} | {_pct(row['task_cpu'])} | {_pct(row['rest'])} |"
              for length, row in found["process_cpu_shares"].items()]
    if "probe" in found:
        lines += ["", "## The machine's own steadiness (SHA-256 over 64 MiB ten times, alone)", "",
                  "| probe | runs | median | wall noise (p90) | CPU noise |",
                  "|---|---|---|---|---|"]
        lines += [f"| {name} | {row['runs']} | {row['median_s']} s | {_pct(row['wall_noise'])} "
                  f"({_pct(row['wall_p90'])}) | {_pct(row['cpu_noise'])} |"
                  for name, row in found["probe"].items()]
    if "collections" in found:
        lines += ["", "## Warm-ups of each query before its first measured run", "",
                  f"TPC-H {', '.join(q.removeprefix('tpch-q') for q in QUERIES)} at SF 1 on "
                  "local[2], the defaults and 8 shuffle partitions, 3 times each in one "
                  "application. CPU shares: the median over the measured runs of the JVM's "
                  "task, JIT compiler and GC threads' CPU over the run's process CPU. The "
                  "difference in process CPU between repeats: covariance shares of each "
                  "thread kind's difference (each over the pair's mean process CPU); the "
                  "rest is the JVM's other threads and the Python driver.", "",
                  "| applications | warm-ups each | runs | repeat noise (p90) | runs under 2 s | "
                  "tasks | compiler | GC | compiler s per run | wall | difference in process CPU: "
                  "tasks / compiler / GC / rest |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for row in found["collections"]:
            shares = row["cpu_shares"]
            short = "—" if row["noise_under_2s"] is None else _pct(row["noise_under_2s"])
            apps = "one per query" if row.get("apart") else "all queries in one"
            lines.append(f"| {apps} | {row['warmup_each']} | {row['runs']} | {_pct(row['noise'])} "
                         f"({_pct(row['p90'])}) | {short} | {_pct(shares['tasks'])} | "
                         f"{_pct(shares['compiler'])} | {_pct(shares['gc'])} | "
                         f"{row['compiler_s_median']} | {row['wall_s']:.0f} s | "
                         + " / ".join(_pct(row["difference_shares"][k])
                                      for k in ("tasks", "compiler", "gc", "rest")) + " |")
    flags = (f" --probe {found['probe']['one core']['runs']}" if "probe" in found else "") + \
        (f" --measure {len(found['collections']) // 3}" if "collections" in found else "")
    lines += ["", f"Command: `nice -n {10 if flags else 19} .venv/bin/python "
              f"bench/noise_sources.py{flags}`", ""]
    return "\n".join(lines)


def options(parser) -> None:
    parser.add_argument("--table", type=Path, default=TABLE)
    parser.add_argument("--profiles", type=Path, nargs="+", default=PROFILES)
    parser.add_argument("--probe", type=int, default=0, metavar="N",
                        help="also time a fixed CPU probe N times on one and on two cores "
                             "(run alone)")
    parser.add_argument("--measure", type=int, default=0, metavar="K",
                        help="also collect the eight-query plan K times with 1 and K times "
                             "with 3 warm-ups of each query (run alone; minutes each)")


def main(argv=None) -> int:
    return report_main(argv, __doc__, figures, markdown, "noise_sources.md", options)


if __name__ == "__main__":
    raise SystemExit(main())
