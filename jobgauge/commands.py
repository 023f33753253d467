"""Core subcommands: import, runs, serve."""

from __future__ import annotations

import json
import sys


def register(subparsers) -> None:
    """Add the core subcommands."""
    parser = subparsers.add_parser(
        "import", help="import run tables (CSV, optionally .gz) into the store",
        description="Read run tables in the shared schema into the store. Each file is "
                    "validated whole first; a malformed file is rejected with its line and "
                    "column and nothing from it is imported.")
    parser.add_argument("files", nargs="+", metavar="FILE.csv")
    parser.add_argument("--profiles", nargs="+", metavar="FILE.jsonl.gz",
                        help="profile records to store with their runs (default: for "
                             "DIR/runs/NAME.csv.gz, DIR/profiles/NAME.jsonl.gz when it exists)")
    parser.add_argument("--no-profiles", action="store_true",
                        help="import the runs only")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.set_defaults(handler=import_command)

    parser = subparsers.add_parser("runs", help="list runs in the store")
    parser.add_argument("--workload")
    parser.add_argument("--source")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=runs_command)

    parser = subparsers.add_parser(
        "serve", help="start the web service on 127.0.0.1",
        description="Start the estimation web form and JSON API. If the store has no "
                    "trained model, one is trained first from the runs shipped in data/runs.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    parser.set_defaults(handler=serve_command)


def _profiles_beside(path) -> list:
    """data/runs/NAME.csv.gz -> [data/profiles/NAME.jsonl.gz] when that file exists."""
    from pathlib import Path

    path = Path(path)
    name = path.name
    for suffix in (".csv.gz", ".csv"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    candidate = path.parent.parent / "profiles" / f"{name}.jsonl.gz"
    return [candidate] if candidate.is_file() else []


def import_command(args) -> int:
    from jobgauge.errors import UsageError
    from jobgauge.runtable import read_profile_records, read_run_table
    from jobgauge.store import open_store

    if args.profiles and args.no_profiles:
        raise UsageError("--profiles and --no-profiles contradict each other; give one")
    store = open_store(args.store)
    given = read_profile_records(args.profiles) if args.profiles else {}
    report = {}
    for path in args.files:
        rows = read_run_table(path)  # the whole file is validated before anything is written
        profiles = dict(given)
        if not args.profiles and not args.no_profiles:
            profiles = read_profile_records(_profiles_beside(path))
        added, skipped = store.add_runs(rows, skip_existing=True, profiles=profiles)
        sources = {}
        for row in rows:
            sources[row["source"]] = sources.get(row["source"], 0) + 1
        with_profile = sum(1 for row in rows if (row["source"], row["run_id"]) in profiles)
        report[str(path)] = {"rows": len(rows), "added": added, "already_present": skipped,
                             "with_profile": with_profile, "per_source": sources}
    totals = store.counts_by_source()
    if args.json:
        print(json.dumps({"files": report, "store_totals": totals}, indent=None))
        return 0
    for path, info in report.items():
        per_source = ", ".join(f"{s}: {n}" for s, n in info["per_source"].items())
        profiled = f", {info['with_profile']} with a profile" if info["with_profile"] else ""
        print(f"{path}: {info['rows']} rows ({per_source}{profiled}); {info['added']} added, "
              f"{info['already_present']} already in the store")
    print("store now holds: " + ", ".join(f"{s}: {n}" for s, n in totals.items()))
    return 0


def runs_command(args) -> int:
    from jobgauge.store import open_store

    store = open_store(args.store)
    rows = store.runs_list(limit=args.limit, workload=args.workload, source=args.source)
    if args.json:
        for row in rows:
            print(json.dumps(row, default=str))
        return 0
    if not rows:
        print("no runs in the store")
        return 0
    print(f"{'id':>6}  {'source':<16} {'workload':<14} {'size':<8} {'where':<14} "
          f"{'status':<10} {'runtime_s':>9}")
    for row in rows:
        where = f"{row['instance_count']}x {row['instance_type']}"
        runtime = "" if row["runtime_s"] is None else f"{row['runtime_s']:.2f}"
        print(f"{row['id']:>6}  {row['source'][:16]:<16} {row['workload'][:14]:<14} "
              f"{row['datasize'][:8]:<8} {where[:14]:<14} {row['status']:<10} {runtime:>9}")
    return 0


def serve_command(args) -> int:
    from jobgauge.webapp import create_app

    config = {"WARM_UP": True}  # start the plan session now, not on the first request
    if args.store:
        config["STORE_URL"] = args.store
    app = create_app(config)
    app.extensions["jobgauge"].ensure_model(progress=sys.stderr)
    print(f"jobgauge serving on http://{args.host}:{args.port}/", file=sys.stderr, flush=True)
    app.run(host=args.host, port=args.port, debug=False, use_reloader=False)
    return 0
