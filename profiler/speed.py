"""The machine's speed: one fixed piece of CPU work, timed.

The probe is SHA-256 over 64 MiB of zeros, ten times: about 0.38 s on one core of this
machine in session 42 (``bench/reports/noise_sources.md``), 0.54-0.58 s in sessions 48
and 49, when every Spark run took about 1.5 times as long.  A run table holds one
machine's speed, so ``jobgauge collect`` times the probe as each application starts,
keeps it with each run (``machine_probe_s``) and refuses to add runs to a table whose
probe differs by more than a tolerance (:func:`speed_change`).
"""

from __future__ import annotations

import hashlib
import time

PROBE_BYTES = 64 * 2 ** 20
PROBE_ROUNDS = 10          # SHA-256 over 64 MiB takes 0.04-0.06 s here: ten of them
#: How far (relative) a collection's probe may be from its table's before it stops.  The
#: probe's own repeat noise is about 2 %; the slower machine of session 48 was 43 % off.
SPEED_TOLERANCE = 0.10
#: How many times :func:`machine_speed` times the probe (the fastest is the speed).
SPEED_RUNS = 3


def probe_once(_=None) -> tuple[float, float]:
    """(wall, CPU) seconds of one probe on one core.  The unused argument lets a process
    pool map it."""
    data = bytes(PROBE_BYTES)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(PROBE_ROUNDS):
        hashlib.sha256(data).digest()
    return time.perf_counter() - wall, time.process_time() - cpu


def machine_speed(runs: int = SPEED_RUNS) -> float:
    """The fewest CPU seconds of ``runs`` probes on one core (rounded to the ms).  CPU
    time, not wall: time spent waiting for a core (the load guard's business) does not
    count, a slower processor does (on the slower machine of sessions 48-49 the probe's
    CPU time was its wall time, 0.58 s).  The fastest, not the median: another process
    busy beside the probe slows even its CPU time (shared caches and memory), never
    speeds it; in session 49's suite a probe beside a busy JVM moved from 0.548 s to
    0.479 s between two applications and stopped a collection."""
    return round(min(probe_once()[1] for _ in range(max(1, int(runs)))), 3)


def speed_change(now_s: float, reference_s: float) -> float:
    """How much slower (positive) or faster (negative) the machine is now than the
    reference, as a fraction of the reference's probe time."""
    return now_s / reference_s - 1.0


def describe_change(now_s: float, reference_s: float) -> str:
    """'0.583 s, 53 % slower than 0.380 s' (or faster)."""
    change = speed_change(now_s, reference_s)
    way = "slower" if change > 0 else "faster"
    return f"{now_s:.3f} s, {abs(change):.0%} {way} than {reference_s:.3f} s"
