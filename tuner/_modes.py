"""The three ways to evaluate a trial, on the one search loop of ``_study``.

- model-guided (:func:`tune_with_model`): a runtime model is the objective;
  each trial is a prediction, back at once with its interval;
- measured (:func:`tune_measured`): each trial is a real run through an
  injected ``run_trial(config) -> (runtime_s, record)``, recorded in the
  store and told to the study;
- replay (:func:`tune_replay`): each trial looks up what a run table measured.

All of them share :func:`tune_space`: a search space, an ``evaluate``
function, a goal, a sampler and a storage, joined by ``run_trials``.  Two
levels of knobs (query/session and job/instance) are tuned jointly (one
study over both) or hierarchically (job and instance level first with the
session knobs at their defaults, then the session knobs on the best job
configuration); the result says which level mattered.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from typing import Callable, Mapping

from jobgauge.errors import ModelError, TuneError, UsageError
from jobgauge.job import Cluster, Job
from jobgauge.tuner._candidates import CandidateSet
from jobgauge.tuner._errors import InvalidConfiguration
from jobgauge.tuner._objective import Goal, Measurement, Objective
from jobgauge.tuner._replay import ReplayTable
from jobgauge.tuner._samplers import make_sampler
from jobgauge.tuner._space import SearchSpace, check_configuration, format_setting, knob
from jobgauge.tuner._study import create_study, level_importance, run_trials, summarise
from jobgauge.tuner._transfer import history_frame, history_prior, history_settings

STRATEGIES = ("joint", "hierarchical")


class CandidateSpace:
    """A CandidateSet seen as a search space: a trial may only hold one of its configurations."""

    def __init__(self, candidates: CandidateSet):
        self.candidates = candidates

    @property
    def names(self):
        return list(self.candidates.names)

    def levels(self):
        return self.candidates.levels()

    def suggest(self, trial, fixed=None) -> dict:
        from optuna.distributions import IntDistribution

        fixed = dict(fixed or {})
        config = {}
        for name, distribution in self.candidates.distributions().items():
            if name in fixed:
                config[name] = fixed[name]
            elif isinstance(distribution, IntDistribution):
                config[name] = trial.suggest_int(name, distribution.low, distribution.high)
            else:
                config[name] = trial.suggest_categorical(name, distribution.choices)
        if self.candidates.index(config) is None:
            raise InvalidConfiguration(f"configuration not in the measured set: {config}")
        return config


# --------------------------------------------------------------------- replay

def tune_replay(frame, workload: str, *, framework=None, datasize=None, where=None,
                objective: str = "cost", n_trials: int = 10, seed: int | None = 0,
                history=None, sampler: str = "transfer", deadline_s=None, budget_usd=None,
                storage=None, study_name=None, stop: Callable | None = None,
                profile_weight: float = 1.0, min_coverage: float = 0.5, importance: bool = False,
                sampler_options: Mapping | None = None, progress=False):
    """Tune ``workload`` against the runs of ``frame`` (a read_run_tables frame).

    ``history``: run-table frame of other workloads (rows of ``workload`` in it
    are dropped); ``profile_weight`` and ``min_coverage`` shape its prior
    (see ``history_prior``), ``sampler_options`` the TransferSampler (``kappa``,
    ``lengthscale``, ...).  ``n_trials`` is capped at the number of measured
    configurations.  Returns a TuneResult whose trial values are seconds
    (``time``) or dollars (``cost``).
    """
    goal = Goal(objective, deadline_s=deadline_s, budget_usd=budget_usd)
    table = ReplayTable(frame, workload, framework=framework, datasize=datasize, where=where)
    history = history_frame(history, workload)
    prior = history_prior(history, table.candidates, objective, profile=table.profile,
                          profile_weight=profile_weight, min_coverage=min_coverage)
    chosen = make_sampler(sampler, seed=seed, candidates=table.candidates, prior=prior,
                          multi_objective=goal.objective == "both", **dict(sampler_options or {}))
    study = create_study(goal, chosen, storage=storage, study_name=study_name)
    study.set_user_attr("mode", "replay")
    study.set_user_attr("workload", table.workload)
    space = CandidateSpace(table.candidates)
    result = run_trials(study, Objective(space, table.measurement, goal, censoring=True),
                        min(int(n_trials), len(table)), stop=stop, progress=progress)
    if importance:
        result.importance = level_importance(study, seed=seed or 0, levels=space.levels())
    return result


# ---------------------------------------------------------------- model-guided

def as_job(job) -> Job:
    """A :class:`~jobgauge.job.Job`, or the job of a run-table row (a mapping)."""
    return job if isinstance(job, Job) else Job.from_row(job)


def model_frame(job, config: Mapping, catalog=None):
    """The one-row frame the model reads for ``config`` on ``job`` (a Job, or a
    run-table row describing it).  ``instance_type`` and ``instance_count`` in
    ``config`` move the job to those nodes of the catalog; the other entries are
    its settings (on this machine, ``spark.master`` and ``spark.driver.memory``
    change the machine as local runs record it)."""
    job = as_job(job)
    cluster = job.cluster
    if "instance_type" in config:
        cluster = Cluster.from_catalog(config["instance_type"], cluster.instance_count,
                                       catalog=_need_catalog(catalog))
    if "instance_count" in config:
        cluster = cluster.with_count(int(config["instance_count"]))
    knobs = {k: v for k, v in config.items() if k not in ("instance_type", "instance_count")}
    return job.on(cluster).with_settings(knobs).frame()


def _need_catalog(catalog):
    if catalog is None:
        raise UsageError("tuning the instance type needs an instance catalog")
    return catalog


def _node(catalog, name):
    return _need_catalog(catalog).get(name)


def _first(values) -> float:
    try:
        value = values[0]
    except (TypeError, IndexError, KeyError):
        value = values
    value = float(value.item() if hasattr(value, "item") else value)
    if not math.isfinite(value):
        raise ModelError(f"the model predicted a non-finite runtime ({value})")
    return value


def model_evaluator(model, job, *, catalog=None, coverage: float = 0.8, factor: float = 1.0,
                    own_failures=None):
    """``evaluate(config) -> Measurement`` from a model's prediction and interval
    for ``config`` on ``job`` (a Job, or a run-table row describing it), times
    ``factor`` (a job's own runs against the model, ``models._default.history_factor``)
    and never below the nodes' read floor (``models.predict_frame``).  A configuration
    that failed in measured runs, or that the model says is at risk of failing (its
    ``failure_note``; ``own_failures``: the job's runs that failed in the store,
    ``models._default.job_failures``), is not completed: its time is a lower bound,
    never the best."""
    from jobgauge.models import predict_frame

    if not callable(getattr(model, "predict", None)):
        raise ModelError(f"{type(model).__name__} has no predict(frame) method")
    bounded = callable(getattr(model, "predict_interval", None))
    job = as_job(job)

    def evaluate(config):
        frame = model_frame(job, config, catalog)
        failure = outside = None
        if bounded:      # one pass, never below the nodes' read floor (predict_frame)
            answer = predict_frame(model, frame, coverage=coverage, factor=factor,
                                   own_failures=own_failures)
            runtime = max(_first(answer["predicted_runtime_s"].to_numpy()), 0.0)
            bounds = tuple(max(_first(answer[column].to_numpy()), 0.0)
                           for column in ("predicted_low_s", "predicted_high_s"))
            failure = answer["failure_note"].iloc[0]
            outside = answer["measured_note"].iloc[0]   # far outside what was measured
        else:
            runtime, bounds = max(_first(model.predict(frame)), 0.0) * factor, None
        row = frame.iloc[0]
        price = row["hourly_price_usd"]
        count = row["instance_count"]
        return Measurement(runtime_s=runtime,
                           instance_count=1 if count is None or math.isnan(count) else count,
                           hourly_price_usd=None if price is None or
                           (isinstance(price, float) and math.isnan(price)) else float(price),
                           completed=failure is None, runtime_interval=bounds,
                           record={key: note for key, note in (("failure_note", failure),
                                                                ("measured_note", outside))
                                   if note})
    return evaluate


def config_check(base_row: Mapping, catalog=None):
    """``check(config)``: the validity constraints on the nodes the config runs on."""
    def check(config):
        instance = None
        if "instance_type" in config:
            instance = _node(catalog, config["instance_type"])
        elif catalog is not None and base_row.get("instance_type") in catalog:
            instance = catalog.get(base_row["instance_type"])
        count = config.get("instance_count", base_row.get("instance_count"))
        check_configuration(config, instance=instance,
                            instance_count=None if count is None else int(count),
                            driver_memory_mb=driver_memory_mb)

    own = (base_row.get("config") or {}).get("spark.driver.memory")
    driver_memory_mb = None if own is None else knob("spark.driver.memory").parse(own)
    return check


def tune_with_model(model, space: SearchSpace, job, *, goal: Goal | None = None,
                    n_trials: int = 50, seed: int | None = 0, sampler: str = "auto",
                    catalog=None, storage=None, study_name=None, strategy: str = "joint",
                    coverage: float = 0.8, importance: bool = True, progress: bool = False,
                    own_failures=None):
    """Search ``space`` for ``job`` (a Job, or a run-table row describing it) with
    the model's predicted runtime (or cost) as the objective.  ``importance=False``
    skips the closing fANOVA importance (a forest fit); ``own_failures``: as
    :func:`model_evaluator` takes them."""
    job = as_job(job)
    evaluate = model_evaluator(model, job, catalog=catalog, coverage=coverage,
                               own_failures=own_failures)
    return tune_space(space, evaluate, goal or Goal(), n_trials=n_trials, seed=seed,
                      sampler=sampler, storage=storage, study_name=study_name,
                      strategy=strategy, check=config_check(job.row(), catalog),
                      mode="model", importance=importance, progress=progress)


# -------------------------------------------------------------------- measured

def _settings(config: Mapping) -> dict[str, str]:
    return {str(k): format_setting(k, v) for k, v in config.items()}


def measured_evaluator(run_trial: Callable, *, store=None, base_row: Mapping | None = None):
    """``evaluate(config) -> Measurement`` from a real run.

    ``run_trial(config) -> (runtime_s, record)``; ``record`` holds the run's
    run-table fields (and ``status``).  A run that did not complete (time
    limit, failure) is censored.  With a ``store`` (``add_run(run, settings)``)
    every run is recorded there.
    """
    def evaluate(config):
        runtime_s, record = run_trial(dict(config))
        record = {**dict(base_row or {}), **dict(record or {})}
        status = record.get("status", "succeeded")
        completed = bool(record.get("completed", True)) and status == "succeeded"
        record["completed"] = completed
        record.setdefault("runtime_s", runtime_s)
        if store is not None:
            store.add_run(record, _settings(config))
        count = record.get("instance_count") or 1
        price = record.get("hourly_price_usd")
        if isinstance(price, float) and math.isnan(price):
            price = None
        return Measurement(runtime_s=float(runtime_s), instance_count=count,
                           hourly_price_usd=price, completed=completed, record=record)
    return evaluate


def tune_measured(run_trial: Callable, space, *, goal: Goal | None = None, n_trials: int = 5,
                  seed: int | None = 0, sampler: str = "auto", store=None, storage=None,
                  study_name=None, history=None, workload=None, profile=None,
                  base_row: Mapping | None = None, catalog=None, strategy: str = "joint",
                  confirm: int = 0, progress: bool = False):
    """Tune with real runs.  ``space`` is a SearchSpace (knobs) or a
    CandidateSet (configurations over a catalog).  ``history`` (run tables of
    other workloads; rows of ``workload`` are dropped) picks the first trials:
    for a CandidateSet the best-scored configurations, as in replay; for knobs,
    after the engine defaults, the settings that ran closest to their own
    job's best in the history (``history_settings``); with
    ``strategy="hierarchical"`` their job-level part in the first phase and
    their query-level part in the second.  ``confirm`` runs (after the
    ``n_trials``) re-measure the leading configurations (see ``tune_space``)
    so one lucky run does not pick the recommendation."""
    goal = goal or Goal()
    _check_confirm(confirm, goal)          # before any run
    evaluate = measured_evaluator(run_trial, store=store, base_row=base_row)
    if isinstance(space, CandidateSet):
        history = history_frame(history, workload) if workload else history
        prior = history_prior(history, space, goal.objective, profile=profile,
                              profile_weight=1.0, min_coverage=0.5)
        chosen = make_sampler(sampler, seed=seed, candidates=space, prior=prior,
                              multi_objective=goal.objective == "both")
        study = create_study(goal, chosen, storage=storage, study_name=study_name)
        study.set_user_attr("mode", "measured")
        candidates = CandidateSpace(space)
        result = run_trials(study, Objective(candidates, evaluate, goal, censoring=True),
                            min(int(n_trials), len(space)), progress=progress)
        return confirm_leaders(study, candidates, evaluate, goal, result, confirm,
                               censoring=True, progress=progress)
    history = history_frame(history, workload) if workload else history
    starts = []
    for setting in history_settings(history, space.names, goal.objective):
        try:
            setting = space.parse(setting)
        except UsageError:
            continue                  # a value this space cannot hold: not a start
        if space.contains(setting):
            starts.append(setting)
    return tune_space(space, evaluate, goal, n_trials=n_trials, seed=seed, sampler=sampler,
                      storage=storage, study_name=study_name, strategy=strategy,
                      check=config_check(base_row or {}, catalog), mode="measured",
                      censoring=True, starts=starts, confirm=confirm, progress=progress)


# ------------------------------------------------------------ shared, two-level

def tune_space(space: SearchSpace, evaluate: Callable, goal: Goal, *, n_trials: int,
               seed=0, sampler="auto", storage=None, study_name=None, strategy="joint",
               check=None, mode="model", censoring=False, starts=(), confirm=0,
               importance=True, progress=False):
    """One study over ``space``: the engine defaults are the first trial (the
    baseline), then the ``starts`` (configurations to try early), then the
    sampler's proposals.  ``strategy="hierarchical"``
    spends half the trials on the job and instance levels (session knobs at
    their defaults) and the rest on the session knobs, the job level fixed
    at its best; each phase tries its part of the ``starts`` first.
    ``confirm`` more runs then re-measure the leading configurations
    (:func:`confirm_leaders`).  ``importance`` (joint strategy): the fANOVA
    importance of the levels in ``result.importance``."""
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}; expected joint or hierarchical")
    if n_trials < 1:
        raise TuneError(f"the number of trials must be >= 1, got {n_trials}")
    _check_confirm(confirm, goal)
    chosen = make_sampler(sampler, seed=seed, multi_objective=goal.objective == "both")
    study = create_study(goal, chosen, storage=storage, study_name=study_name)
    study.set_user_attr("mode", mode)
    study.set_user_attr("strategy", strategy)
    defaults = space.defaults()
    levels = space.levels()
    upper = [n for n in space.names if levels[n] in ("job", "instance")]
    lower = [n for n in space.names if levels[n] == "query"]
    if strategy == "hierarchical" and upper and lower and n_trials >= 2:
        first = max(1, n_trials // 2)
        job_space = space.subset(names=upper)
        query_defaults = {n: defaults[n] for n in lower if n in defaults}
        upper_defaults = {n: defaults[n] for n in upper if n in defaults}
        for params in _distinct([upper_defaults, *({**upper_defaults, **_part(s, upper)}
                                                   for s in starts)])[:first]:
            study.enqueue_trial(params)       # the defaults, then what did well elsewhere
        run_trials(study, Objective(job_space, evaluate, goal, fixed=query_defaults,
                                    check=check, censoring=censoring), first, progress=progress)
        phase_one = summarise(study, goal)
        best_job = {n: phase_one.best.config[n] for n in upper}
        lower_starts = [{**query_defaults, **_part(s, lower)} for s in starts]
        for params in [p for p in _distinct(lower_starts) if p != query_defaults][
                :n_trials - first]:
            study.enqueue_trial(params)
        run_trials(study, Objective(space.subset(names=lower), evaluate, goal, fixed=best_job,
                                    check=check, censoring=censoring), n_trials - first,
                   progress=progress)
        result = summarise(study, goal)
        result.importance = _gain_split(result, first, goal)
        return confirm_leaders(study, space, evaluate, goal, result, confirm, check=check,
                               censoring=censoring, progress=progress)
    study.enqueue_trial(defaults)
    for start in starts:              # transfer: settings that did well for other jobs
        study.enqueue_trial({**defaults, **start})
    result = run_trials(study, Objective(space, evaluate, goal, check=check,
                                         censoring=censoring), n_trials, progress=progress)
    if importance:
        result.importance = level_importance(study, seed=seed or 0, levels=levels)
    return confirm_leaders(study, space, evaluate, goal, result, confirm, check=check,
                           censoring=censoring, progress=progress)


# ------------------------------------------------------------------ confirm

def _check_confirm(confirm, goal: Goal) -> None:
    if int(confirm) < 0:
        raise UsageError(f"confirm runs must be >= 0, got {confirm}")
    if confirm and goal.objective == "both":
        raise UsageError("confirm runs pick one best configuration; they need the time or "
                         "the cost objective, not both")


def confirm_leaders(study, space, evaluate, goal: Goal, result, runs: int, *, check=None,
                    censoring=False, progress=False):
    """Re-measure the leading configurations ``runs`` times in all, and
    recommend the one with the lowest median over its runs.

    One measured run is noisy (20-30 % on a shared machine), so the trial with
    the lowest single value is often a lucky run.  The leaders are the
    distinct configurations with the lowest values, one re-run each, best
    first; the first trial's configuration (the engine defaults, the baseline)
    is always among them when ``runs >= 2``.  Only re-measured configurations
    may be recommended; one with a run that did not complete (or broke the
    deadline or budget) is not, unless every leader has one.  The best trial
    reported carries the median over its configuration's runs, and
    ``result.confirmation`` lists every leader's runs.  (The callers check
    ``runs`` with ``_check_confirm`` before the first run.)"""
    if not runs:
        return result
    usable = sorted((t for t in result.trials if t.state == "complete" and t.feasible),
                    key=lambda t: t.values[0])
    leaders = _distinct(dict(t.config) for t in usable)[:runs]
    first = next((t for t in result.trials if t.number == 0), None)
    if runs >= 2 and first is not None and first.state == "complete" and \
            first.config not in leaders:
        leaders = leaders[:runs - 1] + [dict(first.config)]
    for config in leaders:
        run_trials(study, Objective(space, evaluate, goal, fixed=config, check=check,
                                    censoring=censoring), 1, progress=progress)
    final = summarise(study, goal)
    final.importance = result.importance
    summary = []
    for config in leaders:
        trials = [t for t in final.trials if t.state == "complete" and t.config == config]
        values = [t.values[0] for t in trials]
        summary.append({"config": dict(config), "trials": [t.number for t in trials],
                        "values": values, "median": statistics.median(values) if values
                        else None,
                        "all_completed": all(t.feasible and not t.censored for t in trials),
                        "_trials": trials})
    measured = [s for s in summary if s["median"] is not None]
    eligible = [s for s in measured if s["all_completed"]] or measured
    if eligible:
        chosen = min(eligible, key=lambda s: s["median"])
        trials = chosen["_trials"]
        best = min(trials, key=lambda t: abs(t.values[0] - chosen["median"]))
        runtimes = [t.runtime_s for t in trials if t.runtime_s is not None]
        costs = [t.cost_usd for t in trials if t.cost_usd is not None]
        final.best = replace(
            best, values=[chosen["median"]],
            runtime_s=statistics.median(runtimes) if runtimes else best.runtime_s,
            cost_usd=statistics.median(costs) if costs else best.cost_usd,
            note=f"median of {len(trials)} runs (trials "
                 + ", ".join(str(t.number) for t in trials) + ")")
    final.confirmation = [{k: v for k, v in s.items() if k != "_trials"} for s in summary]
    return final


def _part(config: Mapping, names) -> dict:
    return {n: config[n] for n in names if n in config}


def _distinct(configs) -> list[dict]:
    out = []
    for config in configs:
        if config not in out:
            out.append(config)
    return out


def _scalar(trial, goal):
    values = trial.values
    return values[0] if len(values) == 1 else math.sqrt(values[0] * values[1])


def _gain_split(result, first: int, goal: Goal) -> dict | None:
    """How much of the gain over the defaults each phase (level) brought."""
    usable = [t for t in result.trials if t.state == "complete" and t.feasible]
    baseline = next((t for t in usable if t.number == 0), None)
    if baseline is None:
        return None
    best_one = min((_scalar(t, goal) for t in usable if t.number < first), default=None)
    best_two = min((_scalar(t, goal) for t in usable), default=None)
    start = _scalar(baseline, goal)
    job_gain = max(start - best_one, 0.0)
    query_gain = max(best_one - best_two, 0.0)
    total = job_gain + query_gain
    return {"method": "gain split of hierarchical tuning (job/instance level first, "
                      "then query level)",
            "baseline": start, "after_job_level": best_one, "after_query_level": best_two,
            "by_level": {"job": round(job_gain / total, 4) if total else 0.0,
                         "query": round(query_gain / total, 4) if total else 0.0}}
