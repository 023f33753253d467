"""jobgauge: predict, tune and track Spark, Hadoop and Hive jobs before they run.

The distribution maps the product's top-level folders into one namespace:
``profiler/`` is ``jobgauge.profiler``, ``dag/`` is ``jobgauge.dag``, and so on.
The core (errors, store, run tables, command line) lives in ``jobgauge/``.
"""

__version__ = "0.1.0"

from jobgauge.errors import GaugeError  # noqa: E402

__all__ = ["GaugeError", "__version__"]
