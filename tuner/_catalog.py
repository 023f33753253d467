"""The instance catalog: what a node of each cloud instance type has and costs.

The packaged catalog (``tuner/instances.csv``) holds every AWS type of the
shared run tables with the prices those tables state, plus a few current
general-purpose types at their us-east-1 on-demand list price.  A user file
(``--catalog FILE``, CSV with the same columns or JSON) adds types or
overrides packaged ones::

    instance_type,vcpus,memory_gib,hourly_price_usd
    m6i.xlarge,4,16,0.192

JSON may be a list of such objects or an object keyed by instance type.

An optional ``network_gbps`` column gives the most a node's network carries, in
Gbit/s: the answers then never fall below the time the nodes take to read the
input that does not fit in their memory (``jobgauge.job.read_floor_s``).  The
packaged types all have 10: AWS lists the c5, m5 and r5 sizes here and the r4
ones as "up to 10 Gigabit", and c4 and m4 below the 10 Gigabit of their largest
size ("Moderate" or "High").  A type without it gets no such floor.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

from jobgauge.errors import ParseError
from jobgauge.tuner._errors import UnknownInstanceType

PACKAGED_CATALOG = Path(__file__).with_name("instances.csv")
_FIELDS = ("instance_type", "vcpus", "memory_gib", "hourly_price_usd")


@dataclass(frozen=True)
class InstanceType:
    """One node type: ``vcpus`` and ``memory_gib`` per node, on-demand ``hourly_price_usd``,
    and the most its network carries (``network_gbps``, Gbit/s; None: unknown)."""

    instance_type: str
    vcpus: float
    memory_gib: float
    hourly_price_usd: float
    source: str = ""
    network_gbps: float | None = None

    @property
    def memory_mb(self) -> int:
        return int(round(self.memory_gib * 1024))


class InstanceCatalog:
    """Instance types by name; ``get`` fails with a clear error for an unknown one."""

    def __init__(self, types=(), *, sources=()):
        self._types: dict[str, InstanceType] = {}
        self.sources = tuple(str(s) for s in sources)
        for item in types:
            self._types[item.instance_type] = item

    def __contains__(self, name) -> bool:
        return name in self._types

    def __iter__(self):
        return iter(self._types.values())

    def __len__(self) -> int:
        return len(self._types)

    def names(self) -> list[str]:
        return list(self._types)

    def get(self, name: str) -> InstanceType:
        try:
            return self._types[name]
        except KeyError:
            where = ", ".join(self.sources) or "the catalog"
            raise UnknownInstanceType(
                f"unknown instance type {name!r}: not in {where} "
                f"(known: {', '.join(sorted(self._types)) or 'none'}); "
                "add it in a file given with --catalog") from None

    def merged(self, other: "InstanceCatalog") -> "InstanceCatalog":
        """This catalog with ``other``'s types added or overriding."""
        return InstanceCatalog([*self, *other], sources=(*self.sources, *other.sources))


def _number(value, *, path, line, column, positive=True):
    text = str(value).strip() if value is not None else ""
    try:
        number = float(text)
    except ValueError:
        raise ParseError("not a number", path=path, line=line, column=column,
                         expected="a number > 0", snippet=text) from None
    if not math.isfinite(number) or (positive and number <= 0):
        raise ParseError("out of range", path=path, line=line, column=column,
                         expected="a finite number > 0", snippet=text)
    return number


def _entry(raw: dict, *, path, line, entry=None) -> InstanceType:
    """One validated catalog entry; JSON entries (no useful line) are named by position."""
    def column(name):
        return name if entry is None else f"entry {entry} {name}"

    name, network = str(raw.get("instance_type") or "").strip(), raw.get("network_gbps")
    if not name:
        raise ParseError("missing value", path=path, line=line, column=column("instance_type"),
                         expected="an instance type name")
    return InstanceType(
        instance_type=name,
        vcpus=_number(raw.get("vcpus"), path=path, line=line, column=column("vcpus")),
        memory_gib=_number(raw.get("memory_gib"), path=path, line=line,
                           column=column("memory_gib")),
        hourly_price_usd=_number(raw.get("hourly_price_usd"), path=path, line=line,
                                 column=column("hourly_price_usd")),
        source=str(raw.get("source") or path),
        network_gbps=None if network is None or str(network).strip() == "" else _number(
            network, path=path, line=line, column=column("network_gbps")),
    )


def read_catalog(path) -> InstanceCatalog:
    """Read one catalog file (CSV or JSON); raise ParseError on the first bad entry."""
    path = Path(path)
    if not path.is_file():
        raise ParseError("no such file", path=path)
    text = path.read_text(encoding="utf-8")
    types = []
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ParseError(f"invalid JSON ({exc.msg})", path=path, line=exc.lineno,
                             column=exc.colno, expected="a JSON list or object") from None
        if isinstance(data, dict):
            data = [{"instance_type": name, **(value if isinstance(value, dict) else {})}
                    for name, value in data.items()]
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise ParseError("not a list of objects", path=path,
                             expected="a JSON list of {instance_type, vcpus, memory_gib, "
                                      "hourly_price_usd} objects")
        for index, item in enumerate(data):
            types.append(_entry(item, path=path, line=None, entry=index + 1))
    else:
        reader = csv.DictReader(text.splitlines())
        missing = [f for f in _FIELDS if f not in (reader.fieldnames or [])]
        if missing:
            raise ParseError("header lacks columns " + ", ".join(missing), path=path, line=1,
                             expected="the header " + ",".join(_FIELDS))
        for raw in reader:
            types.append(_entry(raw, path=path, line=reader.line_num))
    if not types:
        raise ParseError("no instance types", path=path, expected="at least one row")
    return InstanceCatalog(types, sources=(str(path),))


def load_catalog(path=None) -> InstanceCatalog:
    """The packaged catalog, with the types of the user file ``path`` (if given) added."""
    catalog = read_catalog(PACKAGED_CATALOG)
    if path is not None:
        catalog = catalog.merged(read_catalog(path))
    return catalog
