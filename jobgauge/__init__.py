"""jobgauge: predict, tune and track Spark, Hadoop and Hive jobs before they run.

The distribution maps the product's top-level folders into one namespace:
``profiler/`` is ``jobgauge.profiler``, ``dag/`` is ``jobgauge.dag``, and so on;
``data/`` (the measured runs and profiles shipped with jobgauge) is
``jobgauge.data``.  setup.py discovers every subpackage of those folders.
The core every folder imports lives in ``jobgauge/``: the error root
(``errors.py``), the knob table (``knobs.py``: each setting's engine, type,
unit, default, valid range, restart level, equivalents and exposure), the one
size and duration parser (``units.py``), the job being asked about and the
cluster it runs on with its cost (``job.py``), the store (``store.py``), run
tables (``runtable.py``), history import (``history_import.py``) and the
command line (``cli.py``, its shared options in ``cli_options.py``).
"""

__version__ = "0.1.0"

from jobgauge.errors import GaugeError  # noqa: E402

__all__ = ["GaugeError", "__version__"]
