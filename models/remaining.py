"""How long a running Spark application has left.

:class:`RemainingTimeEstimator` turns a progress snapshot (from the driver's
REST API or a growing event log, see :mod:`jobgauge.profiler.readers.live`) into
seconds left, with an interval.  It follows the scikit-learn contract:
keyword-only hyperparameters, ``fit`` learns, attributes ending in ``_`` hold
what was learned.

How it estimates (the AI Gauge recipe, on weighted units of work):

* **With history** of the same application (same ``app_name``, i.e. the
  app signature), ``fit`` learns the typical run: how long the start-up takes
  and how long each job takes in submission order (the median "interval" of
  job *k*: from its submission to the next job's submission, the last one to
  the application's end), and how many jobs a run has.  Online, each finished
  interval gives a speed ratio (observed / typical); an exponentially
  weighted moving average of the ratios, decaying by ``1 - alpha`` per
  *typical job's worth* of work, is the run's speed.  How much of that speed
  carries over to the rest of the run is also learned from the history (a
  regression of log future speed on log speed so far, per band of progress;
  with too little spread in the history it carries over in full).  Seconds
  left = what the current interval still needs at the future speed + the
  future speed times the typical duration of the jobs not submitted yet.
  When the current job already runs longer than expected, that overrun
  counts as a (partial) sample too.  With 5+ past runs this speed-based
  estimate is blended (geometric mean, weight per band of progress) with a
  survival-style one: the median time left of the past runs that were still
  running at this elapsed time.  The weights are stacked: chosen on an
  out-of-fold replay of the training runs (contiguous folds in start order,
  each replayed with the typical run of the others) for the smallest median
  percentage error.
* **Without history** only the work the application has announced can be
  counted: tasks of the stages known from job-start events (pending stages
  of the DAG included), else stages, else jobs.  The EWMA then runs over
  wall-clock seconds per unit as units finish; jobs the driver has not
  submitted yet are invisible (``basis == "known_work"``).

The interval comes from ``fit``: the same out-of-fold replay (12 seeded
random points of progress per run) gives the spread of true/predicted
remaining time, per band of typical progress; the band's
``(1 - interval) / 2`` quantiles scale the point estimate.  With fewer than 5 past runs, the spread of the running
application's own speed ratios is used instead.

Everything is honest about time: a snapshot holds only what had happened
when it was taken, and :meth:`AppTimeline.snapshot_at` replays a finished
run the same way for evaluation.

Example (history from finished runs, then a live application)::

    history = [AppTimeline.from_eventlog(path) for path in finished_logs]
    est = RemainingTimeEstimator(alpha=0.3).fit(history)
    remaining_seconds("http://driver:4040", estimator=est)
    # -> {"remaining_seconds": ..., "low_seconds": ..., "high_seconds": ...,
    #     "progress": ..., "jobs_completed": ..., "basis": "history", ...}
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from statistics import NormalDist
from typing import Any, Iterable, Sequence

import numpy as np

from jobgauge.cli_options import add_command, number
from jobgauge.errors import NotFittedError, ParseError, UsageError
from jobgauge.profiler.readers.live import JobProgress, ProgressSnapshot, ProgressTracker, read_snapshot

__all__ = [
    "AppTimeline",
    "RemainingEstimate",
    "RemainingTimeEstimator",
    "absolute_percentage_error",
    "read_enel_runs",
    "remaining_seconds",
]

# Progress bands (fractions): of elapsed / predicted total for the interval, of
# the typical run's work already behind for the speed carry-over.
_BANDS = (0.2, 0.4, 0.6, 0.8)
_MIN_CALIBRATION_RUNS = 5    # fewer past runs: the interval comes from the run's own spread
# Replay points per training run, at seeded random fractions of its runtime: a fixed grid
# such as 0.1, 0.25, 0.5 would let what is learned from the replay (the interval, the blend)
# match the points where the bench scores, which a live snapshot never promises.
_REPLAY_POINTS = 12
_BLEND_WEIGHTS = tuple(i / 10 for i in range(11))  # weight of the speed-based estimate
_MIN_PAST_SURVIVORS = 3     # past runs still running at this elapsed time, for their median
_FOLDS = 5                  # contiguous folds in start order for the out-of-fold replay


# ---------------------------------------------------------------- past runs

@dataclass(frozen=True)
class AppTimeline:
    """One finished run: when it started and ended, and when each job ran.

    ``signature`` names the application (Spark's ``app_name``; Enel's
    ``application_signature``): runs with the same signature are the history
    of one another.  ``jobs`` are :class:`~jobgauge.profiler.readers.live.JobProgress`
    in submission order, with ``submitted_s`` and ``completed_s`` set.
    """

    signature: str
    started_s: float
    ended_s: float
    jobs: tuple[JobProgress, ...]
    run_id: str = ""
    scale_out: tuple[int, ...] = ()       # executors per job, where the source says

    @property
    def runtime_s(self) -> float:
        return self.ended_s - self.started_s

    def snapshot_at(self, moment_s: float) -> ProgressSnapshot:
        """What a monitor would have seen at ``moment_s``: jobs submitted by
        then, finished only if they had finished by then."""
        if moment_s >= self.ended_s:
            return ProgressSnapshot(self.run_id, self.signature, "history", None, self.started_s,
                                    self.ended_s, self.ended_s, "succeeded", self.jobs)
        seen = []
        for job in self.jobs:
            if job.submitted_s is None or job.submitted_s > moment_s:
                continue
            done = job.completed_s is not None and job.completed_s <= moment_s
            seen.append(JobProgress(job.job_id, job.status if done else "running", job.submitted_s,
                                    job.completed_s if done else None, job.stage_ids,
                                    job.n_tasks, job.n_tasks or 0 if done else 0, job.name))
        return ProgressSnapshot(self.run_id, self.signature, "history", None, self.started_s,
                                moment_s, None, "running", tuple(seen))

    @classmethod
    def from_snapshot(cls, snapshot: ProgressSnapshot, *, signature: str | None = None) -> "AppTimeline":
        """The timeline of a finished application (event log or History Server)."""
        if not snapshot.finished:
            raise UsageError(f"application {snapshot.app_id} is still running; "
                             "only finished runs can serve as history")
        if snapshot.started_s is None or snapshot.ended_s is None:
            raise UsageError(f"application {snapshot.app_id} has no start or end time")
        jobs = tuple(j for j in snapshot.jobs if j.submitted_s is not None)
        return cls(signature or snapshot.app_name or "", snapshot.started_s, snapshot.ended_s,
                   jobs, snapshot.app_id or "")

    @classmethod
    def from_eventlog(cls, path, *, signature: str | None = None) -> "AppTimeline":
        """The timeline of a finished application from its event log."""
        return cls.from_snapshot(read_snapshot(path), signature=signature)


def _enel_time(text: str, path, line: int) -> float:
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ParseError("not a timestamp", path=path, line=line,
                         expected="YYYY-MM-DD HH:MM:SS.fff", snippet=text) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def _read_ellis(path: Path) -> list[AppTimeline]:
    header = ["ID", "APP_ID", "STARTED_AT", "FINISHED_AT", "APP_EVENT_ID", "JOB_ID",
              "STARTED_AT", "FINISHED_AT", "DURATION_MS", "SCALE_OUT"]
    runs: dict[str, dict] = {}
    with open(path, encoding="utf-8") as handle:
        first = handle.readline().rstrip("\r\n").split("|")
        if first != header:
            raise ParseError("not an Enel/Ellis job table", path=path, line=1,
                             expected="|".join(header), snippet="|".join(first))
        for line_no, line in enumerate(handle, start=2):
            if not line.strip():
                continue
            cells = line.rstrip("\r\n").split("|")
            if len(cells) != len(header):
                raise ParseError(f"{len(cells)} fields instead of {len(header)}", path=path,
                                 line=line_no, snippet=line.strip())
            try:
                run_id, job_id, scale_out = cells[0], int(cells[5]), int(cells[9])
            except ValueError:
                raise ParseError("ID, JOB_ID and SCALE_OUT must be integers", path=path,
                                 line=line_no, snippet=line.strip()) from None
            run = runs.setdefault(run_id, {
                "signature": cells[1], "start": _enel_time(cells[2], path, line_no),
                "end": _enel_time(cells[3], path, line_no), "jobs": []})
            run["jobs"].append((_enel_time(cells[6], path, line_no),
                                _enel_time(cells[7], path, line_no), job_id, scale_out))
    out = []
    for run_id, run in runs.items():
        jobs = sorted(run["jobs"])
        out.append(AppTimeline(
            run["signature"], run["start"], run["end"],
            tuple(JobProgress(job_id, "succeeded", start, end) for start, end, job_id, _ in jobs),
            f"ellis-{run['signature']}-{run_id}", tuple(s for *_, s in jobs)))
    return out


def _read_enel_json(path: Path) -> list[AppTimeline]:
    try:
        records = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ParseError(f"not JSON ({exc})", path=path, expected="a JSON list of job records") from None
    if not isinstance(records, list):
        raise ParseError("not a list of job records", path=path, expected="a JSON list")
    runs: dict[str, dict] = {}
    for index, record in enumerate(records):
        try:
            run = runs.setdefault(record["application_execution_id"],
                                  {"signature": record["application_signature"], "jobs": []})
            run["jobs"].append((_enel_time(record["start_time"]["$date"], path, None),
                                _enel_time(record["end_time"]["$date"], path, None),
                                int(record["job_id"])))
        except (KeyError, TypeError, ValueError):
            raise ParseError(f"record {index} lacks application_execution_id, "
                             "application_signature, job_id, start_time or end_time",
                             path=path, snippet=json.dumps(record)[:80]) from None
    out = []
    for run_id, run in runs.items():
        jobs = sorted(run["jobs"])
        out.append(AppTimeline(
            run["signature"], jobs[0][0], max(end for _, end, _ in jobs),
            tuple(JobProgress(job_id, "succeeded", start, end) for start, end, job_id in jobs),
            f"enel-{run_id}"))
    return out


def read_enel_runs(folder) -> list[AppTimeline]:
    """Every run in the Enel data folder (``ellis-*.csv`` and ``enel_runs.json``),
    oldest first.  Runs present in both files (same application and start
    time) are kept once, from the CSV, which also has the scale-out per job."""
    folder = Path(folder)
    tables = sorted(folder.glob("ellis-*.csv"))
    runs_json = folder / "enel_runs.json"
    if not tables and not runs_json.exists():
        raise UsageError(f"no ellis-*.csv or enel_runs.json in {folder}")
    runs = [run for table in tables for run in _read_ellis(table)]
    seen = {(run.signature, round(run.started_s, 3)) for run in runs}
    if runs_json.exists():
        runs += [run for run in _read_enel_json(runs_json)
                 if (run.signature, round(run.started_s, 3)) not in seen]
    return sorted(runs, key=lambda run: (run.started_s, run.signature))


# ---------------------------------------------------------------- estimates

@dataclass(frozen=True)
class RemainingEstimate:
    """Seconds left for one application at one moment.

    ``basis`` says what the estimate rests on: ``history`` (past runs of the
    same application), ``known_work`` (only the work announced so far;
    jobs not yet submitted are not counted), ``finished`` or ``none`` (no
    work has finished yet and no prior was given: ``remaining_seconds`` is None).
    """

    remaining_seconds: float | None
    low_seconds: float | None
    high_seconds: float | None
    elapsed_s: float
    basis: str
    unit: str                         # "jobs", "stages" or "tasks"
    units_completed: float
    units_total: float | None
    speed: float | None = None        # observed / typical time (history), or seconds per unit
    status: str = "running"
    details: dict = field(default_factory=dict)

    @property
    def total_seconds(self) -> float | None:
        return None if self.remaining_seconds is None else self.elapsed_s + self.remaining_seconds

    @property
    def progress(self) -> float | None:
        """Fraction of the run's time already spent (elapsed / predicted total)."""
        total = self.total_seconds
        if total is None:
            return None
        return 1.0 if total <= 0 else min(1.0, self.elapsed_s / total)


def absolute_percentage_error(predicted: float, true: float) -> float:
    """|predicted - true| / true, in percent."""
    if true <= 0:
        raise UsageError(f"true value must be > 0 for a percentage error. Got {true!r} instead.")
    return 100.0 * abs(predicted - true) / true


@dataclass
class _SignatureProfile:
    n_runs: int
    n_jobs: int                         # median jobs per run
    startup_s: float                    # median app start -> first job
    job_seconds: list[float]            # median interval of job k (submission order)
    total_s: float                      # median runtime
    runtimes: list[float]
    fallback_s: float = 0.0             # typical interval of a job beyond the longest run seen
    future_from: list[float] = field(default_factory=list)  # typical seconds of jobs k.. n_jobs-1
    # log future speed = intercept + slope * log(speed so far), per band of typical progress
    persistence: list[tuple[float, float]] = field(default_factory=list)
    quantiles: list[tuple[float, float]] = field(default_factory=list)  # per progress band
    # weight of the speed-based estimate against the past runs' conditional median, per band
    blend: list[float] = field(default_factory=list)


# Parameter constraints, as data: name -> (check, what it must be)
def _is_fraction(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1


def _is_open_fraction(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1


def _is_positive_or_none(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                             and value > 0 and math.isfinite(value))


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


_CONSTRAINTS = {
    "alpha": (_is_fraction, "a float in (0, 1]"),
    "prior_seconds_per_unit": (_is_positive_or_none, "None or a float > 0"),
    "interval": (_is_open_fraction, "a float in (0, 1)"),
    "min_history": (_is_count, "an int >= 1"),
}


class RemainingTimeEstimator:
    """Seconds left for a running Spark application, from its progress so far.

    Parameters (keyword-only):

    alpha : float in (0, 1], default 0.3
        EWMA smoothing: the weight of the newest observation per typical job's
        worth of work (history) or per average stage's worth of tasks
        (without history).  1 trusts only the latest unit.
    prior_seconds_per_unit : float > 0 or None, default None
        Without history: assumed seconds per unit of work before any unit has
        finished.  None gives no estimate until the first unit finishes.
    interval : float in (0, 1), default 0.8
        Coverage of the ``low``/``high`` interval.
    min_history : int >= 1, default 1
        Past runs of an application needed before its history is used.

    Learned in ``fit``: ``profiles_`` (per signature: typical job count,
    start-up time, median duration of each job, the speed carry-over, the
    blend weight and the interval's spread per progress band) and ``n_histories_``; ``live_``
    holds what :meth:`update` has seen of running applications.
    """

    def __init__(self, *, alpha: float = 0.3, prior_seconds_per_unit: float | None = None,
                 interval: float = 0.8, min_history: int = 1):
        self.alpha = alpha
        self.prior_seconds_per_unit = prior_seconds_per_unit
        self.interval = interval
        self.min_history = min_history

    # -- scikit-learn style parameters
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _CONSTRAINTS}

    def set_params(self, **params) -> "RemainingTimeEstimator":
        for name, value in params.items():
            if name not in _CONSTRAINTS:
                raise UsageError(f"RemainingTimeEstimator has no parameter {name!r}; "
                                 f"it has {', '.join(_CONSTRAINTS)}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"RemainingTimeEstimator({args})"

    def _validate_params(self) -> None:
        for name, (check, must) in _CONSTRAINTS.items():
            value = getattr(self, name)
            if not check(value):
                raise UsageError(f"The {name!r} parameter of RemainingTimeEstimator must be "
                                 f"{must}. Got {value!r} instead.")

    def _check_fitted(self) -> None:
        if not hasattr(self, "profiles_"):
            raise NotFittedError("This RemainingTimeEstimator is not fitted yet; call fit first "
                                 "(fit([]) gives one without history)")

    # -- learning
    def fit(self, histories: Iterable[AppTimeline] = ()) -> "RemainingTimeEstimator":
        """Learn each application's typical run from finished runs.

        ``histories`` may be empty: the estimator then only uses each running
        application's own progress."""
        self._validate_params()
        histories = list(histories)
        for run in histories:
            if not isinstance(run, AppTimeline):
                raise UsageError(f"fit takes AppTimeline objects (finished runs). Got {type(run).__name__}.")
        groups: dict[str, list[AppTimeline]] = {}
        for run in histories:
            if run.runtime_s > 0 and run.jobs:
                groups.setdefault(run.signature, []).append(run)
        self.profiles_ = {sig: self._profile(runs) for sig, runs in groups.items()
                          if len(runs) >= self.min_history}
        for sig, profile in self.profiles_.items():
            replay = self._replay(profile, groups[sig])
            self._learn_persistence(profile, replay)
            if profile.n_runs >= _MIN_CALIBRATION_RUNS:
                points = self._out_of_fold(profile, groups[sig])
                self._learn_blend(profile, points)
                profile.quantiles = self._calibrate(profile, points)
        self.n_histories_ = len(histories)
        self.live_ = {}
        return self

    @staticmethod
    def _intervals(run: AppTimeline) -> tuple[float, list[float]]:
        submits = [job.submitted_s for job in run.jobs]
        startup = max(0.0, submits[0] - run.started_s)
        bounds = submits[1:] + [run.ended_s]
        return startup, [max(0.0, b - a) for a, b in zip(submits, bounds)]

    def _profile(self, runs: list[AppTimeline]) -> _SignatureProfile:
        startups, per_job = [], []
        for run in runs:
            startup, intervals = self._intervals(run)
            startups.append(startup)
            per_job.append(intervals)
        longest = max(len(x) for x in per_job)
        job_seconds = []
        for k in range(longest):
            values = [x[k] for x in per_job if len(x) > k]
            job_seconds.append(float(np.median(values)))
        runtimes = [run.runtime_s for run in runs]
        n_jobs = int(round(float(np.median([len(x) for x in per_job]))))
        fallback = float(np.median(job_seconds))
        typical = job_seconds + [fallback] * max(0, n_jobs - len(job_seconds))
        future_from = [float(sum(typical[k:n_jobs])) for k in range(n_jobs + 1)]
        return _SignatureProfile(
            n_runs=len(runs), n_jobs=n_jobs, startup_s=float(np.median(startups)),
            job_seconds=job_seconds, total_s=float(np.median(runtimes)), runtimes=runtimes,
            fallback_s=fallback, future_from=future_from)

    def _replay(self, profile: _SignatureProfile, runs: list[AppTimeline]) -> list[tuple]:
        """The training runs seen at several points of their progress:
        (state, true seconds left, true seconds from the next job's
        submission, the run's runtime).  The points are seeded random
        fractions of each run's runtime (deterministic for the same runs)."""
        out = []
        for index, run in enumerate(runs):
            submits = [job.submitted_s for job in run.jobs]
            fractions = np.random.default_rng(index).uniform(0.02, 0.98, _REPLAY_POINTS)
            for fraction in sorted(fractions):
                moment = run.started_s + float(fraction) * run.runtime_s
                seen = bisect.bisect_right(submits, moment)
                state = self._speed_state(run.started_s, submits[:seen], moment, profile)
                after_next = run.ended_s - submits[seen] if seen < len(submits) else None
                out.append((state, run.ended_s - moment, after_next, run.runtime_s))
        return out

    def _learn_persistence(self, profile: _SignatureProfile, replay: list[tuple]) -> None:
        """How much of the speed seen so far carries over to the jobs not yet
        submitted: per band of typical progress, least squares of
        log(actual / typical time of those jobs) on log(speed so far), over
        the replayed training runs (bands with few samples use all of them)."""
        samples: list[list[tuple[float, float]]] = [[] for _ in range(len(_BANDS) + 1)]
        for state, _, after_next, _ in replay:
            if state["future_typical"] > 0 and after_next and after_next > 0 and state["speed"] > 0:
                samples[self._band(state, profile)].append(
                    (math.log(state["speed"]), math.log(after_next / state["future_typical"])))
        everything = [pair for band in samples for pair in band]

        def line(pairs):
            x, y = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
            # no spread in the speeds seen: the slope cannot be learned; keep the
            # plain EWMA (the speed so far carries over in full)
            slope = float(np.polyfit(x, y, 1)[0]) if np.ptp(x) > 1e-6 else 1.0
            slope = min(max(slope, 0.0), 1.0)
            return float(np.median(y - slope * x)), slope

        if len(everything) < 5:
            return
        pooled = line(everything)
        profile.persistence = [line(pairs) if len(pairs) >= 20 else pooled for pairs in samples]

    @staticmethod
    def _band(state: dict, profile: _SignatureProfile) -> int:
        """Band of typical progress: share of the typical run's work already behind."""
        total = profile.startup_s + (profile.future_from[0] if profile.future_from else 0.0)
        ahead = state["future_typical"] + state["current_typical"]
        return bisect.bisect_right(_BANDS, 1.0 - ahead / total if total > 0 else 0.0)

    @staticmethod
    def _past_median(runtimes: Sequence[float], elapsed: float) -> float | None:
        """Survival-style estimate from past runs alone: the median of the
        seconds the past runs still running after ``elapsed`` had left
        (None when fewer than 3 of them ran that long)."""
        left = [runtime - elapsed for runtime in runtimes if runtime > elapsed]
        return float(np.median(left)) if len(left) >= _MIN_PAST_SURVIVORS else None

    @staticmethod
    def _blended(speed_based: float, past: float | None, weight: float) -> float:
        """Geometric blend of the two estimates (weight 1: speed-based only)."""
        if past is None or weight >= 1.0 or speed_based <= 0 or past <= 0:
            return speed_based
        return math.exp(weight * math.log(speed_based) + (1.0 - weight) * math.log(past))

    def _replay_estimates(self, profile: _SignatureProfile, replay: list[tuple]) -> list[tuple]:
        """(band, speed-based estimate, past runs' median, true seconds left,
        elapsed) per replayed point; the past median leaves the point's own
        run out."""
        out = []
        for state, true_left, _, runtime in replay:
            remaining, _ = self._left(state, profile)
            others = list(profile.runtimes)
            if runtime in others:
                others.remove(runtime)
            elapsed = state["now"] - state["started"]
            out.append((self._band(state, profile), remaining, self._past_median(others, elapsed),
                        true_left, elapsed))
        return out

    def _out_of_fold(self, profile: _SignatureProfile, runs: list[AppTimeline]) -> list[tuple]:
        """Replayed estimates of every training run from a profile that did
        not see it: the runs in start order are cut into contiguous folds,
        and each fold is replayed with the typical run of the others (so the
        blend and the interval also see the drift between periods).  The
        speed carry-over is the one learned on all runs.  With fewer than
        two runs per fold, the in-sample replay is used."""
        if len(runs) < 2 * _FOLDS:
            return self._replay_estimates(profile, self._replay(profile, runs))
        order = sorted(runs, key=lambda run: run.started_s)
        points = []
        for fold in np.array_split(np.arange(len(order)), _FOLDS):
            held_out = set(fold.tolist())
            fold_profile = self._profile([run for i, run in enumerate(order) if i not in held_out])
            fold_profile.persistence = profile.persistence
            replay = self._replay(fold_profile, [order[i] for i in fold])
            points += self._replay_estimates(fold_profile, replay)
        return points

    def _learn_blend(self, profile: _SignatureProfile, points: list[tuple]) -> None:
        """Stacking: per band of typical progress, the weight (0, 0.1, ..., 1)
        of the speed-based estimate against the past runs' conditional
        median that gives the smallest median absolute percentage error on
        the replayed training runs (bands with few points use all of them)."""
        usable = [p for p in points if p[1] > 0 and p[2] is not None and p[3] > 0]

        def best(rows) -> float:
            errors = [float(np.median([abs(self._blended(r[1], r[2], w) / r[3] - 1.0) for r in rows]))
                      for w in _BLEND_WEIGHTS]
            return _BLEND_WEIGHTS[int(np.argmin(errors))]   # ties: the smaller weight comes first

        if len(usable) < 20:
            return
        pooled = best(usable)
        profile.blend = []
        for band in range(len(_BANDS) + 1):
            rows = [p for p in usable if p[0] == band]
            profile.blend.append(best(rows) if len(rows) >= 20 else pooled)

    def _calibrate(self, profile: _SignatureProfile, points: list[tuple]) -> list[tuple[float, float]]:
        """Quantiles of log(true remaining / predicted) per band of typical
        progress, from the out-of-fold replay of the training runs."""
        by_band: list[list[float]] = [[] for _ in range(len(_BANDS) + 1)]
        for typical_band, speed_based, past, true_left, _elapsed in points:
            weight = profile.blend[typical_band] if profile.blend else 1.0
            remaining = self._blended(speed_based, past, weight)
            if remaining > 0 and true_left > 0:
                by_band[typical_band].append(math.log(true_left / remaining))
        low_q, high_q = (1 - self.interval) / 2, 1 - (1 - self.interval) / 2
        everything = [v for band in by_band for v in band]
        out = []
        for values in by_band:
            pool = values if len(values) >= 10 else everything
            if not pool:
                out.append((0.0, 0.0))
            else:
                out.append((float(np.quantile(pool, low_q)), float(np.quantile(pool, high_q))))
        return out

    # -- online use
    def update(self, event, *, app_id: str | None = None) -> "RemainingTimeEstimator":
        """Take one observation of a running application: a Spark listener
        event (dict, as in the event log) or a :class:`ProgressSnapshot`."""
        self._check_fitted()
        if isinstance(event, ProgressSnapshot):
            self.live_[app_id or event.app_id or ""] = event
            return self
        if isinstance(event, dict):
            key = app_id or ""
            tracker = self.live_.get(key)
            if not isinstance(tracker, ProgressTracker):
                tracker = self.live_[key] = ProgressTracker(source="events")
            tracker.feed(event)
            return self
        raise UsageError(f"update takes a Spark listener event (dict) or a ProgressSnapshot. "
                         f"Got {type(event).__name__}.")

    def estimate(self, snapshot: ProgressSnapshot | None = None, *, app_id: str | None = None,
                 now: float | None = None, signature: str | None = None) -> RemainingEstimate:
        """Seconds left (with an interval) for ``snapshot``, or for what
        :meth:`update` has seen of ``app_id``.  ``signature`` overrides the
        application name used to find its history."""
        self._check_fitted()
        if snapshot is None:
            source = self.live_.get(app_id or "")
            if source is None:
                raise UsageError(f"nothing seen of application {app_id or '(default)'!r}; "
                                 "pass a snapshot or call update first")
            snapshot = source.snapshot(now=now) if isinstance(source, ProgressTracker) else source
        if snapshot.finished:
            return RemainingEstimate(0.0, 0.0, 0.0, snapshot.elapsed_s, "finished", "jobs",
                                     snapshot.jobs_completed, snapshot.jobs_total, status=snapshot.status)
        profile = self.profiles_.get(signature or snapshot.app_name or "")
        if profile is not None:
            return self._from_history(snapshot, profile)
        return self._from_known_work(snapshot)

    def predict(self, snapshots: Sequence[ProgressSnapshot]) -> np.ndarray:
        """Seconds left for each snapshot (NaN where no estimate is possible)."""
        out = [self.estimate(s).remaining_seconds for s in snapshots]
        return np.array([np.nan if v is None else v for v in out], dtype=float)

    # -- the two ways of estimating
    def _decay(self, weight: float) -> float:
        """Weight of a new sample worth ``weight`` typical units."""
        return 1.0 - (1.0 - self.alpha) ** max(weight, 0.0) if self.alpha < 1 else (1.0 if weight > 0 else 0.0)

    def _speed_state(self, started: float, submits: list[float], now: float,
                     profile: _SignatureProfile) -> dict[str, float]:
        """The run's speed so far (EWMA of observed / typical interval) and
        where it stands in the typical run.  ``submits``: submission times of
        the jobs seen so far."""
        expected, fallback = profile.job_seconds, profile.fallback_s
        unit = max(profile.total_s / max(profile.n_jobs + 1, 1), 1e-9)   # one typical job's worth
        speed = 1.0
        ratios = []
        previous, typical_s = started, profile.startup_s
        for k, submitted in enumerate(submits):
            if typical_s > 0:
                ratios.append((submitted - previous) / typical_s)
                speed += self._decay(typical_s / unit) * (ratios[-1] - speed)
            previous, typical_s = submitted, expected[k] if k < len(expected) else fallback
        current_elapsed = max(now - previous, 0.0)
        # an overrunning current interval is a partial sample: the run is at least that slow
        if typical_s > 0 and current_elapsed > speed * typical_s:
            speed += self._decay(typical_s / unit) * (current_elapsed / typical_s - speed)
        next_index = len(submits)
        future = profile.future_from[next_index] if next_index < len(profile.future_from) else 0.0
        return {"speed": speed, "started": started, "now": now, "n_submitted": next_index,
                "current_typical": typical_s, "current_elapsed": current_elapsed,
                "future_typical": future, "ratios": ratios}

    @staticmethod
    def _left(state: dict[str, float], profile: _SignatureProfile) -> tuple[float, float]:
        """(seconds left, speed assumed for the rest) from a speed state."""
        intercept, slope = (profile.persistence[RemainingTimeEstimator._band(state, profile)]
                            if profile.persistence else (0.0, 1.0))
        future_speed = math.exp(intercept + slope * math.log(max(state["speed"], 1e-9)))
        current_left = max(future_speed * state["current_typical"] - state["current_elapsed"], 0.0)
        return current_left + future_speed * state["future_typical"], future_speed

    def _from_history(self, snapshot: ProgressSnapshot, profile: _SignatureProfile) -> RemainingEstimate:
        submits = sorted(j.submitted_s for j in snapshot.jobs if j.submitted_s is not None)
        started = snapshot.started_s
        if started is None:
            started = submits[0] if submits else snapshot.taken_s
        state = self._speed_state(started, submits, snapshot.taken_s, profile)
        speed_based, future_speed = self._left(state, profile)
        elapsed = max(0.0, state["now"] - state["started"])
        past = weight = None
        remaining = speed_based
        if profile.blend:
            past = self._past_median(profile.runtimes, elapsed)
            weight = profile.blend[self._band(state, profile)]
            remaining = self._blended(speed_based, past, weight)
        low = high = None
        if profile.quantiles:
            q_low, q_high = profile.quantiles[self._band(state, profile)]
            low, high = remaining * math.exp(q_low), remaining * math.exp(q_high)
        else:   # too few past runs to calibrate: the spread of this run's own ratios
            logs = [math.log(r) for r in state["ratios"] if r > 0]
            if len(logs) >= 3:
                factor = math.exp(NormalDist().inv_cdf(1 - (1 - self.interval) / 2) * float(np.std(logs)))
                low, high = remaining / factor, remaining * factor
        return RemainingEstimate(
            remaining, low, high, elapsed, "history", "jobs", float(snapshot.jobs_completed),
            float(max(profile.n_jobs, len(submits))), state["speed"],
            details={"typical_runtime_s": profile.total_s, "history_runs": profile.n_runs,
                     "typical_jobs": profile.n_jobs, "future_speed": future_speed,
                     "speed_based_seconds": speed_based, "past_median_seconds": past,
                     "blend_weight": weight})

    def _from_known_work(self, snapshot: ProgressSnapshot) -> RemainingEstimate:
        """No history: wall-clock seconds per unit of the work announced so far."""
        now = snapshot.taken_s
        stages = [s for s in snapshot.stages if s.status != "skipped"]
        origin = min((j.submitted_s for j in snapshot.jobs if j.submitted_s is not None),
                     default=snapshot.started_s)
        samples: list[tuple[float, float]] = []        # (seconds, units), in completion order
        if stages:
            use_tasks = any(s.n_tasks > 0 for s in stages)
            unit = "tasks" if use_tasks else "stages"

            def size(stage) -> float:
                return float(stage.n_tasks) if use_tasks else 1.0

            total = sum(size(s) for s in stages)
            done = sorted((s for s in stages if s.status == "complete" and s.completed_s),
                          key=lambda s: s.completed_s)
            completed = sum(size(s) for s in done)
            last = origin
            for s in done:
                if last is not None and size(s) > 0:
                    samples.append((max(s.completed_s - last, 0.0), size(s)))
                last = s.completed_s if last is None else max(last, s.completed_s)
            if use_tasks:       # tasks already done in stages still running
                partial = float(sum(min(s.n_completed_tasks, s.n_tasks) for s in stages
                                    if s.status != "complete"))
                if partial > 0 and last is not None:
                    samples.append((max(now - last, 0.0), partial))
                completed += partial
            reference = total / len(stages)
            running_since = None
        else:
            unit = "jobs"
            total = float(len(snapshot.jobs))
            done_jobs = sorted((j for j in snapshot.jobs if j.finished and j.completed_s),
                               key=lambda j: j.completed_s)
            completed = float(len(done_jobs))
            last = origin
            for job in done_jobs:
                if last is not None:
                    samples.append((max(job.completed_s - last, 0.0), 1.0))
                last = job.completed_s
            reference = 1.0
            running_since = last
        per_unit = self.prior_seconds_per_unit
        for seconds, units in samples:
            rate = seconds / units
            per_unit = rate if per_unit is None else per_unit + self._decay(units / reference) * (rate - per_unit)
        left_units = max(total - completed, 0.0)
        elapsed = snapshot.elapsed_s
        if per_unit is None:
            return RemainingEstimate(None, None, None, elapsed, "none", unit, completed, total or None)
        remaining = per_unit * left_units
        if running_since is not None and left_units > 0:
            # jobs only: the running job has been going since the last one ended
            remaining = max(remaining - max(now - running_since, 0.0), 0.0)
        rates = [s / u for s, u in samples if u > 0 and s > 0]
        spread = float(np.std(np.log(rates))) if len(rates) >= 2 else 0.5
        factor = math.exp(NormalDist().inv_cdf(1 - (1 - self.interval) / 2) * spread)
        return RemainingEstimate(remaining, remaining / factor, remaining * factor, elapsed,
                                 "known_work", unit, completed, total, per_unit)


# ---------------------------------------------------------------- one call for the web app

def remaining_seconds(url_or_eventlog_path, estimator: RemainingTimeEstimator | None = None, *,
                      app_id: str | None = None, now: float | None = None) -> dict[str, Any]:
    """Seconds left for a running application, as a plain dict.

    ``url_or_eventlog_path`` is the driver UI (``http://driver:4040``), any
    ``.../api/v1/applications/<id>`` address, or an event log file/folder
    Spark is writing.  ``estimator`` is a fitted
    :class:`RemainingTimeEstimator` (None: one without history, which
    counts only the work the application has announced).

    Keys: ``app_id``, ``app_name``, ``status``, ``elapsed_s``, ``progress``
    (fraction of the predicted total already spent), ``remaining_seconds``,
    ``low_seconds``, ``high_seconds``, ``total_seconds``, ``basis``,
    ``unit``, ``jobs_completed``/``jobs_total``, ``stages_completed``/
    ``stages_total``, ``tasks_completed``/``tasks_total`` (totals count the
    work known so far), ``source``, ``taken_at`` (ISO time of the reading).
    """
    if estimator is None:
        estimator = RemainingTimeEstimator().fit([])
    snapshot = read_snapshot(url_or_eventlog_path, app_id=app_id, now=now)
    estimate = estimator.estimate(snapshot)
    out = {
        "app_id": snapshot.app_id, "app_name": snapshot.app_name, "status": snapshot.status,
        "elapsed_s": round(snapshot.elapsed_s, 3),
        "progress": None if estimate.progress is None else round(estimate.progress, 4),
        "remaining_seconds": _rounded(estimate.remaining_seconds),
        "low_seconds": _rounded(estimate.low_seconds),
        "high_seconds": _rounded(estimate.high_seconds),
        "total_seconds": _rounded(estimate.total_seconds),
        "basis": estimate.basis, "unit": estimate.unit,
        "source": snapshot.source,
        "taken_at": datetime.fromtimestamp(snapshot.taken_s, tz=timezone.utc).isoformat(),
    }
    out.update(snapshot.counts())
    return out


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 3)


# ---------------------------------------------------------------- command line

def register(subparsers) -> None:
    """Add ``jobgauge remaining`` (list this module in jobgauge.cli.COMMAND_MODULES)."""
    parser = add_command(subparsers, "remaining", remaining_command,
                         help="seconds left for a running Spark application",
                         json="one object per reading, one per line")
    parser.add_argument("source", metavar="URL_OR_EVENTLOG")
    parser.add_argument("--app-id", help="which application, when the UI lists several")
    parser.add_argument("--history", nargs="+", default=[], metavar="EVENTLOG",
                        help="event logs (files or eventlog_v2_* folders) of finished runs")
    parser.add_argument("--alpha", type=number(above=True, highest=1), default=0.3,
                        help="EWMA smoothing, > 0 and <= 1 (default 0.3)")
    parser.add_argument("--watch", type=number(above=True), metavar="SECONDS",
                        help="ask again every SECONDS until the application ends")


def _describe(out: dict[str, Any]) -> str:
    name = f"{out['app_id']} ({out['app_name']})"
    if out["status"] != "running":
        return f"{name}: {out['status']} after {out['elapsed_s']:.0f} s"
    if out["remaining_seconds"] is None:
        return (f"{name}: running for {out['elapsed_s']:.0f} s; no estimate yet (nothing has "
                f"finished); {out['tasks_completed']}/{out['tasks_total']} tasks")
    spread = ""
    if out["low_seconds"] is not None:
        spread = f" ({out['low_seconds']:.0f}-{out['high_seconds']:.0f} s)"
    basis = "from past runs" if out["basis"] == "history" else "announced work only"
    return (f"{name}: {100 * (out['progress'] or 0):.0f} % done, {out['remaining_seconds']:.0f} s "
            f"left{spread} after {out['elapsed_s']:.0f} s; jobs {out['jobs_completed']}/"
            f"{out['jobs_total']}, tasks {out['tasks_completed']}/{out['tasks_total']} [{basis}]")


def remaining_command(args) -> int:
    """Read a running application's progress from its driver UI (http://driver:4040, or any
    .../api/v1/applications/<id>) or from the event log Spark is writing, and estimate the
    seconds left. With --history (event logs of finished runs of the same application) the
    estimate uses the typical run; without it only the work announced so far is counted."""
    import time  # noqa: PLC0415 - only for --watch

    estimator = RemainingTimeEstimator(alpha=args.alpha).fit(
        [AppTimeline.from_eventlog(path) for path in args.history])
    while True:
        out = remaining_seconds(args.source, estimator, app_id=args.app_id)
        print(json.dumps(out) if args.json else _describe(out), flush=True)
        if args.watch is None or out["status"] != "running":
            return 0
        time.sleep(args.watch)
