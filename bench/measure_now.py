"""The web form's answer next to a fresh measurement, for a few TPC-H queries at one scale.

    nice -n 10 .venv/bin/python bench/measure_now.py [--queries 3 9 18] [--scale 3] [--repeats 3]
        [--master local[2]] [--conf KEY=VALUE ...] [--eventlogs DIR]

Measures each query now with Spark's defaults on ``--master`` (local[2]; local[1] asks
what one slot takes), or with the settings of ``--conf`` (``spark.driver.memory=4g``:
what a larger heap buys; the form is asked with the same settings), inside one warm
application
(``WarmRunner``: 3 warm-up runs of each query first, then ``--repeats`` runs each,
interleaved; the query's own time, as the shipped corpus and the form mean it), each
run after at most 20 s of waiting for fewer than 0.7 cores busy on the machine (each run
prints its load), and sets the answer of the
web form's code (``Service.estimate``, the shipped model, trained on first need in a
temporary store) beside the median.  Prints a Markdown table; writes nothing else,
unless ``--eventlogs DIR`` keeps the application's event log there: then each run's
task time is also split into CPU, GC, spill and shuffle (from its jobs' stages), to
see what grew where a query's time jumps with the size (Q9 at SF 20: 3.5x its SF 10
time).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path


def main(argv=None) -> int:
    from _warm import warm_runs

    from jobgauge.cli_options import add_conf_option, parse_key_values

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", nargs="+", type=int, default=[3, 9, 18])
    parser.add_argument("--scale", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--master", default="local[2]", choices=["local[1]", "local[2]"],
                        help="the Spark master measured and asked about (default local[2])")
    parser.add_argument("--eventlogs", type=Path, default=None, metavar="DIR",
                        help="keep the application's event log in DIR and print where each "
                             "run's task time went (default: the log is discarded)")
    add_conf_option(parser, help="a setting of the runs and of the form's question "
                                 "(default: Spark's defaults); repeatable")
    args = parser.parse_args(argv)
    from jobgauge.errors import UsageError
    from jobgauge.units import scale_label

    try:
        config = parse_key_values(args.conf, settings=True)
    except UsageError as exc:
        parser.error(str(exc))
    size = scale_label(args.scale)
    workloads = [f"tpch-q{q}" for q in args.queries]
    runs = {w: [] for w in workloads}
    timed = []                         # (workload, run) of each measured run
    with tempfile.TemporaryDirectory(prefix="jobgauge-measure-") as tmp:
        with warm_runs(args.master, Path(tmp), eventlogs=args.eventlogs,
                       profiles=bool(args.eventlogs)) as measure:
            for repeat in range(args.repeats):
                for workload in workloads:
                    run, load = measure(workload, size, dict(config), f"{workload} {size}")
                    runs[workload].append(run["runtime_s"])
                    timed.append((workload, run))      # its profile comes at the end
                    print(f"  {workload} {size}: {run['runtime_s']:.2f} s (load {load:.2f} "
                          f"at start)", flush=True)
        answers = _answers(workloads, args.scale, Path(tmp), args.master, config)
    if args.eventlogs:
        _where_the_time_went(args.eventlogs, timed)
    settings = ", ".join(f"{k}={v}" for k, v in config.items()) or "Spark's defaults"
    print(f"\n| query at SF {args.scale:g} on {args.master}, {settings} | the form's answer [80 %] | measured now (median "
          f"of {args.repeats}) | error |\n|---|---|---|---|")
    for workload in workloads:
        measured = statistics.median(runs[workload])
        option = answers[workload]
        print(f"| {workload} | {option['runtime_s']:.2f} s [{option['low_s']:.2f}, "
              f"{option['high_s']:.2f}] | {measured:.2f} s "
              f"({', '.join(f'{v:.2f}' for v in runs[workload])}) | "
              f"{abs(option['runtime_s'] - measured) / measured:.0%} |")
    return 0


def _where_the_time_went(folder: Path, measured) -> None:
    """Per measured run, its stages' task time split into CPU, GC, spill and shuffle (from
    the profile ``WarmRunner`` cut out of the application's event log)."""
    print(f"\nEvent logs kept in {folder}.\n\n| run | task s | CPU s | GC s | spilled "
          f"MiB (disk) | shuffle read MiB | shuffle write MiB | stages |\n"
          f"|---|---|---|---|---|---|---|---|")
    for workload, run in measured:
        profile = run.get("profile")
        if profile is None:
            print(f"| {workload} | no event log |  |  |  |  |  |  |")
            continue
        totals = profile.totals
        mib = 2.0 ** 20
        print(f"| {workload} | {(totals.get('executor_run_time_ms') or 0) / 1e3:.1f} | "
              f"{(totals.get('executor_cpu_time_ms') or 0) / 1e3:.1f} | "
              f"{(totals.get('jvm_gc_time_ms') or 0) / 1e3:.1f} | "
              f"{(totals.get('memory_spill_bytes') or 0) / mib:.0f} "
              f"({(totals.get('disk_spill_bytes') or 0) / mib:.0f}) | "
              f"{(totals.get('shuffle_read_bytes') or 0) / mib:.0f} | "
              f"{(totals.get('shuffle_write_bytes') or 0) / mib:.0f} | "
              f"{len(profile.stages)} |")


def _answers(workloads, scale, folder: Path, master: str, config: dict) -> dict:
    """{workload: the web form's first option with the settings ``config``}, from a
    service on a fresh store."""
    from form_answers import answer                  # bench/form_answers.py, beside this
    from jobgauge.webapp.service import Service

    service = Service(store_url=str(folder / "store.db"))
    return {workload: answer(service, workload, scale, master, config)
            for workload in workloads}


if __name__ == "__main__":
    sys.exit(main())
