"""Samplers: which configuration a trial tries next.  Every sampler takes a ``seed``.

For open (continuous) spaces -- model-guided tuning of Spark knobs -- the
Optuna samplers are used as they are (``make_sampler("tpe" | "gp" |
"random" | "nsga2", seed=...)``).

For a finite set of configurations (replay: only what a run table measured;
measured runs over a catalog) three samplers propose *whole* configurations
through Optuna's relative sampling, so a trial never holds a combination
outside the set and never repeats one:

- :class:`RandomCandidateSampler`: uniform over the configurations not tried
  yet (random search without replacement);
- :class:`SnappedSampler`: any Optuna sampler (plain GP-BO: ``GPSampler``)
  proposes in the set's own parameters; the proposal is moved to the nearest
  configuration not tried yet (categoricals count 1 per differing value,
  numbers by their share of the range);
- :class:`TransferSampler` (ours): the first trial(s) from what other
  workloads say (lowest history score, see ``_transfer``), then a Gaussian
  process on the configurations' numeric features (``CandidateSet.features``)
  fit to log values, choosing the lowest lower-confidence bound.
"""

from __future__ import annotations

import math

import numpy as np
import optuna

from jobgauge.errors import TuneError, UsageError

SAMPLERS = ("auto", "transfer", "tpe", "gp", "random", "nsga2")


def make_sampler(name: str = "tpe", *, seed: int | None = None, candidates=None, prior=None,
                 multi_objective: bool = False, n_startup_trials: int = 3, **options):
    """A seeded sampler by name.  With ``candidates`` (a CandidateSet) the
    finite-set samplers are used: ``transfer`` (and ``auto``; ``options`` go to
    TransferSampler), ``random``, ``gp`` (GPSampler snapped to the set),
    ``tpe`` (multivariate TPESampler snapped)."""
    if options and name not in ("auto", "transfer"):
        raise UsageError(f"sampler {name!r} takes no options ({', '.join(options)})")
    if name not in SAMPLERS:
        raise UsageError(f"unknown sampler {name!r}; expected one of {', '.join(SAMPLERS)}")
    if candidates is not None:
        if name in ("auto", "transfer"):
            return TransferSampler(candidates, prior=prior, seed=seed, **options)
        if name == "random":
            return RandomCandidateSampler(candidates, seed=seed)
        if name == "tpe":   # joint proposals need multivariate TPE (independent TPE proposes none)
            inner = optuna.samplers.TPESampler(seed=seed, multivariate=True,
                                               n_startup_trials=n_startup_trials)
        else:
            inner = _open_sampler(name, seed=seed, multi_objective=multi_objective,
                                  n_startup_trials=n_startup_trials)
        return SnappedSampler(inner, candidates, seed=seed, n_startup_trials=n_startup_trials)
    if name == "transfer":
        raise UsageError("the transfer sampler needs a finite set of configurations "
                         "(replay or an instance catalog); use tpe, gp or random")
    if name == "auto":
        name = "nsga2" if multi_objective else "tpe"
    return _open_sampler(name, seed=seed, multi_objective=multi_objective,
                         n_startup_trials=n_startup_trials)


def _open_sampler(name, *, seed, multi_objective, n_startup_trials):
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=max(n_startup_trials, 1))
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=n_startup_trials)
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    raise UsageError(f"no open-space sampler called {name!r}")


class _FiniteSetSampler(optuna.samplers.BaseSampler):
    """Relative sampling over a CandidateSet: one whole configuration per trial."""

    def _setup(self, candidates, seed):
        self.candidates = candidates
        self.seed = seed
        self._rng = np.random.RandomState(seed)

    def reseed_rng(self) -> None:
        self._rng = np.random.RandomState()

    def infer_relative_search_space(self, study, trial):
        return self.candidates.distributions()

    def sample_relative(self, study, trial, search_space):
        if not search_space:
            return {}
        observed, tried = self._history(study, trial.number)
        free = [i for i in range(len(self.candidates)) if i not in tried]
        if not free:
            raise TuneError(f"every one of the {len(self.candidates)} configurations has been "
                            "tried; ask for fewer trials")
        index = self._choose(study, trial, observed, free)
        return dict(self.candidates.configs[index])

    def sample_independent(self, study, trial, param_name, param_distribution):
        raise TuneError(f"{type(self).__name__} proposes whole configurations; the parameter "
                        f"{param_name!r} is not one of its set's ({', '.join(self.candidates.names)})")

    def _history(self, study, number):
        """Completed candidates as {index: (value or None, censored)}, and every index
        tried.  Several objectives are scalarised for the trial ``number`` (ParEGO)."""
        from optuna.trial import TrialState

        observed, tried = {}, set()
        for frozen in study.get_trials(deepcopy=False):
            index = self.candidates.index(frozen.params) if frozen.params else None
            if index is None:
                continue
            tried.add(index)
            if frozen.state == TrialState.COMPLETE:
                censored = bool(frozen.user_attrs.get("censored", False))
                observed[index] = (list(frozen.values), censored)
            elif frozen.state in (TrialState.FAIL, TrialState.PRUNED):
                observed[index] = (None, True)       # could not run: a bad configuration
        return self._scalarise(observed, number), tried

    def _scalarise(self, observed, number):
        """One value per observation: the objective itself, or for several the
        ParEGO augmented Chebyshev scalarisation of their logs (each scaled to
        [0, 1] over the observations) with weights drawn for this trial."""
        done = {i: v for i, (v, _) in observed.items() if v is not None}
        if not done or len(next(iter(done.values()))) == 1:
            return {i: (None if v is None else v[0], c) for i, (v, c) in observed.items()}
        logs = {i: np.log(np.maximum(np.asarray(v, dtype=float), 1e-12))
                for i, v in done.items()}
        matrix = np.array(list(logs.values()))
        low, span = matrix.min(axis=0), np.maximum(np.ptp(matrix, axis=0), 1e-12)
        weights = np.random.RandomState((self.seed or 0) + 7919 * number).dirichlet(
            np.ones(matrix.shape[1]))
        out = {}
        for index, (values, censored) in observed.items():
            if values is None:
                out[index] = (None, censored)
                continue
            scaled = weights * (logs[index] - low) / span
            out[index] = (math.exp(float(np.max(scaled) + 0.05 * np.sum(scaled))), censored)
        return out

    def _pick(self, free, scores):
        """The free candidate of lowest score; ties broken by the seeded generator."""
        scores = np.asarray(scores, dtype=float)
        order = self._rng.permutation(len(free))
        best = order[np.argmin(scores[order])]
        return free[int(best)]


def _log_values(observed):
    """Observed values on a log scale; censored and failed ones raised to at
    least the worst completed one (a configuration that did not finish is bad)."""
    completed = [math.log(max(v, 1e-12)) for v, censored in observed.values()
                 if v is not None and not censored]
    worst = max(completed) if completed else None
    out = {}
    for index, (value, censored) in observed.items():
        if value is None:
            out[index] = worst if worst is not None else 0.0
        else:
            logged = math.log(max(value, 1e-12))
            out[index] = max(logged, worst) if censored and worst is not None else logged
    return out


def gp_posterior(train_x, train_y, test_x, *, lengthscale, signal_std, noise_std):
    """Mean and standard deviation of a zero-mean GP with a squared-exponential kernel."""
    def kernel(a, b):
        distance = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
        return signal_std ** 2 * np.exp(-0.5 * distance / lengthscale ** 2)

    gram = kernel(train_x, train_x) + noise_std ** 2 * np.eye(len(train_x))
    cross = kernel(test_x, train_x)
    factor = np.linalg.cholesky(gram)
    alpha = np.linalg.solve(factor.T, np.linalg.solve(factor, train_y))
    mean = cross @ alpha
    v = np.linalg.solve(factor, cross.T)
    variance = np.maximum(signal_std ** 2 - (v ** 2).sum(axis=0), 1e-12)
    return mean, np.sqrt(variance)


class RandomCandidateSampler(_FiniteSetSampler):
    """Random search over a finite set, without replacement; seeded."""

    def __init__(self, candidates, *, seed=None):
        self._setup(candidates, seed)

    def _choose(self, study, trial, observed, free):
        return free[int(self._rng.randint(len(free)))]


class SnappedSampler(_FiniteSetSampler):
    """An Optuna sampler's proposal moved to the nearest configuration not tried yet.

    The first ``n_startup_trials`` are random (without replacement); then
    ``inner.sample_relative`` proposes over the set's own parameters.
    """

    def __init__(self, inner, candidates, *, seed=None, n_startup_trials=3):
        self._setup(candidates, seed)
        self.inner = inner
        self.n_startup_trials = int(n_startup_trials)

    def reseed_rng(self) -> None:
        self._rng = np.random.RandomState()
        self.inner.reseed_rng()

    def _choose(self, study, trial, observed, free):
        if len(observed) < self.n_startup_trials:
            return free[int(self._rng.randint(len(free)))]
        distributions = self.candidates.distributions()
        raw = self.inner.sample_relative(study, trial, distributions)
        if not raw:
            return free[int(self._rng.randint(len(free)))]
        distances = [self._distance(raw, self.candidates.configs[i], distributions)
                     for i in free]
        return self._pick(free, distances)

    @staticmethod
    def _distance(raw, config, distributions):
        total = 0.0
        for name, distribution in distributions.items():
            if name not in raw:
                continue
            a, b = raw[name], config[name]
            if isinstance(distribution, optuna.distributions.CategoricalDistribution):
                total += float(a != b)
                continue
            low, high = float(distribution.low), float(distribution.high)
            if high <= low:
                continue
            if getattr(distribution, "log", False):
                total += abs(math.log(a) - math.log(b)) / (math.log(high) - math.log(low))
            else:
                total += abs(float(a) - float(b)) / (high - low)
        return total


class TransferSampler(_FiniteSetSampler):
    """Transfer from other workloads, then a GP on configuration features.

    ``prior``: one score per candidate (lower is better, NaN unknown), e.g.
    from ``history_prior``; the first ``n_prior_trials`` trials take the
    best-scored untried candidates (random ones without a prior).  Then a GP
    (squared-exponential kernel with ``lengthscale`` on standardised
    features, ``signal_std`` and ``noise_std`` on the log value, mean = mean of
    the observed logs) picks the lowest mean - ``kappa`` x sd.  Censored and
    failed trials count as at least the worst completed value.
    """

    def __init__(self, candidates, *, prior=None, seed=None, n_prior_trials=1, kappa=0.5,
                 lengthscale=2.0, signal_std=1.0, noise_std=0.05, prior_mean=0.0):
        self._setup(candidates, seed)
        self.prior_mean = float(prior_mean)
        self.prior = None if prior is None else np.asarray(prior, dtype=float)
        if self.prior is not None and len(self.prior) != len(candidates):
            raise UsageError("the prior needs one score per candidate")
        self.n_prior_trials = int(n_prior_trials)
        self.kappa = float(kappa)
        self.lengthscale = float(lengthscale)
        self.signal_std = float(signal_std)
        self.noise_std = float(noise_std)

    def _choose(self, study, trial, observed, free):
        features = self.candidates.features()
        if len(observed) < self.n_prior_trials or not observed or features.shape[1] == 0:
            return self._from_prior(free)
        logs = _log_values(observed)
        seen = list(logs)
        y = np.array([logs[i] for i in seen])
        trend = np.zeros(len(self.candidates))
        if self.prior_mean and self.prior is not None and np.isfinite(self.prior).any():
            filled = np.where(np.isfinite(self.prior), self.prior,
                              np.nanmedian(self.prior))
            trend = self.prior_mean * filled
        base = trend[seen]
        offset = float(np.mean(y - base))
        mean, std = gp_posterior(features[seen], y - base - offset, features[free],
                                 lengthscale=self.lengthscale, signal_std=self.signal_std,
                                 noise_std=self.noise_std)
        return self._pick(free, mean + offset + trend[free] - self.kappa * std)

    def _from_prior(self, free):
        if self.prior is not None:
            scores = self.prior[free]
            if np.isfinite(scores).any():
                return self._pick(free, np.where(np.isfinite(scores), scores, np.inf))
        return free[int(self._rng.randint(len(free)))]
