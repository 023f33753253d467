"""The bytes of the files the shipped TPC-H profiles scan, measured again.

    python bench/scan_files.py            # writes data/scan-files.json, data/scan-row-bytes.json

``jobgauge collect`` records each scan's file bytes beside a new profile
(``scan_files``); the profiles shipped before it did not.  Their plans name the
files (``Location: InMemoryFileIndex [file:.../tpch/sf0.3/lineitem.parquet]``),
and tpchgen-cli writes the same bytes for the same scale every time (checked: the
customer table at SF 1 is 13,924,285 bytes here and in the event log of a run
collected in session 16).  This script generates every TPC-H scale the shipped
plans scan (where the plans say they were, as ``jobgauge run tpch`` does; SF 10 takes
about a minute and 3.6 GB) and writes ``{location: bytes}`` for the locations it holds
to ``data/scan-files.json``, which ``jobgauge.data.scan_files`` reads.  Locations
of other data (HiBench) are left out: their profiles keep the replay's estimate
from the bytes a scan read.  Beside it, ``data/scan-row-bytes.json``: the row size
Spark gives each table without column statistics (from its files' schema,
``collect.scan_row_bytes``), which ``jobgauge.data.scan_row_bytes`` reads, for the
profiles collected before ``jobgauge collect`` recorded it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_TPCH = re.compile(r"/tpch/(sf[0-9.]+)/\w+\.parquet$")


def main(argv=None) -> int:
    from jobgauge.data import profile_files
    from jobgauge.profiler.runners.collect import scan_files, scan_locations, scan_row_bytes
    from jobgauge.profiler.workloads.tpch import ensure_data
    from jobgauge.runtable import read_profile_records

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "scan-files.json")
    parser.add_argument("--rows-out", type=Path, default=ROOT / "data" / "scan-row-bytes.json")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    records = read_profile_records(profile_files()).values()
    plans = [r["physical_plan"] for r in records if r.get("physical_plan")]
    scales = set()      # (<data root>, sf<SF>) of <data root>/tpch/sf<SF>/<table>.parquet
    for plan in plans:
        for location in scan_locations(plan):
            found = _TPCH.search(location)
            if found:
                scales.add((str(Path(location.removeprefix("file:")).parents[2]),
                            found.group(1)))
    for root, label in sorted(scales, key=lambda s: (s[0], float(s[1][2:]))):
        print(f"generating TPC-H {label} under {root} ...", flush=True)
        ensure_data(Path(root), label)
    files, rows = {}, {}
    for plan in plans:
        locations = [k for k in scan_locations(plan) if _TPCH.search(k)]
        files.update(scan_files(locations=locations))
        rows.update(scan_row_bytes(locations=locations))
    args.out.write_text(json.dumps(dict(sorted(files.items())), indent=1) + "\n")
    args.rows_out.write_text(json.dumps(dict(sorted(rows.items())), indent=1) + "\n")
    labels = ", ".join(sorted(label for _, label in scales))
    print(f"{len(files)} locations of {len(scales)} scales ({labels}) -> {args.out}, "
          f"{args.rows_out} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
