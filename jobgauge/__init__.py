"""jobgauge: predict, tune and track Spark, Hadoop and Hive jobs before they run.

The distribution maps the product's top-level folders into one namespace:
``profiler/`` is ``jobgauge.profiler``, ``dag/`` is ``jobgauge.dag``, and so on;
``data/`` (the measured runs and profiles shipped with jobgauge) is
``jobgauge.data``.  setup.py discovers every subpackage of those folders.
The core (errors, store, run tables, the job being asked about in ``job.py``,
command line in ``cli.py`` with its shared options in ``cli_options.py``) lives
in ``jobgauge/``.
"""

__version__ = "0.1.0"

from jobgauge.errors import GaugeError  # noqa: E402

__all__ = ["GaugeError", "__version__"]
