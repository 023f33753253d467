"""Measured runs and their profiles, shipped with jobgauge (installed as ``jobgauge.data``).

``runs/NAME.csv.gz`` are run tables in the shared schema and
``profiles/NAME.jsonl.gz`` the profile records of those runs (see README.md in
this folder).  The web service trains its first model from them, and
``jobgauge evaluate`` scores models on them.  They are found through this
package, so an installed wheel has them as well as a source checkout.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["profile_files", "profiles_dir", "recollected_runs_dir", "run_tables", "runs_dir",
           "scan_files", "scan_row_bytes"]


def _folder(name: str) -> Path:
    return Path(str(files(__name__).joinpath(name)))


def runs_dir() -> Path:
    """The folder of the shipped run tables."""
    return _folder("runs")


def recollected_runs_dir(runs=None) -> Path:
    """The folder of the re-measurements beside the run tables of ``runs`` (default: the
    shipped ones, :func:`runs_dir`): ``recollect/runs`` in the folder above it.  Shipped,
    the same configurations measured again with other designs or on another machine,
    which no model learns runtimes from; their failed runs count as failures
    (README.md)."""
    return Path(runs if runs is not None else runs_dir()).parent / "recollect" / "runs"


def profiles_dir() -> Path:
    """The folder of the shipped profile records."""
    return _folder("profiles")


def run_tables() -> list[Path]:
    """The shipped run tables, sorted by name."""
    return sorted(runs_dir().glob("*.csv.gz"))


def profile_files() -> list[Path]:
    """The shipped profile records, sorted by name."""
    return sorted(profiles_dir().glob("*.jsonl*"))


def scan_files() -> dict:
    """{location: bytes} of the files the shipped profiles scan, for profiles collected
    before ``jobgauge collect`` recorded them beside each run (``scan_files``);
    measured again by ``bench/scan_files.py``.  Empty where the file is missing."""
    import json

    path = _folder("scan-files.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def scan_row_bytes() -> dict:
    """{location: bytes} of a row of each table the shipped profiles scan, as Spark sizes
    one without column statistics, for profiles collected before ``jobgauge collect``
    recorded it beside each run (``scan_row_bytes``); written by ``bench/scan_files.py``.
    Empty where the file is missing."""
    import json

    path = _folder("scan-row-bytes.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
