"""Job classes with readable names, learned from profiles or from how runs scale.

:class:`JobClassifier` groups workloads into ``n_classes`` clusters (k-means)
and names each cluster by its most distinctive trait:

- ``basis="profile"``: from the ``profile`` column (``Profile.summary()``):
  CPU time per input MB, shuffle bytes per input byte, spill and GC shares,
  output selectivity.  Names: ``CPU-bound``, ``shuffle-heavy``,
  ``memory-bound``, ``I/O-bound``, ``output-heavy``.  A row's own profile
  decides its class, so unseen workloads with a profile get one.
- ``basis="scaling"``: from the runs themselves, per workload, a least-squares
  fit of log runtime on log total vCPUs, log memory per vCPU and log input
  size.  Names: ``scales with cores``, ``partly parallel``, ``does not scale``,
  ``memory-sensitive``, ``grows with data``.  Unseen workloads are ``unknown``.
- ``basis="auto"``: profile when the training frame has profiles of at least
  two workloads, else scaling.

Runtime models use it with ``with_classes=True`` (class one-hot columns join
the features).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from jobgauge.errors import ModelError
from jobgauge.models._params import Interval, Options, RandomState, store_params, \
    validate_params
from jobgauge.models.features import (
    RunFeatures,
    _as_summary,
    check_fitted,
    check_frame,
    profile_features,
)

UNKNOWN = "unknown"
_PROFILE_TRAITS = ("log_cpu_ms_per_mb", "shuffle_ratio", "spill_ratio", "gc_share",
                   "output_selectivity")
# (trait index, sign, name): a centroid is named by its largest signed z-score.
_PROFILE_NAMES = ((0, 1, "CPU-bound"), (1, 1, "shuffle-heavy"), (2, 1, "memory-bound"),
                  (3, 1, "memory-bound"), (0, -1, "I/O-bound"), (4, 1, "output-heavy"))
_SCALING_TRAITS = ("cores_exponent", "memory_exponent", "size_exponent")


def _scaling_name(centroid) -> str:
    cores, memory, size = centroid
    if memory <= -0.2:
        return "memory-sensitive"
    if cores <= -0.6:
        return "scales with cores"
    if cores >= -0.25:
        return "grows with data" if size >= 0.7 else "does not scale"
    return "partly parallel"


def _column_medians(rows) -> np.ndarray:
    """Median of each column over its non-NaN values (NaN where a column has none)."""
    out = np.full(rows.shape[1], np.nan)
    for column in range(rows.shape[1]):
        values = rows[:, column][~np.isnan(rows[:, column])]
        if len(values):
            out[column] = np.median(values)
    return out


class JobClassifier(ClassifierMixin, BaseEstimator):
    """Readable job classes (see the module docstring); ``predict`` gives class names."""

    _parameter_constraints: ClassVar[dict] = {
        "n_classes": [Interval(int, 1, None)],
        "basis": [Options({"auto", "profile", "scaling"})],
        "random_state": [RandomState()],
    }

    def __init__(self, *, n_classes=4, basis="auto", random_state=0):
        store_params(self, locals())

    # ---------------------------------------------------------------- fit
    def fit(self, X, y=None):
        """Learn classes from a run table (``y``: runtimes, default ``X.runtime_s``)."""
        validate_params(self)
        check_frame(X, owner="JobClassifier")
        X = X.reset_index(drop=True)
        basis = self.basis
        if basis == "auto":
            basis = "profile" if self._profiled_workloads(X) >= 2 else "scaling"
        if basis == "profile":
            if self._profiled_workloads(X) == 0:
                raise ModelError("JobClassifier(basis='profile') needs a profile column with "
                                 "Profile.summary() dicts")
            vectors, workloads = self._profile_vectors(X)
        else:
            vectors, workloads = self._scaling_vectors(X, y)
        self.basis_ = basis
        self._cluster(vectors, workloads)
        return self

    @staticmethod
    def _profiled_workloads(X) -> int:
        if "profile" not in X.columns:
            return 0
        seen = {w for w, p in zip(X["workload"], X["profile"]) if _as_summary(p)}
        return len(seen)

    @staticmethod
    def _profile_rows(X):
        raw = X["profile"].tolist() if "profile" in X.columns else [None] * len(X)
        rows = np.full((len(X), len(_PROFILE_TRAITS)), np.nan)
        for i, value in enumerate(raw):
            derived = profile_features(_as_summary(value))
            rows[i] = [np.nan if derived[t] is None else derived[t] for t in _PROFILE_TRAITS]
        return rows

    def _profile_vectors(self, X):
        rows = self._profile_rows(X)
        workloads = X["workload"].astype(str).to_numpy()
        names, vectors = [], []
        for name in sorted(set(workloads)):
            own = rows[(workloads == name) & ~np.isnan(rows).all(1)]
            if len(own):
                names.append(name)
                vectors.append(_column_medians(own))
        vectors = np.array(vectors)
        fill = _column_medians(vectors)
        self.trait_fill_ = np.where(np.isnan(fill), 0.0, fill)
        vectors = np.where(np.isnan(vectors), self.trait_fill_, vectors)
        return vectors, names

    def _scaling_vectors(self, X, y):
        runtime = np.asarray(X["runtime_s"] if y is None else y, dtype=float)
        matrix = RunFeatures(workload_onehot=False, framework_onehot=False, family_onehot=False,
                             knobs=False, profile=False).fit(X)
        names = list(matrix.get_feature_names_out())
        values = matrix.transform(X)
        design = values[:, [names.index("log_total_vcpus"), names.index("memory_per_vcpu"),
                            names.index("log_input_bytes")]]
        design[:, 1] = np.log(design[:, 1])
        done = X["completed"].fillna(True).astype(bool).to_numpy() if "completed" in X.columns \
            else np.ones(len(X), dtype=bool)
        workloads = X["workload"].astype(str).to_numpy()
        log_runtime = np.log(runtime)
        result, vectors = [], []
        for name in sorted(set(workloads)):
            rows = (workloads == name) & done & np.isfinite(log_runtime)
            if rows.sum() < 4:
                continue
            block = design[rows] - design[rows].mean(0)
            target = log_runtime[rows] - log_runtime[rows].mean()
            varied = block.std(0) > 1e-6
            coefficients = np.zeros(3)
            if varied.any():
                solution, *_ = np.linalg.lstsq(block[:, varied], target, rcond=None)
                coefficients[varied] = solution
            result.append(name)
            vectors.append(coefficients)
        if not result:
            raise ModelError("JobClassifier needs at least 4 finished runs of one workload "
                             "(or profiles) to learn classes")
        self.trait_fill_ = np.zeros(3)
        return np.array(vectors), result

    def _cluster(self, vectors, workloads):
        from sklearn.cluster import KMeans

        k = min(self.n_classes, len(np.unique(vectors, axis=0)))
        self.trait_mean_ = vectors.mean(0)
        self.trait_scale_ = np.where(vectors.std(0) > 1e-9, vectors.std(0), 1.0)
        scaled = (vectors - self.trait_mean_) / self.trait_scale_
        if self.basis_ == "scaling":
            scaled = vectors  # exponents are already comparable; keep their meaning
        kmeans = KMeans(n_clusters=k, n_init=10, random_state=self.random_state).fit(scaled)
        self.kmeans_ = kmeans
        centroids = kmeans.cluster_centers_
        names = []
        for centroid in centroids:
            if self.basis_ == "scaling":
                names.append(_scaling_name(centroid))
            else:
                scores = [(sign * centroid[index], label) for index, sign, label in _PROFILE_NAMES]
                names.append(max(scores)[1])
        # make names unique: the second "CPU-bound" cluster becomes "CPU-bound 2"
        unique, counts = [], {}
        for name in names:
            counts[name] = counts.get(name, 0) + 1
            unique.append(name if counts[name] == 1 else f"{name} {counts[name]}")
        self.cluster_names_ = np.array(unique, dtype=object)
        self.classes_ = np.array(sorted(set(unique)), dtype=object)
        labels = kmeans.labels_
        self.workload_classes_ = {w: str(self.cluster_names_[c]) for w, c in zip(workloads, labels)}
        self.centroids_ = centroids

    # ------------------------------------------------------------ predict
    def _check_fitted(self):
        check_fitted(self, "classes_")

    def predict(self, X):
        """Class name per row (``unknown`` for an unseen workload without a profile)."""
        self._check_fitted()
        check_frame(X, owner="JobClassifier")
        X = X.reset_index(drop=True)
        workloads = X["workload"].astype(str).tolist()
        result = np.array([self.workload_classes_.get(w, UNKNOWN) for w in workloads],
                          dtype=object)
        if self.basis_ == "profile":
            rows = self._profile_rows(X)
            has = ~np.isnan(rows).all(1)
            if has.any():
                filled = np.where(np.isnan(rows[has]), self.trait_fill_, rows[has])
                scaled = (filled - self.trait_mean_) / self.trait_scale_
                result[has] = self.cluster_names_[self.kmeans_.predict(scaled)]
        return result

    def class_matrix(self, X) -> np.ndarray:
        """One-hot matrix [rows, len(classes_)] of the predicted classes (unknown: all zero)."""
        labels = self.predict(X)
        return np.column_stack([labels == name for name in self.classes_]).astype(float)

    def score(self, X, y=None, sample_weight=None):  # pragma: no cover - no true labels exist
        raise ModelError("JobClassifier has no true labels to score against; evaluate it by "
                         "the runtime error of a model with_classes=True")
