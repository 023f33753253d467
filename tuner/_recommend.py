"""A recommendation of settings for one job, and why: the settings the model-guided
search found, or Spark's defaults kept when the model has no evidence that a
change helps.

``jobgauge-submit``, ``jobgauge tune`` (model-guided) and the web form tune with
:func:`jobgauge.tuner.tune_with_model`; :func:`recommend` reads its result:

- a change is only a setting whose tuned value differs from the engine default,
  and that the model's training runs varied (its metrics' ``settings_varied``;
  a model without that list is trusted on every setting): a model that never saw
  a setting change cannot know what changing it does;
- the changes must make the job at least ``min_gain`` (default 1 %) faster than
  the defaults by the model's own prediction.

Otherwise the recommendation keeps Spark's defaults and says so
(:data:`KEPT_DEFAULTS`), rather than writing the defaults out as if tuned.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jobgauge.tuner._space import format_setting

__all__ = ["KEPT_DEFAULTS", "MIN_GAIN", "Recommendation", "recommend"]

KEPT_DEFAULTS = "keeping Spark's defaults: no measured evidence that a change helps"
#: Choices of the cluster, not settings of a run: their evidence is the instance types seen.
CLUSTER_CHOICES = ("instance_type", "instance_count")
#: The predicted speed-up a change must bring to be recommended.
MIN_GAIN = 0.01


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


def _same(name, value, default) -> bool:
    return default is not None and format_setting(name, value) == format_setting(name, default)


def recommend(result, space, evaluate, *, metrics: dict | None = None,
              min_gain: float = MIN_GAIN) -> Recommendation:
    """The recommendation of a model-guided ``result`` over ``space``.

    ``evaluate(config) -> Measurement`` is the model's prediction
    (``model_evaluator``): it prices the defaults and the kept changes.
    ``metrics``: the model's training summary (for ``settings_varied``)."""
    defaults = space.defaults()
    baseline = float(evaluate(dict(defaults)).runtime_s)
    if result.best is None:
        return Recommendation({}, baseline, baseline, False, f"{KEPT_DEFAULTS} (no trial "
                                                             "finished)")
    varied = (metrics or {}).get("settings_varied")
    changes, unseen = {}, []
    for name, value in result.best.config.items():
        if name in defaults and _same(name, value, defaults[name]):
            continue
        if varied is not None and name not in varied and name not in CLUSTER_CHOICES:
            unseen.append(name)
            continue
        changes[name] = value
    if not changes:
        blind = varied is not None and not any(
            name in varied for name in space.names if name not in CLUSTER_CHOICES)
        if blind:
            why = (f" (the runs the model learned from never changed any of the "
                   f"{len(space)} settings searched)")
        elif unseen:
            why = f" (the runs the model learned from never changed {', '.join(sorted(unseen))})"
        else:
            why = " (the best settings found are the defaults)"
        return Recommendation({}, baseline, baseline, False, KEPT_DEFAULTS + why)
    predicted = float(evaluate({**defaults, **changes}).runtime_s)
    gain = 1.0 - predicted / baseline if baseline > 0 else 0.0
    if gain < min_gain:
        return Recommendation({}, baseline, baseline, False,
                              f"{KEPT_DEFAULTS} (predicted {predicted:.1f} s with the best "
                              f"settings found, {baseline:.1f} s with the defaults)")
    settings = {name: format_setting(name, value) for name, value in changes.items()}
    return Recommendation(settings, predicted, baseline, True,
                          f"predicted {predicted:.1f} s with {len(settings)} changed settings, "
                          f"{baseline:.1f} s with Spark's defaults ({100 * gain:.0f} % faster)")
