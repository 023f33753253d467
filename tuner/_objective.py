"""Objectives: what a trial measures (time, cost or both) and the limits it must keep.

An :class:`Objective` joins a search space, an ``evaluate(config) ->
Measurement`` function (a model's prediction, a real run, or a run-table
look-up) and a :class:`Goal`.  It works with any Optuna trial, so it is
unit-tested with ``optuna.trial.FixedTrial`` and no study::

    objective = Objective(space, evaluate, Goal("cost", deadline_s=600))
    cost = objective(optuna.trial.FixedTrial({"spark.sql.shuffle.partitions": 64}))

Deadline and budget are Optuna constraints, set with ``trial.set_constraint``
(Optuna 5's replacement of ``constraints_func``): the value ``runtime_s -
deadline_s`` (``cost_usd - budget_usd``) is feasible when <= 0.  An infeasible
trial keeps its true value -- no penalty is added -- so the study's best trial
and Pareto front are chosen among feasible trials only, and the
constraint-aware samplers (TPE, GP, NSGA-II) learn where the feasible region
is.  A run that did not complete (``completed=false``: time limit or failure)
is censored -- its runtime is a lower bound -- and gets the constraint
``completed = 1``, so it can never be reported as best.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

from jobgauge.errors import UsageError
from jobgauge.job import cost_usd
from jobgauge.tuner._errors import InvalidConfiguration

OBJECTIVES = ("time", "cost", "both")


def _jsonable(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "item"):          # numpy scalars
        return value.item()
    return str(value)


def _known(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


@dataclass
class Measurement:
    """What one trial found: a runtime (measured, looked up or predicted) and
    what it cost.  ``completed=False`` means the runtime is a lower bound."""

    runtime_s: float
    instance_count: float = 1
    hourly_price_usd: float | None = None
    completed: bool = True
    runtime_interval: tuple[float, float] | None = None
    record: dict = field(default_factory=dict)

    @property
    def cost_usd(self) -> float | None:
        if not _known(self.hourly_price_usd):
            return None
        return cost_usd(self.runtime_s, self.instance_count, self.hourly_price_usd)

    @property
    def cost_interval(self) -> tuple[float, float] | None:
        if self.runtime_interval is None or self.cost_usd is None:
            return None
        low, high = self.runtime_interval
        return (cost_usd(low, self.instance_count, self.hourly_price_usd),
                cost_usd(high, self.instance_count, self.hourly_price_usd))


@dataclass(frozen=True)
class Outcome:
    """What an option came to, as a goal reads it: a runtime, its cost (None:
    unknown, or free) and whether it completed."""

    runtime_s: float
    cost_usd: float | None = None
    completed: bool = True


@dataclass(frozen=True)
class Goal:
    """What to minimise (``time``, ``cost`` or ``both``) and the limits."""

    objective: str = "time"
    deadline_s: float | None = None
    budget_usd: float | None = None

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise UsageError(f"The 'objective' parameter of Goal must be one of "
                             f"{', '.join(OBJECTIVES)}. Got {self.objective!r} instead.")
        for name in ("deadline_s", "budget_usd"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise UsageError(f"The {name!r} parameter of Goal must be a number > 0. "
                                 f"Got {value!r} instead.")

    @classmethod
    def for_limits(cls, deadline_s: float | None = None,
                   budget_usd: float | None = None) -> "Goal":
        """The goal a deadline and a budget ask for: with a deadline, the cheapest run
        that meets it (within the budget, if any); with only a budget, the fastest
        within it; with neither, the fastest."""
        return cls("cost" if deadline_s is not None else "time", deadline_s=deadline_s,
                   budget_usd=budget_usd)

    def choose(self, measurements) -> tuple[int, bool]:
        """(index of the best of ``measurements``, whether it keeps the limits).

        ``measurements``: :class:`Measurement` or :class:`Outcome` objects (a cost of
        None counts as free).  The best is the lowest value (ties: the lower runtime,
        then cost) among those that keep the deadline and the budget; when none
        does, the closest one: the fastest when there is a deadline, else the
        cheapest."""
        measurements = list(measurements)
        if not measurements:
            raise UsageError("there is nothing to choose from")

        def cost(m):
            return m.cost_usd if m.cost_usd is not None else 0.0

        measurements = [Outcome(float(m.runtime_s), cost(m), bool(m.completed))
                        for m in measurements]
        ranked = [i for i, m in enumerate(measurements)
                  if all(v <= 0 for v in self.constraints(m).values())]
        if ranked:
            best = min(ranked, key=lambda i: (*self.values(measurements[i]),
                                              measurements[i].runtime_s,
                                              measurements[i].cost_usd))
            return best, True
        if self.deadline_s is not None:
            def order(i):
                return measurements[i].runtime_s, measurements[i].cost_usd
        else:
            def order(i):
                return measurements[i].cost_usd, measurements[i].runtime_s
        return min(range(len(measurements)), key=order), False

    @property
    def value_names(self) -> list[str]:
        return {"time": ["runtime_s"], "cost": ["cost_usd"],
                "both": ["runtime_s", "cost_usd"]}[self.objective]

    @property
    def directions(self) -> list[str]:
        return ["minimize"] * len(self.value_names)

    @property
    def needs_price(self) -> bool:
        return self.objective != "time" or self.budget_usd is not None

    def values(self, measurement: Measurement) -> list[float]:
        cost = measurement.cost_usd
        if self.needs_price and cost is None:
            raise UsageError("the cost objective and the budget need an hourly price per node; "
                             "pick an instance type from the catalog (--instance-type) or give "
                             "hourly_price_usd in the run table")
        named = {"runtime_s": float(measurement.runtime_s), "cost_usd": cost}
        return [named[name] for name in self.value_names]

    def constraints(self, measurement: Measurement, *, censoring: bool = False) -> dict[str, float]:
        """Constraint values (<= 0 is feasible) for this measurement.  With
        ``censoring`` (evaluations that may not complete: runs, replays) every
        trial carries ``completed`` (0 done, 1 censored), so all trials of a
        study have the same constraints, as Optuna's samplers require."""
        out = {}
        if self.deadline_s is not None:
            out["deadline"] = float(measurement.runtime_s) - self.deadline_s
        if self.budget_usd is not None:
            out["budget"] = float(measurement.cost_usd) - self.budget_usd
        if censoring or not measurement.completed:
            out["completed"] = 0.0 if measurement.completed else 1.0
        return out


class Objective:
    """Search space + evaluation + goal: the function a study minimises.

    ``propose(trial)`` turns a trial into a checked configuration,
    ``evaluate(config)`` measures it (now, or later for a real run), and
    ``score(trial, measurement)`` records the result on the trial and returns
    the value(s) to ``study.tell``.  ``censoring=True`` (runs and replays,
    which may not complete) gives every trial the ``completed`` constraint.  ``check(config)`` raises
    :class:`InvalidConfiguration` for a configuration that cannot run; called
    directly, the objective then raises ``optuna.TrialPruned`` (``on_invalid=
    "prune"``) or the error itself (``"raise"``).
    """

    def __init__(self, space, evaluate: Callable[[dict], Measurement], goal: Goal | None = None,
                 *, fixed: Mapping | None = None, check: Callable[[dict], None] | None = None,
                 on_invalid: str = "prune", censoring: bool = False):
        if on_invalid not in ("prune", "raise"):
            raise UsageError(f"The 'on_invalid' parameter of Objective must be 'prune' or "
                             f"'raise'. Got {on_invalid!r} instead.")
        self.space = space
        self.evaluate = evaluate
        self.goal = goal or Goal()
        self.fixed = dict(fixed or {})
        self.check = check
        self.on_invalid = on_invalid
        self.censoring = bool(censoring)

    def propose(self, trial) -> dict:
        config = self.space.suggest(trial, self.fixed)
        trial.set_user_attr("config", {k: _jsonable(v) for k, v in config.items()})
        if self.check is not None:
            self.check(config)
        return config

    def score(self, trial, measurement: Measurement):
        values = self.goal.values(measurement)
        trial.set_user_attr("runtime_s", float(measurement.runtime_s))
        if measurement.cost_usd is not None:
            trial.set_user_attr("cost_usd", float(measurement.cost_usd))
        trial.set_user_attr("censored", not measurement.completed)
        if measurement.runtime_interval is not None:
            trial.set_user_attr("runtime_interval_s", [float(v) for v in
                                                       measurement.runtime_interval])
        if measurement.cost_interval is not None:
            trial.set_user_attr("cost_interval_usd", [float(v) for v in
                                                      measurement.cost_interval])
        for key in ("run_id", "status", "failure_note", "measured_note"):
            if measurement.record.get(key) is not None:
                trial.set_user_attr(key, str(measurement.record[key]))
        for name, value in self.goal.constraints(measurement,
                                                 censoring=self.censoring).items():
            trial.set_constraint(name, value)
        return values[0] if len(values) == 1 else values

    def __call__(self, trial):
        try:
            config = self.propose(trial)
        except InvalidConfiguration as exc:
            if self.on_invalid == "raise":
                raise
            import optuna

            raise optuna.TrialPruned(str(exc)) from None
        return self.score(trial, self.evaluate(config))
