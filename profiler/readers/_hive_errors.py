"""Errors of the live-Hive piece, each under the project's one root."""

from __future__ import annotations

from jobgauge.errors import GaugeError, RunError


class HiveConnectionError(GaugeError, ConnectionError):
    """No HiveServer2 session could be opened (or it was lost) at host:port."""


class HiveQueryError(RunError):
    """The server rejected a statement; the message is the server's own."""


class HiveServerError(RunError):
    """The local Spark Thrift server could not be started or stopped."""
