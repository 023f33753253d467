"""Hyperparameter constraints declared as data, checked at the start of ``fit``.

Each model class has ``_parameter_constraints``: a dict from parameter name to
a list of allowed kinds, any one of which accepts the value::

    _parameter_constraints = {
        "hidden_size": [Interval(int, 1, None)],
        "dropout": [Interval(float, 0.0, 1.0, closed="left")],
        "cell": [Options({"gru", "lstm"})],
        "max_depth": [Interval(int, 1, None), None],
    }

A failing value raises :class:`InvalidParameterError` with the message
``The 'hidden_size' parameter of DagRNN must be an int >= 1. Got 0 instead.``
"""

from __future__ import annotations

import math
import numbers

from jobgauge.errors import ModelError


class InvalidParameterError(ModelError):
    """A model hyperparameter has a value outside its declared constraints."""


class Interval:
    """Numbers of ``kind`` (int or float) between ``left`` and ``right``.

    ``closed`` is "both", "left", "right" or "neither"; a None bound is open.
    A float interval also accepts ints; an int interval rejects bools.
    """

    def __init__(self, kind, left, right, *, closed="both"):
        self.kind = kind
        self.left = left
        self.right = right
        self.closed = closed

    def accepts(self, value) -> bool:
        if isinstance(value, bool):
            return False
        if self.kind is int:
            if not isinstance(value, numbers.Integral):
                return False
        elif not isinstance(value, numbers.Real):
            return False
        if isinstance(value, float) and math.isnan(value):
            return False
        if self.left is not None:
            if value < self.left or (value == self.left and self.closed in ("right", "neither")):
                return False
        if self.right is not None:
            if value > self.right or (value == self.right and self.closed in ("left", "neither")):
                return False
        return True

    def describe(self) -> str:
        name = "an int" if self.kind is int else "a float"
        low_op = ">=" if self.closed in ("both", "left") else ">"
        high_op = "<=" if self.closed in ("both", "right") else "<"
        if self.left is not None and self.right is not None:
            return f"{name} in the range {'[' if low_op == '>=' else '('}{self.left}, " \
                   f"{self.right}{']' if high_op == '<=' else ')'}"
        if self.left is not None:
            return f"{name} {low_op} {self.left}"
        if self.right is not None:
            return f"{name} {high_op} {self.right}"
        return name


class Options:
    """One of a fixed set of values (compared with ==)."""

    def __init__(self, values):
        self.values = tuple(values)

    def accepts(self, value) -> bool:
        return any(value == option and type(value) is type(option) for option in self.values)

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in sorted(self.values, key=str))


class Boolean:
    """True or False."""

    def accepts(self, value) -> bool:
        return isinstance(value, bool)

    def describe(self) -> str:
        return "a bool"


class RandomState:
    """None or a non-negative int seed."""

    def accepts(self, value) -> bool:
        return value is None or (isinstance(value, numbers.Integral) and not isinstance(value, bool)
                                 and value >= 0)

    def describe(self) -> str:
        return "None or an int >= 0"


class Subclass:
    """A class deriving from the class named by ``module_path:name`` (imported lazily)."""

    def __init__(self, dotted: str):
        self.dotted = dotted

    def accepts(self, value) -> bool:
        import importlib

        module_name, _, attr = self.dotted.partition(":")
        base = getattr(importlib.import_module(module_name), attr)
        return isinstance(value, type) and issubclass(value, base)

    def describe(self) -> str:
        return f"a subclass of {self.dotted.replace(':', '.')}"


class IntTuple:
    """A tuple or list of ints >= 1 (layer sizes), possibly empty."""

    def accepts(self, value) -> bool:
        return isinstance(value, (tuple, list)) and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 1 for v in value)

    def describe(self) -> str:
        return "a tuple of ints >= 1"


def _describe(constraint) -> str:
    return "None" if constraint is None else constraint.describe()


def validate_params(estimator) -> None:
    """Check every declared parameter of ``estimator``; raise on the first bad one."""
    constraints = getattr(type(estimator), "_parameter_constraints", {})
    params = estimator.get_params(deep=False)
    for name, allowed in constraints.items():
        value = params.get(name)
        if any((value is None) if c is None else c.accepts(value) for c in allowed):
            continue
        kinds = [_describe(c) for c in allowed]
        what = kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " or " + kinds[-1]
        raise InvalidParameterError(
            f"The {name!r} parameter of {type(estimator).__name__} must be {what}. "
            f"Got {value!r} instead.")


def store_params(estimator, arguments) -> None:
    """Store each ``__init__`` argument of ``estimator`` as the attribute of its name,
    untouched, as scikit-learn's ``get_params`` and ``clone`` expect.

    ``arguments`` is the ``__init__``'s ``locals()``; the names come from the
    ``__init__`` signature itself, so each estimator keeps its explicit,
    keyword-only signature and ``__init__`` does no other work.
    """
    for name in estimator._get_param_names():
        setattr(estimator, name, arguments[name])
