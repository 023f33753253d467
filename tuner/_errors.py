"""The tuner's specific errors, all under the project's one root (``jobgauge.errors``)."""

from __future__ import annotations

from jobgauge.errors import TuneError, UsageError


class UnknownWorkload(UsageError):
    """The run table has no rows for the workload (or framework, size) asked for."""


class UnknownInstanceType(UsageError):
    """An instance type is not in the instance catalog."""


class EmptyRunTable(TuneError):
    """A run table given to the tuner has no rows to tune from."""


class InvalidConfiguration(TuneError, ValueError):
    """A configuration does not fit the nodes or the cluster it is meant for."""


class InfeasibleTuning(TuneError):
    """No configuration the study tried meets the deadline or the budget."""
