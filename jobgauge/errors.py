"""The project's one exception root and its specific subclasses.

Each subclass also extends the built-in it resembles, so callers that only
know Python's own exceptions still catch the right thing.
"""

from __future__ import annotations


class GaugeError(Exception):
    """Root of every error jobgauge raises on purpose."""


class UsageError(GaugeError, ValueError):
    """A command, form or API call was given a value it cannot use."""


class ParseError(GaugeError, ValueError):
    """An input file or text could not be read.

    Carries structure so a form or the CLI can point at the problem:
    ``path`` (or None), ``line`` and ``column`` (1-based, or None),
    ``expected`` (what the reader wanted) and ``snippet`` (the offending text).
    """

    def __init__(self, message: str, *, path=None, line=None, column=None,
                 expected=None, snippet=None):
        self.path = None if path is None else str(path)
        self.line = line
        self.column = column
        self.expected = expected
        self.snippet = snippet
        self.reason = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.path:
            where.append(self.path)
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.column is not None:
            where.append(f"column {self.column}")
        text = self.reason
        if self.expected:
            text += f" (expected {self.expected})"
        if self.snippet:
            snippet = self.snippet if len(self.snippet) <= 80 else self.snippet[:77] + "..."
            text += f": {snippet!r}"
        return (", ".join(where) + ": " + text) if where else text


class StoreError(GaugeError, RuntimeError):
    """The run store could not be opened, read or written."""


class RunError(GaugeError, RuntimeError):
    """A workload could not be run."""


class NotFittedError(GaugeError, AttributeError):
    """A model was asked to predict before ``fit`` was called."""


class ModelError(GaugeError, ValueError):
    """A model cannot be trained, saved, loaded or applied to this input."""


class TuneError(GaugeError, RuntimeError):
    """A tuning study could not produce a configuration."""
