"""What a model was trained on, and whether a question is far outside it.

:class:`MeasuredRange` is a small record a model keeps from its training frame
(``RuntimeModel.fit`` sets ``measured_range_``): per workload and framework, the
measured data sizes (size labels and input bytes), the cores (vCPUs x nodes)
the runs had, and over all runs the instance types with their node counts.
:meth:`MeasuredRange.notes` says, for every row of a frame to predict, whether
the question is far outside what was measured and why, naming the nearest
measured size::

    >>> measured = MeasuredRange.from_frame(training_frame)           # doctest: +SKIP
    >>> measured.notes(configuration_frame([{"workload": "tpch-q3",
    ...                                      "datasize": "sf100"}]))  # doctest: +SKIP
    ['far outside what was measured: tpch-q3 was measured at sf0.01-sf0.3 (largest
      input 98 MiB), not at sf100 (about 30 GiB of input); nearest measured size sf0.3']

A row is far outside what was measured when any of these holds:

- its workload was never measured with its framework (an unseen workload is then
  compared with every measured run);
- its input is more than ``SIZE_FACTOR`` (1.5) times above the largest or below
  two thirds of the smallest input measured for the workload.  A row without input
  bytes is sized from its label: a label measured for the workload is inside; a
  TPC-H scale factor is the workload's measured bytes per scale factor times the
  factor; a HiBench size (tiny < small < medium < ...) is outside when it lies
  beyond the measured HiBench sizes of the workload;
- its cores (vCPUs x nodes) are more than ``SLOTS_FACTOR`` (2) times above the most
  or below half the fewest cores the workload's runs had;
- its instance type was never measured, or its node count is more than
  ``SLOTS_FACTOR`` times beyond the node counts measured on that type.

A row whose size cannot be told (no input bytes, and a label that is neither
measured nor a scale factor or HiBench size to compare) is not called outside for
its size.  Asked of ``models.predict_frame``, such a row is not answered at all, nor
is a HiBench size the workload's runs never measured:
:meth:`MeasuredRange.size_refusals` says why, and ``predict_frame`` raises
:class:`UnknownSize` with it.

Why these factors: one step of the TPC-H scales (sf0.3 to sf1, 3.3x) already
leaves what was measured, and that is where the models went wrong (issue 13: SF 1
predicted 1.3 s, measured 8.5 s, from runs up to SF 0.3); half a step does too:
TPC-H Q9 at SF 20, twice the largest size measured, was answered 61.6 s [34.2, 77.5]
and measured 86.6 s (session 19), so the size factor is the stage predictor's own
reach (``MEASURED_REACH``: beyond it a question is no longer about a measured
size, and its interval widens with the distance).  Cores are the coarser knob
(local[1] and local[2] measured: local[4] is near, local[8] is not).
A model loaded from an older pickle has no ``measured_range_``:
``models.predict_frame`` then says nothing of it (never an error).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from jobgauge.errors import UsageError
from jobgauge.units import bytes_at_scale, human_size

#: An input more than this many times above the largest (or below 1/x of the smallest)
#: measured input of its workload is far outside what was measured; the stage predictor
#: widens the interval of such a question with its distance (``MEASURED_REACH``).
SIZE_FACTOR = 1.5
#: Cores or nodes more than this many times beyond the measured range are far outside it.
SLOTS_FACTOR = 2.0
#: How many measured instance types a note lists before "and N more".
LISTED_TYPES = 5
PREFIX = "far outside what was measured: "


class UnknownSize(UsageError):
    """A question whose input size the model cannot tell
    (:meth:`MeasuredRange.size_refusals`)."""


@dataclass
class WorkloadRange:
    """What was measured of one workload with one framework (or of every run).

    ``sizes``: (size label, median input bytes) per measured label, smallest first
    (label ``""`` for runs without one, at their smallest and largest input);
    ``smallest_bytes``/``largest_bytes``: the measured input range;
    ``scale_bytes``: (TPC-H scale factor, median input bytes) per measured scale factor,
    from which a scale factor not measured is sized (``jobgauge.units.bytes_at_scale``);
    ``labels``: every measured size label (with or without input bytes);
    ``hibench_sizes``: label -> HiBench size ordinal of the measured labels;
    ``cores``: (fewest, most) vCPUs x nodes of the runs;
    ``modes``: the run modes of the runs (``models.features.run_modes``: ``local`` on
    this machine, ``remote`` on a cluster; empty in a record made before they were kept).
    """

    sizes: list = field(default_factory=list)
    smallest_bytes: float | None = None
    largest_bytes: float | None = None
    scale_bytes: tuple = ()
    labels: frozenset = frozenset()
    hibench_sizes: dict = field(default_factory=dict)
    cores: tuple | None = None
    modes: frozenset = frozenset()

    @classmethod
    def from_frame(cls, frame) -> "WorkloadRange":
        """The range of the run-table rows of ``frame``."""
        import numpy as np
        import pandas as pd

        from jobgauge.models.features import scale_bytes, size_scale

        labels = frame["datasize"].fillna("").astype(str).str.strip() \
            if "datasize" in frame.columns else pd.Series([""] * len(frame), index=frame.index)
        size = pd.to_numeric(frame["input_bytes"], errors="coerce") \
            if "input_bytes" in frame.columns else pd.Series(np.nan, index=frame.index)
        known = size.notna() & (size > 0)
        sizes = []
        for label, values in size[known].groupby(labels[known]):
            if label:
                sizes.append((str(label), float(values.median())))
            else:
                sizes += [("", float(values.min())), ("", float(values.max()))]
        sizes = sorted(set(sizes), key=lambda item: (item[1], item[0]))
        factors = np.array([size_scale(label)[0] for label in labels])
        usable = known.to_numpy() & np.isfinite(factors) & (factors > 0)
        ordinals = {label: size_scale(label)[1] for label in set(labels) if label}
        vcpus = pd.to_numeric(frame["vcpus"], errors="coerce")
        count = pd.to_numeric(frame["instance_count"], errors="coerce").fillna(1)
        cores = (vcpus * count).dropna()
        cores = cores[cores > 0]
        return cls(
            sizes=sizes,
            smallest_bytes=float(size[known].min()) if known.any() else None,
            largest_bytes=float(size[known].max()) if known.any() else None,
            scale_bytes=tuple(scale_bytes(factors[usable], size.to_numpy()[usable])),
            labels=frozenset(label for label in labels if label),
            hibench_sizes={k: float(v) for k, v in ordinals.items() if math.isfinite(v)},
            cores=(float(cores.min()), float(cores.max())) if len(cores) else None,
            modes=frozenset(_modes(frame)) - {""},
        )

    # -------------------------------------------------------------- sizes
    def size_span(self) -> str:
        """The measured sizes in words: ``sf0.01-sf0.3`` (labels) or ``3.1 MiB-98 MiB``."""
        if self.sizes and all(label for label, _ in self.sizes):
            first, last = self.sizes[0][0], self.sizes[-1][0]
            return first if first == last else f"{first}-{last}"
        if self.smallest_bytes is None:
            return ", ".join(sorted(self.labels)) or "no known size"
        low, high = human_size(self.smallest_bytes), human_size(self.largest_bytes)
        return low if low == high else f"{low}-{high}"

    def nearest_size(self, input_bytes: float) -> str:
        """The measured size nearest to ``input_bytes`` (on a log scale): its label, or
        its input bytes when it has none."""
        label, size = min(self.sizes, key=lambda item: abs(math.log(item[1] / input_bytes)))
        return label or human_size(size)

    def asked_bytes(self, label: str, input_bytes) -> float | None:
        """Input bytes of a question: as given, else from its size label (see the
        module docstring); None when neither tells."""
        if input_bytes is not None and math.isfinite(input_bytes) and input_bytes > 0:
            return float(input_bytes)
        for measured, size in self.sizes:
            if label and measured == label:
                return size
        from jobgauge.models.features import size_scale

        factor = size_scale(label)[0]
        if self.scale_bytes:
            return bytes_at_scale(self.scale_bytes, factor)
        old = self.__dict__.get("bytes_per_scale_factor")   # a range made before scale_bytes
        if old and math.isfinite(factor) and factor > 0:
            return old * factor
        return None

    def size_reason(self, name: str, label: str, input_bytes) -> str | None:
        """Why a question's size is far outside this range (None when it is not)."""
        if label in self.labels and (input_bytes is None or not math.isfinite(input_bytes)):
            return None
        asked = self.asked_bytes(label, input_bytes)
        if asked is not None and self.largest_bytes:
            above = asked > SIZE_FACTOR * self.largest_bytes
            if not above and asked >= self.smallest_bytes / SIZE_FACTOR:
                return None
            edge = (f"largest input {human_size(self.largest_bytes)}" if above
                    else f"smallest input {human_size(self.smallest_bytes)}")
            given = f"{label} (about {human_size(asked)} of input)" if label \
                else f"{human_size(asked)} of input"
            return (f"{name} was measured at {self.size_span()} ({edge}), not at {given}; "
                    f"nearest measured size {self.nearest_size(asked)}")
        from jobgauge.models.features import size_scale

        ordinal = size_scale(label)[1]
        if not math.isfinite(ordinal) or not self.hibench_sizes:
            return None   # the size cannot be told: nothing to say about it
        measured = sorted(self.hibench_sizes.items(), key=lambda item: item[1])
        if measured[0][1] <= ordinal <= measured[-1][1]:
            return None
        nearest = measured[-1][0] if ordinal > measured[-1][1] else measured[0][0]
        span = measured[0][0] if len(measured) == 1 else f"{measured[0][0]}-{measured[-1][0]}"
        return f"{name} was measured at {span}, not at {label}; nearest measured size {nearest}"

    def combined(self, other: "WorkloadRange") -> "WorkloadRange":
        """This range and ``other`` as one (the runs of both)."""
        def edge(pick, *values):
            known = [v for v in values if v is not None]
            return pick(known) if known else None

        cores = [c for c in (self.cores, other.cores) if c is not None]
        return WorkloadRange(
            sizes=sorted(set(self.sizes) | set(other.sizes), key=lambda item: (item[1], item[0])),
            smallest_bytes=edge(min, self.smallest_bytes, other.smallest_bytes),
            largest_bytes=edge(max, self.largest_bytes, other.largest_bytes),
            scale_bytes=self.scale_bytes or other.scale_bytes,
            labels=self.labels | other.labels,
            hibench_sizes={**other.hibench_sizes, **self.hibench_sizes},
            cores=(min(c[0] for c in cores), max(c[1] for c in cores)) if cores else None,
            modes=self.modes | other.modes)

    def cores_reason(self, name: str | None, cores: float, where: str) -> str | None:
        """Why a question's cores are far outside this range (None when they are not);
        ``name`` is the workload (None: this is the range of every run)."""
        if self.cores is None or not math.isfinite(cores):
            return None
        fewest, most = self.cores
        if fewest / SLOTS_FACTOR <= cores <= SLOTS_FACTOR * most:
            return None
        span = f"{fewest:g}" if fewest == most else f"{fewest:g}-{most:g}"
        subject = f"{name} was measured on" if name else "the measured runs had"
        return f"{subject} {span} cores, not {cores:g} ({where})"


@dataclass
class MeasuredRange:
    """What a model's training runs covered (see the module docstring).

    ``workloads``: (workload, framework) -> :class:`WorkloadRange`; ``everything``:
    the range of all runs (for a workload never measured); ``instance_types``:
    instance type -> (fewest, most) nodes measured on it; ``failures``: configuration
    at a size (:func:`_sized_configurations`) -> its failed runs, for those with one;
    ``configuration_runs``: the same key -> its runs, failed or not, for every
    configuration (how many runs a failure in the store is one more of:
    :meth:`with_runs`);
    ``origins``: (workload, framework) -> {origin: :class:`WorkloadRange`} of a job
    with runs of a public table (``runtable.public_origins``; ``""``: jobgauge's runs
    and the user's), one range per origin; a note names the origin where there are
    several.  Such a job's question is compared with the
    runs of the origin nearest its size (``runtable.nearest_origin``), the runs the
    stage model answers it from: C3O's sort (9.3-19 GiB on 16-96 cores of EMR) beside
    jobgauge's (33 KiB-153 MiB on local[2]) made "sort was measured at 33 KiB-19 GiB",
    and sort at 1 GB on local[2] and Scout's join at bigdata on local[2] went unmarked;
    ``origin_types``: origin -> {instance type: (fewest, most) nodes} where the runs have
    several origins: a question is compared with the instance types of its origin's
    runs (TPC-H on c4.xlarge was "measured on 4-24 nodes, not 1" from Scout's and C3O's
    runs, though none of jobgauge's had it).
    """

    workloads: dict = field(default_factory=dict)
    everything: WorkloadRange = field(default_factory=WorkloadRange)
    instance_types: dict = field(default_factory=dict)
    failures: dict = field(default_factory=dict)
    configuration_runs: dict = field(default_factory=dict)
    origins: dict = field(default_factory=dict)
    origin_types: dict = field(default_factory=dict)

    def __setstate__(self, state):
        # a record pickled before the tallies were kept keyed its failures by every
        # setting as given: keyed again as :func:`_sized_configurations` keys them now
        if "configuration_runs" not in state:   # (and one older still, no failures)
            state = {**state, "configuration_runs": {},
                     "failures": {_rekeyed(key): counts
                                  for key, counts in (state.get("failures") or {}).items()}}
        # one pickled while a failure kept (failed runs, runs): the runs go to the tally
        # of every configuration's runs, where they are kept once
        failures = state.get("failures") or {}
        if any(isinstance(counts, tuple) for counts in failures.values()):
            state = {**state, "failures": {key: counts[0] for key, counts in failures.items()},
                     "configuration_runs": {**{key: counts[1]
                                               for key, counts in failures.items()},
                                            **state["configuration_runs"]}}
        # one made before the origins were kept
        self.__dict__.update({"origins": {}, "origin_types": {}, **state})

    @classmethod
    def from_frame(cls, frame) -> "MeasuredRange":
        """The record of a training frame (a run table: ``workload``, ``framework``,
        ``datasize``, ``input_bytes``, ``instance_type``, ``instance_count``,
        ``vcpus``)."""
        import pandas as pd

        from jobgauge.runtable import public_origins

        keys = [frame["workload"].astype(str), frame["framework"].astype(str)]
        workloads = {(str(workload), str(framework)): WorkloadRange.from_frame(rows)
                     for (workload, framework), rows in frame.groupby(keys, sort=True)}
        origin = pd.Series(public_origins(frame), index=frame.index, dtype=object)
        public = {(str(w), str(f)) for w, f in zip(keys[0][origin != ""], keys[1][origin != ""])}
        origins: dict = {}
        if public:
            for (workload, framework, name), rows in frame.groupby(keys + [origin], sort=True):
                if (workload, framework) in public:
                    origins.setdefault((str(workload), str(framework)), {})[str(name)] = \
                        WorkloadRange.from_frame(rows)
        tally = _tally(frame)
        origin_types = _origin_node_counts(frame)
        return cls(workloads=workloads, everything=WorkloadRange.from_frame(frame),
                   instance_types=_node_counts(frame),
                   origin_types=origin_types if len(origin_types) > 1 else {},
                   failures={key: failed for key, (failed, _) in tally.items() if failed},
                   configuration_runs={key: runs for key, (_, runs) in tally.items()},
                   origins=origins)

    def with_runs(self, frame, failed=None) -> "MeasuredRange":
        """This record with the runs of ``frame`` measured too (a job's own runs in the
        store that the model has not learned from yet, but that its answers are
        calibrated to: ``models._default.job_runs``), and the runs of ``failed`` (its
        runs in the store that failed with an error, which no model learns from:
        ``models._default.job_failures``) counted in :meth:`failure_notes`.  A failed
        configuration's runs are then the larger of the training runs and ``frame``'s
        runs of it (the store's runs may be among the training runs), plus the failed."""
        if failed is not None and len(failed):
            failures, runs = self._failures_with(frame, failed)
            self = MeasuredRange(workloads=self.workloads, everything=self.everything,
                                 instance_types=self.instance_types, failures=failures,
                                 configuration_runs=runs, origins=self.origins,
                                 origin_types=self.origin_types)
        if frame is None or not len(frame):
            return self
        more = MeasuredRange.from_frame(frame)
        workloads = dict(self.workloads)
        for key, measured in more.workloads.items():
            workloads[key] = workloads[key].combined(measured) if key in workloads else measured
        types = _widened(self.instance_types, more.instance_types)
        origin_types = dict(self.origin_types)
        if origin_types:        # the store's runs, each with its own origin
            for name, counts in _origin_node_counts(frame).items():
                origin_types[name] = _widened(origin_types.get(name, {}), counts)
        origins = {}
        for key in set(self.origins) | set(more.origins):
            mine, theirs = self._ranges_of(key), more._ranges_of(key)
            origins[key] = {name: mine[name].combined(theirs[name])
                            if name in mine and name in theirs else mine.get(name) or theirs[name]
                            for name in set(mine) | set(theirs)}
        return MeasuredRange(workloads=workloads,
                             everything=self.everything.combined(more.everything),
                             instance_types=types, failures=self.failures,
                             configuration_runs=self.configuration_runs, origins=origins,
                             origin_types=origin_types)

    def with_failures_of(self, frame) -> "MeasuredRange":
        """This record with the configurations of ``frame`` counted in
        :meth:`failure_notes` too: runs the model does not learn from, measured apart
        from its training runs (the shipped re-measurements, ``data/recollect``), whose
        failures are evidence all the same.  Each of its configurations adds its runs,
        and its failed runs where it has any; its sizes and clusters are not counted as
        measured.  (TPC-H Q4 at SF 10 with a 4g driver finished both its runs in the
        training table, which ran every query in one application, and failed both in
        ``tpch-sf10-v5``, one fresh application per configuration, as ``spark-submit``
        starts one: it was answered 12.84 s with no note.)"""
        more = _tally(frame) if frame is not None else {}
        if not more:
            return self
        failures, runs = dict(self.failures), dict(self.configuration_runs)
        for key, (failed, count) in more.items():
            if failed:
                failures[key] = failures.get(key, 0) + failed
            runs[key] = runs.get(key, 0) + count
        return MeasuredRange(workloads=self.workloads, everything=self.everything,
                             instance_types=self.instance_types, failures=failures,
                             configuration_runs=runs, origins=self.origins,
                             origin_types=self.origin_types)

    def _failures_with(self, frame, failed) -> tuple[dict, dict]:
        """:attr:`failures` and :attr:`configuration_runs` with the configurations of
        ``failed`` tallied as failed runs (see :meth:`with_runs`)."""
        failures, runs = dict(self.failures), dict(self.configuration_runs)
        finished: dict = {}
        if frame is not None and len(frame):
            for key in _sized_configurations(frame, unsized=True):
                finished[key] = finished.get(key, 0) + 1
        extra: dict = {}
        for key in _sized_configurations(failed, unsized=True):
            extra[key] = extra.get(key, 0) + 1
        for key, count in extra.items():
            known = failures.get(key, 0)
            runs[key] = max(runs.get(key, 0), known + finished.get(key, 0)) + count
            failures[key] = known + count
        return failures, runs

    def workload_names(self) -> list[str]:
        """The measured workloads, sorted."""
        return sorted({workload for workload, _ in self.workloads})

    def size_labels(self) -> list[str]:
        """The measured size labels (``sf0.1``, ``huge``, ...), sorted."""
        return sorted(self.everything.labels)

    def instance_type_names(self) -> list[str]:
        """The measured instance types, sorted."""
        return sorted(self.instance_types)

    def notes(self, X) -> list[str | None]:
        """Per row of the run-table frame ``X``: why it is far outside what was
        measured (``"far outside what was measured: ..."``), or None when it is not."""
        rows = zip(_column(X, "workload", ""), _column(X, "framework", "spark"),
                   _column(X, "datasize", ""), _input_column(X),
                   _column(X, "instance_type", ""), _column(X, "instance_count", 1),
                   _column(X, "vcpus", math.nan), _column(X, "source", ""),
                   _modes(X))
        answers: dict = {}
        out = []
        for row in rows:
            key = tuple(str(v) if not isinstance(v, float) else v for v in row)
            if key not in answers:  # a what-if grid asks the same size many times
                answers[key] = self._note(*row)
            out.append(answers[key])
        return out

    def failure_notes(self, X) -> list[str | None]:
        """Per row of ``X``: that its configuration (the job at its size label, on its
        cluster, with its settings) failed in measured runs, how often (``"2 of the 2
        measured runs ... failed"``), or None.  TPC-H Q3 at SF 1 with a 100 MiB
        broadcast threshold failed in both its runs and was answered 1.73 s, unmarked."""
        failures = self.failures
        out = []
        for key in _sized_configurations(X, unsized=True) if failures else [None] * len(X):
            # a run of the user's own without a size name (a jobgauge-submit run not
            # given --jobgauge-datasize) failed with these settings at some size
            unsized = None if key is None else key[:2] + ("",) + key[3:]
            key = key if key in failures else unsized if unsized in failures else None
            if key is None:
                out.append(None)
                continue
            failed = failures[key]
            runs = self.configuration_runs.get(key, failed)
            workload, _, label, instance_type, count, _ = key
            where = instance_type if count == "1" else f"{count} x {instance_type}"
            at = f" at {label}" if label else ""
            out.append(f"{failed} of the {runs} measured runs of {workload}{at} with "
                       f"these settings on {where} failed: this is how long it would take "
                       f"if it finished")
        return out

    def input_bytes(self, X) -> list[float | None]:
        """Per row of ``X``: its input bytes, as given or else from its size label and
        its workload's measured sizes (:meth:`WorkloadRange.asked_bytes`; an unseen
        workload from every measured run's); None where neither tells."""
        out = []
        for workload, framework, label, size in zip(
                _column(X, "workload", ""), _column(X, "framework", "spark"),
                _column(X, "datasize", ""), _input_column(X)):
            measured = self.workloads.get((str(workload), str(framework)), self.everything)
            label = "" if not isinstance(label, str) else label.strip()
            out.append(measured.asked_bytes(label, None if size is None else float(size)))
        return out

    def size_refusals(self, X, sizes=None) -> list[str]:
        """Why rows of ``X`` cannot be answered, one message per question: a row without
        input bytes whose size label its workload's runs never measured and that is not
        a TPC-H scale factor (a HiBench size such as ``huge``; a name of the user's,
        such as ``biggest``).  Its input is then not known, and the models would size it
        from their other runs (kmeans at huge was once answered as faster than at
        medium).  Empty when every row can be sized.  ``sizes``: :meth:`input_bytes`
        of ``X``, where the caller has them already."""
        refusals = []
        for workload, framework, label, size in zip(
                _column(X, "workload", ""), _column(X, "framework", "spark"),
                _column(X, "datasize", ""), self.input_bytes(X) if sizes is None else sizes):
            label = "" if not isinstance(label, str) else label.strip()
            measured = self.workloads.get((str(workload), str(framework)))
            if size is not None or not label or label in (measured or self.everything).labels:
                continue
            sizes = [f"{name} ({human_size(size)})" for name, size in measured.sizes
                     if name] if measured is not None else []
            others = sorted(f for w, f in self.workloads if w == str(workload))
            known = (f"measured: {', '.join(sizes)}" if sizes else "no size of it was measured "
                     "with its input" if measured is not None else
                     f"{workload} was measured only with {', '.join(others)}, not {framework}"
                     if others else f"{workload} was never measured")
            message = (f"{workload} at {label}: its input size is not known to the model "
                       f"({known}); ask by its input size instead (input_gb in the web form "
                       f"and API, --input-bytes in jobgauge predict)")
            if message not in refusals:
                refusals.append(message)
        return refusals

    def _ranges_of(self, key) -> dict:
        """origin -> :class:`WorkloadRange` of the job ``key`` (workload, framework):
        ``origins``' entry, else its one range as ``""``'s ({} for a job not measured)."""
        if key in self.origins:
            return self.origins[key]
        return {"": self.workloads[key]} if key in self.workloads else {}

    def _origin_range(self, key, source, label, input_bytes, mode="") -> tuple:
        """(range, origin) a question of the job ``key`` is compared with: a public
        table's own run with its table's runs; any other question with the runs of the
        origin that ran in its run ``mode`` nearest its size (``runtable.nearest_origin``),
        its label sized as :meth:`input_bytes` sizes it; (None, "") for a job not
        measured."""
        from jobgauge.runtable import nearest_origin

        ranges = self.origins.get(key)
        if not ranges:
            return self.workloads.get(key), ""
        if source in ranges and source:
            return ranges[source], source
        asked = self.workloads[key].asked_bytes(label, input_bytes)
        name = nearest_origin(*self._spans(key, math.log(asked) if asked else math.nan, mode))
        if name not in ranges:      # no origin's runs know their input sizes
            name = "" if "" in ranges else min(ranges)
        return ranges[name], name

    def _elsewhere(self, key, origin, label, input_bytes, mode="") -> list[str]:
        """The reasons naming the origins of the job ``key`` other than ``origin`` that
        measured it at the asked size, but only in a run mode other than the question's
        ``mode`` (which is why ``runtable.nearest_origin`` did not pick them): Scout's
        join at bigdata on local[2] is answered from jobgauge's runs of join at tiny, and
        Scout's runs at bigdata on EC2 are named beside them."""
        where = {frozenset({"remote"}): "only on clusters",
                 frozenset({"local"}): "only on this machine"}
        out = []
        for other, theirs in sorted(self.origins.get(key, {}).items()):
            ran = where.get(frozenset(theirs.modes))
            if other == origin or ran is None or (mode and mode in theirs.modes) \
                    or theirs.size_reason(key[0], label, input_bytes) is not None:
                continue
            whose = f"{key[0]} of the {other} table" if other else f"jobgauge's {key[0]}"
            out.append(f"{whose} was measured at this size, but {ran}")
        return out

    def _below(self, key, label, input_bytes, mode) -> list[str]:
        """The reasons naming the job ``key``'s :func:`runtable.smaller_origins` at the
        asked size (as :meth:`_origin_range` takes its origins' spans): pagerank at 1 GB
        on 4 m5.2xlarge lies between C3O's runs (0.13-0.43 GB) and Scout's (from 2.8 GB);
        the stage model holds its answer at C3O's answer at 0.43 GB
        (``StagePredictor._measured_log``), and the note names both tables."""
        from jobgauge.runtable import smaller_origins

        asked = self.workloads[key].asked_bytes(label, input_bytes)
        if not asked:
            return []
        out = []
        for name in smaller_origins(*self._spans(key, math.log(asked), mode)):
            whose = f"{key[0]} of the {name} table" if name else f"jobgauge's {key[0]}"
            out.append(f"{whose} was measured at {self.origins[key][name].size_span()}, "
                       f"below it")
        return out

    def _spans(self, key, size, mode) -> tuple:
        """The arguments of :func:`runtable.nearest_origin` and
        :func:`runtable.smaller_origins` for the job ``key`` asked at the log input
        ``size`` in the run ``mode``: its origins' log input spans, the size, the mode and
        the origins' run modes (None where an origin's runs know none)."""
        ranges = self.origins.get(key, {})
        spans = {name: (math.log(r.smallest_bytes), math.log(r.largest_bytes))
                 for name, r in ranges.items() if r.smallest_bytes}
        modes = {name: r.modes for name, r in ranges.items()}
        return spans, size, mode, modes if all(modes.values()) else None

    def _note(self, workload, framework, label, input_bytes, instance_type, count,
              vcpus, source="", mode="") -> str | None:
        workload, framework = str(workload), str(framework)
        label = "" if label is None or (isinstance(label, float) and math.isnan(label)) \
            else str(label).strip()
        instance_type = str(instance_type)
        input_bytes = None if input_bytes is None or not math.isfinite(float(input_bytes)) \
            else float(input_bytes)
        reasons = []
        measured, origin = self._origin_range((workload, framework), str(source), label,
                                              input_bytes, mode)
        if measured is None:
            others = sorted(f for w, f in self.workloads if w == workload)
            reasons.append(f"{workload} was measured only with {', '.join(others)}, not "
                           f"{framework}" if others else f"{workload} was never measured")
            if input_bytes is not None and self.everything.largest_bytes:
                everything = self.everything
                if input_bytes > SIZE_FACTOR * everything.largest_bytes:
                    reasons.append(f"its input ({human_size(input_bytes)}) is above every "
                                   f"measured input (largest "
                                   f"{human_size(everything.largest_bytes)})")
            measured, name = self.everything, None
        else:
            several = len(self.origins.get((workload, framework), ())) > 1
            name = f"{workload} of the {origin} table" if origin and several else workload
            reason = measured.size_reason(name, label, input_bytes)
            if reason:
                reasons.append(reason)
            if reason and several:      # another origin ran it at this size, elsewhere
                reasons += self._elsewhere((workload, framework), origin, label, input_bytes,
                                           mode)
            if several and not (source and origin == str(source)):     # between two
                # origins' runs, the smaller ones' below it (a named table's is its own)
                reasons += self._below((workload, framework), label, input_bytes, mode)
        nodes = float(count) if count is not None and math.isfinite(float(count)) else 1.0
        cores = float(vcpus) * nodes if vcpus is not None else math.nan
        where = instance_type if nodes == 1 else f"{nodes:g} x {instance_type}"
        reason = measured.cores_reason(name, cores, where)
        if reason:
            reasons.append(reason)
        types = self.origin_types.get(origin, self.instance_types) \
            if name is not None else self.instance_types
        if instance_type not in types:
            known = sorted(types)
            listed = ", ".join(known[:LISTED_TYPES]) + (
                f" and {len(known) - LISTED_TYPES} more" if len(known) > LISTED_TYPES else "")
            reasons.append(f"{instance_type} was never measured (measured: {listed})")
        else:
            fewest, most = types[instance_type]
            if not fewest / SLOTS_FACTOR <= nodes <= SLOTS_FACTOR * most:
                span = f"{fewest:g}" if fewest == most else f"{fewest:g}-{most:g}"
                reasons.append(f"{instance_type} was measured on {span} nodes, not {nodes:g}")
        return PREFIX + "; ".join(reasons) if reasons else None


def _modes(X) -> list:
    """Per row of ``X``, its run mode (``models.features.run_modes``), or ``""`` for a
    frame without instance types."""
    from jobgauge.models.features import run_modes

    if "instance_type" not in X.columns:
        return [""] * len(X)
    return [str(mode) for mode in run_modes(X)]


def _node_counts(frame) -> dict:
    """{instance type: (fewest, most) nodes} of the runs of ``frame``."""
    import pandas as pd

    count = pd.to_numeric(frame["instance_count"], errors="coerce").fillna(1)
    nodes = count.groupby(frame["instance_type"].astype(str)).agg(["min", "max"])
    return {str(t): (float(r["min"]), float(r["max"])) for t, r in nodes.iterrows()}


def _origin_node_counts(frame) -> dict:
    """{origin: :func:`_node_counts`} of the runs of ``frame``, per origin
    (``runtable.public_origins``)."""
    from jobgauge.runtable import public_origins

    found = public_origins(frame)
    return {str(name): _node_counts(frame[found == name]) for name in set(found)}


def _widened(types: dict, more: dict) -> dict:
    """:func:`_node_counts` ``types`` with ``more``'s types and node counts too."""
    out = dict(types)
    for name, (fewest, most) in more.items():
        known = out.get(name, (fewest, most))
        out[name] = (min(known[0], fewest), max(known[1], most))
    return out


def _sized_configurations(X, *, unsized: bool = False) -> list:
    """Per row of ``X``: its configuration as a key, (workload, framework, size label,
    instance type, node count, settings): the settings that differ from the engine's
    defaults as the knob table reads them (:func:`jobgauge.knobs.changed_settings`:
    ``100m`` and ``104857600`` are one, 200 shuffle partitions set is none set, and a
    wrapped run's ``spark.eventLog.dir`` is no setting), with the master, a standalone
    one without its port (:func:`jobgauge.runtable.config_json`); None for a row
    without a size label, whose size the key cannot name, unless ``unsized`` (its label
    is then "")."""
    out = []
    for workload, framework, label, instance_type, count, config in zip(
            _column(X, "workload", ""), _column(X, "framework", "spark"),
            _column(X, "datasize", ""), _column(X, "instance_type", ""),
            _column(X, "instance_count", 1), _column(X, "config", None)):
        label = label.strip() if isinstance(label, str) else ""
        if not label and not unsized:
            out.append(None)
            continue
        nodes = f"{float(count):g}" if count is not None else "1"
        out.append((str(workload), str(framework), label, str(instance_type), nodes,
                    _settings_key(config)))
    return out


def _tally(frame) -> dict:
    """Per configuration of the run table ``frame`` (:func:`_sized_configurations`; rows
    without a size label left out): (failed runs, runs); {} without ``completed``."""
    tally: dict = {}
    if "completed" not in frame.columns:
        return tally
    for key, completed in zip(_sized_configurations(frame), frame["completed"]):
        if key is not None:
            failed, runs = tally.get(key, (0, 0))
            tally[key] = (failed + (not bool(completed)), runs + 1)
    return tally


def _rekeyed(key: tuple) -> tuple:
    """A failure key of an older record (every setting as given, as JSON) in
    :func:`_sized_configurations`'s form."""
    import json

    *job, settings = key
    return (*job, _settings_key(json.loads(settings)))


def _settings_key(config) -> str:
    """The settings part of a configuration's key: those that differ from the engine's
    defaults (:func:`jobgauge.knobs.changed_settings`) and the master, as
    :func:`jobgauge.runtable.config_json` writes them."""
    from jobgauge.knobs import changed_settings
    from jobgauge.runtable import config_json

    config = {str(k): v for k, v in (config or {}).items()}
    kept = dict(changed_settings(config))
    if config.get("spark.master") is not None:
        kept["spark.master"] = config["spark.master"]
    return config_json(kept)


def _column(X, name, default) -> list:
    """A column of the frame ``X`` as a list (``default`` in every row without it)."""
    return X[name].tolist() if name in X.columns else [default] * len(X)


def _input_column(X) -> list:
    """The ``input_bytes`` of each row of ``X`` as numbers (NaN where not one)."""
    import pandas as pd

    return pd.to_numeric(X["input_bytes"], errors="coerce").tolist() \
        if "input_bytes" in X.columns else [None] * len(X)


__all__ = ["PREFIX", "SIZE_FACTOR", "SLOTS_FACTOR", "MeasuredRange", "WorkloadRange",
           "UnknownSize"]
