"""Live Hive: run and measure queries on a HiveServer2 endpoint through pyhive.

Any HiveServer2 works (Apache Hive or Spark's Thrift server, which speaks the
same protocol); for a server on this machine, :func:`start_server` runs Spark's
Thrift server from the pyspark install with a Derby metastore in a state
folder.

>>> from jobgauge.profiler.hive import HiveSession, run_query, start_server
>>> server = start_server(port=10000)                                   # doctest: +SKIP
>>> with HiveSession(port=server.port) as session:                      # doctest: +SKIP
...     session.use(session.load_tpch("sf0.01")["database"])
...     run = run_query(session, "tpch-q6", QUERIES[6], "sf0.01",
...                     {"hive.exec.reducers.max": "8"}, open_store())
"""

from jobgauge.profiler.readers._hive_errors import HiveConnectionError, HiveQueryError, HiveServerError
from jobgauge.profiler._hive_knobs import (
    HIVE_TO_SPARK, IGNORED_KNOBS, KnobPlan, translate_knobs,
)
from jobgauge.profiler.runners._hive_record import run_query, server_resources
from jobgauge.profiler.runners._hive_server import (
    DEFAULT_PORT, DEFAULT_STATE_DIR, ServerState, read_state, server_command, server_status,
    start_server, stop_server,
)
from jobgauge.profiler.readers._hive_session import HiveSession, plan_dag, tpch_database


def default_endpoint(state_dir=None) -> tuple[str, int]:
    """(host, port) of the server ``jobgauge hive start`` runs, else 127.0.0.1:10000."""
    state = read_state(state_dir)
    return (state.host, state.port) if state is not None else ("127.0.0.1", DEFAULT_PORT)


__all__ = [
    "DEFAULT_PORT", "DEFAULT_STATE_DIR", "HIVE_TO_SPARK", "IGNORED_KNOBS", "HiveConnectionError",
    "HiveQueryError", "HiveServerError", "HiveSession", "KnobPlan", "ServerState",
    "default_endpoint", "plan_dag", "read_state", "run_query", "server_command",
    "server_resources", "server_status", "start_server", "stop_server", "tpch_database",
    "translate_knobs",
]
