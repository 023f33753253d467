"""HiBench (Spark and MapReduce): the whole cycle with one command (see bench/suite.py).

    python bench/hibench.py              # from the shipped runs
    python bench/hibench.py --collect    # measure the runs on this machine first
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from suite import run_suite  # noqa: E402

PLANS = ["quiet-hibench-tiny", "quiet-hibench-medium", "quiet-mapreduce-wordcount", "quiet-mapreduce-sort"]

if __name__ == "__main__":
    sys.exit(run_suite("HiBench", PLANS))
