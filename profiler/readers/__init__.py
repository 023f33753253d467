"""Reading artifacts into profiles: Spark event logs (every codec, rolled and
growing logs), the Spark REST API (History Server, a driver's UI, running jobs:
:mod:`.sparkrest` is the one client), MapReduce job history, query plans over
HiveServer2, and the application report with its heuristics.

Nothing here starts a workload; :mod:`jobgauge.profiler.runners` does, and
imports from here, never the other way round.
"""
