"""A user's own Spark job, asked by its input size at sizes it never ran, then measured.

    nice -n 10 .venv/bin/python bench/own_job.py [--history 0.3 1] [--asked 3 10] [--check 3]

The job is ``bench/jobs/revenue_report.py`` (yearly revenue per customer nation and
segment over four TPC-H tables: a reporting job, not one of the 22 queries, so the
shipped corpus has never seen it).  As a user would:

1. run it through ``jobgauge-submit`` on local[2] with a 4 GiB driver and no tuning
   (``--jobgauge-no-tune``), ``--repeats`` times at each ``--history`` scale factor, into
   a store of its own (``var/own_job/history.db``);
2. ask ``POST /api/v1/estimate`` of a web service on a copy of that store (it trains its
   model on first need, from the shipped runs and the store's) for the job by its input
   size (``input_gb``) at every ``--asked`` scale factor.  The asked input is the input
   of the largest history runs (the files they scanned, as the event log says), grown
   as TPC-H's tables grow, in proportion to the scale factor;
3. run it for real at each ``--check`` scale factor (``var/own_job/check.db``, never seen
   by the service) and compare.

Runtimes are whole applications (``time_kind=application``: SparkContext start to stop,
from the event log), the meaning ``jobgauge-submit`` records.  Every run has a time
limit, and starts once the 1-minute load is below 0.7 (the load at its start is
journaled).  Runs already in a store are not run again (the stores are the journal; delete
``var/own_job`` to start over).  Writes ``bench/reports/own_job.md``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
import _journal  # noqa: E402  (bench/_journal.py)
JOB = "revenue-report"
SCRIPT = REPO / "bench" / "jobs" / "revenue_report.py"
SETTINGS = {"spark.driver.memory": "4g"}
TIMEOUT_S = 900
#: A run starts once the 1-minute load average is below this (at most 5 min of waiting).
QUIET_LOAD = 0.7


def runs_at(store, journal: Path, scale: float) -> list[dict]:
    """The finished runs of the job in ``store`` at TPC-H scale ``scale`` (the journal
    says which run was at which scale: the store's runs carry no size label, as a
    user's own job's do not)."""
    scales = {entry["run_id"]: entry["scale"] for entry in _journal.read(journal)}
    frame = store.run_frame(workload=JOB)
    if frame.empty:
        return []
    frame = frame[frame["completed"] & (frame["run_id"].map(scales) == scale)]
    return frame[["runtime_s", "input_bytes", "run_id"]].to_dict("records")


def submit(store, store_path: Path, data: Path, scale: float, out: Path) -> None:
    """One real run of the job through jobgauge-submit, recorded in ``store_path``, its
    scale in the journal beside it."""
    command = [str(Path(sys.executable).parent / "jobgauge-submit"), "--store", str(store_path),
               "--jobgauge-workload", JOB, "--jobgauge-no-tune", "--master", "local[2]",
               *[f"--conf={k}={v}" for k, v in SETTINGS.items()],
               str(SCRIPT), str(data), str(out)]
    from jobgauge.profiler.runners.driver import LoadGuard

    before = set(store.run_frame(workload=JOB).get("run_id", []))
    # wait for the load of the run before (and of anything else) to decay
    guard = LoadGuard(threshold=QUIET_LOAD, max_wait_s=300, read_own_cpu=lambda: 0.0)
    quiet = guard.wait_quiet()
    load = quiet["load_at_start"]
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    if result.returncode != 0:
        raise SystemExit(f"the job failed at SF {scale:g}:\n{result.stderr[-2000:]}")
    new = set(store.run_frame(workload=JOB)["run_id"]) - before
    for run_id in new:
        _journal.append(_scales(store_path), {"run_id": run_id, "scale": scale, **quiet})
    print(f"  SF {scale:g}: {time.perf_counter() - started:.1f} s wall "
          f"(load {load:.2f} at start)", flush=True)


def _scales(store_path: Path) -> Path:
    """The journal of which run of ``store_path`` was at which scale."""
    return store_path.with_suffix(".scales.jsonl")


def measure(store_path: Path, scales, repeats: int, data_root: Path, work: Path) -> dict:
    from jobgauge.profiler.workloads import get_workload
    from jobgauge.units import scale_label
    from jobgauge.store import open_store

    store = open_store(str(store_path))
    found = {}
    for scale in scales:
        data = get_workload("tpch-q1").prepare(data_root, scale_label(scale))
        for _ in range(repeats - len(runs_at(store, _scales(store_path), scale))):
            submit(store, store_path, data, scale, work / "out")
        found[scale] = {"runs": runs_at(store, _scales(store_path), scale)}
    store.close()
    return found


def ask(store_path: Path, history: dict, scales) -> dict:
    """{scale: the API's first option} for the job asked at each scale by its input size:
    the median bytes its largest history runs read, grown as TPC-H's tables grow (in
    proportion to the scale factor)."""
    import shutil
    import sqlite3
    import tempfile

    from jobgauge.webapp import create_app

    # the service trains its model on first need and saves it in its store: a copy, so
    # that every ask trains on what the history store holds now
    folder = Path(tempfile.mkdtemp(prefix="jobgauge-own-job-"))
    shutil.copy(store_path, folder / "store.db")
    with sqlite3.connect(folder / "store.db") as db:
        db.execute("DELETE FROM models")       # none saved by an earlier ask
    app = create_app({"TESTING": True, "STORE_URL": str(folder / "store.db")})
    largest = max(history)
    read = statistics.median(r["input_bytes"] for r in history[largest]["runs"])
    answers = {}
    with app.test_client() as client:
        for scale in scales:
            body = {"workload": JOB, "input_gb": read * scale / largest / 1e9,
                    "instance_types": ["local[2]"], "config": SETTINGS}
            reply = client.post("/api/v1/estimate", json=body)
            if reply.status_code != 200:
                raise SystemExit(f"the API answered {reply.status_code}: {reply.get_data(True)}")
            answers[scale] = {"input_gb": body["input_gb"], **reply.get_json()["options"][0]}
    shutil.rmtree(folder, ignore_errors=True)
    return answers


def _report(history, answers, checks, command, wall_s) -> str:
    lines = ["# A user's own job, asked by its input size (issue 13)", "",
             f"Reproduce with `{command}` ({wall_s:.0f} s this time; runs already in "
             "`var/own_job` are not run again).  The job: `bench/jobs/revenue_report.py`, never in the "
             "shipped corpus; local[2], a 4 GiB driver, Spark's defaults otherwise; runtime "
             "= the whole application (event log).", "",
             "## What the store held when the service was asked", "",
             "| SF | runs | median runtime | median input read |", "|---|---|---|---|"]
    for scale, found in sorted(history.items()):
        runs = found["runs"]
        lines.append(f"| {scale:g} | {len(runs)} | "
                     f"{statistics.median(r['runtime_s'] for r in runs):.2f} s | "
                     f"{statistics.median(r['input_bytes'] for r in runs) / 1e6:.0f} MB |")
    lines += ["", "## The answers of `POST /api/v1/estimate`, and what was measured", "",
              "| SF | asked input | predicted [80 %] | far outside? | measured (median) | error |",
              "|---|---|---|---|---|---|"]
    for scale, option in sorted(answers.items()):
        # the check runs, else the store's own runs at that size (the service saw those)
        runs = checks.get(scale, {}).get("runs") or history.get(scale, {}).get("runs", [])
        measured = statistics.median(r["runtime_s"] for r in runs) if runs else None
        where = "" if checks.get(scale, {}).get("runs") else ", in the store"
        error = f"{abs(option['runtime_s'] - measured) / measured:.0%}" if measured else ""
        lines.append(
            f"| {scale:g} | {option['input_gb']:.2f} GB | {option['runtime_s']:.2f} s "
            f"[{option['low_s']:.2f}, {option['high_s']:.2f}] | "
            f"{'yes' if option.get('outside_measured') else 'no'} | "
            + (f"{measured:.2f} s ({len(runs)} runs{where}) | {error} |" if measured
               else "not run | |"))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from jobgauge.profiler.runners.runner import DEFAULT_DATA_ROOT

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", nargs="+", type=float, default=[0.3, 1.0],
                        help="TPC-H scale factors of the runs the store holds (0.3 1)")
    parser.add_argument("--asked", nargs="+", type=float, default=[1.0, 3.0, 10.0],
                        help="scale factors asked of the service (1 3 10)")
    parser.add_argument("--check", nargs="*", type=float, default=[3.0],
                        help="scale factors measured for real after asking (3)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--work", default=str(REPO / "var" / "own_job"))
    parser.add_argument("--out", default=str(REPO / "bench" / "reports"))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    data_root = Path(DEFAULT_DATA_ROOT)
    print(f"history runs through jobgauge-submit at SF {args.history}", flush=True)
    history = measure(work / "history.db", args.history, args.repeats, data_root, work)
    answers = ask(work / "history.db", history, args.asked)
    for scale, option in sorted(answers.items()):
        print(f"asked SF {scale:g} ({option['input_gb']:.2f} GB): {option['runtime_s']:.2f} s "
              f"[{option['low_s']:.2f}, {option['high_s']:.2f}]", flush=True)
    print(f"check runs at SF {args.check}", flush=True)
    checks = measure(work / "check.db", args.check, args.repeats, data_root, work)
    command = "nice -n 10 .venv/bin/python bench/own_job.py" + \
        (" " + " ".join(sys.argv[1:]) if argv is None and sys.argv[1:] else "")
    report = _report(history, answers, checks, command, time.perf_counter() - started)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "own_job.md").write_text(report)
    (work / "answers.json").write_text(json.dumps({str(k): v for k, v in answers.items()},
                                                  indent=1, default=str))
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
