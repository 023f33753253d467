"""Core subcommands: import, runs, serve."""

from __future__ import annotations

import json
import sys

from jobgauge.cli_options import add_command, number, print_result


def register(subparsers) -> None:
    """Add the core subcommands."""
    parser = add_command(subparsers, "import", import_command,
                         help="import run tables (CSV) and job history (event logs, History "
                              "Servers, MapReduce .jhist) into the store",
                         json="the counts")
    parser.add_argument("files", nargs="+", metavar="INPUT",
                        help="FILE.csv[.gz], event log file or folder, "
                             "http://host:18080 (History Server) or .jhist folder")
    parser.add_argument("--profiles", nargs="+", metavar="FILE.jsonl.gz",
                        help="profile records to store with their runs (default: for "
                             "DIR/runs/NAME.csv.gz, DIR/profiles/NAME.jsonl.gz when it exists)")
    parser.add_argument("--no-profiles", action="store_true",
                        help="import the runs only")
    parser.add_argument("--since", metavar="DATE",
                        help="job history: only applications that ended after DATE "
                             "(2024-05-01 or 2024-05-01T12:00, UTC)")
    parser.add_argument("--progress", action="store_true",
                        help="job history: show a progress bar even when stderr is no terminal")

    parser = add_command(subparsers, "runs", runs_command,
                         help="list runs in the store", json="one object per run, one per line")
    parser.add_argument("--workload")
    parser.add_argument("--source")
    parser.add_argument("--limit", type=number(1, whole=True), default=20, metavar="N",
                        help="the newest N runs (default 20)")

    parser = add_command(subparsers, "serve", serve_command,
                         help="start the web service (production server; 127.0.0.1:5000)")
    parser.add_argument("--host", default=None,
                        help="address to listen on (default: the bind setting, 127.0.0.1)")
    parser.add_argument("--port", type=number(1, whole=True, highest=65535), default=None,
                        help="port to listen on (default: the bind setting, 5000)")
    parser.add_argument("--config", metavar="FILE.toml", default=None,
                        help="settings file (default: $JOBGAUGE_CONFIG)")
    parser.add_argument("--threads", type=number(1, whole=True), default=None,
                        help="worker threads (default: the server_threads setting, 8)")
    parser.add_argument("--sync", action="append", metavar="URL", default=None,
                        help="keep importing finished applications from this History Server "
                             "in the background, as 'jobgauge sync' does (repeatable; "
                             "default: the sync setting)")
    parser.add_argument("--sync-every", metavar="DURATION", default=None,
                        help="time between sync rounds: 30s, 10m, 1h (default: the "
                             "sync_every setting, 10m)")


def import_command(args) -> int:
    """Read run tables in the shared schema into the store. Each file is validated whole first;
    a malformed file is rejected with its line and column and nothing from it is imported.
    Any other input is job history (jobgauge.history_import): Spark event logs and folders
    of them, Spark History Server URLs and MapReduce job-history folders; each application
    becomes one run, an unreadable one is skipped with the reason on one line."""

    from jobgauge.errors import UsageError
    from jobgauge.history_import import history_import_command, is_history_input
    from jobgauge.runtable import profiles_beside, read_profile_records, read_run_table
    from jobgauge.store import open_store

    history = [item for item in args.files if is_history_input(item)]
    args.files = [item for item in args.files if not is_history_input(item)]
    history_code = history_import_command(args, history) if history else 0
    if not args.files:
        return history_code
    if args.profiles and args.no_profiles:
        raise UsageError("--profiles and --no-profiles contradict each other; give one")
    store = open_store(args.store)
    given = read_profile_records(args.profiles) if args.profiles else {}
    report = {}
    for path in args.files:
        rows = read_run_table(path)  # the whole file is validated before anything is written
        profiles = dict(given)
        if not args.profiles and not args.no_profiles:
            profiles = read_profile_records(profiles_beside(path))
        added, skipped = store.add_runs(rows, skip_existing=True, profiles=profiles)
        sources = {}
        for row in rows:
            sources[row["source"]] = sources.get(row["source"], 0) + 1
        with_profile = sum(1 for row in rows if (row["source"], row["run_id"]) in profiles)
        report[str(path)] = {"rows": len(rows), "added": added, "already_present": skipped,
                             "with_profile": with_profile, "per_source": sources}
    totals = store.counts_by_source()
    lines = []
    for path, info in report.items():
        per_source = ", ".join(f"{s}: {n}" for s, n in info["per_source"].items())
        profiled = f", {info['with_profile']} with a profile" if info["with_profile"] else ""
        lines.append(f"{path}: {info['rows']} rows ({per_source}{profiled}); {info['added']} "
                     f"added, {info['already_present']} already in the store")
    lines.append(f"store now holds: {store.holdings(totals)}")
    print_result(args.json, {"files": report, "store_totals": totals}, lines)
    return 0


def runs_command(args) -> int:
    """List the newest runs in the store (--limit of them), optionally only those of one
    workload or one source."""
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
          f"{'status':<10} {'runtime_s':>9}  load at start")
    for row in rows:
        where = f"{row['instance_count']}x {row['instance_type']}"
        runtime = "" if row["runtime_s"] is None else f"{row['runtime_s']:.2f}"
        # other processes' load where the run's guard read it, and whether that was busy
        load = "" if row.get("load_at_start") is None else \
            f"{row['load_at_start']:.2f}{' busy' if row.get('quiet_start') is False else ''}"
        print(f"{row['id']:>6}  {row['source'][:16]:<16} {row['workload'][:14]:<14} "
              f"{row['datasize'][:8]:<8} {where[:14]:<14} {row['status']:<10} {runtime:>9}"
              f"  {load}".rstrip())
    return 0


def serve_command(args) -> int:
    """Start the estimation web form and JSON API on a production WSGI server (waitress), with
    /healthz, /readyz and /metrics. If the store has no trained model, one is trained first
    from the shipped runs. Settings: --config FILE (TOML) or $JOBGAUGE_CONFIG, and
    JOBGAUGE_* environment variables (JOBGAUGE_API_TOKEN for write access). Without a token
    it listens only on a loopback address. With --debug, Flask's development server runs
    instead."""
    # the settings, the bind address and the store are checked before the model is loaded
    # (or trained); then it serves until SIGTERM
    from jobgauge.webapp import create_app
    from jobgauge.webapp.server import bind_address, check_bind, serve

    config = {}
    if args.store:
        config["STORE_URL"] = args.store
    if args.threads is not None:
        config["SERVER_THREADS"] = args.threads
    if args.sync:
        config["SYNC"] = tuple(args.sync)
    if args.sync_every is not None:
        config["SYNC_EVERY"] = args.sync_every
    app = create_app(config, settings_file=args.config)
    host, port = bind_address(app.config, args.host, args.port)
    check_bind(host, app.config)   # before minutes of model training, not after
    service = app.extensions["jobgauge"]
    service.store.count_runs()     # a store that cannot be read: one line, exit 1
    service.ensure_model(progress=sys.stderr)
    service.warm_up()              # the plan session starts now, not on the first request
    from jobgauge.webapp._sync import start_sync, stop_sync

    start_sync(app)                # History Server sync in a background thread (--sync)
    try:
        if args.debug:             # Flask's development server, for development only
            print(f"jobgauge (development server) on http://{host}:{port}/", file=sys.stderr,
                  flush=True)
            app.run(host=host, port=port, debug=True, use_reloader=False)
            return 0
        return serve(app, host, port)
    finally:
        stop_sync(app)
