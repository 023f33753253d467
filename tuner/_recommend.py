"""A recommendation of settings for one job, and why: the settings the model-guided
search found, or Spark's defaults kept when the model has no evidence that a
change helps.

``jobgauge-submit`` and ``jobgauge tune`` (model-guided) tune with
:func:`jobgauge.tuner.tune_with_model`; :func:`recommend` reads its result and
recommends a change only inside a *trust region* (:func:`store_trust_region` builds
it from the runs a store's model learns from):

- a change is only a setting whose tuned value differs from the engine default,
  and that the model's training runs varied (its metrics' ``settings_varied``;
  a model without that list is trusted on every setting): a model that never saw
  a setting change cannot know what changing it does;
- the value must lie inside the range measured for that setting
  (:class:`TrustRegion`): in the job's own runs when they measured the setting
  at two values or more, else in the runs of the corpus (the model's prior);
  only runs at the job's data size count where some were measured at it (a value
  measured only at SF 0.3 is no evidence at SF 1); a value outside is put back to
  its default;
- the predicted gain over the defaults must exceed the model's uncertainty: the
  defaults' predicted runtime minus the candidate's must be more than the
  repeat noise of the job's size (:attr:`TrustRegion.noise`, at least
  :data:`NOISE_FLOOR`), and the candidate's 80 % upper bound must not be above
  the defaults' 80 % upper bound.  Both intervals come from the same model and the
  same job (its profile, its learned work factor), so their errors move together:
  the bound compares the two at the pessimistic end.  (Before, the bound was the
  defaults' *point* prediction: with intervals x3.5-6 wide, that asked for a gain
  wider than the whole interval, and no setting ever passed on the quiet corpus.)

- a prediction never overrules a measurement of the same change: where the runs
  of the job itself at its size and on its instance type (the corpus's, or the
  user's own) measured the candidate's exact settings, they must have measured a
  gain beyond the noise over the defaults measured beside them; where they measured
  one of its changes alone, that change must not have measured slower than the
  defaults beyond the noise (:meth:`TrustRegion.contradicted`).  (TPC-H Q1 at SF 1:
  the model priced a 4g driver with 16 MiB splits 45 % faster, while the quiet
  corpus measured the 4g driver alone at 5.38 s against 4.91 s with the defaults.)
- nor a measurement of the same change on other jobs: across the runs the model
  learns from (at the job's size where some were measured at it), every pair of
  configurations of one job on one cluster that differ by one change alone gives
  that change's measured effect (runtime with it over runtime without it; a change
  whose runs mostly failed: infinitely slow).  A change, or a larger step the same
  way, measured slower on most of those pairs, or slower beyond the noise on more
  than :data:`SLOWER_SHARE` of them, is not recommended (:attr:`TrustRegion.effects`).
  (The learning loop at SF 1, bench/reports/learning_loop.md: the model added AQE off,
  with which Q10 took 40.8 s against 13.7 s with the defaults, and a 100 MiB broadcast
  threshold, with which Q5 took 20.8 s against 15.0 s; the corpus measured AQE off
  slower on most queries and the 100 MiB threshold failing or slower on 4 of 22 at SF 1.)

The search's best trials (up to :data:`MAX_CANDIDATES` distinct ones) are each put
inside the ranges and priced again; the fastest whose gain passes is recommended,
with every change left out that it does not need: one at a time, while the rest
still passes and is predicted within :data:`SIMPLER_WITHIN` of it (a change the
model credits with nothing is a guess about a setting, not evidence).
Otherwise the recommendation keeps Spark's defaults and says why
(:data:`KEPT_DEFAULTS` and the reason), rather than writing the defaults out as if
tuned.  Recommended before this guard (issue 13, bench/reports/learning_loop.md):
``spark.sql.shuffle.partitions=1`` with AQE off, and 1767 partitions with 512 MiB
splits and AQE off, with which TPC-H Q1 at SF 1 took 36 s against 12 s with the
defaults; each has a value outside every range the shipped runs measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from jobgauge import knobs as _table
from jobgauge.tuner._space import format_setting

__all__ = ["KEPT_DEFAULTS", "MIN_GAIN", "NOISE_FLOOR", "SLOWER_SHARE", "MeasuredSetting",
           "Recommendation", "TrustRegion", "changed_settings", "recommend",
           "store_trust_region"]

KEPT_DEFAULTS = "keeping Spark's defaults: no measured evidence that a change helps"
#: Choices of the cluster, not settings of a run: their evidence is the instance types seen.
CLUSTER_CHOICES = ("instance_type", "instance_count")
#: The predicted speed-up a change must bring to be recommended, at the least.
MIN_GAIN = 0.01
#: The smallest repeat noise a recommendation assumes (the repeat noise of its evidence,
#: ``jobgauge.runtable.repeat_noise``, where that is larger; quiet TPC-H runs on this
#: machine: data/README.md, "Quiet re-collection").
NOISE_FLOOR = 0.05
#: The repeated runs a repeat-noise figure needs (fewer: the next wider set of runs).
MIN_NOISE_RUNS = 10
#: The coverage of the intervals whose upper bounds are compared, the candidate's with
#: the defaults' (``model_evaluator``'s default: a two-sided 80 % interval).
COVERAGE = 0.8
#: How many of the search's best distinct trials are priced inside the trust region.
MAX_CANDIDATES = 25
#: A recommendation drops a change while the rest is predicted at most this much slower.
SIMPLER_WITHIN = 0.02
#: A change measured slower than without it beyond the noise on more than this share
#: of the pairs of runs that measured it (other jobs included) is not recommended.
SLOWER_SHARE = 0.25
#: The fewest such pairs that count as evidence about a change.
MIN_EFFECT_PAIRS = 3


@dataclass
class Recommendation:
    """Settings to add (knob -> text as spark-submit takes it; empty: keep the
    defaults), the predicted runtime with them and with the defaults, whether
    anything was tuned, ``reason``, one line in words, and ``history_runs``, the
    runs of the job its caller found in the store."""

    settings: dict = field(default_factory=dict)
    predicted_runtime_s: float | None = None
    baseline_runtime_s: float | None = None
    tuned: bool = False
    reason: str = ""
    history_runs: int = 0     # runs of the job in the store that the caller looked up

    def to_dict(self) -> dict:
        return {"settings": dict(self.settings), "tuned": self.tuned, "reason": self.reason,
                "predicted_runtime_s": self.predicted_runtime_s,
                "baseline_runtime_s": self.baseline_runtime_s,
                "history_runs": self.history_runs}


# ------------------------------------------------------------------ trust region

def _typed(name: str, value):
    """``value`` in the type of knob ``name`` (text as it is for a setting the knob
    table does not list, or a value it cannot read)."""
    from jobgauge.knobs import find, read_setting

    if find(name) is None:
        return format_setting(name, value)
    return read_setting(name, value, unreadable=str)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class MeasuredSetting:
    """The values of one setting that runs measured, and whose runs they were.

    Numbers count as measured from the lowest to the highest positive value seen;
    zero and negative values (a switch: ``-1`` turns a broadcast threshold off) only
    as seen.  Other values (switches, choices, text) only as seen.  ``source`` says
    whose runs they are, in words (``"the 72 runs of tpch-q1"``)."""

    name: str
    seen: frozenset
    source: str = ""

    @property
    def span(self) -> tuple | None:
        """(lowest, highest) positive number seen; None without one."""
        positive = [v for v in self.seen if _is_number(v) and v > 0]
        return (min(positive), max(positive)) if positive else None

    def __contains__(self, value) -> bool:
        value = _typed(self.name, value)
        if value in self.seen:
            return True
        span = self.span
        return _is_number(value) and value > 0 and span is not None \
            and span[0] <= value <= span[1]

    def describe(self) -> str:
        """The measured values in words: ``2 to 395``, ``1m to 100m, -1`` or ``false, true``."""
        from jobgauge.knobs import find

        item = find(self.name)

        def show(value):
            return item.show(value) if item is not None else format_setting(self.name, value)
        span = self.span
        shown = [show(v) for v in sorted(
            (v for v in self.seen if not (span and _is_number(v) and v > 0)), key=str)]
        if span:
            shown.insert(0, show(span[0]) if span[0] == span[1] else
                         f"{show(span[0])} to {show(span[1])}")
        return ", ".join(shown)


@dataclass
class TrustRegion:
    """Where a recommendation may go: per setting, the :class:`MeasuredSetting` of the
    runs that are its evidence, and ``noise``, the repeat noise of runs of the job's
    size (a fraction): a predicted gain within it is no evidence.  A setting without
    a range (no run measured it) is trusted nowhere but at its default."""

    ranges: dict = field(default_factory=dict)
    noise: float = NOISE_FLOOR
    #: The job's own measured runtimes (at its size and instance type, finished runs),
    #: per set of changed settings (:func:`changed_settings`; ``()``: the defaults).
    measured: dict = field(default_factory=dict)
    #: The engine defaults the keys of ``measured`` were taken against.
    defaults: dict = field(default_factory=dict)
    #: Per change (setting, value as spark-submit writes it): its measured effects, each
    #: the median runtime with it over the median without it, of one job on one cluster
    #: at one size, in the runs the model learns from (``math.inf``: most runs with it
    #: failed); ``effects_source`` says whose runs, in words.
    effects: dict = field(default_factory=dict)
    effects_source: str = ""

    @classmethod
    def from_runs(cls, frame, workload: str, names: Iterable[str], *, defaults: Mapping,
                  framework: str | None = None, datasize: str | None = None,
                  instance_type: str | None = None) -> "TrustRegion":
        """The trust region of job ``workload`` from a run-table ``frame`` (with
        ``config`` or ``config_json``): the runs the model learned from, the job's
        own among them.  For each setting of ``names``: the values the job's own runs
        measured when they measured two or more, else those of every run of
        ``framework`` in ``frame`` (the corpus); a run without the setting ran at its
        default (``defaults``).  Where some runs of ``frame`` are at ``datasize``, only
        they count.  ``noise``: the repeat noise
        (``models.evaluation.noise_floor``) of the job's own runs at ``datasize``,
        else of the frame's runs at that size, else of all its runs (the first with
        :data:`MIN_NOISE_RUNS` repeated runs); at least :data:`NOISE_FLOOR`.
        ``measured``: the finished runtimes of the job's own runs at ``datasize`` (on
        ``instance_type`` when given) per set of changed settings."""
        from jobgauge.models.features import row_configs

        if framework and "framework" in frame.columns and len(frame):
            frame = frame[frame["framework"].astype(str) == str(framework)]
        frame = frame.reset_index(drop=True)
        configs = row_configs(frame)
        every = configs                 # all sizes: what _measured filters itself
        own = [str(w) == str(workload) for w in frame["workload"]] if len(frame) else []
        sized = [str(d) == str(datasize) for d in frame["datasize"]] \
            if datasize and "datasize" in frame.columns else []
        at, noise_frame, noise_own = "", frame, own
        if any(sized):          # a value measured only at other sizes is no evidence here
            configs = [c for c, here in zip(configs, sized) if here]
            own = [o for o, here in zip(own, sized) if here]
            at = f" at {datasize}"
        mine = [c for c, is_own in zip(configs, own) if is_own]
        ranges = {}
        for name in names:
            if name in CLUSTER_CHOICES:
                continue
            measured = _values(name, mine, defaults.get(name))
            if len(measured) >= 2:
                ranges[name] = MeasuredSetting(name, measured, f"the {len(mine)} runs of "
                                                               f"{workload}{at}")
            elif configs:
                ranges[name] = MeasuredSetting(name,
                                               _values(name, configs, defaults.get(name)),
                                               f"the {len(configs)} runs{at} the model "
                                               f"learns from")
        rows = [i for i, here in enumerate(sized) if here] if any(sized) \
            else list(range(len(frame)))
        return cls(ranges, _repeat_noise(noise_frame, noise_own, datasize),
                   _measured(frame, every, workload, defaults, datasize, instance_type),
                   dict(defaults), _effects(frame, every, defaults, rows),
                   f"the runs{at} the model learns from")

    def contradicted(self, changes: Mapping) -> str | None:
        """Why the job's own measurements contradict a gain from ``changes`` (setting ->
        value, the candidate's changes from the defaults); None when they do not (or
        never measured them beside the defaults).  The exact changes, measured: their
        median must be below the defaults' median by more than ``noise``.  One of the
        changes measured alone: its median must not be above the defaults' by more
        than ``noise``."""
        import statistics

        base = self.measured.get(())
        if not base:
            return None
        base_s = statistics.median(base)
        key = changed_settings(changes, self.defaults)
        exact = self.measured.get(key)
        if exact:
            found = statistics.median(exact)
            if found > base_s * (1.0 - self.noise):
                return (f"measured {found:.2f} s with {_shown(key)} against {base_s:.2f} s "
                        f"with the defaults ({len(exact)} and {len(base)} runs of the job)")
        for item in key:
            for alone_key in self._same_direction(item):
                if len(key) == 1 and alone_key == key:
                    continue                     # the exact changes, judged above
                alone = self.measured[alone_key]
                if statistics.median(alone) > base_s * (1.0 + self.noise):
                    return (f"measured {statistics.median(alone):.2f} s with "
                            f"{_shown(alone_key)} alone against {base_s:.2f} s with the "
                            f"defaults ({len(alone)} and {len(base)} runs of the job)")
        return None

    def harmful(self, changes: Mapping) -> str | None:
        """Why the measured effects of ``changes`` on the jobs of the runs the model
        learns from (:attr:`effects`) speak against them; None when they do not.  Each
        change is judged on its own measured pairs, or where it has none, on those of
        the nearest larger step the same way (:func:`_farther`): slower on most of at
        least :data:`MIN_EFFECT_PAIRS` pairs, or slower beyond the noise on more than
        :data:`SLOWER_SHARE` of them, rules it out."""
        import statistics

        for item in changed_settings(changes, self.defaults):
            ratios = list(self.effects.get(item, ()))
            shown = item
            if len(ratios) < MIN_EFFECT_PAIRS:
                for other in _farther(item, self.effects, self.defaults):
                    if len(self.effects[other]) >= MIN_EFFECT_PAIRS:
                        ratios, shown = list(self.effects[other]), other
                        break
            if len(ratios) < MIN_EFFECT_PAIRS:
                continue
            slower = sum(ratio > 1.0 + self.noise for ratio in ratios)
            typical = statistics.median(ratios)
            if typical > 1.0 or slower > SLOWER_SHARE * len(ratios):
                failed = sum(math.isinf(ratio) for ratio in ratios)
                return (f"{_shown((shown,))} measured slower than without it beyond the "
                        f"noise in {slower} of {len(ratios)} pairs of runs"
                        + (f" ({failed} failed)" if failed else "")
                        + (f", {typical:.2f}x the time in the median"
                           if math.isfinite(typical) else "")
                        + f", in {self.effects_source}")
        return None

    def _same_direction(self, item) -> list:
        """The measured keys that change only ``item``'s setting: to its value, or (a
        number) to a value on the same side of the default as far or farther (a larger
        heap measured slower is evidence against a smaller step the same way)."""
        singles = [key[0] for key in self.measured if len(key) == 1]
        return [(item,)] * (item in singles) + [
            (other,) for other in _farther(item, singles, self.defaults)]

    def outside(self, name: str, value) -> str | None:
        """Why ``value`` of setting ``name`` is outside the region (None: inside)."""
        if name in CLUSTER_CHOICES:
            return None
        measured = self.ranges.get(name)
        if measured is None:
            return f"{name}={format_setting(name, value)} (no run measured {name})"
        if value in measured:
            return None
        return (f"{name}={format_setting(name, value)} (outside {measured.describe()}, "
                f"measured in {measured.source})")


changed_settings = _table.changed_settings     # its home is the knob table


def _farther(item, items, defaults: Mapping) -> list:
    """The changes of ``items`` that set ``item``'s setting to a number on the same side
    of its default as ``item``'s value and as far or farther (``item`` itself aside), the
    nearest first."""
    name, text = item
    value, default = _typed(name, text), defaults.get(name)
    default = _typed(name, default) if default is not None else None
    if not all(_is_number(v) and v > 0 for v in (value, default)):
        return []
    found = []
    for other in items:
        if other == item or other[0] != name:
            continue
        number = _typed(name, other[1])
        if _is_number(number) and number > 0 \
                and ((default < value <= number) or (number <= value < default)):
            found.append((abs(number - value), other))
    return [other for _, other in sorted(found)]


def _effects(frame, configs, defaults, rows) -> dict:
    """{change: [runtime with it / runtime without it, ...]} over the rows ``rows`` of
    ``frame`` (``configs``: its rows' settings): per job (workload), size and cluster (the
    master, else the instance type), every two measured configurations that differ by
    one change alone give one ratio of their median finished runtimes; a configuration
    whose runs mostly failed counts as infinitely slow (never as the one without)."""
    import statistics

    if not len(frame) or "runtime_s" not in frame.columns:
        return {}

    def column(name):
        return frame[name].tolist() if name in frame.columns else [None] * len(frame)
    workloads, sizes, types = column("workload"), column("datasize"), column("instance_type")
    runtimes = column("runtime_s")
    completed = [bool(v) if v == v and v is not None else False
                 for v in column("completed")] if "completed" in frame.columns \
        else [True] * len(frame)
    groups: dict = {}
    for i in rows:
        cluster = configs[i].get("spark.master") or types[i]
        try:
            runtime = float(runtimes[i])
        except (TypeError, ValueError):
            runtime = math.nan
        finished = completed[i] and math.isfinite(runtime) and runtime > 0
        groups.setdefault((str(workloads[i]), str(sizes[i]), str(cluster)), {}).setdefault(
            changed_settings(configs[i], defaults), []).append(runtime if finished else None)
    effects: dict = {}
    for measured in groups.values():
        medians = {}
        for key, runs in measured.items():
            done = [runtime for runtime in runs if runtime is not None]
            medians[key] = statistics.median(done) if done and 2 * len(done) >= len(runs) \
                else math.inf
        for key, with_s in medians.items():
            for item in key:
                without = medians.get(tuple(other for other in key if other != item))
                if without is not None and math.isfinite(without):
                    effects.setdefault(item, []).append(with_s / without)
    return effects


def _shown(key: tuple) -> str:
    return ", ".join(f"{name}={value}" for name, value in key)


def _measured(frame, configs, workload, defaults, datasize, instance_type) -> dict:
    """{changed settings: runtimes} of the finished runs of ``workload`` in ``frame``
    (``configs``: its rows' settings, already read) at ``datasize`` (where given) and on
    ``instance_type`` (where given)."""
    import math

    if not len(frame) or "runtime_s" not in frame.columns:
        return {}
    keep = frame["workload"].astype(str) == str(workload)
    if datasize and "datasize" in frame.columns:
        keep &= frame["datasize"].astype(str) == str(datasize)
    if instance_type and "instance_type" in frame.columns:
        keep &= frame["instance_type"].astype(str) == str(instance_type)
    if "completed" in frame.columns:
        keep &= frame["completed"].fillna(False).astype(bool)
    out: dict = {}
    for i in keep.to_numpy().nonzero()[0]:
        try:
            runtime = float(frame["runtime_s"].iat[i])
        except (TypeError, ValueError):
            continue
        if math.isfinite(runtime) and runtime > 0:
            out.setdefault(changed_settings(configs[i], defaults), []).append(runtime)
    return out


def _values(name: str, configs, default) -> frozenset:
    """The values of setting ``name`` in ``configs`` (a config without it: ``default``)."""
    values = (config.get(name, default) for config in configs)
    return frozenset(_typed(name, value) for value in values if value is not None)


def _repeat_noise(frame, own, datasize) -> float:
    from jobgauge.models.evaluation import noise_floor

    if not len(frame) or "completed" not in frame.columns:
        return NOISE_FLOOR
    if "config_json" not in frame.columns:       # noise_floor groups runs by it
        from jobgauge.models.features import row_configs
        from jobgauge.runtable import config_json

        frame = frame.assign(config_json=[config_json(c) for c in row_configs(frame)])
    frame = frame.assign(completed=frame["completed"].fillna(False).astype(bool))
    sized = (frame["datasize"].astype(str) == str(datasize)).to_numpy() \
        if datasize else [True] * len(frame)
    mine = [o and s for o, s in zip(own, sized)]
    for rows in (mine, sized, [True] * len(frame)):
        if any(rows):
            found = noise_floor(frame[list(rows)].reset_index(drop=True))
            if found is not None and found["runs"] >= MIN_NOISE_RUNS:
                return max(NOISE_FLOOR, float(found["mdape"]))
    return NOISE_FLOOR


# ------------------------------------------------------------------ the recommendation

def _same(name, value, default) -> bool:
    return default is not None and format_setting(name, value) == format_setting(name, default)


def _upper(measurement) -> float:
    bounds = measurement.runtime_interval
    return float(bounds[1]) if bounds else float(measurement.runtime_s)


def recommend(result, space, evaluate, *, metrics: dict | None = None,
              region: TrustRegion | None = None, min_gain: float = MIN_GAIN) -> Recommendation:
    """The recommendation of a model-guided ``result`` over ``space``, inside ``region``.

    ``evaluate(config) -> Measurement`` is the model's prediction
    (``model_evaluator``, with its 80 % interval): it prices the defaults and the
    candidates.  ``metrics``: the model's training summary (for
    ``settings_varied``).  ``region``: the :class:`TrustRegion` of the runs the
    model learned from (None: no measured ranges known, every value trusted, and
    the noise :data:`NOISE_FLOOR`).  A gain must exceed ``min_gain`` and the
    region's noise."""
    defaults = space.defaults()
    base = evaluate(dict(defaults))
    baseline, base_upper = float(base.runtime_s), _upper(base)
    if result.best is None:
        return Recommendation({}, baseline, baseline, False, f"{KEPT_DEFAULTS} (no trial "
                                                             "finished)")
    noise = max(min_gain, region.noise if region is not None else NOISE_FLOOR)
    varied = (metrics or {}).get("settings_varied")
    trials = sorted((t for t in result.trials
                     if t.state == "complete" and t.feasible and t.values),
                    key=lambda t: t.values[0])
    if result.best not in trials:
        trials.insert(0, result.best)
    unseen, outside, candidates = set(), {}, []
    for trial in trials:
        changes = {}
        for name, value in trial.config.items():
            if name in defaults and _same(name, value, defaults[name]):
                continue
            if varied is not None and name not in varied and name not in CLUSTER_CHOICES:
                unseen.add(name)
                continue
            why = region.outside(name, value) if region is not None else None
            if why is not None:
                outside.setdefault(name, why)
                continue
            changes[name] = value
        if changes and changes not in candidates:
            candidates.append(changes)
        if len(candidates) >= MAX_CANDIDATES:
            break
    if not candidates:
        blind = varied is not None and not any(
            name in varied for name in space.names if name not in CLUSTER_CHOICES)
        if blind:
            why = (f" (the runs the model learned from never changed any of the "
                   f"{len(space)} settings searched)")
        elif unseen and not outside:
            why = f" (the runs the model learned from never changed {', '.join(sorted(unseen))})"
        elif outside:
            never = (f"; the runs the model learned from never changed "
                     f"{', '.join(sorted(unseen))}" if unseen else "")
            why = (" (every change the search found lies outside the measured range: "
                   + "; ".join(outside[name] for name in sorted(outside)) + never + ")")
        else:
            why = " (the best settings found are the defaults)"
        return Recommendation({}, baseline, baseline, False, KEPT_DEFAULTS + why)
    priced = []                        # (predicted s, upper bound s, changes), fastest first
    for changes in candidates:
        measurement = evaluate({**defaults, **changes})
        priced.append((float(measurement.runtime_s), _upper(measurement), changes))
    priced.sort(key=lambda item: item[0])
    contradicted = {}                  # index in priced -> what the job's runs measured
    for index, (predicted, upper, changes) in enumerate(priced):
        if baseline - predicted > noise * baseline and upper <= base_upper:
            measured = (region.contradicted(changes) or region.harmful(changes)) \
                if region is not None else None
            if measured is not None:
                contradicted[index] = measured
                continue
            changes, predicted, upper = _simplest(
                changes, predicted, evaluate, defaults,
                lambda found, high: baseline - found > noise * baseline and high <= base_upper,
                region)
            return _tuned(changes, predicted, upper, baseline, base_upper, noise, outside)
    predicted, upper, changes = priced[0]
    gain = 1.0 - predicted / baseline if baseline > 0 else 0.0
    if 0 in contradicted:
        why = (f"predicted {predicted:.1f} s with the best settings inside the measured "
               f"range, {baseline:.1f} s with the defaults ({_faster(gain)}), but "
               f"{contradicted[0]}")
    elif baseline - predicted <= noise * baseline:
        why = (f"predicted {predicted:.1f} s with the best settings inside the measured "
               f"range, {baseline:.1f} s with the defaults: {_faster(gain)}, not "
               f"beyond the repeat noise of {_percent(noise)} %")
    else:
        why = (f"predicted {predicted:.1f} s with the best settings inside the measured "
               f"range, {baseline:.1f} s with the defaults, but its {_percent(COVERAGE)} % "
               f"upper bound, {upper:.1f} s, is above the defaults', {base_upper:.1f} s")
    return Recommendation({}, baseline, baseline, False,
                          f"{KEPT_DEFAULTS} ({why}{_left_out(outside)})")


def _simplest(changes, predicted, evaluate, defaults, passes, region=None) -> tuple:
    """(changes, predicted s, upper bound s): ``changes`` less each change it does not
    need, fewest-cost first: a change goes while the others still pass (``passes(
    predicted, upper)``, and no measurement of the job contradicts them: ``region``)
    and are predicted within :data:`SIMPLER_WITHIN` of the whole."""
    kept, found = dict(changes), None
    while len(kept) > 1:
        options = []
        for name in kept:
            fewer = {k: v for k, v in kept.items() if k != name}
            if region is not None and (region.contradicted(fewer) or region.harmful(fewer)):
                continue
            measurement = evaluate({**defaults, **fewer})
            options.append((float(measurement.runtime_s), _upper(measurement), fewer))
        if not options:
            break
        runtime, upper, fewer = min(options, key=lambda option: option[0])
        if runtime > predicted * (1.0 + SIMPLER_WITHIN) or not passes(runtime, upper):
            break
        kept, found = fewer, (runtime, upper)
    if found is None:
        measurement = evaluate({**defaults, **kept})
        found = (float(measurement.runtime_s), _upper(measurement))
    return kept, found[0], found[1]


def _percent(fraction: float) -> str:
    value = 100 * fraction
    return f"{value:.0f}" if math.isfinite(value) else "n/a"


def _faster(gain: float) -> str:
    """``"12 % faster"`` for a gain of 0.12 over the defaults, ``"10 % slower"`` for -0.1
    (the fastest settings a short search found can be slower than the defaults)."""
    return f"{_percent(abs(gain))} % {'slower' if gain < 0 else 'faster'}"


def _left_out(outside: Mapping) -> str:
    if not outside:
        return ""
    return "; left out " + "; ".join(outside[name] for name in sorted(outside))


def _tuned(changes, predicted, upper, baseline, base_upper, noise, outside) -> Recommendation:
    settings = {name: format_setting(name, value) for name, value in changes.items()}
    gain = 1.0 - predicted / baseline if baseline > 0 else 0.0
    return Recommendation(settings, predicted, baseline, True,
                          f"predicted {predicted:.1f} s with {len(settings)} changed settings, "
                          f"{baseline:.1f} s with Spark's defaults ({_faster(gain)}, "
                          f"beyond the repeat noise of {_percent(noise)} %; "
                          f"{_percent(COVERAGE)} % upper bound {upper:.1f} s against "
                          f"{base_upper:.1f} s)"
                          + _left_out(outside))


def store_trust_region(store, job, space, *, prior=None) -> TrustRegion:
    """The :class:`TrustRegion` of ``job`` (a :class:`jobgauge.job.Job`) over ``space``
    from the runs a store's model learns from: the prior (``prior``: a run-table frame,
    default the shipped run tables) plus the store's own runs
    (``models._default.learning_frame``), the job's own among them."""
    from jobgauge.models._default import learning_frame

    frame, _, _ = learning_frame(store, prior=prior)
    return TrustRegion.from_runs(frame, job.workload, space.names, defaults=space.defaults(),
                                 framework=job.framework, datasize=job.datasize,
                                 instance_type=job.cluster.instance_type)
