"""The ``jobgauge`` command line: one parser, subcommands registered per area.

Each area module listed in ``COMMAND_MODULES`` has ``register(subparsers)``,
which adds its subcommands with ``set_defaults(handler=function)``.  A handler
takes the parsed arguments and returns an exit code.  Area modules must stay
light to import (no pyspark, no torch at import time) so ``--help`` is fast.

``main`` turns every :class:`GaugeError` into one line on stderr and exit code
1; a traceback is shown only with ``--debug``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from jobgauge import __version__
from jobgauge.errors import GaugeError

COMMAND_MODULES = (
    "jobgauge.commands",          # import, runs, serve
    "jobgauge.history_cli",       # sync, report
    "jobgauge.profiler.runners.run_cli",  # run, collect
    "jobgauge.profiler.readers.profile_cli",  # profile
    "jobgauge.profiler.hive_cli",  # hive start|stop|explain|run
    "jobgauge.dag.cli",           # dag
    "jobgauge.models.cli",        # train, predict, evaluate
    "jobgauge.models.remaining",  # remaining
    "jobgauge.tuner.cli",         # tune
)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line and exit code 1, as for every usage error
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(1)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="jobgauge", description=(
        "Predict how long a Spark job, Hadoop job or Hive query will take and what it "
        "will cost, pick the settings that make it fastest or cheapest, and track "
        "running jobs."))
    parser.add_argument("--version", action="version", version=f"jobgauge {__version__}")
    parser.add_argument("--store", metavar="URL", default=None,
                        help="SQLAlchemy URL or SQLite file of the run store "
                             "(default: $JOBGAUGE_STORE, else ~/.local/share/jobgauge/jobgauge.db)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 1
    try:
        return int(args.handler(args) or 0)
    except GaugeError as exc:
        if args.debug:
            raise
        print(f"jobgauge: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("jobgauge: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
