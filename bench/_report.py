"""The command line of a bench script that computes figures and writes them as a report.

    def main(argv=None) -> int:
        return report_main(argv, __doc__, figures, markdown, "my_bench.md")

``figures()`` computes what the script measures (anything JSON can print); ``markdown(
figures, seconds)`` renders it as the report's text, given the seconds it took.  The
script then takes ``--json`` (print the figures, write nothing) and ``--report-dir``
(where the report goes, default ``bench/reports``); it prints the report and says where
it wrote it.  ``options(parser)``, where given, adds the script's own options, and
``figures(args)`` then gets the parsed arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPORTS = Path(__file__).resolve().parent / "reports"
REPO = REPORTS.parent.parent


def shown(path) -> str:
    """A path as a report names it: relative to the repository where it lies in it, else
    as given."""
    path = Path(path)
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def report_main(argv, doc: str, figures, markdown, name: str, options=None) -> int:
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--report-dir", type=Path, default=REPORTS)
    if options is not None:
        options(parser)
    args = parser.parse_args(argv)
    from jobgauge.errors import GaugeError

    started = time.perf_counter()
    try:
        found = figures() if options is None else figures(args)
    except GaugeError as exc:      # a bad input file: its message, not a traceback
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    text = markdown(found, time.perf_counter() - started)
    print(text)
    args.report_dir.mkdir(parents=True, exist_ok=True)
    out = args.report_dir / name
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return 0


def table_lines(rows: list[dict]) -> list[str]:
    """A Markdown table of ``rows`` (dicts with the same keys, in order): its header, its
    rule and one line per row."""
    columns = list(rows[0])
    return (["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            + ["| " + " | ".join(str(row[c]) for c in columns) + " |" for row in rows])
