"""TPC-H: the whole cycle with one command (see bench/suite.py).

    python bench/tpch.py              # from the shipped runs
    python bench/tpch.py --collect    # measure the runs on this machine first
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from suite import run_suite  # noqa: E402

PLANS = ["tpch-sf0.1", "tpch-sf0.3"]

if __name__ == "__main__":
    sys.exit(run_suite("TPC-H", PLANS))
