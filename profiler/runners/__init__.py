"""Running workloads for real: one profiled run (:mod:`.runner`), the warm runner
(:mod:`._warm`), the collector of a design of configurations with its load guard
(:mod:`.collect`), the Spark driver process (:mod:`.driver`), Hadoop local-mode
jobs (:mod:`.hadoop_runner`, Java sources in ``hadoop/``), the Spark standalone
cluster (:mod:`.cluster`) and the Hive Thrift server (:mod:`._hive_server`).

Runs are profiled with :mod:`jobgauge.profiler.readers`.
"""
