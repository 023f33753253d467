"""Evaluate every runtime model under the project's protocols and write the report.

    nice -n 10 .venv/bin/python bench/evaluate.py                 # everything
    nice -n 10 .venv/bin/python bench/evaluate.py --quick         # smoke run
    nice -n 10 .venv/bin/python bench/evaluate.py --runs ../shared/datasets/scout_multinode.csv \
        --protocol cluster --models svm fc

Writes bench/reports/evaluation.md and bench/reports/evaluation_cdf_<source>.png (the
report names the command that made it and its wall time);
per-cell predictions are cached under bench/reports/cache/ (keyed by data, model
parameters and protocol), so an interrupted run resumes where it stopped.
The same is ``jobgauge evaluate``.
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    from jobgauge.errors import GaugeError
    from jobgauge.models.evaluation import (
        DEFAULT_MODELS,
        PROTOCOLS,
        default_run_tables,
        run_evaluation,
    )

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="+", help="run tables (default: Scout, C3O, data/runs)")
    parser.add_argument("--profiles", nargs="*", default=None,
                        help="profile JSON-lines files (default: data/profiles/*.jsonl*)")
    parser.add_argument("--protocol", action="append", choices=list(PROTOCOLS))
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    parser.add_argument("--out", help="report folder (default bench/reports)")
    parser.add_argument("--quick", action="store_true", help="smoke run: fewer folds/epochs")
    parser.add_argument("--no-cache", action="store_true", help="recompute every cell")
    args = parser.parse_args(argv)
    given = sys.argv[1:] if argv is None else list(argv)
    command = " ".join(["nice -n 10 .venv/bin/python bench/evaluate.py", *given])
    try:
        result = run_evaluation(args.runs or default_run_tables(), protocols=args.protocol,
                                models=args.models, out_dir=args.out, quick=args.quick,
                                progress=sys.stderr, profile_paths=args.profiles,
                                use_cache=not args.no_cache, command=command)
    except GaugeError as exc:
        print(f"evaluate: error: {exc}", file=sys.stderr)
        return 1
    print(result["markdown_table"])
    print(f"report: {result['report']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
