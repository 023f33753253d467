"""Replay: a trial looks up what a run table measured for its configuration.

The search space is exactly the set of configurations the table holds for
the workload (instance type, instance count and the keys of
``config_json``), so a configuration nobody measured is never proposed.

Repeated runs of one configuration count as their **median** runtime (robust
to one slow outlier, and a value that was really measured when the count is
odd).  If any run of a configuration did not complete (``completed=false``:
it hit the time limit or failed) the configuration is censored: its runtime
is *at least* that median, and the trial is marked infeasible, so it is never
reported as best (see ``_objective``).
"""

from __future__ import annotations

import json
import math

import numpy as np

from jobgauge.errors import UsageError
from jobgauge.tuner._candidates import CandidateSet
from jobgauge.tuner._errors import EmptyRunTable, UnknownWorkload
from jobgauge.tuner._objective import Measurement


def _choices(values) -> str:
    return ", ".join(sorted(repr(str(v)) for v in set(values)))


def _narrow(rows, column, wanted, label):
    present = sorted(set(rows[column].astype(str)))
    if wanted is not None:
        kept = rows[rows[column].astype(str) == str(wanted)]
        if kept.empty:
            raise UnknownWorkload(f"no runs with {label} {wanted!r}; the table has "
                                  f"{_choices(present)}")
        return kept
    if len(present) > 1:
        raise UsageError(f"the runs have several {label}s ({_choices(present)}); "
                         f"pick one with --{column}")
    return rows


def _matches(config: dict, where: dict) -> bool:
    return all(str(config.get(key)) == str(value) for key, value in where.items())


class ReplayTable:
    """The measured configurations of one job in a run table (a read_run_tables frame).

    ``where`` keeps only runs whose job parameters (``config_json``) have
    these values, e.g. ``{"lines": "100000000"}``.
    """

    def __init__(self, frame, workload: str, *, framework=None, datasize=None, where=None):
        if frame is None or len(frame) == 0:
            raise EmptyRunTable("the run table has no rows")
        rows = frame[frame["workload"].astype(str) == str(workload)]
        if rows.empty:
            raise UnknownWorkload(f"unknown workload {workload!r}: the run table has "
                                  f"{_choices(frame['workload'])}")
        rows = _narrow(rows, "framework", framework, "framework")
        rows = _narrow(rows, "datasize", datasize, "datasize")
        where = {str(k): v for k, v in (where or {}).items()}
        if where:
            rows = rows[[_matches(c, where) for c in rows["config"]]]
            if rows.empty:
                raise UnknownWorkload(f"no runs of {workload!r} with "
                                      + ", ".join(f"{k}={v}" for k, v in where.items()))
        self.workload = str(workload)
        self.framework = str(rows["framework"].iloc[0])
        self.datasize = str(rows["datasize"].iloc[0])
        self.rows = rows.reset_index(drop=True)
        configs, nodes, self._measured = [], [], []
        grouped = self.rows.groupby(["instance_type", "instance_count", "config_json"], sort=True)
        for (instance_type, count, config_json), runs in grouped:
            config = {"instance_type": str(instance_type), "instance_count": int(count),
                      **json.loads(config_json)}
            configs.append(config)
            first = runs.iloc[0]
            price = float(first["hourly_price_usd"])
            nodes.append({"vcpus": float(first["vcpus"]),
                          "memory_gib": float(first["memory_gib"]),
                          "hourly_price_usd": price if math.isfinite(price) else None})
            self._measured.append({
                "runtime_s": float(np.median(runs["runtime_s"].astype(float))),
                "completed": bool(runs["completed"].all()),
                "runs": int(len(runs)),
                "run_ids": [str(r) for r in runs["run_id"]],
            })
        self.candidates = CandidateSet(configs, nodes)
        input_bytes = self.rows["input_bytes"].astype(float)
        self.profile = {"workload": self.workload, "framework": self.framework,
                        "datasize": self.datasize,
                        "input_bytes": float(input_bytes.median())
                        if input_bytes.notna().any() else None}

    def __len__(self) -> int:
        return len(self.candidates)

    def measurement(self, config: dict) -> Measurement:
        """The measured result of ``config`` (which must be one of the table's)."""
        index = self.candidates.index(config)
        if index is None:
            raise UsageError(f"configuration not measured in the run table: {config}")
        measured = self._measured[index]
        node = self.candidates.nodes[index]
        return Measurement(runtime_s=measured["runtime_s"],
                           instance_count=self.candidates.configs[index]["instance_count"],
                           hourly_price_usd=node["hourly_price_usd"],
                           completed=measured["completed"],
                           record={"run_id": ",".join(measured["run_ids"]),
                                   "runs": measured["runs"]})

    def values(self, objective: str = "cost") -> list[tuple[dict, float, bool]]:
        """Every configuration with its measured value (seconds or dollars) and completion."""
        out = []
        for config in self.candidates.configs:
            m = self.measurement(config)
            value = m.runtime_s if objective == "time" else m.cost_usd
            out.append((dict(config), value, m.completed))
        return out

    def optimum(self, objective: str = "cost") -> float:
        """The best completed value of the table (what a perfect tuner finds)."""
        done = [v for _, v, completed in self.values(objective) if completed and v is not None]
        if not done:
            raise EmptyRunTable(f"no completed runs of {self.workload!r} to compare with")
        return min(done)
