"""A table measured again with the new collector against the shipped one: noise and shift.

    nice -n 19 .venv/bin/python bench/recollect_noise.py [--new TABLE] [--old TABLE] [--at COMMIT]

Default: ``data/recollect/runs/tpch-sf1-v2.csv.gz`` (``bench/plans/tpch-sf1-v2.toml``,
collected with the collector of session 41: each workload warmed up in its application,
the guard on other processes' CPU) against ``data/runs/tpch-sf1.csv.gz`` (the same
configurations, collected before).  Over the (query, configuration) pairs both tables
hold with two or more finished runs: the repeat noise of each
(``jobgauge.runtable.repeat_noise``: a run against the median of its configuration's
other runs), overall, per configuration and by the length of the runs, and the median
log ratio of the new runs to the old (a shift between the two collections); and, in
each table, how the earlier run of a pair in one application compares with the later one
(:func:`_order_effect`: a JVM still warming up makes the earlier one slower), and where
the difference in process CPU between repeats went (``noise_sources.thread_shares``).  A few
seconds; writes ``bench/reports/recollect_noise.md``.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import report_main, shown  # noqa: E402
from noise_sources import thread_shares  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
NEW = REPO / "data" / "recollect" / "runs" / "tpch-sf1-v2.csv.gz"
OLD = REPO / "data" / "runs" / "tpch-sf1.csv.gz"
#: Buckets of a configuration's median runtime, seconds.
LENGTHS = ((0.0, 2.0), (2.0, 5.0), (5.0, math.inf))


def _finished(path: Path) -> list[dict]:
    """The finished runs of a run table."""
    from jobgauge.runtable import read_run_table

    return [row for row in read_run_table(path) if row["completed"] and row["runtime_s"]]


def _groups(rows: list[dict]) -> dict:
    from jobgauge.runtable import config_json

    groups = defaultdict(list)
    for row in rows:
        groups[(row["workload"], config_json(row["config"]))].append(row["runtime_s"])
    return groups


def _order_effect(path: Path, rows: list[dict]) -> dict | None:
    """The earlier run of each (query, configuration) pair in one application against
    the later one: how often it is slower and the median log of their ratio, overall and
    per configuration.  The order is the profiles' (``profiles/NAME.jsonl.gz`` beside
    the table at ``path``, whose finished ``rows`` these are): a run's application and its
    first stage id, which grows through an application.  None where the table has no
    profiles."""
    from jobgauge.runtable import config_json, profiles_beside, read_profile_records

    files = profiles_beside(path)
    if not files:
        return None
    order = {}
    for (source, run_id), record in read_profile_records(files).items():
        stages = [s.get("stage_id") for s in record.get("stages") or []
                  if s.get("stage_id") is not None]
        app = (record.get("summary") or {}).get("app_id")
        if app and stages:
            order[(source, run_id)] = (app, min(stages))
    runs = defaultdict(list)
    for row in rows:
        where = order.get((row["source"], row["run_id"]))
        if where:
            runs[(row["workload"], config_json(row["config"]))].append((*where, row["runtime_s"]))
    ratios = defaultdict(list)
    for (_, config), found in runs.items():
        apps = defaultdict(list)
        for app, stage, runtime in found:
            apps[app].append((stage, runtime))
        for pair in apps.values():
            if len(pair) >= 2:
                (_, earlier), (_, later) = sorted(pair)[:2]
                ratios[config].append(math.log(earlier / later))

    def summary(values):
        return {"pairs": len(values),
                "earlier_slower": round(sum(v > 0 for v in values) / len(values), 3),
                "median_log": round(statistics.median(values), 3)}

    every = [v for values in ratios.values() for v in values]
    if not every:
        return None
    return {**summary(every),
            "per_configuration": {c: summary(v) for c, v in sorted(ratios.items())}}


def _compare(old: dict, new: dict, keys) -> dict:
    from jobgauge.runtable import repeat_noise

    keys = list(keys)
    a, b = repeat_noise([old[k] for k in keys]), repeat_noise([new[k] for k in keys])
    return {"pairs": len(keys), "old": round(a["mdape"], 3), "new": round(b["mdape"], 3),
            "old_p90": round(a["p90"], 3), "new_p90": round(b["p90"], 3),
            "shift": round(statistics.median(
                math.log(statistics.median(new[k]) / statistics.median(old[k])) for k in keys), 3)}


def _committed(path: Path, commit: str, folder: Path) -> Path:
    """The run table at ``path`` and its profiles as ``commit`` holds them, written under
    ``folder`` at the same relative paths; the table's path there."""
    import subprocess

    from jobgauge.runtable import profiles_path_for

    table = path.resolve()
    if not table.is_relative_to(REPO):
        raise SystemExit(f"--at reads a table of this repository; {path} is outside it")
    out = folder / table.relative_to(REPO)
    for source, target in ((table, out), (profiles_path_for(table), profiles_path_for(out))):
        name = source.relative_to(REPO).as_posix()
        shown = subprocess.run(["git", "-C", str(REPO), "show", f"{commit}:{name}"],
                               capture_output=True)
        if shown.returncode:
            if source == table:
                raise SystemExit(f"cannot read {name} at {commit}: "
                                 f"{shown.stderr.decode(errors='replace').strip()}")
            continue                    # a table without profiles: no order effect
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(shown.stdout)
    return out


def figures(args) -> dict:
    if not args.at:
        return _figures(args.old, args.new)
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        found = _figures(args.old, _committed(args.new, args.at, Path(folder)))
    found["new"], found["at"] = shown(args.new), args.at
    return found


def _figures(old_path: Path, new_path: Path) -> dict:
    old_rows, new_rows = _finished(old_path), _finished(new_path)
    old, new = _groups(old_rows), _groups(new_rows)
    both = [k for k in new if k in old and len(new[k]) >= 2 and len(old[k]) >= 2]
    if not both:
        raise SystemExit(f"no (query, configuration) pair with two runs in both {new_path} "
                         f"and {old_path}")
    configs = defaultdict(list)
    for key in both:
        configs[key[1]].append(key)
    lengths = {}
    for low, high in LENGTHS:
        keys = [k for k in both if low <= statistics.median(new[k]) < high]
        if keys:
            name = f"{low:g} s and longer" if high == math.inf else f"{low:g}-{high:g} s"
            lengths[name] = _compare(old, new, keys)
    return {"new": shown(new_path), "old": shown(old_path),
            "new_runs": sum(len(v) for v in new.values()), "configurations": len(configs),
            "all": _compare(old, new, both),
            "per_configuration": {c: _compare(old, new, k) for c, k in sorted(configs.items())},
            "by_length": lengths,
            "order": {"old": _order_effect(old_path, old_rows),
                      "new": _order_effect(new_path, new_rows)},
            "cpu_shares": {"old": thread_shares(old_rows), "new": thread_shares(new_rows)}}


def markdown(found: dict, seconds: float) -> str:
    def row(name, c):
        return (f"| {name} | {c['pairs']} | {100 * c['old']:.1f} % | {100 * c['new']:.1f} % | "
                f"{100 * c['old_p90']:.1f} % | {100 * c['new_p90']:.1f} % | {c['shift']:+.3f} |")

    head = ["| | pairs | old noise | new noise | old p90 | new p90 | new / old (median log) |",
            "|---|---|---|---|---|---|---|"]
    lines = ["# A table measured again with the new collector (`bench/recollect_noise.py`)", "",
             f"New: `{found['new']}` ({found['new_runs']} finished runs, "
             f"{found['configurations']} configurations); old: `{found['old']}`. "
             "Noise: `jobgauge.runtable.repeat_noise` (a run against the median of its "
             "configuration's other runs) over the (query, configuration) pairs both tables "
             "hold with two or more finished runs.", "", *head,
             row("all", found["all"])]
    lines += [row(f"median run {name}", c) for name, c in found["by_length"].items()]
    lines += ["", "Per configuration:", "", *head]
    lines += [row("`" + ", ".join(f"{k}={v}" for k, v in json.loads(c).items()) + "`", v)
              for c, v in found["per_configuration"].items()]
    order = found.get("order") or {}
    if any(order.values()):
        lines += ["", "The earlier run of a pair in one application against the later one "
                  "(the order of the profiles' stage ids; all of the table's pairs that "
                  "share an application):", "",
                  "| | table | pairs | earlier run slower | median log (earlier / later) |",
                  "|---|---|---|---|---|"]
        for side in ("old", "new"):
            if order.get(side):
                o = order[side]
                lines.append(f"| {side} | `{found[side]}` | {o['pairs']} | "
                             f"{100 * o['earlier_slower']:.0f} % | {o['median_log']:+.3f} |")
    shares = found.get("cpu_shares") or {}
    if any(shares.values()):
        lines += ["", "Where the difference in process CPU between a configuration's repeats "
                  "went (each over the pair's mean process CPU; covariance shares; the runs "
                  "that recorded their JVM threads' CPU):", "",
                  "| | table | tasks | JIT compiler | GC | the rest |", "|---|---|---|---|---|---|"]
        for side in ("old", "new"):
            if shares.get(side):
                c = shares[side]
                lines.append(f"| {side} | `{found[side]}` | {100 * c['tasks']:.0f} % | "
                             f"{100 * c['compiler']:.0f} % | {100 * c['gc']:.0f} % | "
                             f"{100 * c['rest']:.0f} % |")
    asked = "".join(f" --{side} {found[side]}" for side, default in (("new", NEW), ("old", OLD))
                    if found[side] != str(default.relative_to(REPO)))
    asked += f" --at {found['at']}" if found.get("at") else ""
    lines += ["", f"Command: `nice -n 19 .venv/bin/python bench/recollect_noise.py{asked}` "
              f"({seconds:.0f} s)", ""]
    return "\n".join(lines)


def options(parser) -> None:
    parser.add_argument("--new", type=Path, default=NEW)
    parser.add_argument("--old", type=Path, default=OLD)
    parser.add_argument("--at", metavar="COMMIT",
                        help="read --new (and its profiles) as COMMIT holds them: a table "
                             "collected in parts, at one of its parts")


def main(argv=None) -> int:
    return report_main(argv, __doc__, figures, markdown, "recollect_noise.md", options)


if __name__ == "__main__":
    raise SystemExit(main())
