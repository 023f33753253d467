"""A finite set of configurations: what replay (and a measured search over a
catalog) may propose, with the numbers a surrogate model learns on.

Each candidate is a dict of parameter values over the same keys
(``instance_type``, ``instance_count`` and job parameters).  The Optuna
distributions are inferred from the values: ``instance_count`` and other
whole-number columns as ``IntDistribution``, everything else categorical.
``features()`` gives one numeric row per candidate:

- from the node: log2 of total vCPUs, of total memory, of the node count
  and of memory per vCPU (the instance family);
- from each other parameter: log2 of a positive number, the number itself,
  or one column per category.
"""

from __future__ import annotations

import json
import math
from typing import Mapping, Sequence

import numpy as np

from jobgauge.errors import UsageError
from jobgauge.tuner._space import level_of

_SCALARS = (str, int, float, bool, type(None))


def _scalar(value):
    """A value Optuna can hold in a categorical distribution."""
    if isinstance(value, _SCALARS) and not (isinstance(value, float) and math.isnan(value)):
        return value
    return json.dumps(value, sort_keys=True)


def _as_number(value):
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


class CandidateSet:
    """Configurations (``configs``) and, per candidate, node facts (``nodes``:
    dicts with ``vcpus``, ``memory_gib``, ``hourly_price_usd``) where known."""

    def __init__(self, configs: Sequence[Mapping], nodes: Sequence[Mapping] | None = None):
        if not configs:
            raise UsageError("a candidate set needs at least one configuration")
        self.configs = [{k: _scalar(v) for k, v in c.items()} for c in configs]
        self.names = sorted({k for c in self.configs for k in c},
                            key=lambda n: (n not in ("instance_type", "instance_count"), n))
        for config in self.configs:
            for name in self.names:
                config.setdefault(name, None)
        self.nodes = list(nodes) if nodes is not None else None
        if self.nodes is not None and len(self.nodes) != len(self.configs):
            raise UsageError("one node description per candidate is needed")
        self._index = {}
        for index, config in enumerate(self.configs):
            key = self.key(config)
            if key in self._index:
                raise UsageError(f"configuration listed twice: {config}")
            self._index[key] = index
        self._distributions = None
        self._features = None

    def __len__(self) -> int:
        return len(self.configs)

    def key(self, params: Mapping) -> tuple:
        return tuple(_scalar(params.get(name)) for name in self.names)

    def index(self, params: Mapping) -> int | None:
        """The candidate with these parameter values, or None (not in the set)."""
        return self._index.get(self.key(params))

    def levels(self) -> dict[str, str]:
        return {name: level_of(name) for name in self.names}

    def distributions(self) -> dict:
        from optuna.distributions import CategoricalDistribution, IntDistribution

        if self._distributions is None:
            out = {}
            for name in self.names:
                values = [c[name] for c in self.configs]
                if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                    out[name] = IntDistribution(min(values), max(values))
                else:
                    choices = sorted(set(values), key=lambda v: (str(type(v)), str(v)))
                    out[name] = CategoricalDistribution(tuple(choices))
            self._distributions = out
        return dict(self._distributions)

    def features(self) -> np.ndarray:
        """Standardised numeric features, one row per candidate (constant columns dropped)."""
        if self._features is None:
            columns = []
            if self.nodes is not None and "instance_count" in self.names:
                count = np.array([float(c["instance_count"]) for c in self.configs])
                vcpus = np.array([float(n["vcpus"]) for n in self.nodes])
                memory = np.array([float(n["memory_gib"]) for n in self.nodes])
                columns += [np.log2(count * vcpus), np.log2(count * memory), np.log2(count),
                            np.log2(memory / vcpus)]
            for name in self.names:
                if name in ("instance_type", "instance_count") and self.nodes is not None:
                    continue
                values = [c[name] for c in self.configs]
                numbers = [_as_number(v) for v in values]
                if all(n is not None for n in numbers):
                    column = np.array(numbers, dtype=float)
                    if column.min() > 0 and column.max() / column.min() > 4:
                        column = np.log2(column)
                    columns.append(column)
                else:
                    for choice in sorted({str(v) for v in values}):
                        columns.append(np.array([float(str(v) == choice) for v in values]))
            if not columns:
                matrix = np.zeros((len(self.configs), 0))
            else:
                matrix = np.column_stack(columns)
                spread = matrix.std(axis=0)
                keep = spread > 1e-12
                matrix = (matrix[:, keep] - matrix[:, keep].mean(axis=0)) / spread[keep]
            self._features = matrix
        return self._features
