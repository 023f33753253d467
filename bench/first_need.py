"""How long a new store waits for its first model: trained, then loaded from the cache.

    nice -n 10 .venv/bin/python bench/first_need.py [--kind stage] [--json]

A new store of the web service, of ``jobgauge-submit`` or of the tuner trains its
model on first need (``models._default.train_store_model``: the shipped runs plus the
store's own, none yet).  Here two new stores, one after the other, each in a process
of its own, as two services started on one machine: the first trains and keeps the
model in a model cache of its own (a temporary folder, ``$JOBGAUGE_MODEL_CACHE``); the
second finds it there (``models/_cache.py``).  Prints the seconds of each (the whole
``train_store_model`` call: reading the runs and profiles, the fit or the load, saving
it in the store) and whether the two stores' models answer every shipped run alike,
then writes ``bench/reports/first_need.md``.  About a minute and a half for the stage
model on this project's 2-core machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from _report import report_main  # noqa: E402  (bench/_report.py)

#: One new store's first need, in a process of its own: prints its seconds, what its
#: progress said and a digest of its model's answers to every shipped run.
_ONE_STORE = """
import hashlib, io, json, sys, time
from jobgauge.data import run_tables
from jobgauge.models._default import train_store_model
from jobgauge.runtable import read_run_tables
from jobgauge.store import open_store

progress = io.StringIO()
started = time.perf_counter()
model, meta = train_store_model(open_store(sys.argv[1]), kind=sys.argv[2] or None,
                                progress=progress)
seconds = time.perf_counter() - started
answers = model.predict(read_run_tables(run_tables()))
print(json.dumps({"seconds": seconds, "said": progress.getvalue().strip().splitlines()[-1],
                  "model": meta["kind"],
                  "answers": hashlib.sha256(answers.tobytes()).hexdigest()[:16]}))
"""


def options(parser) -> None:
    parser.add_argument("--kind", default="",
                        help="the model kind (default: the registry's default model)")


def figures(args) -> dict:
    with tempfile.TemporaryDirectory(prefix="jobgauge-first-need-") as folder:
        env = {**os.environ, "JOBGAUGE_MODEL_CACHE": str(Path(folder) / "models")}
        env.pop("JOBGAUGE_SHARED_DATASETS", None)         # the shipped runs only
        stores = []
        for name in ("first", "second"):
            done = subprocess.run([sys.executable, "-c", _ONE_STORE,
                                   str(Path(folder) / f"{name}.db"), args.kind],
                                  env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"the {name} store's training failed:\n{done.stderr[-3000:]}")
            stores.append({"store": name, **json.loads(done.stdout.strip().splitlines()[-1])})
    return {"stores": stores, "alike": stores[0]["answers"] == stores[1]["answers"],
            "load_1min": os.getloadavg()[0], "cores": os.cpu_count()}


def markdown(found: dict, seconds: float) -> str:
    first, second = found["stores"]
    lines = ["# A new store's first model: trained, then loaded from the cache", "",
             f"Reproduce with `nice -n 10 .venv/bin/python bench/first_need.py` "
             f"({seconds:.0f} s; {found['cores']} cores, 1-minute load "
             f"{found['load_1min']:.2f} at the end). Two new stores one after the other, "
             "each in a process of its own, sharing one model cache: the whole "
             "`train_store_model` call of each (reading the shipped runs and profiles, the "
             "fit or the load, saving the model in the store).", "",
             "| store | model | seconds | what it said |", "|---|---|---|---|"]
    for store in found["stores"]:
        lines.append(f"| {store['store']} | {store['model']} | {store['seconds']:.1f} | "
                     f"{store['said']} |")
    lines += ["", f"The second store's wait is {second['seconds'] / first['seconds']:.2f}x "
              f"the first's. Both models answer every shipped run "
              f"{'alike, to the last bit' if found['alike'] else 'DIFFERENTLY'}.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    return report_main(argv, __doc__, figures, markdown, "first_need.md", options)


if __name__ == "__main__":
    sys.exit(main())
