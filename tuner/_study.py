"""The one search loop every mode shares: ``study.ask()`` -> configuration ->
measurement -> ``study.tell()``.

A measurement may be a model's prediction (back at once), a run-table
look-up (replay) or a real run that finishes minutes later; the loop does not
care.  For runs started elsewhere, :func:`ask_configuration` and
:func:`tell_measurement` are the two halves of one trial.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable

from jobgauge.errors import TuneError, UsageError
from jobgauge.tuner._errors import InfeasibleTuning, InvalidConfiguration
from jobgauge.tuner._objective import Goal, Objective
from jobgauge.tuner._space import level_of
from jobgauge.tuner._storage import get_storage


@dataclass
class TrialResult:
    """One finished trial in the user's terms."""

    number: int
    config: dict
    state: str                         # "complete", "pruned" (invalid) or "fail"
    values: list | None = None         # the goal's values (seconds and/or dollars)
    runtime_s: float | None = None
    cost_usd: float | None = None
    feasible: bool = True
    censored: bool = False
    runtime_interval_s: list | None = None
    cost_interval_usd: list | None = None
    note: str | None = None
    measured_note: str | None = None   # a model's answer far outside what was measured

    @property
    def value(self):
        if self.values is None:
            return None
        return self.values[0] if len(self.values) == 1 else list(self.values)

    def to_dict(self) -> dict:
        out = {"config": dict(self.config), "value": self.value}
        for name in ("number", "state", "runtime_s", "cost_usd", "feasible", "censored",
                     "runtime_interval_s", "cost_interval_usd", "note", "measured_note"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


@dataclass
class TuneResult:
    """A finished study: every trial in the order run, the best, and the Pareto front."""

    study: object
    goal: Goal
    trials: list[TrialResult]
    best: TrialResult | None
    pareto: list[TrialResult] = field(default_factory=list)
    importance: dict | None = None
    confirmation: list | None = None   # the leaders' re-measurements (confirm runs)
    applications: list | None = None   # measured runs: the applications the runner started

    def to_dict(self) -> dict:
        out = {"trials": [t.to_dict() for t in self.trials],
               "best": self.best.to_dict() if self.best else None}
        if self.goal.objective == "both":
            out["pareto"] = [t.to_dict() for t in self.pareto]
        if self.confirmation is not None:
            out["confirmation"] = self.confirmation
        return out


def create_study(goal: Goal, sampler, *, storage=None, study_name: str | None = None,
                 load_if_exists: bool = False):
    """An Optuna study for ``goal`` with the given sampler and storage (see ``get_storage``)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.create_study(directions=goal.directions, sampler=sampler,
                                    storage=get_storage(storage), study_name=study_name,
                                    load_if_exists=load_if_exists)
    except optuna.exceptions.DuplicatedStudyError:
        raise UsageError(f"a study named {study_name!r} already exists there; pick another "
                         "--study-name") from None
    study.set_user_attr("objective", goal.objective)
    if goal.deadline_s is not None:
        study.set_user_attr("deadline_s", goal.deadline_s)
    if goal.budget_usd is not None:
        study.set_user_attr("budget_usd", goal.budget_usd)
    return study


def ask_configuration(study, objective: Objective):
    """Start a trial: ``(trial, config)``, or ``(trial, None)`` when the
    proposal was invalid (the trial is then already told as pruned)."""
    import optuna

    trial = study.ask()
    try:
        return trial, objective.propose(trial)
    except InvalidConfiguration as exc:
        if objective.on_invalid == "raise":
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            raise
        trial.set_user_attr("invalid", str(exc))
        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        return trial, None


def tell_measurement(study, objective: Objective, trial, measurement):
    """Finish a trial with what its run (or prediction, or look-up) measured."""
    values = objective.score(trial, measurement)
    return study.tell(trial, values)


def run_trials(study, objective: Objective, n_trials: int, *,
               stop: Callable | None = None, progress: bool = False) -> TuneResult:
    """Ask, evaluate and tell ``n_trials`` times (``stop(frozen_trial) -> bool``
    ends early), then summarise the study."""
    if n_trials < 1:
        raise TuneError(f"the number of trials must be >= 1, got {n_trials}")
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n_trials, desc="trials", file=sys.stderr, leave=False)
    try:
        for _ in range(n_trials):
            trial, config = ask_configuration(study, objective)
            if bar is not None:
                bar.update(1)
            if config is None:
                continue
            frozen = tell_measurement(study, objective, trial, objective.evaluate(config))
            if stop is not None and stop(frozen):
                break
    finally:
        if bar is not None:
            bar.close()
    return summarise(study, objective.goal)


def _trial_result(frozen) -> TrialResult:
    from optuna.study._constrained_optimization import _get_constraints_from_system_attrs
    from optuna.trial import TrialState

    constraints = _get_constraints_from_system_attrs(frozen.system_attrs)
    state = {TrialState.COMPLETE: "complete", TrialState.PRUNED: "pruned"}.get(
        frozen.state, "fail")
    attrs = frozen.user_attrs
    return TrialResult(
        number=frozen.number, config=dict(attrs.get("config") or frozen.params), state=state,
        values=list(frozen.values) if frozen.values is not None else None,
        runtime_s=attrs.get("runtime_s"), cost_usd=attrs.get("cost_usd"),
        feasible=all(c <= 0 for c in constraints.values()),
        censored=bool(attrs.get("censored", False)),
        runtime_interval_s=attrs.get("runtime_interval_s"),
        cost_interval_usd=attrs.get("cost_interval_usd"),
        note=attrs.get("invalid"), measured_note=attrs.get("measured_note"))


def summarise(study, goal: Goal) -> TuneResult:
    """The study as a TuneResult; fails loudly when no trial is usable."""
    trials = [_trial_result(t) for t in study.get_trials(deepcopy=False)]
    complete = [t for t in trials if t.state == "complete"]
    if not complete:
        reasons = {t.note for t in trials if t.note}
        raise TuneError("no trial could be evaluated" +
                        (": " + "; ".join(sorted(reasons)[:3]) if reasons else ""))
    feasible = [t for t in complete if t.feasible]
    if not feasible:
        raise InfeasibleTuning(_infeasible_message(goal, complete))
    pareto = []
    if goal.objective == "both":
        front = {t.number for t in study.best_trials}
        pareto = [t for t in feasible if t.number in front]
        best = _knee(pareto or feasible)
    else:
        best = min(feasible, key=lambda t: t.values[0])
    return TuneResult(study=study, goal=goal, trials=trials, best=best, pareto=pareto)


def _knee(front):
    """The Pareto trial closest to the ideal point (each value over its minimum)."""
    lows = [min(t.values[i] for t in front) for i in range(2)]
    return min(front, key=lambda t: sum(v / low if low > 0 else v
                                        for v, low in zip(t.values, lows)))


def _infeasible_message(goal: Goal, complete) -> str:
    parts = []
    finished = [t for t in complete if not t.censored]
    if goal.deadline_s is not None:
        fastest = min((t.runtime_s for t in finished if t.runtime_s is not None),
                      default=None)
        parts.append(f"the deadline of {goal.deadline_s:g} s"
                     + (f" (fastest: {fastest:.1f} s)" if fastest is not None else ""))
    if goal.budget_usd is not None:
        cheapest = min((t.cost_usd for t in finished if t.cost_usd is not None), default=None)
        parts.append(f"the budget of ${goal.budget_usd:g}"
                     + (f" (cheapest: ${cheapest:.4f})" if cheapest is not None else ""))
    if not parts:
        parts.append("completion (every run was censored)")
    return (f"none of the {len(complete)} configurations tried meets "
            + " and ".join(parts))


def level_importance(study, *, seed: int = 0, levels=None) -> dict | None:
    """How much each level (query, job, instance) mattered: fANOVA importance of
    the study's parameters, summed per level.  None when there is too little to tell."""
    import optuna
    from optuna.importance import FanovaImportanceEvaluator, get_param_importances

    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    varied = {name for t in complete for name in t.params
              if len({repr(u.params.get(name)) for u in complete}) > 1}
    if len(complete) < 4 or not varied:
        return None
    levels = levels or {}
    method = "fANOVA (optuna FanovaImportanceEvaluator), summed per level"
    if all(len({t.values[i] for t in complete}) == 1 for i in range(len(study.directions))):
        names = sorted(varied)
        by_level = {}
        for name in names:
            by_level[levels.get(name) or level_of(name)] = 0.0
        return {"by_level": by_level, "by_knob": {n: 0.0 for n in names},
                "method": method + "; every trial had the same value: no knob mattered"}
    out = {"by_level": {}, "by_knob": {}}
    for index in range(len(study.directions)):
        importances = get_param_importances(
            study, evaluator=FanovaImportanceEvaluator(seed=seed),
            target=(lambda t, i=index: t.values[i]) if len(study.directions) > 1 else None)
        for name, value in importances.items():
            share = float(value) / len(study.directions)
            out["by_knob"][name] = out["by_knob"].get(name, 0.0) + share
            level = levels.get(name) or level_of(name)
            out["by_level"][level] = out["by_level"].get(level, 0.0) + share
    out["by_knob"] = dict(sorted(out["by_knob"].items(), key=lambda kv: -kv[1]))
    out["by_level"] = {k: round(v, 4) for k, v in sorted(out["by_level"].items(),
                                                          key=lambda kv: -kv[1])}
    out["by_knob"] = {k: round(v, 4) for k, v in out["by_knob"].items()}
    out["method"] = method
    return out
