"""Issue 14's learning loop, measured: the same TPC-H jobs through ``jobgauge-submit``, again and again.

    nice -n 10 .venv/bin/python bench/learning_loop.py                      # SF 1, 5 queries x 6
    nice -n 10 .venv/bin/python bench/learning_loop.py --scale 0.01 --repeats 1 --queries 6

Each query becomes a plain PySpark script (its SQL from the TPC-H workload's
query definitions, its tables the parquet files of the workload data cache,
generated on first need) written to the work folder, and runs through
``jobgauge-submit --store STORE --jobgauge-retrain-every N --master M SCRIPT``
from an empty store, round after round (every query once per round).  Before
each run the bench asks the wrapper's own recommendation code
(``tuner.submit.recommendation``, on the same command line, so the same store,
model and seed) for the predicted runtime and whether it tunes; after the run it
reads the measured runtime the wrapper recorded in the store: the application's
runtime from its event log (``time_kind`` ``application``, what the models learn
and predict), with spark-submit's wall time (``wall_s``) beside it.

The baseline: each query also runs ``--defaults-repeats`` times (default 3) with
Spark's defaults through the same wrapper with tuning off
(``jobgauge-submit --jobgauge-no-tune``), recorded in a store of their own
(``WORK/defaults.db``, so the loop's store still starts empty and learns only from
its own runs).  These runs are interleaved with the loop's last rounds, before the
query's wrapped run in even rounds and after it in odd ones, so both see the same
machine.  The report compares, per query, the median of the defaults' runs with the
median of the wrapped runs of the last :data:`COMPARED_ROUNDS` rounds, against the
repeat noise (``tuner._recommend.NOISE_FLOOR``, 5 %).

Every run is a line in the journal (``WORK/journal.jsonl``; the defaults' runs with
``"tuning": "off"`` and ``"tuned": false``): an interrupted run resumes there.

Writes bench/reports/learning_loop.md and learning_loop.png (prediction error
and runtime against the run index).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
import _journal as journal  # noqa: E402  (bench/_journal.py)
DEFAULT_QUERIES = (1, 3, 5, 6, 10)
#: The loop's last rounds whose wrapped runs are compared with the defaults' runs.
COMPARED_ROUNDS = 3
SCRIPT = '''"""TPC-H Q{number} at SF {scale} (written by bench/learning_loop.py)."""
from pyspark.sql import SparkSession

DATA = {data!r}
TABLES = {tables!r}
SQL = {sql!r}

spark = SparkSession.builder.appName("tpch_q{number:02d}").getOrCreate()
for table in TABLES:
    spark.read.parquet(f"{{DATA}}/{{table}}.parquet").createOrReplaceTempView(table)
rows = spark.sql(SQL).collect()
print(f"tpch_q{number:02d}: {{len(rows)}} rows")
spark.stop()
'''


def write_scripts(work: Path, queries, scale: float) -> dict[int, Path]:
    """One PySpark script per query, reading the cached TPC-H parquet data of ``scale``."""
    from jobgauge.profiler.runners.runner import DEFAULT_DATA_ROOT
    from jobgauge.profiler.workloads._tpch_queries import QUERIES, TABLES
    from jobgauge.profiler.workloads.tpch import ensure_data

    data = Path(ensure_data(DEFAULT_DATA_ROOT, scale)).resolve()
    scripts = {}
    for number in queries:
        if number not in QUERIES:
            raise SystemExit(f"learning_loop: no TPC-H query {number} (1..22)")
        path = work / f"tpch_q{number:02d}.py"
        path.write_text(SCRIPT.format(number=number, scale=scale, data=str(data),
                                      tables=list(TABLES), sql=QUERIES[number].strip()))
        scripts[number] = path
    return scripts


def submit_argv(store: str, retrain_every: int, master: str, script: Path,
                eventlogs: Path, *, tune: bool = True) -> list[str]:
    """The wrapper's command line after ``jobgauge-submit`` (event logs kept in
    ``eventlogs``); ``tune=False``: Spark's defaults (``--jobgauge-no-tune``)."""
    own = [] if tune else ["--jobgauge-no-tune"]
    return ["--store", store, *own, "--jobgauge-retrain-every", str(retrain_every),
            "--master", master, "--conf", "spark.eventLog.enabled=true",
            "--conf", f"spark.eventLog.dir={eventlogs}", str(script)]


def schedule(queries, repeats: int, defaults_repeats: int) -> list[tuple]:
    """The runs in the order they are made, as (round, query, tuning, repeat): each
    round runs every query once through the wrapper (tuning ``"on"``); the
    ``defaults_repeats`` runs of each query with tuning ``"off"`` fall one per round
    into the last rounds (several into the first when there are fewer rounds), before
    the query's wrapped run in even rounds and after it in odd ones."""
    first = repeats - defaults_repeats
    planned = []
    for round_ in range(repeats):
        baseline = [k for k in range(defaults_repeats) if max(0, first + k) == round_]
        for number in queries:
            runs = [(round_, number, "off", k) for k in baseline]
            wrapped = (round_, number, "on", 0)
            planned += [*runs, wrapped] if round_ % 2 == 0 else [wrapped, *runs]
    return planned


def _key(entry: dict) -> tuple:
    """A journal entry's place in :func:`schedule` (entries before the defaults' runs
    existed are wrapped runs)."""
    return (entry["round"], entry["query"], entry.get("tuning", "on"), entry.get("repeat", 0))


def job_key(argv: list[str]) -> str:
    """The job key the wrapper records this command line under."""
    from jobgauge.tuner.submit import split_own_options, workload_name

    own, args = split_own_options(argv)
    return own["workload"] or workload_name(args)


def predict(argv: list[str]) -> dict:
    """The wrapper's recommendation for this command line (its predicted runtime)."""
    from jobgauge.store import open_store
    from jobgauge.tuner.submit import recommendation, split_own_options

    own, args = split_own_options(argv)
    store = open_store(own["store"])
    try:
        answer = recommendation(own, args, store)
        models = store.list_models()
    finally:
        store.close()
    return {**answer.to_dict(), "model": models[0].get("name") if models else None,
            "models": len(models)}


def measured(store_url: str, workload: str, before: int) -> dict | None:
    """The run the wrapper just recorded for ``workload`` (None when it recorded none)."""
    from jobgauge.store import open_store

    store = open_store(store_url)
    try:
        if store.count_runs(workload=workload) <= before:
            return None
        row = store.runs_list(limit=1, workload=workload)[0]
        profiles = store.profiles_for(row["id"])
        row["app_runtime_s"] = profiles[0].get("runtime_s") if profiles else None
        if row["time_kind"] != "application":        # no event log: the wall time only
            row["runtime_s"] = None
        return row
    finally:
        store.close()


def run_count(store_url: str, workload: str) -> int:
    from jobgauge.store import open_store

    store = open_store(store_url)
    try:
        return store.count_runs(workload=workload)
    finally:
        store.close()


def run_loop(args, work: Path, journal_path: Path, progress=sys.stderr) -> list[dict]:
    from jobgauge.models._default import retraining_paused
    from jobgauge.store import open_store

    scripts = write_scripts(work, args.queries, args.scale)
    store = args.store or str(work / "store.db")
    defaults_store = str(work / "defaults.db")
    eventlogs = work / "eventlogs"
    eventlogs.mkdir(exist_ok=True)
    done = {_key(e) for e in journal.read(journal_path)}
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    submit = str(Path(sys.executable).parent / "jobgauge-submit")
    planned = schedule(args.queries, args.repeats, args.defaults_repeats)
    for index, (round_, number, tuning, repeat) in enumerate(planned, 1):
        if (round_, number, tuning, repeat) in done:
            continue
        wrapped = tuning == "on"
        into = store if wrapped else defaults_store
        argv = submit_argv(into, args.retrain_every if wrapped else 0, args.master,
                           scripts[number], eventlogs, tune=wrapped)
        workload = job_key(argv)
        before = run_count(into, workload)
        started = time.perf_counter()
        guess = predict(argv) if wrapped else {
            "predicted_runtime_s": None, "baseline_runtime_s": None, "tuned": False,
            "settings": {}, "reason": "tuning off (--jobgauge-no-tune): Spark's defaults",
            "history_runs": None, "models": None}
        predict_s = time.perf_counter() - started
        started = time.perf_counter()
        # a run with the defaults goes to a store of its own, so its wrapper pauses that
        # store's retraining; the loop's store may be retraining too, as a user's one
        # store would be: held still here the same way (else the defaults run beside it)
        with contextlib.nullcontext() if wrapped else retraining_paused(open_store(store)):
            done_run = subprocess.run([submit, *argv], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        row = measured(into, workload, before)
        entry = {"index": index, "round": round_, "query": number, "workload": workload,
                 "tuning": tuning, "repeat": repeat,
                 "predicted_s": guess["predicted_runtime_s"],
                 "baseline_s": guess["baseline_runtime_s"], "tuned": guess["tuned"],
                 "settings": guess["settings"], "reason": guess["reason"],
                 "history_runs": guess["history_runs"], "models": guess["models"],
                 "measured_s": row["runtime_s"] if row else None,
                 "app_runtime_s": row["app_runtime_s"] if row else None,
                 "submit_wall_s": row["wall_s"] if row else None,
                 "status": row["status"] if row else "not recorded",
                 "rc": done_run.returncode, "wall_s": round(wall, 3),
                 "predict_s": round(predict_s, 3),
                 "stderr_tail": done_run.stderr.strip().splitlines()[-3:]}
        journal.append(journal_path, entry)
        print(f"[{index}] q{number} round {round_ + 1}: predicted "
              f"{_f(entry['predicted_s'])} s, measured {_f(entry['measured_s'])} s, "
              f"{run_kind(entry)} (rc {entry['rc']})", file=progress, flush=True)
    return sorted(journal.read(journal_path), key=lambda e: e["index"])


def is_wrapped(entry: dict) -> bool:
    """A run of the loop (through the wrapper with tuning on), not a defaults' run."""
    return entry.get("tuning", "on") == "on"


def run_kind(entry: dict) -> str:
    """What ran, in words: ``tuned``, ``defaults kept`` (by the wrapper) or
    ``defaults, tuning off`` (a defaults' run)."""
    if not is_wrapped(entry):
        return "defaults, tuning off"
    return "tuned" if entry["tuned"] else "defaults kept"


def _f(value, digits=2):
    return "n/a" if value is None else f"{value:.{digits}f}"


def ape(entry) -> float | None:
    if not is_wrapped(entry) or entry["predicted_s"] is None or not entry["measured_s"]:
        return None
    return abs(entry["predicted_s"] - entry["measured_s"]) / entry["measured_s"] * 100


def plot(entries: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    for number in sorted({e["query"] for e in entries}):
        mine = [e for e in entries if e["query"] == number]
        loop = [e for e in mine if is_wrapped(e)]
        top.plot([e["index"] for e in loop], [ape(e) for e in loop], "o-", label=f"Q{number}")
        kinds = (("s", "tuned", lambda e: is_wrapped(e) and e["tuned"]),
                 ("o", "defaults kept", lambda e: is_wrapped(e) and not e["tuned"]),
                 ("x", "defaults, tuning off", lambda e: not is_wrapped(e)))
        for marker, label, chosen in kinds:
            some = [e for e in mine if chosen(e) and e["measured_s"]]
            if some:
                bottom.scatter([e["index"] for e in some], [e["measured_s"] for e in some],
                               marker=marker, label=f"Q{number} {label}")
    top.set_ylabel("prediction error (APE, %)")
    top.set_yscale("symlog", linthresh=10)
    top.legend(fontsize=7, ncol=5)
    bottom.set_ylabel("measured runtime (s)")
    bottom.set_xlabel("run index (rounds of all queries, from an empty store)")
    bottom.legend(fontsize=6, ncol=5)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _median(values) -> float | None:
    values = [v for v in values if v]
    return statistics.median(values) if values else None


def compare_with_defaults(entries: list[dict], noise: float) -> list[dict]:
    """Per query: the median runtime of its defaults' runs (tuning off) and of its
    wrapped runs in the last :data:`COMPARED_ROUNDS` rounds, and ``verdict``: whether
    the wrapped median is slower or faster than the defaults' beyond ``noise`` (a
    fraction), or within it."""
    rounds = sorted({e["round"] for e in entries if is_wrapped(e)})[-COMPARED_ROUNDS:]
    rows = []
    for number in sorted({e["query"] for e in entries}):
        mine = [e for e in entries if e["query"] == number and e["measured_s"]]
        plain = [e["measured_s"] for e in mine if not is_wrapped(e)]
        last = [e for e in mine if is_wrapped(e) and e["round"] in rounds]
        defaults, wrapped = _median(plain), _median(e["measured_s"] for e in last)
        change = None if defaults is None or wrapped is None else wrapped / defaults - 1
        verdict = "n/a" if change is None else (
            "slower beyond the noise" if change > noise else
            "faster beyond the noise" if change < -noise else "within the noise")
        rows.append({"query": number, "defaults_runs": len(plain), "defaults_s": defaults,
                     "wrapped_runs": len(last), "tuned_runs": sum(bool(e["tuned"]) for e in last),
                     "wrapped_s": wrapped, "change": change, "verdict": verdict})
    return rows


def write_report(path: Path, entries: list[dict], command: str, args, wall: float) -> None:
    from jobgauge.tuner._recommend import NOISE_FLOOR

    loop = [e for e in entries if is_wrapped(e)]
    rounds = sorted({e["round"] for e in entries})
    lines = ["# Learning loop: the same jobs through jobgauge-submit, from an empty store", "",
             f"Command: `{command}`  ",
             f"TPC-H SF {args.scale}, queries {', '.join(map(str, args.queries))}, "
             f"{args.repeats} rounds, master {args.master}, retrain every {args.retrain_every} "
             f"runs, {args.defaults_repeats} runs of each query with Spark's defaults; wall "
             f"time of this invocation {wall:.0f} s, "
             f"{time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.1f}.", "",
             "Predicted: the wrapper's recommendation (`tuner.submit.recommendation`) on the "
             "same command line just before the run; measured: the runtime the wrapper recorded "
             "in the store, the application's runtime in its event log (SparkContext start to "
             "stop), as the models learn and predict it; submit s: spark-submit's wall time "
             "(JVM start and end included).  Tuned: the wrapper added settings (else it kept "
             "Spark's defaults and said why).  Defaults, tuning off: the same script through "
             "the same wrapper with `--jobgauge-no-tune`, recorded in a store of its own so "
             "the loop learns only from its own runs; interleaved with the last rounds.",
             "", f"![prediction error and runtime against the run index]({path.stem}.png)", "",
             "## Tuned against Spark's defaults", "",
             f"Per query: the median of its runs with Spark's defaults (tuning off) against "
             f"the median of its wrapped runs in the last {COMPARED_ROUNDS} rounds (tuned or "
             f"not, as the wrapper decided), judged against the repeat noise of "
             f"{100 * NOISE_FLOOR:.0f} % (`tuner._recommend.NOISE_FLOOR`).", "",
             "| query | defaults runs | median s, defaults | wrapped runs (tuned) "
             "| median s, wrapped | wrapped vs defaults | verdict |",
             "|---:|---:|---:|---:|---:|---:|---|"]
    compared = compare_with_defaults(entries, NOISE_FLOOR)
    for row in compared:
        change = "n/a" if row["change"] is None else f"{100 * row['change']:+.1f} %"
        lines.append(f"| Q{row['query']} | {row['defaults_runs']} | {_f(row['defaults_s'])} "
                     f"| {row['wrapped_runs']} ({row['tuned_runs']}) | {_f(row['wrapped_s'])} "
                     f"| {change} | {row['verdict']} |")
    slower = [f"Q{row['query']}" for row in compared if row["verdict"].startswith("slower")]
    judged = [row for row in compared if row["verdict"] != "n/a"]
    lines += ["", (f"Slower than the defaults beyond the noise: {', '.join(slower)}." if slower
                   else f"No query's wrapped runs are slower than its defaults beyond the noise "
                        f"({len(judged)} of {len(compared)} queries compared).")]
    lines += ["", "## Per round", "",
              "| round | wrapped runs | MdAPE % | median s, tuned | median s, defaults kept "
              "| median s, defaults (tuning off) |",
              "|---:|---:|---:|---:|---:|---:|"]
    for round_ in rounds:
        mine = [e for e in entries if e["round"] == round_]
        wrapped = [e for e in mine if is_wrapped(e)]
        apes = [a for a in map(ape, wrapped) if a is not None]
        lines.append(f"| {round_ + 1} | {len(wrapped)} "
                     f"| {_f(statistics.median(apes) if apes else None, 1)} "
                     f"| {_f(_median(e['measured_s'] for e in wrapped if e['tuned']))} "
                     f"| {_f(_median(e['measured_s'] for e in wrapped if not e['tuned']))} "
                     f"| {_f(_median(e['measured_s'] for e in mine if not is_wrapped(e)))} |")
    lines += ["", "## Every run", "",
              "| # | query | round | run | predicted s | measured s | submit s | APE % "
              "| added settings |",
              "|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    for e in entries:
        added = ", ".join(f"{k}={v}" for k, v in sorted(e["settings"].items())) or "-"
        lines.append(f"| {e['index']} | Q{e['query']} | {e['round'] + 1} | {run_kind(e)} "
                     f"| {_f(e['predicted_s'])} | {_f(e['measured_s'])} "
                     f"| {_f(e.get('submit_wall_s'))} | {_f(ape(e), 1)} | {added} |")
    failed = [e for e in entries if e["rc"] or e["measured_s"] is None]
    if failed:
        lines += ["", f"{len(failed)} run(s) failed or were not recorded; last stderr lines of the "
                  f"first: `{' / '.join(failed[0]['stderr_tail'])}`"]
    kept = [e for e in loop if not e["tuned"] and e.get("reason")]
    if kept:
        last = kept[-1]
        lines += ["", f"Why the wrapper kept the defaults, its last such run (Q{last['query']}, "
                      f"round {last['round'] + 1}): {last['reason']}"]
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    parser.add_argument("--queries", type=int, nargs="+", default=list(DEFAULT_QUERIES))
    parser.add_argument("--repeats", type=int, default=6, help="rounds of every query")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--retrain-every", type=int, default=5)
    parser.add_argument("--defaults-repeats", type=int, default=3,
                        help="runs of each query with Spark's defaults (jobgauge-submit "
                             "--jobgauge-no-tune), interleaved with the last rounds (default 3)")
    parser.add_argument("--store", help="store URL or SQLite file (default WORK/store.db, "
                        "created empty)")
    parser.add_argument("--work", help="work folder with the scripts, store and journal "
                        "(default bench/reports/cache/learning_loop-sf<SCALE>)")
    parser.add_argument("--out", default=str(REPO / "bench" / "reports" / "learning_loop.md"))
    parser.add_argument("--fresh", action="store_true",
                        help="forget the journal and the stores")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.defaults_repeats < 0:
        parser.error("--repeats must be at least 1 and --defaults-repeats at least 0")
    given = sys.argv[1:] if argv is None else list(argv)
    command = " ".join(["nice -n 10 .venv/bin/python bench/learning_loop.py", *given])
    work = Path(args.work or REPO / "bench" / "reports" / "cache" / f"learning_loop-sf{args.scale:g}")
    work.mkdir(parents=True, exist_ok=True)
    journal_path = work / "journal.jsonl"
    if args.fresh:
        journal_path.unlink(missing_ok=True)
        (work / "store.db").unlink(missing_ok=True)
        (work / "defaults.db").unlink(missing_ok=True)
    started = time.perf_counter()
    entries = run_loop(args, work, journal_path)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    plot(entries, out.with_suffix(".png"))
    write_report(out, entries, command, args, time.perf_counter() - started)
    for e in entries:
        print(f"{e['index']}\tQ{e['query']}\tround {e['round'] + 1}\tpredicted {_f(e['predicted_s'])}"
              f"\tmeasured {_f(e['measured_s'])}\t{run_kind(e)}")
    print(f"report: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
