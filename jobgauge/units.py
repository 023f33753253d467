"""Sizes and durations as Spark, Hadoop and Hive write them: the one parser and formatter.

Sizes use binary units, as Spark does: ``10m`` is 10 MiB, ``64MB`` is
64 MiB, ``4g`` is 4 GiB, ``1.5GiB`` is 1.5 GiB.  A number without a unit is in
``default_unit`` (bytes unless a setting says otherwise: ``spark.executor.memory``
counts MiB, ``spark.shuffle.file.buffer`` KiB).  Durations need a time unit
(``120s``, ``5min``, ``100ms``) unless a default unit is given.

Every parser raises :class:`jobgauge.errors.UsageError` on text it cannot
read (never a silent fallback): garbage, digits other than ASCII ``0-9``
(``"²"``), NaN, infinity, and magnitudes beyond a sane cap (``MAX_BYTES``,
``MAX_SECONDS``, ``MAX_NUMBER``).

>>> parse_size("10m"), parse_size("64MB"), parse_size("1.5GiB"), parse_size("-1")
(10485760, 67108864, 1610612736, -1)
>>> parse_size("4096", default_unit="MiB") == parse_size("4g")
True
>>> parse_duration("120s"), parse_duration("5min"), parse_duration("100ms")
(120.0, 300.0, 0.1)
>>> format_size(10 * 1024 ** 2), format_size(512 * 1024 ** 2), format_size(1000)
('10m', '512m', '1000')
>>> format_duration(3.0), format_duration(0.1), format_duration(300)
('3s', '100ms', '5min')
>>> parse_quantity("64MB"), parse_quantity("120s"), parse_quantity("0.6")
(67108864.0, 120.0, 0.6)
>>> parse_size("lots")
Traceback (most recent call last):
...
jobgauge.errors.UsageError: 'lots' is not a valid size: must be bytes or a size such as 10m, 64MB or 1.5GiB
"""

from __future__ import annotations

import bisect
import math
import re
from decimal import Decimal

from jobgauge.errors import UsageError

KiB, MiB, GiB, TiB, PiB = (1024 ** i for i in range(1, 6))
# Suffix (lower case) -> bytes.  "m" is MiB, as in Spark's size settings.
SIZE_UNITS = {"b": 1, "k": KiB, "kb": KiB, "kib": KiB, "m": MiB, "mb": MiB, "mib": MiB,
              "g": GiB, "gb": GiB, "gib": GiB, "t": TiB, "tb": TiB, "tib": TiB,
              "p": PiB, "pb": PiB, "pib": PiB}
# Suffix (lower case) -> seconds.  Spark's time settings also read "m" as minutes.
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0,
              "min": 60.0, "h": 3600.0, "d": 86400.0}
# Units a plain number may be in: the names used by the knob table.
DEFAULT_SIZE_UNITS = {"B": 1, "KiB": KiB, "MiB": MiB, "GiB": GiB}
DEFAULT_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "min": 60.0}

MAX_BYTES = 2 ** 60            # 1 EiB: no setting means more
MAX_SECONDS = 100 * 365 * 86400.0
MAX_NUMBER = 2 ** 63 - 1       # a Java long

_QUANTITY = re.compile(r"\s*([-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)"
                       r"\s*([A-Za-z]*)\s*", re.ASCII)
_SIZE_RULE = "a size such as 10m, 64MB or 1.5GiB"
_TIME_RULE = "a duration such as 120s, 5min or 100ms"


def _fail(text, what: str, rule: str, name: str | None):
    prefix = f"{name}=" if name else ""
    shown = text if isinstance(text, str) else repr(text)
    raise UsageError(f"{prefix}{shown[:60]!r} is not a valid {what}: {rule}")


def _split(text, what, rule, name):
    """(number, unit suffix) of ``text``, or UsageError."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        _fail(text, what, rule, name)
    if isinstance(text, (int, float)):
        number, unit = float(text), ""
    else:
        match = _QUANTITY.fullmatch(text)
        if not match:
            _fail(text, what, rule, name)
        number, unit = float(match.group(1)), match.group(2)
    if not math.isfinite(number):
        _fail(text, what, "must be a finite number", name)
    return number, unit


def parse_size(text, *, default_unit: str = "B", name: str | None = None) -> int:
    """Bytes of a size (``"10m"``, ``"64MB"``, ``"4g"``, ``"1.5GiB"``, ``"-1"``).

    A plain number is in ``default_unit`` (``B``, ``KiB``, ``MiB`` or ``GiB``).
    ``name`` (a setting) is named in the error message.  Fractions of a byte
    are rounded down, as Spark does.
    """
    scale = DEFAULT_SIZE_UNITS[default_unit]
    rule = ("must be bytes or " if scale == 1 else f"must be {default_unit} or ") + _SIZE_RULE
    number, unit = _split(text, "size", rule, name)
    if unit:
        if unit.lower() not in SIZE_UNITS:
            _fail(text, "size", f"unknown unit {unit!r}; " + rule, name)
        scale = SIZE_UNITS[unit.lower()]
    value = number * scale
    if abs(value) > MAX_BYTES:
        _fail(text, "size", "larger than 1 EiB, the largest size accepted", name)
    return math.floor(value)


def parse_duration(text, *, default_unit: str | None = None, name: str | None = None) -> float:
    """Seconds of a duration (``"120s"``, ``"5min"``, ``"100ms"``, ``"3h"``).

    Without ``default_unit`` (``s``, ``ms`` or ``min``) the unit is required.
    """
    rule = "must be " + _TIME_RULE
    number, unit = _split(text, "duration", rule, name)
    if unit:
        if unit.lower() not in TIME_UNITS:
            _fail(text, "duration", f"unknown unit {unit!r}; " + rule, name)
        scale = TIME_UNITS[unit.lower()]
    elif default_unit is None:
        _fail(text, "duration", "needs a time unit; " + rule, name)
    else:
        scale = DEFAULT_TIME_UNITS[default_unit]
    value = number * scale
    if abs(value) > MAX_SECONDS:
        _fail(text, "duration", "longer than 100 years, the longest duration accepted", name)
    return value


def parse_number(text, *, integer: bool = False, name: str | None = None):
    """A plain number (ASCII digits, finite, at most a Java long in magnitude);
    an ``int`` with ``integer``, which refuses fractions (``"64.0"`` is 64)."""
    what = "whole number" if integer else "number"
    number, unit = _split(text, what, f"must be a {what}", name)
    if unit:
        _fail(text, what, f"must be a {what} without a unit", name)
    if abs(number) > MAX_NUMBER:
        _fail(text, what, f"larger than {MAX_NUMBER}, the largest number accepted", name)
    if integer:
        if number != int(number):
            _fail(text, what, "must be a whole number", name)
        return int(number)
    return number


def parse_quantity(text, *, name: str | None = None) -> float:
    """A number, a size in bytes or a duration in seconds, whichever ``text`` is.

    ``"10m"`` is a size (10 MiB), as in Spark's size settings; ``"5min"`` is
    five minutes.
    """
    rule = "must be a number, " + _SIZE_RULE + ", or " + _TIME_RULE
    number, unit = _split(text, "quantity", rule, name)
    lowered = unit.lower()
    if not unit:
        return float(parse_number(text, name=name))
    if lowered in SIZE_UNITS:
        parse_size(text, name=name)          # the same checks and cap as every size
        return number * SIZE_UNITS[lowered]
    if lowered in TIME_UNITS:
        return parse_duration(text, name=name)
    _fail(text, "quantity", f"unknown unit {unit!r}; " + rule, name)


def format_size(size: int, *, unit: str = "B") -> str:
    """``size`` (in ``unit``) in the largest binary suffix that holds it exactly,
    as Spark writes sizes (``"4g"``, ``"512m"``, ``"32k"``); bytes that are no
    whole KiB are written as a plain number."""
    value = int(size) * DEFAULT_SIZE_UNITS[unit]
    if value == 0:
        return "0"
    for suffix, scale in (("t", TiB), ("g", GiB), ("m", MiB), ("k", KiB)):
        if value % scale == 0:
            return f"{value // scale}{suffix}"
    return str(value)


def human_size(size: float) -> str:
    """``size`` bytes rounded for a reader, in binary units: ``"98 MiB"``, ``"1.1 GiB"``,
    ``"512 B"`` (two significant digits below ten of a unit, whole units above).

    >>> human_size(1.1 * GiB), human_size(102586108), human_size(512)
    ('1.1 GiB', '98 MiB', '512 B')
    """
    value = float(size)
    for suffix, scale in (("PiB", PiB), ("TiB", TiB), ("GiB", GiB), ("MiB", MiB),
                          ("KiB", KiB)):
        if abs(value) >= scale:
            count = value / scale
            return f"{count:.1f} {suffix}" if abs(count) < 9.95 else f"{count:.0f} {suffix}"
    return f"{value:.0f} B"


def format_duration(seconds: float) -> str:
    """``seconds`` in the largest unit that holds it exactly (``"3s"``, ``"100ms"``, ``"5min"``)."""
    value = float(seconds)
    for suffix, scale in (("d", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0),
                          ("ms", 1e-3), ("us", 1e-6)):
        count = value / scale
        if round(count) != 0 and abs(count - round(count)) < 1e-9 * abs(count):
            return f"{int(round(count))}{suffix}"
    return f"{value:g}s"


# ------------------------------------------------------------------ size labels
#: The largest scale factor jobgauge generates and runs here (a question may ask beyond it).
MAX_RUN_SCALE = 100.0
#: The largest scale factor the TPC-H specification defines: the bound of a question.
MAX_SCALE = 100000.0


def scale_label(scale, *, most: float | None = MAX_RUN_SCALE) -> str:
    """``0.1`` → ``sf0.1``; accepts a number or a label, above 0 and at most ``most``
    (None: a question rather than a run, at most :data:`MAX_SCALE`).  The label keeps
    six significant digits and never an exponent (``1e-05`` is ``sf0.00001``), so every
    label it makes reads back as the same scale factor (:func:`size_scale`).

    >>> scale_label(3.0), scale_label("SF0.1"), scale_label(1e-05), scale_label(1e5, most=None)
    ('sf3', 'sf0.1', 'sf0.00001', 'sf100000')
    """
    text = str(scale).strip().lower()
    if text.startswith("sf"):
        text = text[2:]
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"TPC-H scale must be a number such as 0.1 or a label such as "
                         f"sf0.1; got {scale!r}") from None
    bound = MAX_SCALE if most is None else most
    if not 0 < value <= bound:
        largest = "TPC-H's largest" if most is None else "the largest run here"
        raise UsageError(f"TPC-H scale must be > 0 and <= {bound:g} ({largest}); "
                         f"got {scale!r}")
    digits = format(Decimal(repr(float(f"{value:.6g}"))).normalize(), "f")
    return f"sf{digits}"


#: HiBench's data sizes, smallest first (a run table's ``datasize`` of a HiBench job).
HIBENCH_SIZES = ("tiny", "small", "medium", "large", "huge", "gigantic", "bigdata")
_SCALE_FACTOR = re.compile(r"^sf(\d+(?:\.\d+)?)(?:\b|_|-|$)", re.IGNORECASE)
_HIBENCH_LABEL = re.compile(r"^(" + "|".join(HIBENCH_SIZES) + r")(?:\b|_|-|$)", re.IGNORECASE)


def size_scale(label) -> tuple[float, float]:
    """(TPC-H scale factor, HiBench size ordinal) of a datasize label; NaN where it says nothing.

    >>> size_scale("sf0.1"), size_scale("huge"), size_scale("medium-local")
    ((0.1, nan), (nan, 4.0), (nan, 2.0))
    """
    text = str(label or "").strip().lower()
    match = _SCALE_FACTOR.match(text)
    if match:
        return float(match.group(1)), math.nan
    match = _HIBENCH_LABEL.match(text)  # also "medium-local" and the like
    if match:
        return math.nan, float(HIBENCH_SIZES.index(match.group(1)))
    return math.nan, math.nan


def bytes_at_scale(measured, factor) -> float | None:
    """Input bytes at TPC-H scale ``factor`` from the ``measured`` (scale factor, input
    bytes) pairs: the bytes per scale factor interpolated (in log scale factor) between
    the two measured factors around it, and beyond them those of the nearest; None
    without a measured pair or a positive ``factor``.  Parquet's bytes per scale factor
    grow with the scale (327 MB at SF 0.1, 362 MB at SF 1, 392 MB at SF 10 and 404 MB at
    SF 30 in jobgauge's runs), so one median over every size (the most runs being at SF 1
    and 3) made the SF 5 check's input 6 % too small and SF 30's 10 %.

    >>> round(bytes_at_scale([(1, 100.0), (10, 1100.0)], 10 ** 0.5) / 10 ** 0.5, 2)
    104.88
    >>> round(bytes_at_scale([(1, 100.0), (10, 1100.0)], 30), 6), bytes_at_scale([], 3)
    (3300.0, None)
    """
    points = sorted((math.log(f), math.log(b / f)) for f, b in measured
                    if f > 0 and b > 0 and math.isfinite(f) and math.isfinite(b))
    if not points or not (factor > 0 and math.isfinite(factor)):
        return None
    logs, offsets = zip(*points)
    position = math.log(factor)
    if position <= logs[0]:
        offset = offsets[0]
    elif position >= logs[-1]:
        offset = offsets[-1]
    else:
        right = bisect.bisect_left(logs, position)      # the first measured at or above
        share = (position - logs[right - 1]) / (logs[right] - logs[right - 1])
        offset = offsets[right - 1] + share * (offsets[right] - offsets[right - 1])
    return math.exp(offset) * factor


__all__ = ["DEFAULT_SIZE_UNITS", "DEFAULT_TIME_UNITS", "HIBENCH_SIZES", "MAX_BYTES",
           "MAX_NUMBER", "MAX_SECONDS", "SIZE_UNITS", "TIME_UNITS", "bytes_at_scale",
           "format_duration", "format_size", "human_size", "parse_duration", "parse_number",
           "parse_quantity", "parse_size", "size_scale"]
