"""The journal of a bench script's measurements: one JSON object per line, appended as
each measurement ends, so that a script killed part way resumes from what it has.
``bench/learning_loop.py``, ``own_job.py``, ``pasted_queries.py`` and ``tune_real.py``
keep theirs here.  (``jobgauge collect`` keeps its own, ``Journal`` in
``jobgauge.profiler.runners.collect``: its entries are validated runs of a plan.)"""

from __future__ import annotations

import json
from pathlib import Path


def read(path: Path) -> list[dict]:
    """The entries of the journal at ``path`` in the order they were written; [] where
    there is none.  A line that is not JSON (the last one, cut by a kill) is left out:
    its measurement is simply made again."""
    path = Path(path)
    if not path.is_file():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return entries


def append(path: Path, entry: dict) -> None:
    """Add ``entry`` to the journal at ``path`` (created with its folder if missing);
    a line of its own, begun on a fresh line even after a line cut by a kill."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torn = False
    if path.is_file() and path.stat().st_size:
        with open(path, "rb") as handle:        # its last byte only
            handle.seek(-1, 2)
            torn = handle.read(1) != b"\n"
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(("\n" if torn else "") + json.dumps(entry, default=str) + "\n")
