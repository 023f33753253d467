"""How much the quiet-corpus protocols' errors depend on which run is the profile.

    nice -n 10 .venv/bin/python bench/reference_spread.py [--draws 5] [--protocol P ...] [--json]

Protocols (e), (f), (c) and (a) of ``bench/evaluate.py --quiet-corpus`` give every TPC-H
query one profiling run, its reference (``models._stage.reference_runs``: a quiet run
with the fewest settings, then the smallest input, then the smallest run_id).  That run
stands for "the user profiled this job once at a small scale", so the replay carries its
noise into every answer: its stage times are the work the replay scales.  The SF 0.1
and SF 0.3 runs at Spark's defaults repeat within 15 % (median; ``evaluation_quiet.md``),
and a profile that happened to run slow in one stage prices that stage high at every
size.

This script scores the stage model (``models.DEFAULT_MODEL``) under each protocol with the
reference rule's profiles (draw 0, the report's figures) and with ``--draws`` other
draws: each query's profiling run drawn at random (seeded, the same in every run of
the script) among the runs the rule could have taken at the protocol's profiling
sizes: finished, started quiet, Spark's defaults (the fewest settings), at SF 0.1 or
SF 0.3.  A drawn run is on the training side of every fold and never scored, as the
rule's is; every other run stays where it was.  It prints, per protocol and breakdown,
the MdAPE of each draw and their range.  Measured runtimes only; 4.4-5.4 min a draw with
every protocol on a quiet machine.  Writes bench/reports/reference_spread.md
(``--json``: the figures).
"""

from __future__ import annotations

import random
import statistics
import sys
import time

import numpy as np

from _report import report_main
from jobgauge.models.evaluation import _breakdown_order

PROTOCOLS = ("scaleup", "slots", "workloads-sf1", "configs-sf1")
NAMES = {"scaleup": "(e) scale-up from SF <= 1", "slots": "(f) slots",
         "workloads-sf1": "(c) unseen TPC-H queries at SF >= 1",
         "configs-sf1": "(a) held-out configurations at SF >= 1"}
#: The largest scale factor of a profiling run (protocol (e): "profile at SF <= 0.3").
PROFILE_SCALE = 0.3
SEED = 13


def candidates(frame, records) -> dict:
    """{(workload, framework): positions of the runs the reference rule could take at the
    profiling sizes}: finished, with a profile, started quiet, with the fewest settings
    of the workload's profiled runs, at SF <= :data:`PROFILE_SCALE`."""
    from jobgauge.models.evaluation import scale_factors
    from jobgauge.models.features import row_configs
    from jobgauge.runtable import busy_starts

    keys = list(zip(frame["source"].astype(str), frame["run_id"].astype(str)))
    has = np.array([key in records for key in keys])
    settings = np.array([len(config) for config in row_configs(frame)])
    usable = has & frame["completed"].astype(bool).to_numpy() & ~busy_starts(frame) \
        & (scale_factors(frame) <= PROFILE_SCALE)
    jobs = list(zip(frame["workload"].astype(str), frame["framework"].astype(str)))
    out = {}
    for job in sorted(set(jobs)):
        mine = np.array([j == job for j in jobs]) & has
        fewest = settings[mine].min() if mine.any() else None
        out[job] = [int(i) for i in np.flatnonzero(mine & usable & (settings == fewest))]
    return out


def scored(cell) -> dict:
    """{breakdown ("" for all): (MdAPE, coverage, median width high / low)} of one cell's
    finished test runs, as ``models.evaluation.summarize`` scores them for the report."""
    from jobgauge.models.evaluation import summarize

    labels = np.asarray(cell["breakdown"] if cell["breakdown"] is not None
                        else [""] * len(cell["y"]), dtype=object)
    out = {}
    for label in ["", *sorted(set(labels), key=_breakdown_order)]:
        row = summarize(cell, keep=(labels == label) if label else None)
        if row is not None:
            out[label] = (row["mdape"], row["coverage80"], row["width80"])
    return out


def figures(args) -> dict:
    from jobgauge.models import DEFAULT_MODEL
    from jobgauge.models.evaluation import (attach_reference_profiles, evaluate_cell,
                                            quiet_frame_and_records)

    frame, records = quiet_frame_and_records()
    bare = frame.drop(columns=["profile", "dag", "profile_reference"])
    rule = {}
    for position in np.flatnonzero(frame["profile_reference"].to_numpy(dtype=bool)):
        job = (str(frame["workload"].iat[position]), str(frame["framework"].iat[position]))
        rule.setdefault(job, []).append(int(position))
    pool = candidates(bare, records)
    draws = [("the reference rule", rule)]
    rng = random.Random(SEED)
    for number in range(1, args.draws + 1):
        draws.append((f"draw {number}", {job: [rng.choice(pool[job])] if pool.get(job)
                                         else rule[job] for job in rule}))
    labels = frame["datasize"].astype(str).to_numpy()
    out = {"model": DEFAULT_MODEL, "seed": SEED, "candidates": {
        "|".join(job): len(positions) for job, positions in pool.items()}, "draws": []}
    for name, chosen in draws:
        started = time.perf_counter()
        drawn = attach_reference_profiles(bare, records, references=chosen)
        sizes = sorted(labels[p] for positions in chosen.values() for p in positions)
        row = {"draw": name, "profiles": {size: sizes.count(size) for size in sorted(set(sizes))},
               "protocols": {}}
        for protocol in args.protocol:
            cell = evaluate_cell(drawn, "quiet", protocol, DEFAULT_MODEL)
            row["protocols"][protocol] = scored(cell)
        row["seconds"] = round(time.perf_counter() - started, 1)
        out["draws"].append(row)
        print(f"{name}: " + "; ".join(f"{p} {100 * v[''][0]:.1f} %"
                                      for p, v in row["protocols"].items())
              + f" ({row['seconds']:.0f} s)", file=sys.stderr, flush=True)
    return out


def _percent(value) -> str:
    return f"{100 * value:.1f} %"


def markdown(found, seconds) -> str:
    draws = found["draws"]
    protocols = list(draws[0]["protocols"]) if draws else []
    lines = [
        "# How much the quiet-corpus errors depend on the profiling run",
        "",
        f"Generated {time.strftime('%Y-%m-%d')} by `bench/reference_spread.py` in "
        f"{seconds / 60:.1f} min. Reproduce with `nice -n 10 .venv/bin/python "
        f"bench/reference_spread.py --draws {len(draws) - 1}`.",
        "",
        f"Model `{found['model']}`. Each query has one profiling run (its reference). "
        "Draw 0 takes the reference rule's run, as `bench/evaluate.py --quiet-corpus` "
        "does. Each other draw takes, for every query, a run drawn at random (seed "
        f"{found['seed']}) among the runs the rule could have taken: finished, started "
        "quiet, Spark's defaults, at SF 0.1 or SF 0.3. Per query, the rule had this "
        "many to draw from: "
        + ", ".join(f"{job.split('|')[0]} {n}" for job, n in sorted(
            found["candidates"].items(), key=lambda kv: int(kv[0].split("|")[0][6:])
            if kv[0].startswith("tpch-q") else 0)) + ".",
        "",
        "## MdAPE per draw",
        "",
        "Per protocol and breakdown: MdAPE (coverage of the 80 % interval, median width "
        "high / low).",
        "",
    ]
    for protocol in protocols:
        breakdowns = list(draws[0]["protocols"][protocol])
        lines += [f"### {NAMES.get(protocol, protocol)}", "",
                  "| draw | profiles | " + " | ".join(b or "all" for b in breakdowns) + " |",
                  "|---|---|" + "---|" * len(breakdowns)]
        for row in draws:
            values = row["protocols"][protocol]
            lines.append(f"| {row['draw']} | " + ", ".join(
                f"{n} at {size}" for size, n in row["profiles"].items()) + " | " + " | ".join(
                f"{_percent(values[b][0])} ({100 * values[b][1]:.0f} %, x{values[b][2]:.2f})"
                if b in values else "—" for b in breakdowns) + " |")
        spread = []
        for b in breakdowns:
            errors = [row["protocols"][protocol][b][0] for row in draws
                      if b in row["protocols"][protocol]]
            spread.append(f"{_percent(min(errors))} – {_percent(max(errors))} "
                          f"(median {_percent(statistics.median(errors))})")
        lines += ["| range over the draws | | " + " | ".join(spread) + " |", ""]
    return "\n".join(lines) + "\n"


def options(parser) -> None:
    parser.add_argument("--draws", type=int, default=5,
                        help="draws besides the reference rule's (default 5)")
    parser.add_argument("--protocol", nargs="+", choices=PROTOCOLS, default=list(PROTOCOLS),
                        help="the protocols to score (default: all four)")


def main(argv=None) -> int:
    return report_main(argv, __doc__, figures, markdown, "reference_spread.md", options)


if __name__ == "__main__":
    sys.exit(main())
