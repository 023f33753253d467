"""Queries timed inside one warm application on a quiet machine: the measurement that
``bench/measure_now.py`` and ``bench/shuffle_cost.py`` share."""

from __future__ import annotations

import contextlib
from pathlib import Path

#: A run starts once the machine keeps fewer than this many cores busy (over the second
#: before it, the warm application idle between its runs), or after MAX_WAIT_S seconds of
#: waiting; the load at each run's start is reported with it.
QUIET_LOAD = 0.7
MAX_WAIT_S = 20


@contextlib.contextmanager
def warm_runs(master: str, folder: Path, *, eventlogs: Path | None = None,
              profiles: bool = False):
    """``measure(workload, size, config, what) -> (run, load at its start)`` for runs in
    one warm application on ``master`` (``WarmRunner``: 3 warm-up runs of each workload
    first; its work and event logs under ``folder``, or the logs in ``eventlogs``), each
    started on a quiet machine; a run that does not succeed ends the script, naming
    ``what`` was measured."""
    from jobgauge.profiler import WarmRunner
    from jobgauge.profiler.runners.driver import LoadGuard

    guard = LoadGuard(threshold=QUIET_LOAD, max_wait_s=MAX_WAIT_S, read_own_cpu=lambda: 0.0)
    folder = Path(folder)
    with WarmRunner(master=master, eventlog_dir=eventlogs or folder / "eventlogs",
                    work_dir=folder / "work", warmup="workload", warmup_runs=3,
                    profiles=profiles) as runner:
        def measure(workload: str, size: str, config: dict, what: str) -> tuple[dict, float]:
            load = guard.wait_quiet()["load_at_start"]
            run = runner.run(workload, size, config, timeout_s=900)
            if run["status"] != "succeeded":
                raise SystemExit(f"{what}: {run['status']}: {run.get('error')}")
            return run, load

        yield measure
