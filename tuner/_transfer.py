"""What other workloads say about a configuration (transfer, as Scout and Karasu do).

``history_prior`` scores every candidate by how close to its own cheapest
(or fastest) configuration each *other* job ran on the same nodes:

1. the history run table is split into jobs (workload, framework, size,
   job parameters); within a job, repeated runs of a node configuration
   (instance type and count) are reduced to their median value;
2. a configuration whose runs did not all complete is censored: it counts
   as at least the job's worst completed value;
3. each job's values become log ratios to its best completed one
   (0 = that job's optimum), so big and small jobs weigh the same;
4. a candidate's score is the weighted median of those ratios over the jobs
   that ran its node configuration (NaN when none did).

Weights come from the job's profile: history jobs of the same framework and
size label and of similar input bytes count more, ``exp(profile_weight *
similarity)`` with similarity = [same framework] + [same size label] -
|log10 of the input-bytes ratio|; ``profile_weight=0`` weighs them equally.
A node configuration that fewer history jobs ran than ``min_coverage`` x the
best-covered one gets no score: one job's optimum is not evidence enough.

Rows of the tuned workload are never read: ``history_frame`` drops them.
"""

from __future__ import annotations

import json
import math

import numpy as np

from jobgauge.tuner._objective import cost_usd

JOB_KEYS = ("workload", "framework", "datasize", "config_json")


def history_frame(frame, workload: str):
    """The history rows, less every row of the tuned ``workload``."""
    if frame is None or len(frame) == 0:
        return None
    kept = frame[frame["workload"].astype(str) != str(workload)]
    return kept.reset_index(drop=True) if len(kept) else None


def _row_values(frame, objective):
    runtime = frame["runtime_s"].astype(float).to_numpy()
    if objective == "time":
        return runtime
    price = frame["hourly_price_usd"].astype(float).to_numpy()
    count = frame["instance_count"].astype(float).to_numpy()
    cost = np.array([cost_usd(r, c, p) for r, c, p in zip(runtime, count, price)])
    if objective == "cost":
        return cost
    return np.sqrt(runtime * cost)   # both: geometric mean of the two, on the log scale a sum


def job_ratios(history, objective: str = "cost", by=("instance_type", "instance_count")) -> dict:
    """{job key: {setting: log ratio to the job's best}}, a setting being the
    values of the ``by`` columns (default: the node configuration)."""
    frame = history.copy()
    frame["_value"] = _row_values(frame, objective)
    frame = frame[np.isfinite(frame["_value"]) & (frame["_value"] > 0)]
    if frame.empty:
        return {}
    keys = list(JOB_KEYS) + list(by)
    per = frame.groupby(keys, sort=True).agg(value=("_value", "median"),
                                             completed=("completed", "all")).reset_index()
    per["log"] = np.log(per["value"].astype(float))
    done = per["log"].where(per["completed"].astype(bool))
    by_job = done.groupby([per[k] for k in JOB_KEYS], sort=False)
    per["best"] = by_job.transform("min")
    per["worst"] = by_job.transform("max")
    per = per[per["best"].notna()]
    logged = np.where(per["completed"].astype(bool), per["log"],
                      np.maximum(per["log"], per["worst"]))
    out = {}
    width = len(JOB_KEYS)
    for row, ratio in zip(per[keys].itertuples(index=False, name=None), logged - per["best"]):
        setting = tuple(row[width:])
        if tuple(by) == ("instance_type", "instance_count"):
            setting = (str(setting[0]), int(setting[1]))
        out.setdefault(tuple(row[:width]), {})[setting if len(setting) > 1 else setting[0]] = \
            float(ratio)
    return out


def history_settings(history, names, objective: str = "time", *, limit: int = 2,
                     min_coverage: float = 0.5) -> list[dict]:
    """The knob settings (values of ``names`` in config_json) that ran closest
    to their own job's best across the history jobs: the best ``limit`` by
    median log ratio, among settings run by at least ``min_coverage`` x the
    most jobs any setting was run by.  Empty without such runs."""
    if history is None or len(history) == 0:
        return []
    names = list(names)
    settings = [json.dumps({n: c[n] for n in names if n in c}, sort_keys=True)
                for c in history["config"]]
    rest = [json.dumps({k: v for k, v in c.items() if k not in names}, sort_keys=True)
            for c in history["config"]]       # the job is its parameters less the knobs
    frame = history.assign(_setting=settings, config_json=rest)
    frame = frame[frame["_setting"] != "{}"]
    if frame.empty:
        return []
    collected = {}
    for ratios in job_ratios(frame, objective, by=("_setting",)).values():
        for setting, ratio in ratios.items():
            collected.setdefault(setting, []).append(ratio)
    most = max(len(v) for v in collected.values())
    ranked = sorted((float(np.median(v)), setting) for setting, v in collected.items()
                    if len(v) >= min_coverage * most)
    return [json.loads(setting) for _, setting in ranked[:limit]]


def _similarity(job, profile) -> float:
    if not profile:
        return 0.0
    workload, framework, datasize, _ = job
    score = 0.0
    if profile.get("framework") and framework == profile["framework"]:
        score += 1.0
    if profile.get("datasize") and datasize == profile["datasize"]:
        score += 1.0
    return score


def _weighted_median(values, weights) -> float:
    order = np.argsort(values)
    values, weights = np.asarray(values)[order], np.asarray(weights)[order]
    cumulative = np.cumsum(weights)
    half = 0.5 * cumulative[-1]
    index = int(np.searchsorted(cumulative, half))
    if index + 1 < len(values) and math.isclose(cumulative[index], half):
        return float(0.5 * (values[index] + values[index + 1]))   # even split: the midpoint
    return float(values[index])


def history_prior(history, candidates, objective: str = "cost", *, profile=None,
                  profile_weight: float = 0.0, min_coverage: float = 0.0):
    """One score per candidate (lower is better, NaN where no history job
    ran its node configuration), or None without history."""
    if history is None or len(history) == 0 or "instance_count" not in candidates.names:
        return None
    ratios = job_ratios(history, objective)
    if not ratios:
        return None
    inputs = {}
    if "input_bytes" in history:
        grouped = history.groupby(list(JOB_KEYS))["input_bytes"].median()
        inputs = {key: value for key, value in grouped.items()}
    target_bytes = (profile or {}).get("input_bytes")
    weights = {}
    for job in ratios:
        similarity = _similarity(job, profile)
        job_bytes = inputs.get(job)
        if target_bytes and job_bytes and target_bytes > 0 and job_bytes > 0 \
                and math.isfinite(target_bytes) and math.isfinite(job_bytes):
            similarity -= abs(math.log10(job_bytes / target_bytes))
        weights[job] = math.exp(profile_weight * similarity)
    scores = np.full(len(candidates), np.nan)
    coverage = np.zeros(len(candidates))
    for index, config in enumerate(candidates.configs):
        key = (str(config.get("instance_type")), int(config["instance_count"]))
        values, job_weights = [], []
        for job, table in ratios.items():
            if key in table:
                values.append(table[key])
                job_weights.append(weights[job])
        if values:
            scores[index] = _weighted_median(values, job_weights)
            coverage[index] = sum(job_weights)
    if min_coverage > 0 and np.isfinite(scores).any():
        scores[coverage < min_coverage * coverage.max()] = np.nan
    return scores
